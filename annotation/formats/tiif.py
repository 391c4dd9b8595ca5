"""Importer for the public TIIF-Bench layout (prompts, yes/no checklists, judge outputs).

Layout read (every path relative to the folder given to :func:`read`)::

    data/test_prompts/<dim>_prompts.jsonl              type, short_description, long_description
    data/test_eval_prompts/<dim>_eval_prompts.jsonl    type, yn_question_list, yn_answer_list
    data/testmini_prompts/..., data/testmini_eval_prompts/...   (same, a subset)
    eval-results/**/<prefix>_<Judge>/<model>/<dim>/{short,long}/<line_idx>.json
    output/<dim>/<model>/{short,long}_description/<line_idx>.{png,jpg,jpeg,webp}   (optional)

Prompt and eval files pair line by line (row ``i`` of one is row ``i`` of the other).

Records produced:

* one :class:`Task` per prompt and variant, ``<dim>/<line_idx>/short`` and
  ``<dim>/<line_idx>/long``, where ``line_idx`` is the row index in the **full test** file
  (the index the judge result files use, even for testmini results). Both variants share
  one checklist, ``<dim>/<line_idx>``, whose questions are ``<dim>/<line_idx>/q<k>``
  (``k`` from 0, in list order), text stripped, ``pass_answer`` = expected answer
  lowercased. Task meta: ``dimension``, ``variant``, ``line_idx``, ``splits`` (the splits
  known to hold the prompt) and ``corrspond_idx`` when the eval row has one.
* one :class:`Judge` (kind ``"vlm"``) per judge folder; its name is the folder name after
  ``eval_results_`` (``testmini_subset_eval_results_GPT-4o`` -> ``GPT-4o``).
* one :class:`Output` ``<dim>/<line_idx>/<variant>/<model>`` per generator and task. Its
  ``path`` is the generated image, relative to the images folder (``images`` or
  ``<root>/output``), looked up as ``<dim>/<model>/<variant>_description/<line_idx>.*``;
  ``None`` when the image is not at hand. A generator with neither a result file (in any
  judge folder) nor an image for a task gets a ``missing`` output and a warning, on the
  prompts some generator has a result or an image for (other prompts get no outputs).
* one :class:`Judgment` per result file and question: ``answer`` is ``model_pred[k]``
  lowercased (``parse_status="unparsed"``, ``answer=None`` and a warning when it is not
  yes/no), ``raw`` is the ``k``-th non-empty line of ``model_output`` (the whole text, with
  a warning, when the line count differs from the question count).

Which prompts are imported (``split``):

* ``"auto"``: when result files exist, exactly the prompts they reference; otherwise
  testmini when ``data/testmini_prompts`` exists, else test.
* ``"test"`` / ``"testmini"``: every prompt of that split. Result files for other prompts
  are skipped with a warning.

Testmini rows are mapped to full-test line indices, never by prompt text (one prompt text
occurs twice in the test files): (1) by ``corrspond_idx`` when every eval row of the
dimension has one (``real_world``), checked against the test row; else (2) by position when
the testmini files are a prefix of the test files; else (3) when result files exist, the
set of line indices they reference for that dimension is accepted as the testmini subset if
it has the right size and the test rows at those indices are, as a multiset, the testmini
rows (a check, not a lookup). ``style`` needs (3). When no rule applies, the rows of that
dimension are skipped with a warning (``split="testmini"``) or their testmini membership
is reported as unknown (``split="test"``). The full test files are always required.

Errors are collected as :class:`Problem` (file relative to the root, 1-based line for
``.jsonl`` files, ``None`` for ``.json`` files) and raised together as
:class:`ImportRefused` (at most 20).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.formats.images import BadImage, BadPath, ImageProber, resolve_inside
from annotation.records import (
    NOT_UTF8,
    Judge,
    Judgment,
    Output,
    Problems,
    ProjectData,
    Question,
    Task,
    undecodable,
)
from annotation.store import guard

FORMAT = "tiif-bench"
BENCHMARK = "TIIF-Bench"
SPLITS = ("test", "testmini")
VARIANTS = ("short", "long")
IMAGE_EXTENSIONS = ("png", "jpg", "jpeg", "webp")  # preference order when several exist
RESULTS_DIR = "eval-results"
JUDGE_PREFIX_MARK = "eval_results_"
MAX_UNPARSED_WARNINGS = 50
PROMPT_SUFFIX = "_prompts.jsonl"
EVAL_SUFFIX = "_eval_prompts.jsonl"

GUIDELINES = (
    "TIIF-Bench: each prompt exists in a short and a long form that share one list of "
    "yes/no questions. Answer every question from what you **see** in the generated "
    "image. The expected answer is not always *yes*: some questions pass on *no*."
)


@dataclass
class _Row:
    """One prompt row paired with its eval row."""

    line: int  # 1-based line in the prompt file
    eval_line: int  # 1-based line in the eval file
    short: str
    long: str
    questions: list[str]
    answers: list[str]  # lowercased yes/no
    corrspond_idx: int | None = None


@dataclass
class _Split:
    """The rows of one split, per dimension, and where they came from."""

    rows: dict[str, list[_Row]] = field(default_factory=dict)
    prompt_files: dict[str, str] = field(default_factory=dict)
    eval_files: dict[str, str] = field(default_factory=dict)


@dataclass
class _Result:
    """One judge result file, parsed."""

    judge: str
    model: str
    dim: str
    variant: str
    line_idx: int
    rel: str
    data: dict[str, Any]


class _Collector(Problems):
    """Errors and warnings of one import, and how many judgments were left unparsed."""

    def __init__(self) -> None:
        super().__init__()
        self.unparsed = 0  # judgments left unparsed; only the first MAX_UNPARSED_WARNINGS warn


# --------------------------------------------------------------------------- detection


def _has_prompt_files(root: Path) -> bool:
    for split in SPLITS:
        folder = root / "data" / f"{split}_prompts"
        if folder.is_dir() and any(folder.glob(f"*{PROMPT_SUFFIX}")):
            return True
    return False


def _iter_result_paths(eval_root: Path) -> list[Path]:
    """Every ``<judge>/<model>/<dim>/{short,long}/<n>.json`` under ``eval_root``, sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(eval_root):
        dirnames.sort()
        if os.path.basename(dirpath) not in VARIANTS:
            continue
        for name in filenames:
            if name.endswith(".json"):
                found.append(Path(dirpath) / name)
    found.sort()
    return found


def _has_results(root: Path) -> bool:
    eval_root = root / RESULTS_DIR
    if not eval_root.is_dir():
        return False
    for dirpath, _dirnames, filenames in os.walk(eval_root):
        if os.path.basename(dirpath) in VARIANTS and any(f.endswith(".json") for f in filenames):
            return True
    return False


def detect(root: Path) -> bool:
    """True if ``root`` looks like a TIIF-Bench checkout (prompt files or judge results)."""
    root = Path(root)
    if not root.is_dir():
        return False
    return _has_prompt_files(root) or _has_results(root)


# --------------------------------------------------------------------------- data files


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _read_jsonl(path: Path, rel: str, out: _Collector) -> list[tuple[int, Any]] | None:
    """``(line number, object)`` per non-blank line; ``None`` if any line is unreadable."""
    protected = guard.file_problem(path)
    if protected is not None:
        out.add(rel, None, None, protected)
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.add(rel, None, None, f"cannot read file ({exc})")
        return None
    rows: list[tuple[int, Any]] = []
    ok = True
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            out.add(rel, number, None, f"invalid JSON ({exc.msg}, column {exc.colno})")
            ok = False
    return rows if ok else None


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _read_dimension(
    root: Path, split: str, dim: str, prompt_path: Path, out: _Collector
) -> tuple[list[_Row] | None, str, str]:
    """Read and pair the prompt and eval files of one dimension of one split."""
    prompt_rel = _rel(root, prompt_path)
    eval_path = root / "data" / f"{split}_eval_prompts" / f"{dim}{EVAL_SUFFIX}"
    eval_rel = _rel(root, eval_path)
    if not eval_path.is_file():
        out.add(eval_rel, None, None, f"file not found (needed to pair {prompt_rel})")
        return None, prompt_rel, eval_rel
    prompts = _read_jsonl(prompt_path, prompt_rel, out)
    evals = _read_jsonl(eval_path, eval_rel, out)
    if prompts is None or evals is None:
        return None, prompt_rel, eval_rel
    if len(prompts) != len(evals):
        out.add(
            eval_rel,
            None,
            None,
            f"{len(evals)} rows but {prompt_rel} has {len(prompts)}: "
            "the two files must pair line by line",
        )
        return None, prompt_rel, eval_rel
    rows: list[_Row] = []
    ok = True
    for (p_line, prompt), (e_line, ev) in zip(prompts, evals, strict=True):
        row = _check_row(dim, prompt_rel, p_line, prompt, eval_rel, e_line, ev, out)
        if row is None:
            ok = False
        else:
            rows.append(row)
    return (rows if ok else None), prompt_rel, eval_rel


def _check_row(
    dim: str,
    prompt_rel: str,
    p_line: int,
    prompt: Any,
    eval_rel: str,
    e_line: int,
    ev: Any,
    out: _Collector,
) -> _Row | None:
    """Validate one prompt row and its eval row; ``None`` (with errors) if invalid."""
    n_errors = len(out.errors)
    if not isinstance(prompt, dict):
        out.add(prompt_rel, p_line, None, "a row must be a JSON object")
        prompt = {}
    if not isinstance(ev, dict):
        out.add(eval_rel, e_line, None, "a row must be a JSON object")
        ev = {}
    for name in ("short_description", "long_description"):
        value = prompt.get(name)
        if not isinstance(value, str) or not value.strip():
            out.add(prompt_rel, p_line, name, "missing or not a non-empty string")
    for rel, line, row in ((prompt_rel, p_line, prompt), (eval_rel, e_line, ev)):
        if "type" in row and row["type"] != dim:
            out.add(rel, line, "type", f"{row['type']!r} differs from the file's dimension")
    questions = ev.get("yn_question_list")
    answers = ev.get("yn_answer_list")
    if not _is_str_list(questions) or not questions:
        out.add(
            eval_rel, e_line, "yn_question_list", "missing or not a non-empty list of strings"
        )
        questions = None
    if not _is_str_list(answers):
        out.add(eval_rel, e_line, "yn_answer_list", "missing or not a list of strings")
        answers = None
    pass_answers: list[str] = []
    if questions is not None and answers is not None:
        if len(answers) != len(questions):
            out.add(
                eval_rel,
                e_line,
                "yn_answer_list",
                f"{len(answers)} answers for {len(questions)} questions",
            )
        for k, answer in enumerate(answers):
            norm = answer.strip().lower()
            if norm not in ("yes", "no"):
                out.add(eval_rel, e_line, f"yn_answer_list[{k}]", f"{answer!r} is not yes/no")
            pass_answers.append(norm)
        for k, question in enumerate(questions):
            if not question.strip():
                out.add(eval_rel, e_line, f"yn_question_list[{k}]", "empty question")
    corr = ev.get("corrspond_idx")
    if corr is not None and (not isinstance(corr, int) or isinstance(corr, bool) or corr < 0):
        out.add(eval_rel, e_line, "corrspond_idx", f"{corr!r} is not a row index")
        corr = None
    if len(out.errors) > n_errors:
        return None
    return _Row(
        line=p_line,
        eval_line=e_line,
        short=prompt["short_description"],
        long=prompt["long_description"],
        questions=[q.strip() for q in questions or []],
        answers=pass_answers,
        corrspond_idx=corr,
    )


def _read_split(root: Path, split: str, out: _Collector) -> _Split | None:
    """All dimensions of one split, or ``None`` if the split has no prompt folder."""
    folder = root / "data" / f"{split}_prompts"
    if not folder.is_dir():
        return None
    result = _Split()
    for path in sorted(folder.glob(f"*{PROMPT_SUFFIX}")):
        if undecodable(path.name):  # its name becomes the dimension in every id
            out.add(_rel(root, path), None, None, NOT_UTF8)
            continue
        dim = path.name[: -len(PROMPT_SUFFIX)]
        rows, prompt_rel, eval_rel = _read_dimension(root, split, dim, path, out)
        result.prompt_files[dim] = prompt_rel
        result.eval_files[dim] = eval_rel
        if rows is not None:
            result.rows[dim] = rows
    return result


# --------------------------------------------------------------------------- results


def _judge_name(folder: str) -> str:
    if JUDGE_PREFIX_MARK in folder:
        suffix = folder.rsplit(JUDGE_PREFIX_MARK, 1)[1]
        if suffix:
            return suffix
    return folder


def _read_results(root: Path, out: _Collector) -> list[_Result]:
    """Parse every result file under ``eval-results``; shape errors become problems."""
    eval_root = root / RESULTS_DIR
    if not eval_root.is_dir():
        return []
    results: list[_Result] = []
    judge_folders: dict[str, str] = {}
    for path in _iter_result_paths(eval_root):
        rel = _rel(root, path)
        if undecodable(rel):  # its folder names become judge and generator ids
            out.add(rel, None, None, NOT_UTF8)
            continue
        variant_dir = path.parent
        dim_dir = variant_dir.parent
        model_dir = dim_dir.parent
        judge_dir = model_dir.parent
        if len(path.relative_to(eval_root).parts) < 5:
            out.add(rel, None, None, "expected <judge>/<model>/<dim>/<short|long>/<n>.json")
            continue
        stem = path.stem
        if not stem.isdigit():
            out.add(rel, None, None, "file name must be the prompt's line index, e.g. 12.json")
            continue
        judge = _judge_name(judge_dir.name)
        judge_rel = _rel(root, judge_dir)
        if judge_folders.setdefault(judge, judge_rel) != judge_rel:
            out.add(
                rel, None, None, f"judge {judge!r} also named by folder {judge_folders[judge]}"
            )
            continue
        protected = guard.file_problem(path)
        if protected is not None:
            out.add(rel, None, None, protected)
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            out.add(rel, None, None, f"invalid JSON ({exc.msg}, line {exc.lineno})")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            out.add(rel, None, None, f"cannot read file ({exc})")
            continue
        result = _Result(judge, model_dir.name, dim_dir.name, variant_dir.name, int(stem), rel, {})
        if _check_result(result, data, out):
            result.data = data
            results.append(result)
    return results


def _check_result(result: _Result, data: Any, out: _Collector) -> bool:
    """Validate the fields of one result file (not yet against the checklist)."""
    rel = result.rel
    if not isinstance(data, dict):
        out.add(rel, None, None, "must be a JSON object")
        return False
    n_errors = len(out.errors)
    for name in ("questions", "gt_answers", "model_pred"):
        if name not in data:
            out.add(rel, None, name, "missing")
        elif not isinstance(data[name], list):
            out.add(rel, None, name, "must be a list")
    for name in ("questions", "gt_answers"):
        if isinstance(data.get(name), list) and not _is_str_list(data[name]):
            out.add(rel, None, name, "must be a list of strings")
    if "model_output" not in data:
        out.add(rel, None, "model_output", "missing")
    elif not isinstance(data["model_output"], str):
        out.add(rel, None, "model_output", "must be a string")
    expected = {
        "line_idx": result.line_idx,
        "attribute": result.dim,
        "desc": f"{result.variant}_description",
        "jsonl_file": f"{result.dim}{EVAL_SUFFIX}",
    }
    for name, want in expected.items():
        if name in data and data[name] != want:
            out.add(rel, None, name, f"{data[name]!r} does not match the file's place ({want!r})")
    return len(out.errors) == n_errors


# --------------------------------------------------------------------------- testmini mapping


def _row_key(row: _Row) -> tuple[str, str, tuple[str, ...]]:
    return (row.short, row.long, tuple(row.questions))


def _map_testmini(
    dim: str,
    mini: list[_Row],
    test: list[_Row],
    result_idx: set[int],
    mini_split: _Split,
    out: _Collector,
) -> list[int] | None:
    """Full-test line indices of the testmini rows of ``dim`` (see module docstring)."""
    eval_rel = mini_split.eval_files[dim]
    if mini and all(row.corrspond_idx is not None for row in mini):
        indices: list[int] = []
        ok = True
        for row in mini:
            idx = row.corrspond_idx
            assert idx is not None
            if idx >= len(test):
                out.add(
                    eval_rel,
                    row.eval_line,
                    "corrspond_idx",
                    f"{idx} is out of range of the test file",
                )
                ok = False
            elif _row_key(test[idx]) != _row_key(row):
                out.add(
                    eval_rel,
                    row.eval_line,
                    "corrspond_idx",
                    f"test row {idx} holds a different prompt",
                )
                ok = False
            elif idx in indices:
                out.add(eval_rel, row.eval_line, "corrspond_idx", f"{idx} is used twice")
                ok = False
            indices.append(idx)
        return indices if ok else None
    if len(mini) <= len(test) and all(
        _row_key(m) == _row_key(t) for m, t in zip(mini, test, strict=False)
    ):
        return list(range(len(mini)))
    if len(result_idx) == len(mini) and all(i < len(test) for i in result_idx):
        picked = sorted(result_idx)
        if Counter(_row_key(test[i]) for i in picked) == Counter(_row_key(r) for r in mini):
            return picked
    return None


# --------------------------------------------------------------------------- images


def _image_index(images_root: Path, dim: str, model: str, variant: str) -> dict[int, str]:
    """``line_idx -> relative path`` of the images in one ``<dim>/<model>/<variant>`` folder."""
    folder = images_root / dim / model / f"{variant}_description"
    if not folder.is_dir():
        return {}
    best: dict[int, tuple[int, str]] = {}
    for entry in os.scandir(folder):
        stem, dot, ext = entry.name.rpartition(".")
        ext = ext.lower()
        if not dot or not stem.isdigit() or ext not in IMAGE_EXTENSIONS:
            continue
        rank = IMAGE_EXTENSIONS.index(ext)
        idx = int(stem)
        if idx not in best or rank < best[idx][0]:
            best[idx] = (rank, entry.name)
    return {idx: f"{dim}/{model}/{variant}_description/{name}" for idx, (_r, name) in best.items()}


def _image_models(images_root: Path | None, dims: set[str], out: _Collector) -> set[str]:
    """The generators with an image folder (``<images>/<dim>/<model>``); a folder name
    that is not UTF-8 is reported, not taken as an id."""
    if images_root is None:
        return set()
    models: set[str] = set()
    for dim in dims:
        folder = images_root / dim
        if folder.is_dir():
            for entry in os.scandir(folder):
                if not entry.is_dir():
                    continue
                if undecodable(entry.name):
                    out.add(str(images_root / dim / entry.name), None, None, NOT_UTF8)
                    continue
                models.add(entry.name)
    return models


# --------------------------------------------------------------------------- read


def _select_prompts(
    split: str,
    test: _Split,
    mini: _Split | None,
    results: list[_Result],
    membership: dict[str, list[int] | None],
    out: _Collector,
) -> tuple[str, list[tuple[str, int]]]:
    """The split actually used and the ``(dim, line_idx)`` pairs to import."""
    if split == "auto":
        if results:
            pairs = sorted({(r.dim, r.line_idx) for r in results})
            return "results", pairs
        split = "testmini" if mini is not None else "test"
    if split == "test":
        return "test", [(dim, i) for dim in sorted(test.rows) for i in range(len(test.rows[dim]))]
    assert mini is not None
    pairs = []
    for dim in sorted(mini.rows):
        indices = membership.get(dim)
        if indices is None:
            out.warn(
                mini.prompt_files[dim],
                None,
                None,
                f"{len(mini.rows[dim])} rows skipped: their line index in the full test file is "
                "unknown (not a prefix of it, no corrspond_idx, no result files naming them); "
                "prompts are never matched by text. Import with split='test' or with results.",
            )
            continue
        pairs.extend((dim, i) for i in sorted(indices))
    return "testmini", pairs


def read(root: Path, *, split: str = "auto", images: Path | None = None) -> ProjectData:
    """Read a TIIF-Bench checkout into :class:`ProjectData` (see the module docstring)."""
    if split not in ("auto", *SPLITS):
        raise ValueError(f"split must be 'auto', 'test' or 'testmini', not {split!r}")
    root = Path(root)
    out = _Collector()

    test = _read_split(root, "test", out)
    mini = _read_split(root, "testmini", out)
    results = _read_results(root, out)
    if test is None:
        out.add(
            "data/test_prompts",
            None,
            None,
            "folder not found: task ids use the line indices of the full test files",
        )
    if split == "testmini" and mini is None:
        out.add("data/testmini_prompts", None, None, "folder not found (split='testmini')")
    out.raise_if_any()
    assert test is not None  # a missing test folder was refused above

    # Results must point at existing test rows and agree with their checklists.
    valid: list[_Result] = []
    for res in results:
        rows = test.rows.get(res.dim)
        if rows is None:
            out.add(res.rel, None, "attribute", f"unknown dimension {res.dim!r}")
        elif res.line_idx >= len(rows):
            out.add(
                res.rel,
                None,
                "line_idx",
                f"{res.line_idx} is out of range of {test.prompt_files[res.dim]} "
                f"({len(rows)} rows)",
            )
        elif _check_against_checklist(res, rows[res.line_idx], out):
            valid.append(res)
    results = valid

    result_idx: dict[str, set[int]] = defaultdict(set)
    for res in results:
        result_idx[res.dim].add(res.line_idx)
    membership: dict[str, list[int] | None] = {}
    if mini is not None:
        for dim, mini_rows in mini.rows.items():
            if dim not in test.rows:
                out.add(mini.prompt_files[dim], None, None, "no test file for this dimension")
                continue
            membership[dim] = _map_testmini(
                dim, mini_rows, test.rows[dim], result_idx[dim], mini, out
            )
    out.raise_if_any()

    used, pairs = _select_prompts(split, test, mini, results, membership, out)
    if mini is not None and used != "testmini":
        for dim in sorted({d for d, _i in pairs}):
            if dim in mini.rows and membership.get(dim) is None:
                out.warn(
                    mini.prompt_files[dim],
                    None,
                    None,
                    "testmini membership unknown for this dimension (rows not mapped to the "
                    "test file); tasks carry splits=['test'] only",
                )
    mini_sets = {dim: set(ix) for dim, ix in membership.items() if ix is not None}

    data = ProjectData(
        name=f"{BENCHMARK} ({'testmini results' if used == 'results' else used})",
        benchmark=BENCHMARK,
        source=str(root),
        format=FORMAT,
        guidelines=GUIDELINES,
        meta={"split": split, "selected": used},
    )
    selected = set(pairs)
    for dim, idx in pairs:
        row = test.rows[dim][idx]
        checklist_id = f"{dim}/{idx}"
        splits = ["test"] + (["testmini"] if idx in mini_sets.get(dim, set()) else [])
        for variant in VARIANTS:
            meta: dict[str, Any] = {
                "dimension": dim,
                "variant": variant,
                "line_idx": idx,
                "splits": splits,
            }
            if row.corrspond_idx is not None:
                meta["corrspond_idx"] = row.corrspond_idx
            data.tasks.append(
                Task(
                    task_id=f"{checklist_id}/{variant}",
                    instruction=row.short if variant == "short" else row.long,
                    checklist_id=checklist_id,
                    meta=meta,
                    origin=(test.prompt_files[dim], row.line),
                )
            )
        for k, (text, answer) in enumerate(zip(row.questions, row.answers, strict=True)):
            data.questions.append(
                Question(
                    question_id=f"{checklist_id}/q{k}",
                    checklist_id=checklist_id,
                    position=k,
                    text=text,
                    pass_answer=answer,
                    origin=(test.eval_files[dim], row.eval_line),
                )
            )

    kept = [r for r in results if (r.dim, r.line_idx) in selected]
    skipped = Counter(r.judge for r in results if (r.dim, r.line_idx) not in selected)
    for judge, count in sorted(skipped.items()):
        out.warn(RESULTS_DIR, None, None, f"{judge}: {count} result files skipped: not in {used}")

    images_root = _images_root(root, images, out)
    _build_outputs(data, kept, pairs, images_root, root, out)
    out.raise_if_any()
    judge_folders = {r.judge: r.rel.rsplit("/", 4)[0] for r in kept}
    data.judges = [
        Judge(name=name, kind="vlm", origin=(folder, None))
        for name, folder in sorted(judge_folders.items())
    ]
    for res in kept:
        _add_judgments(data, res, test.rows[res.dim][res.line_idx], out)
    if out.unparsed > MAX_UNPARSED_WARNINGS:
        extra = out.unparsed - MAX_UNPARSED_WARNINGS
        out.warn(RESULTS_DIR, None, None, f"{extra} more judgments left unparsed")
    data.meta["images_root"] = None if images_root is None else str(images_root)
    data.warnings = out.warnings
    return data


def _check_against_checklist(res: _Result, row: _Row, out: _Collector) -> bool:
    """The result's questions and expected answers must be the test row's checklist."""
    questions = [q.strip() for q in res.data["questions"]]
    ok = True
    if questions != row.questions:
        out.add(
            res.rel,
            None,
            "questions",
            f"differ from the checklist of test row {res.line_idx} of {res.dim}",
        )
        ok = False
    gt = [a.strip().lower() for a in res.data["gt_answers"]]
    if gt != row.answers:
        out.add(
            res.rel,
            None,
            "gt_answers",
            f"{res.data['gt_answers']!r} differ from the expected answers {row.answers!r}",
        )
        ok = False
    return ok


def _images_root(root: Path, images: Path | None, out: _Collector) -> Path | None:
    if images is None:
        candidate = root / "output"
        return candidate if candidate.is_dir() else None
    images = Path(images)
    if not images.is_dir():
        out.add(str(images), None, None, "images folder not found")
        return None
    return images


def _build_outputs(
    data: ProjectData,
    results: list[_Result],
    pairs: list[tuple[str, int]],
    images_root: Path | None,
    root: Path,
    out: _Collector,
) -> None:
    """One output per generator and covered task: linked image, judged only, or missing.

    A prompt is covered when at least one generator has a result file or an image for one
    of its variants; on both tasks of a covered prompt, a generator with neither gets a
    ``missing`` output (and a warning). Tasks of uncovered prompts (e.g. test prompts
    nobody generated for) get no output at all.
    """
    judged: dict[tuple[str, str], str] = {}  # (model, task_id) -> first result file
    for r in results:
        judged.setdefault((r.model, f"{r.dim}/{r.line_idx}/{r.variant}"), r.rel)
    dims = {dim for dim, _i in pairs}
    generators = sorted({r.model for r in results} | _image_models(images_root, dims, out))
    task_ids = [f"{dim}/{idx}/{variant}" for dim, idx in pairs for variant in VARIANTS]
    found: dict[tuple[str, str], str] = {}  # (model, task_id) -> image path (images root)
    if images_root is not None:
        for model in generators:
            for dim in sorted(dims):
                for variant in VARIANTS:
                    for idx, rel in _image_index(images_root, dim, model, variant).items():
                        found[model, f"{dim}/{idx}/{variant}"] = rel
    covered = {task.rsplit("/", 1)[0] for _m, task in [*judged, *found]}
    prober = ImageProber()
    for model in generators:
        for task_id in task_ids:
            if task_id.rsplit("/", 1)[0] not in covered:
                continue
            output_id = f"{task_id}/{model}"
            rel_image = found.get((model, task_id))
            if rel_image is not None and images_root is not None:
                try:
                    file = prober(resolve_inside(images_root, rel_image))
                except (BadPath, BadImage) as exc:
                    out.add(_rel(root, images_root / rel_image), None, "path", str(exc))
                    continue
                origin = (_rel(root, images_root / rel_image), None)
                data.outputs.append(
                    Output(output_id, task_id, model, rel_image, file=file, origin=origin)
                )
            elif (model, task_id) in judged:
                origin = (judged[model, task_id], None)
                data.outputs.append(Output(output_id, task_id, model, None, origin=origin))
            else:
                data.outputs.append(
                    Output(
                        output_id, task_id, model, None, missing=True, origin=(RESULTS_DIR, None)
                    )
                )
                out.warn(
                    RESULTS_DIR,
                    None,
                    None,
                    f"{model}: no result file and no image for {task_id}: output missing",
                )


def _add_judgments(data: ProjectData, res: _Result, row: _Row, out: _Collector) -> None:
    """One judgment per question of the result file."""
    n = len(row.questions)
    preds = res.data["model_pred"]
    text: str = res.data["model_output"]
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != n:
        out.warn(
            res.rel,
            None,
            "model_output",
            f"{len(lines)} non-empty lines for {n} questions: each judgment keeps the whole text",
        )
    if len(preds) != n:
        out.warn(
            res.rel,
            None,
            "model_pred",
            f"{len(preds)} answers for {n} questions: all left unparsed",
        )
    output_id = f"{res.dim}/{res.line_idx}/{res.variant}/{res.model}"
    for k in range(n):
        raw = lines[k] if len(lines) == n else text
        answer: str | None = None
        if len(preds) == n and isinstance(preds[k], str):
            answer = preds[k].strip().lower()
        status = "ok"
        if answer not in ("yes", "no"):
            out.unparsed += 1
            if len(preds) == n and out.unparsed <= MAX_UNPARSED_WARNINGS:
                out.warn(res.rel, None, f"model_pred[{k}]", f"{preds[k]!r} is not yes/no: unparsed")
            answer = None
            status = "unparsed"
        data.judgments.append(
            Judgment(
                judge=res.judge,
                output_id=output_id,
                question_id=f"{res.dim}/{res.line_idx}/q{k}",
                answer=answer,
                raw=raw,
                parse_status=status,
                origin=(res.rel, None),
            )
        )
