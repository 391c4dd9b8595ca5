"""The one rule for "is this output a node of a diagnostic tree".

"TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang et al.
2026), Sec. 3.5 "Diagnostic Tree Analysis" and Appendix C.2, generates one image per node
of a case's decomposition tree. In a judge-audit project a node's image is an ordinary
output of the task whose ``meta.node`` names the node; the root's output (the task's
ordinary output) has no ``meta.node``, or :data:`ROOT`. Node outputs other than the root
are not items of the annotation workflow or of the study: they feed the tree review and
the localization.

Every module that tells node outputs from ordinary ones calls :func:`output_node` and
compares with :data:`ROOT` (the import checks of :mod:`annotation.formats.validate` also
report a ``meta.node`` that is not a node id; here such a value counts as the root).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: the root of every diagnostic tree; root outputs are the task's ordinary outputs
ROOT = "N0"


def output_node(meta: Mapping[str, Any] | str | None) -> str:
    """The tree node an output fills, from its ``meta`` (a mapping, or the stored JSON
    text): ``meta.node`` when it is a non-empty string, else :data:`ROOT`."""
    if isinstance(meta, str):
        if '"node"' not in meta:  # most outputs: no need to parse
            return ROOT
        meta = json.loads(meta)
    node = meta.get("node") if isinstance(meta, Mapping) else None
    return node if isinstance(node, str) and node else ROOT
