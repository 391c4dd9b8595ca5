"""Writing the demo bundle: images, ``tasks.jsonl``, ``outputs.jsonl``, ``judgments.jsonl``,
``annotations.jsonl``, ``bundle.json`` and the demo accounts (:func:`build_demo_bundle`)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image, ImageFilter

from annotation.vif import draw as vi_draw
from annotation.vif.conflicts import CONFLICT_KEYS, task_conflicts, task_prelabels
from scripts.demo.drawing import (
    dots_reference,
    reference_photo,
    scene,
    shirt_reference,
    sprite_cat,
    sprite_mug,
    sprite_person,
    sprite_tree,
)
from scripts.demo.outputs import render_output
from scripts.demo.pairs import pair_records
from scripts.demo.spec import (
    ACCOUNTS,
    ANNOTATORS,
    CRITERIA,
    CRITERION_NAMES,
    DANCER_POSE,
    GENERATORS,
    GUIDELINES,
    IMAGE_NOT_AT_HAND,
    JUDGES,
    POSE_TARGET,
    POSE_TEXT,
    SCENE_PRELABELS,
    SEED,
    SIZE,
    SOURCE,
    SUBJECTS,
    TASKS,
    TaskSpec,
)
from scripts.demo.trees import (
    TREE_JUDGE,
    TREE_NODES,
    TREE_TASK,
    render_tree_node,
    tree_answer,
    tree_defects,
    tree_nodes_meta,
)
from scripts.demo.truth import (
    ANNOTATOR_PROFILE,
    ANNOTATOR_SKIPS,
    CORRECTIONS,
    JUDGE_PROFILE,
    UNPARSED,
    clamp,
    judge_text,
    kind_of,
    perceived,
    true_answer,
    true_scores,
)
from scripts.demo.work import write_human_work

# ------------------------------------------------------------------------------ writing


def _save_png(img: Image.Image, path: Path) -> None:
    """Save without metadata (no text chunks, no timestamps): identical bytes every run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, format="PNG", compress_level=9)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(_dumps(row) + "\n")


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="seconds")


def _reference_image(kind: str) -> tuple[str, Image.Image, dict[str, Any]]:
    """(file stem, image, image entry fields) of a reference of ``kind``."""
    if kind.startswith("scene:"):
        name = kind.split(":", 1)[1]
        meta = {
            "category": "background",
            "prelabel": {**SCENE_PRELABELS[name], "source": SOURCE},
        }
        return name, scene(name), {"kind": "scene", "meta": meta}
    if kind == "sub:shirt":
        meta = {"category": "clothes", "prelabel": {**SCENE_PRELABELS["shirt"], "source": SOURCE}}
        return "shirt", shirt_reference(), {"kind": "sub", "meta": meta}
    if kind == "sub:dots":
        return "dots", dots_reference(), {"kind": "sub", "meta": {"category": "surface"}}
    info = SUBJECTS[kind]
    sprite = {
        "cat": sprite_cat,
        "mug": sprite_mug,
        "tree": sprite_tree,
        "person": sprite_person,
        "tabby": lambda: sprite_cat("#E07A1F"),
        "kitten": lambda: sprite_cat("#8A8A93"),
        "dancer": lambda: sprite_person(
            joints=DANCER_POSE, shirt="#2A9D8F", hair="#1B1B1B", scarf="#F4A261"
        ),
    }[kind]()
    img = reference_photo(sprite, flip=info["facing"] == "left")
    if kind == "kitten":  # out of focus: its facing cannot be read reliably
        img = img.filter(ImageFilter.GaussianBlur(9))
    meta = {"category": info["category"], "prelabel": {**info["prelabel"], "source": SOURCE}}
    return info["file"], img, {"kind": "main", "meta": meta}


def _task_records(spec: TaskSpec, out_dir: Path, written: set[str]) -> dict[str, Any]:
    """Draw the task's images into ``out_dir`` and return its tasks.jsonl record."""
    images: list[dict[str, Any]] = []
    for kind, label in spec.refs:
        stem, img, fields = _reference_image(kind)
        rel = f"images/refs/{stem}.png"
        if rel not in written:
            _save_png(img, out_dir / rel)
            written.add(rel)
        images.append({"path": rel, "role": "reference", "label": label, **fields})
    ref_index = {kind: i for i, (kind, _label) in enumerate(spec.refs)}

    layout = []
    for i, (subject, box) in enumerate(spec.layout):
        layout.append(
            {
                "subject": subject,
                "image": ref_index[subject],
                "box": box,
                "color": vi_draw.subject_color(i),
                "label": f"Image_{ref_index[subject]}: {subject}",
            }
        )
    vi: list[tuple[str, str, str, Image.Image]] = []  # (kind, file stem, label, image)
    big = vi_draw.draw_layout(layout, size=1024)
    vi.append(
        ("layout", "layout", "layout boxes", big.resize((SIZE, SIZE), Image.Resampling.LANCZOS))
    )
    orientation = []
    for o in spec.orientation:
        box = dict(spec.layout)[o["subject"]]
        anchor = [round((box[0] + box[2]) / 2, 3), round((box[1] + box[3]) / 2, 3)]
        orientation.append({**o, "anchor": anchor})
    if orientation:
        scale = 0.4 if len(orientation) == 1 else 0.22  # several pyramids: smaller
        img = vi_draw.draw_orientations([{**o, "scale": scale} for o in orientation], size=SIZE)
        vi.append(("orientation", "orientation", "orientation pyramid", img))
    if spec.arrows:
        kinds = sorted({a["kind"] for a in spec.arrows})
        kind = "+".join(sorted(kinds, key=["light", "wind"].index))
        vi.append(
            (
                kind,
                "arrows",
                f"{' and '.join(kinds)} arrow",
                vi_draw.draw_arrows(spec.arrows, size=SIZE),
            )
        )
    if spec.pose:
        vi.append(
            ("pose", "pose", f"pose for the {spec.pose}", vi_draw.draw_pose(POSE_TARGET, size=SIZE))
        )
    if len(vi) > 3:
        raise ValueError(f"{spec.task_id}: at most 3 visual instruction images in the demo")
    for kind, stem, label, img in vi:
        rel = f"images/{spec.task_id}/{stem}.png"
        _save_png(img, out_dir / rel)
        images.append({"path": rel, "role": "visual_instruction", "kind": kind, "label": label})

    questions = []
    for n, q in enumerate(spec.questions, start=1):
        row: dict[str, Any] = {
            "question_id": f"{spec.task_id}.q{n}",
            "text": q.text,
            "pass_answer": q.pass_answer,
            "operator": q.operator,
            "target": q.target,
        }
        if q.depends_on:
            row["depends_on"] = [f"{spec.task_id}.q{k}" for k in q.depends_on]
        questions.append(row)

    meta: dict[str, Any] = {
        "formula": spec.formula,
        "layout": layout,
        "visual_instruction_types": [k for k, _s, _l, _i in vi],
        "synthetic": True,
    }
    if orientation:
        meta["orientation"] = orientation
    if spec.arrows:
        meta["arrows"] = spec.arrows
    if spec.pose:
        meta["pose"] = {"subject": spec.pose, "image": len(spec.refs) + len(vi) - 1,
                        "text": dict(POSE_TEXT)}
    if spec.task_id == TREE_TASK:
        meta["tree_nodes"] = tree_nodes_meta(spec)
    meta.update(spec.extra_meta)
    record = {
        "task_id": spec.task_id,
        "instruction": spec.instruction,
        "images": images,
        "questions": questions,
        "meta": meta,
    }
    meta["conflicts"] = published_conflicts(record)
    return record


def published_conflicts(record: Mapping[str, Any]) -> dict[str, bool]:
    """The task's ``meta.conflicts`` as the benchmark's pipeline publishes them: the rules of
    :mod:`annotation.vif.conflicts` applied to the pre-labels (wrong ones included)."""
    decisions = task_conflicts(task_prelabels(record), record["meta"])
    out = {}
    for name, key in CONFLICT_KEYS.items():
        conflict = decisions[name].conflict
        if conflict is None:
            raise ValueError(f"{record['task_id']}: {name} conflict undecidable from the "
                             f"pre-labels ({decisions[name].rule})")
        out[key] = conflict
    return out


def build_demo_bundle(out_dir: Path) -> None:
    """Write the synthetic demo bundle into ``out_dir`` (created if needed).

    The folder gets ``bundle.json``, ``tasks.jsonl``, ``outputs.jsonl``,
    ``judgments.jsonl``, ``annotations.jsonl``, ``pairs.jsonl`` and ``rankings.jsonl``
    (:func:`scripts.demo.pairs.pair_records`), ``images/`` + ``outputs/``, the
    verifications, tree reviews and submissions (:func:`scripts.demo.work.
    write_human_work`: ``prelabel_readings.jsonl``, ``conflict_verdicts.jsonl``,
    ``conflict_resolutions.jsonl``, ``tree_reviews.jsonl``, ``submissions.jsonl``,
    ``visits.jsonl``), and the demo
    accounts, ``accounts.json`` (:func:`write_accounts`); existing
    files of the same names are overwritten (use an empty folder for a clean build).
    Same bytes on every run.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)

    bundle = {
        "format": "judge-audit-bundle/1",
        "name": "judge-audit demo",
        "benchmark": "VIF-Bench + TRACE-Bench (synthetic demo)",
        "criteria": [
            {k: v for k, v in c.items() if k != "prompt"} | {"min": 1, "max": 10, "step": 1}
            for c in CRITERIA
        ],
        "judges": [{"name": j, "kind": "vlm"} for j in JUDGES],
        "guidelines": GUIDELINES,
        "meta": {
            "synthetic": True,
            "generated_by": "scripts/make_demo.py",
            "seed": SEED,
            "judge_prompt_names": {c["name"]: c["prompt"] for c in CRITERIA},
        },
    }
    (out_dir / "bundle.json").write_text(
        json.dumps(bundle, ensure_ascii=False, sort_keys=True, indent=2) + "\n",
        encoding="utf-8",
        newline="\n",
    )

    written: set[str] = set()
    tasks = [_task_records(spec, out_dir, written) for spec in TASKS]
    _write_jsonl(out_dir / "tasks.jsonl", tasks)

    outputs: list[dict[str, Any]] = []
    judgments: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    clocks = {a: p["start"] for a, p in ANNOTATOR_PROFILE.items()}
    quality: dict[str, float] = {}
    output_defects: dict[str, list[str]] = {}
    for spec in TASKS:
        for gen in GENERATORS:
            output_id = f"{spec.task_id}/{gen}"
            row: dict[str, Any] = {
                "output_id": output_id,
                "task_id": spec.task_id,
                "generator": gen,
            }
            defects = spec.defects[gen]
            if "refusal" in defects:
                row.update(
                    path=None,
                    missing=True,
                    meta={"reason": "refused: the request was flagged by the provider"},
                )
                outputs.append(row)
                continue
            if (spec.task_id, gen) in IMAGE_NOT_AT_HAND:
                row.update(path=None, meta={"defects": defects, "note": "image not at hand"})
            else:
                rel = f"outputs/{gen}/{spec.task_id}.png"
                _save_png(render_output(spec, gen), out_dir / rel)
                row.update(path=rel, meta={"defects": defects})
            outputs.append(row)
            truth = true_scores(spec, gen, rng)
            if row["path"] is not None:  # the pairs' hidden quality (scripts.demo.pairs)
                quality[output_id] = sum(truth.values()) / len(truth)
                output_defects[output_id] = list(defects)

            for judge in JUDGES:
                prof = JUDGE_PROFILE[judge]
                seen = {
                    t
                    for t in defects
                    if kind_of(t) not in prof["blind"] and rng.random() < prof["detect"]
                }
                # the tree judge answers the root as drawn (its mistakes aside): TREE_MISTAKES
                on_tree = spec.task_id == TREE_TASK and judge == TREE_JUDGE
                if on_tree:
                    seen = set(defects)
                view = perceived(spec, gen, truth, seen)
                scores = {
                    n: round(clamp(view[n] + prof["bias"] + rng.gauss(0.0, prof["sd"])))
                    for n in CRITERION_NAMES
                }
                garble = UNPARSED[3] if (judge, spec.task_id, gen) == UNPARSED[:3] else None
                text = judge_text(spec, gen, judge, scores, seen, garble)
                for name in CRITERION_NAMES:
                    j: dict[str, Any] = {
                        "judge": judge,
                        "output_id": output_id,
                        "criterion": name,
                        "score": scores[name],
                        "raw": text,
                    }
                    if name == garble:
                        j.update(score=None, parse_status="unparsed")
                    judgments.append(j)
                for n, q in enumerate(spec.questions, start=1):
                    answer = true_answer(q, seen)
                    hedge = ""
                    if rng.random() < prof["flip"]:
                        answer = "no" if answer == "yes" else "yes"
                        hedge = "hard to see; "
                    passed = answer == q.pass_answer
                    raw = f"{answer}. {hedge}{q.ok if passed else q.bad}"
                    if on_tree:
                        answer, raw = tree_answer(judge, gen, "N0", n, q)
                    judgments.append(
                        {
                            "judge": judge,
                            "output_id": output_id,
                            "question_id": f"{spec.task_id}.q{n}",
                            "answer": answer,
                            "raw": raw,
                        }
                    )

            if spec.task_id == TREE_TASK:
                node_outputs, node_judgments = _tree_node_records(spec, gen, out_dir)
                outputs += node_outputs
                judgments += node_judgments

            if row["path"] is None:
                continue
            for ann in ANNOTATORS:
                if (spec.task_id, gen) in ANNOTATOR_SKIPS[ann]:
                    continue
                prof = ANNOTATOR_PROFILE[ann]
                seen = {t for t in defects if rng.random() < 0.95}
                view = perceived(spec, gen, truth, seen)

                for n, q in enumerate(spec.questions, start=1):
                    r = rng.random()
                    answer = true_answer(q, seen)
                    if r < 0.03:
                        answer = "cant_tell"
                    elif r < 0.06:
                        answer = "no" if answer == "yes" else "yes"
                    annotations.append(
                        {
                            "annotator": ann,
                            "output_id": output_id,
                            "question_id": f"{spec.task_id}.q{n}",
                            "answer": answer,
                            "created_at": _stamp(clocks, ann, rng),
                        }
                    )
                for name in CRITERION_NAMES:
                    score = round(clamp(view[name] + prof["bias"] + rng.gauss(0.0, prof["sd"])))
                    a_row: dict[str, Any] = {
                        "annotator": ann,
                        "output_id": output_id,
                        "criterion": name,
                        "score": score,
                        "created_at": _stamp(clocks, ann, rng),
                    }
                    if name == "visual_quality" and "blur" in defects and ann == "ann1":
                        a_row["note"] = "slight blur"
                    annotations.append(a_row)

    # each annotated item was submitted 5 s after its last answer (before the corrections,
    # made later with B: back to the item)
    last: dict[tuple[str, str], str] = {}
    for a in annotations:
        key = (a["annotator"], a["output_id"])
        last[key] = max(last.get(key, ""), a["created_at"])
    annotated = [(ann, oid, (datetime.fromisoformat(at) + timedelta(seconds=5)).astimezone(
        UTC).isoformat(timespec="microseconds"))
                 for (ann, oid), at in last.items()]
    _apply_corrections(annotations, clocks)
    # verifications and tree reviews: the next morning (scripts.demo.work); pairs and
    # rankings the afternoon after (scripts.demo.pairs)
    morning = max(clocks.values()).replace(hour=9, minute=0, second=0,
                                           microsecond=0) + timedelta(days=1)
    paired = pair_records(quality, output_defects, morning + timedelta(days=1, hours=5))
    _write_jsonl(out_dir / "outputs.jsonl", outputs)
    _write_jsonl(out_dir / "pairs.jsonl", paired["pairs"])
    _write_jsonl(out_dir / "rankings.jsonl", paired["rankings"])
    _write_jsonl(out_dir / "judgments.jsonl", judgments + paired["judgments"])
    _write_jsonl(out_dir / "annotations.jsonl", annotations + paired["annotations"])
    write_human_work(out_dir, annotated, morning)
    write_accounts(out_dir / ACCOUNTS_FILE)


#: the demo's accounts, beside the bundle (read by annotation.project_files.demo_accounts)
ACCOUNTS_FILE = "accounts.json"


def write_accounts(path: Path) -> None:
    """Write :data:`scripts.demo.spec.ACCOUNTS` as ``{"note", "accounts": [{name, role,
    password}]}``: the accounts the app creates in the demo database."""
    doc = {
        "note": "The demo project's accounts. These passwords are public: never create "
                "them in a real project.",
        "accounts": [{"name": n, "role": r, "password": p} for n, r, p in ACCOUNTS],
    }
    path.write_text(json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\n",
                    encoding="utf-8", newline="\n")


def _tree_node_records(
    spec: TaskSpec, gen: str, out_dir: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Draw ``gen``'s node outputs of the demo tree; return their outputs.jsonl records and
    TREE_JUDGE's answers to each node's retained questions (no criteria: the nodes are
    diagnostic, not annotation items)."""
    outputs: list[dict[str, Any]] = []
    judgments: list[dict[str, Any]] = []
    for node in TREE_NODES[1:]:
        nid = node["id"]
        output_id = f"{spec.task_id}/{gen}/{nid}"
        rel = f"outputs/{gen}/{spec.task_id}/{nid}.png"
        image = render_tree_node(spec, gen, nid)  # a 256-colour palette: half the bytes
        image = image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        _save_png(image, out_dir / rel)
        outputs.append(
            {
                "output_id": output_id,
                "task_id": spec.task_id,
                "generator": gen,
                "path": rel,
                "meta": {"node": nid, "defects": tree_defects(gen, nid)},
            }
        )
        for n in node["questions"]:
            answer, raw = tree_answer(TREE_JUDGE, gen, nid, n, spec.questions[n - 1])
            judgments.append(
                {
                    "judge": TREE_JUDGE,
                    "output_id": output_id,
                    "question_id": f"{spec.task_id}.q{n}",
                    "answer": answer,
                    "raw": raw,
                }
            )
    return outputs, judgments


def _stamp(clocks: dict[str, datetime], annotator: str, rng: random.Random) -> str:
    """Advance the annotator's clock by 15-75 s and return it as ISO-8601 UTC."""
    clocks[annotator] += timedelta(seconds=rng.randint(15, 75))
    return _iso(clocks[annotator])


def _apply_corrections(annotations: list[dict[str, Any]], clocks: dict[str, datetime]) -> None:
    """Turn some answers into a history: the first answer stays, a corrected one follows.

    The earlier line is set to the ``first`` value; the correction is appended at the end
    of the annotator's session (a later ``created_at``) with a note.
    """
    for ann, task_id, gen, key, first, corrected, note in CORRECTIONS:
        output_id = f"{task_id}/{gen}"
        field_name, value = (
            ("question_id", f"{task_id}.q{key}") if isinstance(key, int) else ("criterion", key)
        )
        matches = [
            a
            for a in annotations
            if a["annotator"] == ann and a["output_id"] == output_id and a.get(field_name) == value
        ]
        if len(matches) != 1:
            raise RuntimeError(f"correction target not found: {ann} {output_id} {value}")
        earlier = matches[0]
        answer_field = "answer" if field_name == "question_id" else "score"
        earlier[answer_field] = first
        clocks[ann] += timedelta(minutes=7)
        annotations.append(
            {
                "annotator": ann,
                "output_id": output_id,
                field_name: value,
                answer_field: corrected,
                "created_at": _iso(clocks[ann]),
                "note": note,
            }
        )
