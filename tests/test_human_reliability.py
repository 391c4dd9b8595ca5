"""reliability.csv rows, checked against the krippendorff package and the TIFA figures."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from annotation.formats.importers import import_path
from annotation.results.reliability import CHECKLIST, reliability_table
from annotation.results.study import load_study
from annotation.store import Store
from tests.helpers.fixture_bundles import TIFA, write_tifa_bundle


@pytest.mark.skipif(not TIFA.exists(), reason="../shared/fixtures/tifa is not at hand")
def test_tifa_alpha_and_agreement_as_computed_independently(tmp_path, make_engine_db):
    """PUBLISHED.md: alpha 0.7186 (ordinal), 0.6795 (interval); exact agreement 0.5512."""
    with Store.open(make_engine_db("t.db")) as store:
        import_path(store, write_tifa_bundle(tmp_path / "tifa"))
        table = reliability_table(load_study(store), n_boot=200, seed=0)
    row = table[table.criterion == "overall"].iloc[0]
    assert round(row.alpha_ordinal, 4) == 0.7186
    assert round(row.alpha_interval, 4) == 0.6795
    assert round(row.pct_agreement, 4) == 0.5512
    assert row.ci_level == "ordinal"  # the bundle says the criterion is ordinal
    assert row.alpha_lo < row.alpha_ordinal < row.alpha_hi
    assert row.n_items == 800 and row.n_annotators == 2


def test_demo_rows_match_the_krippendorff_package(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = reliability_table(study, n_boot=100, seed=0, by="generator")
    scores = study.human_scores[study.human_scores.criterion == "visual_quality"]
    wide = scores.pivot(index="annotator", columns="output_id", values="score")
    expected = krippendorff.alpha(wide.to_numpy(dtype=float), level_of_measurement="interval")
    row = table[(table.criterion == "visual_quality") & (table.group == "all")].iloc[0]
    assert row.alpha_interval == pytest.approx(expected)
    answers = study.human_answers[study.human_answers.answer != "cant_tell"]
    codes = answers.assign(v=(answers.answer == "yes").astype(float),
                           item=answers.output_id + answers.question_id)
    wide = codes.pivot(index="annotator", columns="item", values="v")
    nominal = krippendorff.alpha(wide.to_numpy(dtype=float), level_of_measurement="nominal")
    check = table[(table.criterion == CHECKLIST) & (table.group == "all")].iloc[0]
    assert check.alpha_nominal == pytest.approx(nominal)
    assert np.isnan(check.icc_a1)  # yes/no answers have no ICC
    assert any(g.startswith("generator=") for g in table.group)
