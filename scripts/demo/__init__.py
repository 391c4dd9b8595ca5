"""A synthetic, deterministic demo bundle: VIF-Bench style tasks with TRACE-style checklists.

:func:`build` writes a complete bundle (``docs/bundle-format.md``) so every page of the app
has something real to show without any download: ten multi-reference tasks with drawn
reference images and visual instructions (:mod:`annotation.vif.draw`), outputs of three
generators with deliberate flaws, the scores and yes/no answers of three VLM judges (with
VIF-style raw text) and the answers of three human annotators, including corrected answers,
with their conflict verifications and tree reviews (:mod:`scripts.demo.work`).

One task (``demo-10``, :data:`scripts.demo.trees.TREE_TASK`) carries a TRACE-Bench
diagnostic tree (``meta.tree_nodes``): every generator has an output per node
(``meta.node``), drawn to show what the node keeps, and gpt-5 answers each node's retained
questions, with two mistakes for a reviewer to catch. The designed localizations are
described in :mod:`scripts.demo.trees`.

Every reference carries VIF-Bench conflict pre-labels (``meta.prelabel``: yaw and its
reliability, ``light_distinctive``, ``wind_responsive``, ``pose_distinctive``, ``notes``,
``source``), and every task its published labels ``meta.conflicts``, computed with the
rules of :mod:`annotation.vif.conflicts` from those pre-labels, as the benchmark's pipeline
did. Together the tasks make every rule fire, with the borderline cases of Appendix C.4 of
"VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image Generation"
(see :data:`scripts.demo.spec.SUBJECTS` and the tasks ``demo-07`` to ``demo-09``). Two
pre-labels are wrong on purpose, so a verifier has something to correct
(:data:`scripts.demo.spec.WRONG_PRELABELS`).

Everything is synthetic. Each output has hidden "true" scores derived from the flaws drawn
into it (``meta.defects`` names them); judges and annotators see that truth through seeded
noise, biases and occasionally missed flaws, so agreement statistics are plausible but
not perfect. The build is byte-for-byte deterministic: fixed seeds
(:class:`random.Random` only), JSON with sorted keys, PNGs without metadata.

The builder is not part of the product (nothing under ``annotation/`` imports it); its
output, the committed ``data/demo`` folder, is. It also writes the demo's accounts
(``data/demo/accounts.json``, from :data:`scripts.demo.spec.ACCOUNTS`), which
:func:`annotation.project_files.build_demo_db` creates in the demo database. Rebuild with
``python scripts/make_demo.py``; ``tests/test_demo.py`` checks that ``data/demo`` equals a
fresh build.

Modules, by what they do: :mod:`~scripts.demo.spec` (tasks, checklists, criteria,
accounts), :mod:`~scripts.demo.drawing` (sprites, references, scenes),
:mod:`~scripts.demo.outputs` (the generators' outputs), :mod:`~scripts.demo.truth` (the
hidden truth, judges and annotators), :mod:`~scripts.demo.trees` (the diagnostic tree),
:mod:`~scripts.demo.work` (the verifications, tree reviews, submissions and visits),
:mod:`~scripts.demo.pairs` (the pairs and rankings of issue #17, with their judge and
human answers), :mod:`~scripts.demo.writer` (the files).
"""

from __future__ import annotations

from scripts.demo.writer import build_demo_bundle

build = build_demo_bundle

__all__ = ["build", "build_demo_bundle"]
