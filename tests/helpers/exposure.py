"""What an annotator's browser must not be able to compute: judges, generators, output ids.

:func:`secrets_of` lists them for a project; :func:`leaks` finds, in any strings (widget
keys, element ids, DOM attributes, websocket frames), one of them verbatim or a hash
prefix of one (sha256, sha1 or md5 hex digest, any prefix of 8 to 16 digits), the way an
attacker would test ``sha256("demo-06/qwen-image-edit")[:12]`` against a widget key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from annotation.store import Store

HEX_RUN = re.compile(r"[0-9a-f]{8,}")
PREFIX = 8  # a digest prefix this long (or longer) on the page counts as a leak


def secrets_of(db: Path) -> list[str]:
    """Every generator, judge and output id of the project at ``db``."""
    with Store.open(db, migrate=False) as store:
        outputs = store.outputs_df()
        judges = store.judges_df()
    return sorted({*outputs.generator.dropna(), *judges.name.dropna(), *outputs.output_id})


def digest_prefixes(values: Iterable[str]) -> dict[str, str]:
    """``{first 8 hex digits of a digest: what it is the digest of}`` (sha256/sha1/md5)."""
    found = {}
    for value in values:
        for algorithm in ("sha256", "sha1", "md5"):
            digest = hashlib.new(algorithm, value.encode("utf-8")).hexdigest()
            found[digest[:PREFIX]] = f"{algorithm}({value!r})"
    return found


def leaks(texts: Iterable[str], secrets: list[str]) -> list[str]:
    """Each secret found verbatim (case-insensitive) and each hash prefix of one."""
    prefixes = digest_prefixes(secrets)
    lowered = [s.lower() for s in secrets]
    found: list[str] = []
    for text in texts:
        low = text.lower()
        found += [f"{s!r} in {text[:100]!r}" for s, s_low in zip(secrets, lowered, strict=True)
                  if s_low in low]
        for run in HEX_RUN.findall(low):
            found += [f"{what}[:{PREFIX}] in {text[:100]!r}" for start in range(len(run) - 7)
                      if (what := prefixes.get(run[start:start + PREFIX]))]
    return found
