"""``python -m annotation.cli``: the same as ``judge-audit``."""

import sys

from annotation.cli.main import main

sys.exit(main())
