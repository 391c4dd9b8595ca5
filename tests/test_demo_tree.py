"""The diagnostic tree of the demo project (task demo-10, scripts/demo/trees.py): its nodes are
what annotation.trace.decompose computes, every generator has a drawn output per node, gpt-5's
node answers give the designed automatic localizations, and a demo annotator can review
every tree on the page to the end."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from annotation.project_files import DEMO_BUNDLE
from annotation.store import Store
from annotation.trace import trees
from annotation.trace.decompose import decompose, node_record, retained_questions
from annotation.ui.widget_keys import widget_key
from annotation.work import tree_review as tr
from scripts.demo import spec as demo_spec
from scripts.demo import trees as demo_trees
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.helpers.module_demo import ENGINES, module_demo
from tests.test_annotate_page import all_text

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "trees.py")
TASK = "demo-10"
GENERATORS = ("nano-banana", "gpt-image-1", "qwen-image-edit")
NODES = ("N1", "N2a", "N2b", "N3a1")
STABLE = "Stable Success"
#: gpt-5's automatic localization per generator: instance -> (category, first passing node)
DESIGNED = {
    "nano-banana": {
        "f|f1": (STABLE, "N0"),
        "⊕|f1⊕g1": (STABLE, "N0"),
        "⊕|f1⊕g1, exclusivity": (STABLE, "N0"),
        "f|f2": ("Global Reference", "N1"),  # the neon light recolours the cat
        "g|g_bg": (STABLE, "N0"),
        "C|C, duplication": ("Global Reference", "N1"),  # gpt-5 sees a second cat at N0
    },
    "gpt-image-1": {
        "f|f1": (STABLE, "N0"),
        "⊕|f1⊕g1": (STABLE, "N0"),
        "⊕|f1⊕g1, exclusivity": ("Joint Composition", "N2a"),  # stripes leak onto the cat
        "f|f2": ("Joint Composition", "N2b"),
        "g|g_bg": (STABLE, "N0"),
        "C|C, duplication": (STABLE, "N0"),
    },
    "qwen-image-edit": {
        "f|f1": ("Persistent Failure", None),  # hair and scarf drift at every node
        "⊕|f1⊕g1": ("Joint Composition", "N2a"),  # gpt-5 sees stripes at N2a: none drawn
        "⊕|f1⊕g1, exclusivity": (STABLE, "N0"),
        "f|f2": (STABLE, "N0"),
        "g|g_bg": (STABLE, "N0"),
        "C|C, duplication": (STABLE, "N0"),
    },
}
#: What a careful reviewer answers from the images: instance -> (origin, reason)
REVIEWS = {
    "nano-banana": {
        "f|f2": ("N1", "attribute_mismatch"),
        "C|C, duplication": (tr.NOT_A_FAILURE, None),
    },
    "gpt-image-1": {
        "⊕|f1⊕g1, exclusivity": ("N2a", "source_leakage"),
        "f|f2": ("N2b", "source_leakage"),
    },
    "qwen-image-edit": {
        "f|f1": (tr.PERSISTENT, "identity_inconsistency"),
        "⊕|f1⊕g1": (tr.PERSISTENT, "attribute_mismatch"),
    },
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def bundle() -> dict:
    return {name: read_jsonl(DEMO_BUNDLE / f"{name}.jsonl")
            for name in ("tasks", "outputs", "judgments", "annotations")}


@pytest.fixture(scope="module", params=ENGINES)
def demo_db(request, tmp_path_factory) -> str:
    """The demo project the module's tests share, on SQLite and on PostgreSQL."""
    return module_demo(request, tmp_path_factory, "demo_tree")


# ------------------------------------------------------------------ the bundle
def test_tree_nodes_are_the_decomposition_of_the_formula(bundle):
    task = next(t for t in bundle["tasks"] if t["task_id"] == TASK)
    meta = task["meta"]
    questions = [(q["question_id"], q["operator"], q["target"]) for q in task["questions"]]
    computed = decompose(meta["formula"])
    assert 4 <= len(computed) <= 6
    expected = []
    for node in computed:
        record = node_record(node)
        expected.append({k: record[k] for k in ("id", "parent", "rule", "removed", "formula")}
                        | {"questions": retained_questions(node, questions)})
    written = [{k: v for k, v in n.items() if k != "prompt"} for n in meta["tree_nodes"]]
    assert written == expected
    assert [n["id"] for n in written] == ["N0", "N1", "N2a", "N2b", "N3a1"]
    for node in meta["tree_nodes"]:
        assert set(node) == {"id", "parent", "rule", "removed", "formula", "prompt", "questions"}
        assert 40 < len(node["prompt"]) < 300, node["id"]
        assert node["rule"] is None if node["parent"] is None else 1 <= node["rule"] <= 4
    # every node keeps sensible questions: at least one, the leaves only their own anchor
    kept = {n["id"]: n["questions"] for n in meta["tree_nodes"]}
    assert all(kept.values())
    assert kept["N2b"] == [f"{TASK}.q4"] and kept["N3a1"] == [f"{TASK}.q1"]
    # the project's own tree reader gives the same nodes
    tree = trees.tree_from_meta(TASK, meta, questions)
    assert tree.retained() == kept
    assert [n.rule for n in tree.nodes] == [None, 1, 2, 2, 4]


def test_one_output_per_node_and_generator(bundle):
    outputs = [o for o in bundle["outputs"] if o["task_id"] == TASK]
    roots = [o for o in outputs if "node" not in o.get("meta", {})]
    nodes = [o for o in outputs if "node" in o.get("meta", {})]
    assert sorted(o["generator"] for o in roots) == sorted(GENERATORS)
    assert Counter((o["generator"], o["meta"]["node"]) for o in nodes) == Counter(
        {(g, n): 1 for g in GENERATORS for n in NODES})
    hashes = set()
    for o in nodes:
        assert o["output_id"] == f"{TASK}/{o['generator']}/{o['meta']['node']}"
        assert not o.get("missing") and o["path"]
        with Image.open(DEMO_BUNDLE / o["path"]) as im:
            assert im.format == "PNG" and im.size == (384, 384)
            hashes.add(im.convert("RGB").tobytes())
    assert len(hashes) == len(nodes), "every node image differs from the others"
    node_ids = {o["output_id"] for o in nodes}
    assert not [a for a in bundle["annotations"] if a.get("output_id") in node_ids]


def _drawn(gen: str, node: str, number: int) -> str:
    """The answer to question ``number`` that the flaws drawn into the node imply."""
    spec = next(s for s in demo_spec.TASKS if s.task_id == TASK)
    q = spec.questions[number - 1]
    failed = any(t in demo_trees.tree_defects(gen, node) for t in q.fails_on)
    return q.pass_answer if not failed else {"yes": "no", "no": "yes"}[q.pass_answer]


def test_judge_answers_on_nodes_match_the_drawings(bundle):
    """gpt-5 answers each node's retained questions and nothing else; its answers on the
    tree follow what is drawn, except two deliberate mistakes (at a root, at a node)."""
    task = next(t for t in bundle["tasks"] if t["task_id"] == TASK)
    kept = {n["id"]: set(n["questions"]) for n in task["meta"]["tree_nodes"]}
    outputs = {o["output_id"]: o for o in bundle["outputs"] if o["task_id"] == TASK}
    answered: dict[str, set[str]] = {}
    wrong = []
    for j in bundle["judgments"]:
        out = outputs.get(j.get("output_id", ""))
        if out is None or "question_id" not in j:
            continue
        node = out.get("meta", {}).get("node")
        if node is not None:
            assert j["judge"] == "gpt-5" and j["raw"]
            answered.setdefault(j["output_id"], set()).add(j["question_id"])
        elif j["judge"] != "gpt-5":
            continue
        number = int(j["question_id"].rsplit(".q", 1)[1])
        if j["answer"] != _drawn(out["generator"], node or "N0", number):
            wrong.append((out["generator"], node or "N0", number))
    criteria = [j for j in bundle["judgments"] if "criterion" in j
                and "node" in outputs.get(j["output_id"], {}).get("meta", {})]
    assert not criteria
    assert answered == {oid: kept[o["meta"]["node"]] for oid, o in outputs.items()
                        if "node" in o.get("meta", {})}
    assert sorted(wrong) == sorted((g, node, n) for (_j, g, node, n) in demo_trees.TREE_MISTAKES)
    assert len(wrong) == 2


def _red_cat_pixels(path: Path) -> int:
    """Pixels of the reference cat's red (#D62828) in the cat's half of the image."""
    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=int)
    h, w, _ = rgb.shape
    part = rgb[h * 45 // 100:, w // 2:]
    near = (np.abs(part - (214, 40, 40)) < (45, 40, 40)).all(axis=2)
    return int(near.sum())


def test_the_red_cat_is_drawn_where_f2_passes(bundle):
    """The images show what the answers say: the reference's red cat is there except in
    nano-banana's neon-lit root, in gpt-image-1's striped cat (N0, N1) and where the cat is
    only in the node's text (N2a, N3a1: a generic grey cat)."""
    for gen in GENERATORS:
        for node in ("N0", *NODES):
            path = DEMO_BUNDLE / (f"outputs/{gen}/{TASK}.png" if node == "N0"
                                  else f"outputs/{gen}/{TASK}/{node}.png")
            red = _red_cat_pixels(path) > 500
            cat_is_text = node in ("N2a", "N3a1")
            assert red == (not cat_is_text and _drawn(gen, node, 4) == "yes"), (gen, node)


# ------------------------------------------------------------------ the project
def test_demo_project_has_the_tree_units_and_the_designed_localization(demo_db):
    with Store.open(demo_db) as store:
        units = trees.tree_units(store)
        assert units == [f"{TASK}/{g}" for g in GENERATORS]
        assert trees.default_judge(store) == "gpt-5"
        assert trees.node_output_ids(store) == {f"{TASK}/{g}/{n}" for g in GENERATORS
                                                for n in NODES}
        for gen in GENERATORS:
            item = trees.load_tree_item(store, f"{TASK}/{gen}")
            assert all(item.node_images.values()), gen
            auto = trees.automatic_localization(store, item, "gpt-5")
            got = {k: (c, f if isinstance(f, str) else None)
                   for k, c, f in auto[["key", "category", "first_pass"]].itertuples(index=False)}
            assert got == DESIGNED[gen], gen
            failing = {f.key for f in tr.failing_instances(store, item, "gpt-5")}
            assert failing == set(REVIEWS[gen]), gen
    categories = {c for d in DESIGNED.values() for c, _n in d.values()}
    assert categories == {STABLE, "Global Reference", "Joint Composition", "Persistent Failure"}


def test_node_outputs_stay_out_of_annotation_and_statistics(demo_db):
    from annotation.results.study import load_study
    from annotation.work import workflow

    with Store.open(demo_db) as store:
        nodes = trees.node_output_ids(store)
        offered = set(workflow.annotatable_outputs(store).output_id)
        study = load_study(store)
    assert len(nodes) == 12
    assert not nodes & offered
    assert {f"{TASK}/{g}" for g in GENERATORS} <= offered
    assert not nodes & set(study.outputs.output_id)
    assert not nodes & set(study.judge_answers.output_id)


@pytest.mark.slow
def test_a_demo_annotator_reviews_every_tree(demo_db, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(demo_db))
    ensure_account(demo_db, "alice")
    with Store.open(demo_db) as store:
        # the demo's reviewers (ann1, ann2) already reviewed two trees: with the default
        # overlap of 1 only gpt-image-1's would be offered to alice
        tr.set_settings(store, "admin", overlap=3)
    at = signed_in(PAGE, "alice")
    at.run()
    seen = []
    for _ in range(len(GENERATORS)):
        assert not at.exception
        assert at.subheader[0].value.endswith(f"task {TASK}")
        output_id = at.session_state["trees"]["output_id"]
        gen = output_id.split("/")[1]
        seen.append(gen)
        assert "Automatic localization" not in all_text(at)
        with Store.open(demo_db) as store:
            item = trees.load_tree_item(store, output_id)
        for key, (origin, reason) in REVIEWS[gen].items():
            at.selectbox(key=widget_key("o", item.root_output_id, key, state=at.session_state)
                         ).set_value(origin).run()
            if reason is not None:
                at.selectbox(key=widget_key("r", item.root_output_id, key,
                                            state=at.session_state)).set_value(reason).run()
        assert not at.exception
        text = all_text(at)
        assert "Automatic localization" in text
        for category, _node in DESIGNED[gen].values():
            if category != STABLE:
                assert category in text, (gen, category)
        with Store.open(demo_db) as store:
            reviews = tr.my_reviews(store, "alice", output_id)
        assert {k: (r.origin, r.reason) for k, r in reviews.items()} == REVIEWS[gen]
        assert panel.spec(at)["ready"]
        panel.command(at, "submit")
    assert sorted(seen) == sorted(GENERATORS)
    assert not at.exception
    assert at.title[0].value == "All done"
    with Store.open(demo_db) as store:
        assert tr.personal_progress(store, "alice") == (3, 3)
