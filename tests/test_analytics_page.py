"""The admin analytics page (pages/analytics.py) through AppTest on the demo project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.results import analytics
from annotation.results.report import ReportOptions, build_report
from annotation.results.study import load_study
from annotation.store import Store
from annotation.work.workflow import give_answer
from tests.helpers.apptest import signed_in

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "analytics.py")
N_BOOT = 20

#: the tests on ``served_demo`` run on SQLite and on PostgreSQL (tests/conftest.py)
SERVED_ENGINES = ("sqlite", "postgresql")


@pytest.fixture
def demo_db(served_demo: Path) -> Path:
    return served_demo


def page_as(db: Path, name: str = "admin", role: str = "admin") -> AppTest:
    at = signed_in(PAGE, name, role, db=db, timeout=120)
    at.session_state["an_n_boot"] = N_BOOT  # the number input's value: a small bootstrap
    return at


def vif_shown(at: AppTest):
    """The VIF-style table as displayed (two-level header), by judge."""
    frame = at.dataframe[0].value
    assert frame.columns[0] == ("", "judge")
    return frame.set_index(("", "judge"))


@pytest.mark.slow
def test_page_shows_the_vif_table_with_judges_and_the_human_baseline(demo_db):
    at = page_as(demo_db).run()
    assert not at.exception
    assert at.number_input(key="an_n_boot").value == N_BOOT
    assert [t.label for t in at.tabs] == ["Ratings", "Checklist", "Reliability",
                                          "Judges compared", "Pairwise preferences",
                                          "Disagreements"]
    shown = vif_shown(at)
    with Store.open(demo_db) as store:
        study = load_study(store)
    tables = build_report(study, ReportOptions(n_boot=N_BOOT))
    expected = analytics.vif_view(tables["vif_table"]).set_index("judge")
    assert list(shown.index) == list(expected.index)
    assert analytics.HUMAN_ROW in shown.index and "gpt-5" in shown.index
    labels = dict(zip(study.criteria.name, study.criteria.label, strict=True))
    criterion = "visual_instruction_adherence"
    head = analytics.abbreviate(labels[criterion])
    for judge in ("gpt-5", analytics.HUMAN_ROW):
        assert shown.loc[judge, (head, "PLCC")] == expected.loc[judge, f"{criterion} PLCC"]
        assert shown.loc[judge, (head, "SRCC")] == expected.loc[judge, f"{criterion} SRCC"]
    # the TRACE-style table and a CSV download under every table
    trace = next(df.value for df in at.dataframe if "Agreement" in df.value.columns)
    assert "ensemble (mean of VLM judges)" in set(trace.judge)
    downloads = at.get("download_button")
    assert len(downloads) >= len(at.dataframe)
    # the heat map's cells match the report (criteria reordered with their values)
    heat = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["data"][0]["type"] == "heatmap")["data"][0]
    ratings = tables["ratings"]
    source = ratings[(ratings.group == "all") & (ratings.reference == "human mean")]
    row = list(heat["y"]).index("qwen3-vl")
    col = list(heat["x"]).index(analytics.abbreviate(labels[criterion]))
    value = source[(source.judge == "qwen3-vl") & (source.criterion == criterion)].plcc
    assert heat["z"][row][col] == pytest.approx(value.iloc[0])


@pytest.mark.slow
def test_ci_toggle_and_leave_one_out_reference(demo_db):
    at = page_as(demo_db).run()
    at.toggle(key="an_ci").set_value(True).run()
    assert not at.exception
    shown = vif_shown(at)
    cell = shown.loc["gpt-5", ("Average", "PLCC")]
    assert isinstance(cell, str) and cell.count("[") == 1
    at.radio(key="an_reference").set_value(analytics.LOO_MEAN).run()
    assert not at.exception
    loo = vif_shown(at).loc["gpt-5", ("Average", "PLCC")]
    assert loo != cell


@pytest.mark.slow
def test_drilldown_shows_the_item_and_the_judges_raw_text(demo_db):
    at = page_as(demo_db).run()
    at.selectbox(key="an_dd_judge").set_value("qwen3-vl").run()
    at.selectbox(key="an_dd_target").set_value("visual_quality").run()
    assert not at.exception
    with Store.open(demo_db) as store:
        study = load_study(store)
        judgments = store.judgments_df()
        instruction = dict(store.tasks_df()[["task_id", "instruction"]].itertuples(
            index=False))
    expected = analytics.disagreements(study, "qwen3-vl", "visual_quality", limit=10)
    item = at.selectbox(key="an_dd_item-qwen3-vl-visual_quality")
    assert item.options[0].startswith(expected.output_id.iloc[0])
    assert item.value == expected.output_id.iloc[0]
    table = next(df.value for df in at.dataframe if "gap" in df.value.columns)
    assert list(table.output_id) == list(expected.output_id)
    # choose the second item: its instruction (plain text) and the judge's raw output
    chosen = expected.iloc[1]
    item.set_value(chosen.output_id).run()
    assert not at.exception
    raw = judgments[(judgments.judge == "qwen3-vl") & (judgments.output_id == chosen.output_id)
                    & (judgments.criterion == "visual_quality")].raw.iloc[0]
    assert raw in [c.value for c in at.code]
    assert instruction[chosen.task_id] in [t.value for t in at.text]
    images = at.get("image")  # the output and the inputs of its task
    with Store.open(demo_db) as store:
        n_inputs = len(store.images_df(chosen.task_id))
    assert len(images) == 1 + n_inputs
    side = next(df.value for df in at.dataframe if "human mean" in df.value.columns)
    assert {"judge", "ann1"} <= set(side.columns)

    # the checklist: one raw text per question of the item
    at.selectbox(key="an_dd_target").set_value(analytics.CHECKLIST).run()
    assert not at.exception
    first = analytics.disagreements(study, "qwen3-vl", analytics.CHECKLIST, 10).iloc[0]
    per_question = judgments[(judgments.judge == "qwen3-vl")
                             & (judgments.output_id == first.output_id)
                             & judgments.question_id.notna()].raw
    codes = [c.value for c in at.code]
    assert all(text in codes for text in per_question)


@pytest.mark.slow
def test_page_recomputes_when_an_answer_changes(demo_db):
    at = page_as(demo_db).run()
    before = vif_shown(at).loc["gpt-5", ("Visual Quality", "PLCC")]
    with Store.open(demo_db) as store:
        outputs = load_study(store).human_scores
        for output_id in outputs.output_id.unique()[:4]:
            give_answer(store, "ann1", output_id, criterion="visual_quality", score=1.0)
    at.run()
    assert not at.exception
    assert vif_shown(at).loc["gpt-5", ("Visual Quality", "PLCC")] != before


def test_annotators_are_refused(demo_db):
    at = page_as(demo_db, "ann", "annotator").run()
    assert not at.exception
    assert "admins only" in at.error[0].value
    assert not at.dataframe and not at.tabs


def test_empty_project_says_what_is_missing(engine_db, monkeypatch):
    db = engine_db
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = page_as(db).run()
    assert not at.exception
    assert "No human answers yet" in at.info[0].value
    assert not at.tabs
