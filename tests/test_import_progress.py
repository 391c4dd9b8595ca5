"""Big imports (issue #18, item 2): progress per record, and the fast JSONL reader.

The reader (:mod:`annotation.formats.jsonl`) is checked against the standard library's
``json.loads`` line by line (the reference): a line it parses must give what
``json.loads`` gives, and every other line must come back as its exact bytes for the
careful reading, which reports it as before.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from annotation.cli import main
from annotation.formats import importers, jsonl
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store

JUDGES = ("j1", "j2")


def write_bundle(root: Path, n_outputs: int = 250, questions: int = 5) -> int:
    """A bundle of ``n_outputs`` outputs x 2 judges x ``questions`` questions; returns the
    number of judgments."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "progress", "benchmark": "synthetic", "criteria": [],
        "judges": [{"name": j, "kind": "vlm"} for j in JUDGES]}))
    qs = [{"question_id": f"q{k}", "text": f"Is {k} there?", "pass_answer": "yes"}
          for k in range(questions)]
    (root / "tasks.jsonl").write_text(json.dumps(
        {"task_id": "t", "instruction": "Draw.", "questions": qs}) + "\n")
    with (root / "outputs.jsonl").open("w") as outs, \
            (root / "judgments.jsonl").open("w") as judg:
        n = 0
        for o in range(n_outputs):
            outs.write(json.dumps({"output_id": f"o{o}", "task_id": "t", "generator": f"g{o}",
                                   "path": None}) + "\n")
            for judge in JUDGES:
                for q in qs:
                    judg.write(json.dumps({"judge": judge, "output_id": f"o{o}",
                                           "question_id": q["question_id"],
                                           "answer": "yes" if (o + n) % 3 else "no"}) + "\n")
                    n += 1
    return n


def test_record_progress_reports_each_file_and_the_judgments_written(tmp_path, engine_db):
    n = write_bundle(tmp_path / "b")
    assert n == 2500
    calls: list[tuple[str, int, int]] = []
    stages: list[int] = []
    with Store.open(engine_db) as store:
        summary = import_path(store, tmp_path / "b", progress=stages.append,
                              record_progress=lambda *call: calls.append(call))
        assert store.counts()["judgments"] == n
    assert summary.written["judgments"] == n
    assert stages == [1, 1, 1]  # the three stages, as before
    read = [(done, total) for what, done, total in calls if what == "judgments.jsonl"]
    assert read == [(0, n), (1000, n), (2000, n), (n, n)]
    assert [c for c in calls if c[0] == "outputs.jsonl"] == [("outputs.jsonl", 0, 250),
                                                             ("outputs.jsonl", 250, 250)]
    assert calls[-1] == ("judgments", n, n)  # written, last
    assert {what for what, _, _ in calls} == {"tasks.jsonl", "outputs.jsonl",
                                             "judgments.jsonl", "judgments"}


def test_a_refused_import_with_progress_writes_nothing(tmp_path, engine_db):
    write_bundle(tmp_path / "b", n_outputs=3)
    with (tmp_path / "b" / "judgments.jsonl").open("a") as fh:
        fh.write('{"judge": "j1", "output_id": "o9", "question_id": "q0", "answer": "yes"}\n')
    calls: list[tuple[str, int, int]] = []
    with Store.open(engine_db) as store:
        with pytest.raises(ImportRefused) as refused:
            import_path(store, tmp_path / "b", record_progress=lambda *c: calls.append(c))
        assert store.counts()["judgments"] == 0
    assert str(refused.value.problems[0]) == (
        "judgments.jsonl:31: output_id: unknown output 'o9'")
    assert ("judgments.jsonl", 31, 31) in calls
    assert not any(what == "judgments" for what, _, _ in calls)  # nothing was written


def test_cli_progress_only_when_asked_or_on_a_terminal(tmp_path, capsys, make_engine_db):
    n = write_bundle(tmp_path / "b")
    assert main(["import", str(tmp_path / "b"), "--db", make_engine_db("a.db")]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # stderr is not a terminal here: scripts see no bar
    assert "judgments 2500" in captured.out
    assert main(["import", str(tmp_path / "b"), "--db", make_engine_db("b.db"), "--quiet",
                 "--progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"judgments.jsonl {n:,} / {n:,}" in captured.err
    assert f"judgments {n:,} / {n:,}" in captured.err  # the rows written
    assert "import: checking" in captured.err


# ------------------------------------------------------------------ the fast reader
def _scan_lines(fh):
    """The lines of :func:`annotation.formats.jsonl.scan_blocks` one at a time:
    ``(line number, object, None)`` or ``(line number, None, raw bytes)``."""
    for number, objects, raw in jsonl.scan_blocks(fh):
        if objects is None:
            yield number, None, raw
        else:
            for k, obj in enumerate(objects):
                yield number + k, obj, None


LINES = [
    b'{"a": 1, "b": [1, 2.5, {"c": null}], "d": "text"}\n',
    b"\n",  # blank
    b"   \n",  # blank with spaces
    b' {"a": 1}\n',  # a space before the object
    b'{"a": 1} \n',  # a space after it
    b'{"a": 1}\r\n',  # a CRLF line end
    b'{"a": NaN}\n',  # a non-finite number: read carefully, refused there
    b'{"a": -Infinity}\n',
    b'{"a": "\\ud800"}\n',  # a lone surrogate escape
    b'{"a": "\\u00e9t\\u00e9 \\ud83d\\ude00"}\n',  # escapes, a valid pair
    '{"a": "été"}\n'.encode(),  # UTF-8 text
    b'[1, 2]\n',  # not an object
    b'"text"\n',
    b'{"a": 1}{"b": 2}\n',  # two values on a line
    b'{"a":\n',  # an object cut over two lines: invalid on each
    b'1}\n',
    b'{"a": 1e999}\n',  # overflows to inf: parsed as json.loads does
    b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",  # deep nesting
    b'{"long": "' + b"x" * 150_000 + b'"}\n',  # over CAREFUL_LENGTH
    b'{"a": 123456789012345678901234567890}\n',  # an int over 64 bits (orjson: a float)
    b'{"a": -9223372036854775809, "b": 18446744073709551615}\n',
    b'{"a": ' + b"[" * 1010 + b"]" * 1010 + b"}\n",  # too deep for json, not for orjson
    b'{"a": ' + b"[" * 600 + b"]" * 600 + b"}\n",  # deep, and json reads it
    b'{"a": 0.30000000000000004441, "b": 5e-324, "c": -0.0, "d": 1E5}\n',
    b'{"a": 1, "a": 2, "b": 3}\n',  # a repeated key: the last value, the first place
    b'{"a": 2}',  # the last line, without a newline
]
#: lines no fast path may take: the careful reading refuses them or reads them otherwise
CAREFUL_ONLY = {2, 3, 7, 8, 9, 12, 13, 14, 15, 16, 18, 19, 22}


def _reference(raw: bytes):
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None


def _exact(value) -> str:
    """``value`` as text that tells 1 from 1.0 and keeps the keys' order (== does not)."""
    return json.dumps(value)


def _check_scan(lines: list[bytes]) -> set[int]:
    """Scan ``lines`` and check every one against ``json.loads``; return the fast ones."""
    seen = list(_scan_lines(io.BytesIO(b"".join(lines))))
    assert [number for number, _, _ in seen] == list(range(1, len(lines) + 1))
    for (number, obj, raw), line in zip(seen, lines, strict=True):
        if obj is not None:
            assert raw is None
            expected = _reference(line)
            assert isinstance(expected, dict), number
            assert _exact(obj) == _exact(expected), number
        else:
            assert raw == line, number
    return {number for number, obj, _ in seen if obj is not None}


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_fast_lines_parse_as_json_loads_and_the_rest_come_back_raw(block, monkeypatch):
    monkeypatch.setattr(jsonl, "BLOCK_BYTES", block)
    fast = _check_scan(LINES)
    assert not fast & CAREFUL_ONLY
    assert {1, 11, 17, 20, 21, 23, 24, 25, 26} <= fast


def test_a_plain_block_is_read_at_once_and_a_doubtful_one_line_by_line():
    plain = b"".join(json.dumps({"judge": "j", "output_id": f"o{k}", "answer": "yes",
                                 "score": k / 7, "n": -k}).encode() + b"\n"
                     for k in range(500))
    assert jsonl.parse_block(plain) == [json.loads(line) for line in plain.splitlines()]
    for doubt in (b'{"id": 12345678901234567890}\n',  # 20 digits: maybe over 64 bits
                  b'{"a": ' + b"[" * 600 + b"]" * 600 + b"}\n",  # deep enough to count
                  b'{"a": NaN}\n', b"\n", b"[1]\n", b'{"a": "\\udc00"}\n', b'{"a": 1}{}\n'):
        assert jsonl.parse_block(plain + doubt) is None, doubt
        assert _check_scan([*plain.splitlines(keepends=True), doubt])  # line by line: right


_json_texts = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 25), max_value=10 ** 25)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8).map(json.dumps)
_noise = st.sampled_from([
    "", " ", "\r", "NaN", "Infinity", "1e999", "-0", "00", "1.", "\\ud800", "\\udfff",
    "\\ud83d\\ude00", "\\u0000", "\t", "\x0c", "}", "{", ",", '"', "é", "\ufeff",
    "12345678901234567890", "0.1000000000000000055511151231257827", "[" * 30 + "]" * 30])


@st.composite
def _lines(draw) -> bytes:
    """One line: a JSON object as ``json.dumps`` writes it, or one spoiled at a random
    place by a piece of text that one parser or the other reads differently."""
    text = "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in draw(st.lists(
        st.tuples(st.text(max_size=4), _json_texts), max_size=4))) + "}"
    if draw(st.booleans()):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:at] + draw(_noise) + text[at:]
    return text.encode("utf-8", "surrogatepass") + b"\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines(), min_size=1, max_size=12), st.sampled_from([16, 80, 1 << 20]))
def test_generated_lines_read_fast_are_read_as_json_loads_reads_them(lines, block):
    """Differential test of both fast paths against ``json.loads`` (the reference)."""
    old = jsonl.BLOCK_BYTES
    jsonl.BLOCK_BYTES = block
    try:
        _check_scan(lines)
    finally:
        jsonl.BLOCK_BYTES = old


def test_a_block_that_is_not_utf8_comes_back_raw_line_by_line():
    data = b'{"a": 1}\n{"b": "\xff"}\n{"c": 3}\n'
    seen = list(_scan_lines(io.BytesIO(data)))
    assert seen == [(1, None, b'{"a": 1}\n'), (2, None, b'{"b": "\xff"}\n'),
                    (3, None, b'{"c": 3}\n')]
    assert jsonl.count_lines(io.BytesIO(data)) == 3
    assert jsonl.count_lines(io.BytesIO(data + b"{}")) == 4
    assert jsonl.count_lines(io.BytesIO(b"")) == 0


def test_careful_lines_are_reported_as_before(tmp_path, engine_db):
    """Lines the fast path leaves are refused with their line and field, as before."""
    write_bundle(tmp_path / "b", n_outputs=1, questions=1)
    path = tmp_path / "b" / "judgments.jsonl"
    good = path.read_text().splitlines()
    path.write_text("\n".join([
        good[0],
        '{"judge": "j2", "output_id": "o0", "question_id": "q0", "answer": NaN}',
        "",
        '{"judge": "j2", "output_id": "o0", "question_id": "q0", "raw": "\\udc00"}',
        "[1]",
        '{"judge": "j2",',
    ]) + "\n")
    with Store.open(engine_db) as store:
        with pytest.raises(ImportRefused) as refused:
            import_path(store, tmp_path / "b")
        assert store.counts()["judgments"] == 0
    assert [str(p) for p in refused.value.problems] == [
        "judgments.jsonl:2: answer: NaN is not allowed (numbers must be finite)",
        "judgments.jsonl:4: raw: contains a lone surrogate U+DC00 (a \\udc00 escape without "
        "its pair): not valid Unicode text",
        "judgments.jsonl:5: each line must be a JSON object, not a list",
        "judgments.jsonl:6: invalid JSON: Expecting property name enclosed in double quotes: "
        "line 2 column 1 (char 16)",
    ]  # the same as before the fast reader (checked against the code of 318886b)
    with Store.open(engine_db) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM imports").fetchone() == (0,)


def test_the_collector_is_paused_during_an_import_and_back_after(tmp_path, engine_db):
    import gc

    write_bundle(tmp_path / "b", n_outputs=3)
    during: list[bool] = []
    assert gc.isenabled()
    with Store.open(engine_db) as store:
        import_path(store, tmp_path / "b", record_progress=lambda *c: during.append(
            gc.isenabled()))
        assert gc.isenabled()
        with (tmp_path / "b" / "outputs.jsonl").open("a") as fh:
            fh.write("not json\n")
        with pytest.raises(ImportRefused):
            import_path(store, tmp_path / "b", record_progress=lambda *c: during.append(
                gc.isenabled()))
    assert during and not any(during)
    assert gc.isenabled()  # on again after a refused import too


def test_the_records_are_freed_before_the_collector_is_back_on(tmp_path, engine_db,
                                                               monkeypatch):
    """The import pauses Python's cyclic collector; when it turns it back on, no record of
    the import may still be alive, else the collector's first pass walks every one of them
    (100,000 judgments: a pass of 30-90 ms, measured with ``gc.callbacks``) just before
    they are freed anyway."""
    import gc

    from annotation.records import Judgment

    write_bundle(tmp_path / "b", n_outputs=100, questions=5)
    alive: list[int] = []
    enable = gc.enable

    def counting_enable() -> None:
        alive.append(sum(type(o) is Judgment for o in gc.get_objects()))
        enable()

    assert gc.isenabled()
    before = sum(type(o) is Judgment for o in gc.get_objects())  # other tests' records
    monkeypatch.setattr(gc, "enable", counting_enable)
    with Store.open(engine_db) as store:
        summary = import_path(store, tmp_path / "b")
    assert summary.written["judgments"] == 1000
    assert [n - before for n in alive] == [0]
    assert gc.isenabled()


# ------------------------------------------------------------------ questions read at once
_field = st.one_of(st.none(), st.sampled_from(["", " ", "\t", "a\x00b", "yes", "no", "Yes",
                                               "q1", " is it red? "]),
                   st.text(max_size=6), st.integers(-3, 3), st.booleans(),
                   st.lists(st.one_of(st.text(max_size=3), st.integers(0, 3)), max_size=3),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_question_keys = st.sampled_from(["question_id", "text", "pass_answer", "operator", "target",
                                  "depends_on", "meta", "extra"])


_plain_question = st.fixed_dictionaries(
    {"question_id": st.sampled_from(["q1", "3"]), "text": st.just("Is it red?"),
     "pass_answer": st.sampled_from(["yes", "no"])},
    optional={"operator": st.just("color"), "target": st.just("car"),
              "depends_on": st.just(["q0"]), "meta": st.just({"k": 1})})


@settings(max_examples=500, deadline=None)
@given(_plain_question, st.dictionaries(_question_keys, _field, max_size=2), st.booleans())
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"}, {"question_id": "a\x00b"},
         False)
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"}, {"target": " "}, False)
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"}, {"text": ""}, False)
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"}, {"question_id": 3}, False)
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"}, {"depends_on": [1]}, False)
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"},
         {"meta": {"k": "x" * 1_000_001}}, True)  # a long line: its meta texts measured
@example({"question_id": "q1", "text": "t", "pass_answer": "yes"}, {"pass_answer": "Yes"},
         False)
def test_a_question_read_at_once_is_the_question_every_check_gives(plain, spoiled, long_line):
    """The plain-question path of the task reader against the path with every check (the
    reference, unchanged since before the fast path): the same question, or the same
    problems, for any field values."""
    from annotation.formats import bundle

    results = []
    for read in (bundle._question, bundle._checked_question):
        rd = bundle._Reader()
        rd.long_line = long_line
        question = read(rd, {**plain, **spoiled}, ("tasks.jsonl", 3), "questions[0].", "c1", 0)
        results.append((question, [str(p) for p in rd.errors]))
    assert results[0] == results[1]
    if results[0][0] is not None:
        assert results[0][0].origin == ("tasks.jsonl", 3)


# ------------------------------------------------------------------ an import into a big study
@pytest.mark.parametrize("per_query", [2, 500])
def test_an_import_reads_only_the_stored_judgments_it_could_repeat(tmp_path, engine_db,
                                                                   per_query, monkeypatch):
    """An import compares its judgments with the stored ones under the same keys only:
    a second bundle of a few outputs must not read every judgment of the study (before:
    every stored judgment as a dict, 2.6 s and 365 MiB for 70 new judgments in a study of
    a million). Identical ones are still recognized, changed ones still refused."""
    n = write_bundle(tmp_path / "big", n_outputs=40)
    with Store.open(engine_db) as store:
        import_path(store, tmp_path / "big")
        assert store.counts()["judgments"] == n
        monkeypatch.setattr(Store, "KEYS_PER_QUERY", per_query)
        with importers.load(tmp_path / "big") as project:
            project.judgments = [j for j in project.judgments
                                 if j.output_id in ("o3", "o7", "o8") and j.judge == "j2"]
            existing = store.existing_rows(project)
        assert set(existing["judgments"]) == {
            ("j2", o, f"q{k}", None) for o in ("o3", "o7", "o8") for k in range(5)}
        assert {row["answer"] for row in existing["judgments"].values()} <= {"yes", "no"}
        # the same bundle again: every judgment recognized as stored, nothing written
        summary = import_path(store, tmp_path / "big")
        assert summary.written["judgments"] == 0 and summary.unchanged["judgments"] == n
        # one answer changed: refused at its line, nothing written
        lines = (tmp_path / "big" / "judgments.jsonl").read_text().splitlines()
        changed = json.loads(lines[-1])
        changed["answer"] = "no" if changed["answer"] == "yes" else "yes"
        lines[-1] = json.dumps(changed)
        (tmp_path / "big" / "judgments.jsonl").write_text("\n".join(lines) + "\n")
        with pytest.raises(ImportRefused) as refused:
            import_path(store, tmp_path / "big")
        assert str(refused.value.problems[0]) == (
            f"judgments.jsonl:{len(lines)}: answer: differs from this judge's answer already "
            "in the database")
        assert store.counts()["judgments"] == n
