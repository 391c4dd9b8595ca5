"""What the demo contains: generators, judges, annotators, criteria, guidelines, and the ten
tasks with their subjects, references, visual instructions, checklists and the flaws each
generator's output has (:data:`TASKS`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEED = 20260302
SIZE = 512  # every image of the bundle is SIZE x SIZE
GENERATORS = ("nano-banana", "gpt-image-1", "qwen-image-edit")
JUDGES = ("gpt-5", "gemini-2.5-pro", "qwen3-vl")
ANNOTATORS = ("ann1", "ann2", "ann3")
#: (name, role, password) of the demo project's accounts, written to ``accounts.json``
#: beside the bundle. ``ann1``-``ann3`` are the annotators whose answers the bundle
#: imports; ``alice`` has no answers yet. These passwords are public: never create them in
#: a real project.
ACCOUNTS: tuple[tuple[str, str, str], ...] = (
    ("admin", "admin", "demo-admin"),
    *((name, "annotator", f"demo-{name}") for name in ANNOTATORS),
    ("alice", "annotator", "demo-alice"),
)

# --------------------------------------------------------------------------- criteria

CRITERIA: tuple[dict[str, Any], ...] = (
    {
        "name": "text_instruction_following",
        "label": "Text Instruction Following",
        "prompt": "Text Instruction Following",
        "rubric": "Does the image do what the **text instruction** asks: the requested "
        "subjects, their relations, the scene and every explicit detail? 10: every part "
        "of the instruction is satisfied. 5: the main request is met but several details "
        "are wrong or missing. 1: the image ignores the instruction.",
    },
    {
        "name": "reference_consistency",
        "label": "Reference Consistency",
        "prompt": "Reference Consistency",
        "rubric": "Do the subjects keep the **identity of their reference images** "
        "(shape, colours, distinctive marks, clothing, surface)? Compare each subject "
        "with its `Image_k`. 10: every subject is clearly the same one. 5: recognisable "
        "but with visible changes. 1: the references were replaced or lost.",
    },
    {
        "name": "visual_instruction_adherence",
        "label": "Visual Instruction Adherence",
        "prompt": "Vision Instruction Adherence",
        "rubric": "Does the image satisfy the **visual instructions**: each subject inside "
        "its layout box, facing as its orientation pyramid shows (the orange base is the "
        "front), wind blowing and light falling along the cyan / yellow arrows (from the "
        "round tail to the head), the pose of a pose reference? 10: every visual "
        "instruction is met. 1: none is.",
    },
    {
        "name": "visual_instruction_cleanliness",
        "label": "Visual Instruction Cleanliness",
        "prompt": "Visual Instruction Residue",
        "rubric": "Higher = cleaner. Are the instruction **marks themselves** absent from "
        "the output: no layout boxes or their labels, no arrows, no pyramids, no "
        "skeleton lines? 10: no trace at all. 5: a faint but visible mark. 1: the "
        "instruction image is pasted into the output. (The judge prompt calls this "
        "criterion *Visual Instruction Residue*.)",
    },
    {
        "name": "scene_coherence",
        "label": "Scene Coherence",
        "prompt": "Scene Coherence",
        "rubric": "Does everything form **one plausible scene**: consistent scale, ground "
        "plane, lighting and shadows, no duplicated or floating subjects, no collage "
        "look? 10: a single natural picture. 1: unrelated cut-outs.",
    },
    {
        "name": "visual_quality",
        "label": "Visual Quality",
        "prompt": "Visual Quality",
        "rubric": "Perceptual quality regardless of the instructions: sharpness, clean "
        "edges, no artefacts, distortions or noise. 10: flawless. 5: usable with visible "
        "flaws. 1: unusable.",
    },
)
CRITERION_NAMES = tuple(c["name"] for c in CRITERIA)

GUIDELINES = """\
# How to annotate

You see everything the generator saw: the **reference images** and the **visual
instructions** (`Image_0`, `Image_1`, ... in input order), the **text instruction** and
the **generated output**. Judge the output only.

## Yes / No questions
- Answer what you **see** in the output, not what the instruction says should be there.
- Read negative questions carefully: "Does any subject appear more than once?" is
  answered **No** when the image is fine.
- Choose **Can't tell** only when the image really does not allow a decision (too
  small, hidden, ambiguous), not when you are unsure of the rule: then read the
  question's target and the rubric again.
- A question under another one (for example "Is the cat in its box?" under "Is there a
  cat?") does not apply when its parent is answered No; you may skip it.

## Scores 1-10
- Read the rubric of each criterion; use the whole scale. **10** = nothing to criticise,
  **7-8** = small flaws, **5** = clearly flawed but usable, **1-2** = failed.
- Score each criterion on its own: a blurry image can still follow the layout
  perfectly.
- Visual instruction marks: a pyramid's **orange base is the subject's front**; an
  arrow goes from its round tail (the source) to its head. A box, arrow or skeleton left
  in the output lowers **Visual Instruction Cleanliness**, not adherence.
- Add a note when you change an earlier answer or when something is unusual.
"""


# ---------------------------------------------------------------------------- the tasks

POSE_TARGET: dict[str, list[float]] = {
    "r_elbow": [0.34, 0.20],
    "r_wrist": [0.31, 0.08],
    "l_knee": [0.60, 0.72],
    "l_ankle": [0.66, 0.87],
}
#: The text of the pose reference at the three granularities of VIF-Bench App. C.5 (the
#: paper asks a VLM once per pose image), for the text-variant tasks (``meta.pose.text``).
POSE_TEXT: dict[str, str] = {
    "dense": "standing upright with the weight on the right leg; the right arm raised "
             "straight above the head, the left arm hanging by the side; the left leg "
             "stepping out to the side, knee slightly bent",
    "medium": "standing, the right arm raised high, the left leg stepping out",
    "sparse": "one arm raised",
}
#: The dancer's own (distinctive) pose in its reference: arms spread up, right knee raised.
DANCER_POSE: dict[str, list[float]] = {
    "r_elbow": [0.30, 0.27],
    "r_wrist": [0.21, 0.19],
    "l_elbow": [0.70, 0.27],
    "l_wrist": [0.79, 0.19],
    "r_knee": [0.36, 0.65],
    "r_ankle": [0.46, 0.73],
}
SOURCE = "demo VLM"

#: Subjects: how to draw each one, which way its reference faces, its pre-labels.
#:
#: Yaw is the facing of the reference (the *source* of the orientation rule); the pyramid
#: targets of the tasks stay inside VIF-Bench's |yaw| < 60 (Appendix C.3). Borderline
#: cases of the rule (C.4): ``tabby`` (80) against targets 20 (exactly 60 apart: conflict,
#: demo-07) and 21 (59 apart, same side: none, demo-08); ``mug`` (30) against -20 (50 apart
#: but left/right flipped: conflict, the paper's own example, demo-07); ``dancer`` (350, a
#: 0-360 reading of -10) against 10 (20 apart across the front, opposite sides: conflict,
#: demo-09); ``kitten`` (unreliable: never a conflict, although -40 against 35 would flip,
#: demo-08).
SUBJECTS: dict[str, dict[str, Any]] = {
    "cat": {
        "file": "cat",
        "kind": "main",
        "category": "animal",
        "facing": "left",
        "prelabel": {
            "yaw": -35,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "red cat in profile, facing left; fur",
        },
    },
    "mug": {
        "file": "mug",
        "kind": "main",
        "category": "object",
        "facing": "right",
        "prelabel": {
            "yaw": 30,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": False,
            "pose_distinctive": False,
            "notes": "blue mug, handle on the right",
        },
    },
    "tree": {
        "file": "tree",
        "kind": "main",
        "category": "object",
        "facing": "right",
        "prelabel": {
            "yaw": None,
            "yaw_reliable": False,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "tree: no facing direction; leaves",
        },
    },
    "person": {
        "file": "person",
        "kind": "main",
        "category": "person",
        "facing": "right",
        "prelabel": {
            "yaw": 0,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "person standing still, facing the camera; scarf, hair",
        },
    },
    "tabby": {
        "file": "tabby",
        "kind": "main",
        "category": "animal",
        "facing": "right",
        "prelabel": {
            "yaw": 80,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": False,  # wrong on purpose: see WRONG_PRELABELS
            "pose_distinctive": False,
            "notes": "orange cat, turned to the right",
        },
    },
    "kitten": {
        "file": "kitten",
        "kind": "main",
        "category": "animal",
        "facing": "left",
        "prelabel": {
            "yaw": -40,
            "yaw_reliable": False,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "grey cat, photo out of focus",
        },
    },
    "dancer": {
        "file": "dancer",
        "kind": "main",
        "category": "person",
        "facing": "right",
        "prelabel": {
            "yaw": 350,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": True,
            "notes": "person dancing: arms spread up, one knee raised",
        },
    },
}
#: Pre-labels of the background scenes and sub-references (light and wind only).
SCENE_PRELABELS: dict[str, dict[str, Any]] = {
    "night_city": {"light_distinctive": True, "wind_responsive": False,
                   "notes": "night street, neon sign, lit windows"},
    "meadow": {"light_distinctive": False, "wind_responsive": False, "notes": "sunny meadow"},
    "beach": {"light_distinctive": True, "wind_responsive": False,  # wrong on purpose
              "notes": "beach, sea on the horizon"},
    "shirt": {"wind_responsive": True, "notes": "striped T-shirt laid flat"},
}
#: Pre-labels that are wrong on purpose, for verifiers to correct (their notes say nothing
#: of it): (reference, field, value the drawn image supports, tasks whose published label
#: the error flips). The tabby cat has fur, which wind moves: the published wind label of
#: demo-07 (a wind arrow) is False where the image supports True. The beach is lit by
#: ordinary daylight: the published light label of demo-08 (a light arrow) is True where
#: the image supports False.
WRONG_PRELABELS: tuple[tuple[str, str, Any, tuple[str, ...]], ...] = (
    ("tabby", "wind_responsive", True, ("demo-07",)),
    ("beach", "light_distinctive", False, ("demo-08",)),
)


@dataclass
class Q:
    """A checklist question with what makes its true answer differ from the pass answer."""

    text: str
    operator: str
    target: str
    ok: str  # what a judge says when the check passes
    bad: str  # ... and when it fails
    fails_on: tuple[str, ...] = ()
    pass_answer: str = "yes"
    depends_on: tuple[int, ...] = ()  # 1-based numbers of parent questions


@dataclass
class TaskSpec:
    """One demo task: its instruction, references, layout, formula, checklist, and the
    flaws of each generator's output."""

    task_id: str
    instruction: str
    refs: list[tuple[str, str]]  # (kind of reference: subject name or "scene:x"/"sub:x", label)
    layout: list[tuple[str, list[float]]]  # (subject, box) in subject order
    formula: str
    background: str
    questions: list[Q]
    defects: dict[str, list[str]]  # generator -> defect tags
    orientation: list[dict[str, Any]] = field(default_factory=list)
    arrows: list[dict[str, Any]] = field(default_factory=list)
    pose: str | None = None  # subject that has a pose reference
    extra_meta: dict[str, Any] = field(default_factory=dict)


NO_MARKS = "Do not draw the boxes, arrows, pyramids or any other mark of the visual instructions."

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        task_id="demo-01",
        instruction="Make one natural photo: the red cat from Image_0 sits on the floor to "
        "the left of the blue mug from Image_1. Place each subject inside its box of the "
        f"layout in Image_2 (red box: cat, blue box: mug). {NO_MARKS}",
        refs=[("cat", "red cat"), ("mug", "blue mug")],
        layout=[("cat", [0.08, 0.40, 0.52, 0.92]), ("mug", [0.56, 0.50, 0.88, 0.90])],
        formula="C(f1, f2)",
        background="studio",
        questions=[
            Q(
                "Is there a red cat that matches the cat in Image_0?",
                "f",
                "f1",
                "a red cat like the reference is there",
                "the cat does not match Image_0",
                ("missing:cat", "identity:cat"),
            ),
            Q(
                "Is there a blue mug that matches the mug in Image_1?",
                "f",
                "f2",
                "the blue mug of Image_1 is there",
                "the mug differs from Image_1 (colour)",
                ("missing:mug", "identity:mug"),
            ),
            Q(
                "Is the cat inside the red layout box (left, lower part of the image)?",
                "C",
                "C, layout f1",
                "the cat sits in the left box",
                "the cat is outside its box",
                ("misplaced:cat", "missing:cat"),
                depends_on=(1,),
            ),
            Q(
                "Does any subject appear more times than intended?",
                "C",
                "C, duplication",
                "each subject appears once",
                "a subject is duplicated",
                ("duplicate:cat", "duplicate:mug"),
                pass_answer="no",
            ),
            Q(
                "Is any box outline or label of the layout (Image_2) visible in the output?",
                "C",
                "C, VI residue",
                "no instruction marks are left",
                "a box outline from the layout is still drawn",
                ("residue:cat",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": [],
            "gpt-image-1": ["residue:cat"],
            "qwen-image-edit": ["identity:mug", "blur"],
        },
    ),
    TaskSpec(
        task_id="demo-02",
        instruction="The person from Image_0 stands in the sunny meadow of Image_2 next to "
        "the tree from Image_1. Follow the layout of Image_3 (red box: person, blue box: "
        "tree). A strong wind blows as the cyan arrow of Image_4 shows: the scarf and the "
        f"leaves must move with it. {NO_MARKS}",
        refs=[
            ("person", "person with red scarf"),
            ("tree", "green tree"),
            ("scene:meadow", "sunny meadow"),
        ],
        layout=[("person", [0.10, 0.22, 0.42, 0.92]), ("tree", [0.50, 0.10, 0.92, 0.88])],
        formula="C(f1, f2)⊕g_bg⊕g_vfx",
        background="meadow",
        arrows=[{"kind": "wind", "start": [0.10, 0.35], "end": [0.82, 0.45]}],
        questions=[
            Q(
                "Is the person from Image_0 present, with the orange shirt and red scarf?",
                "f",
                "f1",
                "the person of Image_0 is there",
                "the person differs from Image_0",
                ("missing:person", "identity:person"),
            ),
            Q(
                "Is there a green tree like the one in Image_1?",
                "f",
                "f2",
                "the tree is there",
                "the tree is missing or different",
                ("missing:tree",),
            ),
            Q(
                "Is the background a sunny meadow like Image_2?",
                "g",
                "g_bg",
                "the meadow background is used",
                "the background is not the meadow",
            ),
            Q(
                "Does the wind visibly blow from left to right (scarf, leaves), as the cyan "
                "arrow in Image_4 shows?",
                "⊕",
                "C⊕g_vfx, wind direction",
                "scarf and leaves move to the right",
                "no wind effect along the arrow",
                ("no_wind",),
                depends_on=(1,),
            ),
            Q(
                "Is the person on the left and the tree on the right, inside their boxes of "
                "Image_3?",
                "C",
                "C, layout",
                "both subjects are in their boxes",
                "the person is outside the red box",
                ("misplaced:person",),
            ),
        ],
        defects={
            "nano-banana": ["misplaced:person"],
            "gpt-image-1": [],
            "qwen-image-edit": ["no_wind"],
        },
    ),
    TaskSpec(
        task_id="demo-03",
        instruction="Show the red cat from Image_0 on the night street of Image_1, inside "
        "the box of Image_2. The cat faces screen-right and slightly up, as the pyramid "
        "of Image_3 shows (the orange base is its front). Light the cat from the upper "
        f"left as the yellow arrow of Image_4 shows. {NO_MARKS}",
        refs=[("cat", "red cat"), ("scene:night_city", "night street")],
        layout=[("cat", [0.25, 0.42, 0.80, 0.92])],
        formula="C(f1⊕g_view)⊕g_bg⊕g_light",
        background="night_city",
        orientation=[{"subject": "cat", "yaw": 40, "pitch": 10}],
        arrows=[{"kind": "light", "start": [0.12, 0.12], "end": [0.55, 0.62]}],
        questions=[
            Q(
                "Is the red cat from Image_0 present?",
                "f",
                "f1",
                "the red cat is there",
                "the cat is missing or different",
                ("missing:cat", "identity:cat"),
            ),
            Q(
                "Does the cat face screen-right (slightly up), as the pyramid in Image_3 shows?",
                "⊕",
                "f1⊕g_view",
                "the cat faces right",
                "the cat faces left, against the pyramid",
                ("wrong_orientation:cat",),
                depends_on=(1,),
            ),
            Q(
                "Is the scene the night street of Image_1?",
                "g",
                "g_bg",
                "the night street is kept",
                "the background changed",
            ),
            Q(
                "Is the cat lit from the upper left, as the yellow arrow in Image_4 shows?",
                "⊕",
                "C⊕g_light, direction",
                "a warm light comes from the upper left",
                "the light does not follow the arrow",
                ("no_light",),
            ),
            Q(
                "Does the cat appear more than once?",
                "C",
                "C, duplication",
                "a single cat",
                "there is a second cat",
                ("duplicate:cat",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": ["wrong_orientation:cat"],
            "gpt-image-1": ["duplicate:cat"],
            "qwen-image-edit": ["no_light"],
        },
    ),
    TaskSpec(
        task_id="demo-04",
        instruction="Dress the person from Image_0 in the striped shirt of Image_1 and put "
        "them on the beach of Image_2, inside the box of Image_3. The person takes the pose "
        "of Image_4: right arm raised high, left leg stepping out. Only the shirt gets the "
        f"stripes. {NO_MARKS}",
        refs=[("person", "person"), ("sub:shirt", "striped shirt"), ("scene:beach", "beach")],
        layout=[("person", [0.28, 0.06, 0.72, 0.94])],
        formula="C(f1⊕g1⊕g_pose)⊕g_bg",
        background="beach",
        pose="person",
        questions=[
            Q(
                "Is the person from Image_0 present (same face, hair and scarf)?",
                "f",
                "f1",
                "the person of Image_0 is there",
                "the person's identity changed",
                ("missing:person", "identity:person"),
            ),
            Q(
                "Does the person wear the orange-and-white striped shirt of Image_1?",
                "g",
                "g1, clothes on f1",
                "the striped shirt is worn",
                "the shirt is not the striped one",
                ("no_pattern",),
                depends_on=(1,),
            ),
            Q(
                "Do the stripes also appear on anything other than the shirt?",
                "⊕",
                "f1⊕g1, exclusivity",
                "only the shirt is striped",
                "the stripes leak onto the surroundings",
                ("pattern_leak",),
                pass_answer="no",
            ),
            Q(
                "Is the person's right arm raised above the head, as in the pose of Image_4?",
                "⊕",
                "f1⊕g_pose",
                "the pose matches",
                "the pose does not match Image_4",
                ("wrong_pose",),
                depends_on=(1,),
            ),
            Q(
                "Is the background the beach of Image_2?",
                "g",
                "g_bg",
                "the beach is kept",
                "the background changed",
            ),
            Q(
                "Is the skeleton of Image_4 or a layout box drawn in the output?",
                "C",
                "C, VI residue",
                "no instruction marks are left",
                "instruction marks are left",
                ("residue:person",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": ["wrong_pose"],
            "gpt-image-1": ["pattern_leak"],
            "qwen-image-edit": ["identity:person", "blur"],
        },
    ),
    TaskSpec(
        task_id="demo-05",
        instruction="In the meadow of Image_3, the red cat (Image_0) sits between the blue "
        "mug (Image_1, on a picnic blanket) and the tree (Image_2), each in its box of "
        "Image_4. Image_5 gives the wind (cyan: blowing to the left) and the light "
        f"(yellow: from the upper right). {NO_MARKS}",
        refs=[
            ("cat", "red cat"),
            ("mug", "blue mug"),
            ("tree", "green tree"),
            ("scene:meadow", "sunny meadow"),
        ],
        layout=[
            ("cat", [0.36, 0.50, 0.66, 0.90]),
            ("mug", [0.70, 0.62, 0.92, 0.92]),
            ("tree", [0.06, 0.08, 0.42, 0.86]),
        ],
        formula="C(f1, f2, f3)⊕g_bg⊕g_vfx⊕g_light",
        background="meadow",
        arrows=[
            {"kind": "wind", "start": [0.90, 0.30], "end": [0.35, 0.36]},
            {"kind": "light", "start": [0.88, 0.08], "end": [0.50, 0.60]},
        ],
        questions=[
            Q(
                "Is the red cat of Image_0 present?",
                "f",
                "f1",
                "the cat is there",
                "the cat is missing",
                ("missing:cat",),
            ),
            Q(
                "Is the blue mug of Image_1 present?",
                "f",
                "f2",
                "the mug is there",
                "the mug is missing",
                ("missing:mug",),
            ),
            Q(
                "Is the tree of Image_2 present?",
                "f",
                "f3",
                "the tree is there",
                "the tree is missing",
                ("missing:tree",),
            ),
            Q(
                "Are the cat, the mug and the tree each inside their own box of Image_4?",
                "C",
                "C, layout",
                "all three are in their boxes",
                "a subject is missing from its box",
                ("missing:mug", "misplaced:cat", "misplaced:tree"),
                depends_on=(1, 2, 3),
            ),
            Q(
                "Do the tree's leaves blow toward the left, as the cyan arrow shows?",
                "⊕",
                "C⊕g_vfx, wind",
                "leaves fly to the left",
                "no wind to the left",
                ("no_wind",),
            ),
            Q(
                "Does the light come from the upper right, as the yellow arrow shows?",
                "⊕",
                "C⊕g_light",
                "the light comes from the upper right",
                "the light does not follow the arrow",
                ("no_light",),
            ),
        ],
        defects={
            "nano-banana": ["missing:mug"],
            "gpt-image-1": ["refusal"],
            "qwen-image-edit": ["no_wind", "no_light"],
        },
    ),
    TaskSpec(
        task_id="demo-06",
        instruction="**Keep** the blue mug of Image_0, but cover its body with the polka "
        "dots of Image_1 — *only the body*, not the table.\n\n"
        "- place it in the box of Image_2\n"
        "- turn it as the pyramid of Image_3 shows (front toward the left, slightly "
        "down)\n\n"
        f"`Image_3` is a pyramid, not an object to draw. {NO_MARKS}",
        refs=[("mug", "blue mug"), ("sub:dots", "polka-dot surface")],
        layout=[("mug", [0.22, 0.30, 0.78, 0.88])],
        formula="C(f1⊕g1⊕g_view)",
        background="studio",
        orientation=[{"subject": "mug", "yaw": -40, "pitch": -15}],
        questions=[
            Q(
                "Is the mug from Image_0 present (same shape and handle)?",
                "f",
                "f1",
                "the mug of Image_0 is there",
                "the mug is missing or different",
                ("missing:mug",),
            ),
            Q(
                "Is the mug's body covered with the white-on-purple dots of Image_1?",
                "⊕",
                "f1⊕g1, surface",
                "the body has the polka dots",
                "the dots are not applied",
                ("no_pattern",),
                depends_on=(1,),
            ),
            Q(
                "Do the polka dots also appear outside the mug (table, wall)?",
                "⊕",
                "f1⊕g1, exclusivity",
                "the dots stay on the mug",
                "the dots leak onto the table",
                ("pattern_leak",),
                pass_answer="no",
            ),
            Q(
                "Does the mug face toward the left, as the pyramid of Image_3 shows?",
                "⊕",
                "f1⊕g_view",
                "the mug faces left",
                "the mug faces right, against the pyramid",
                ("wrong_orientation:mug",),
            ),
        ],
        defects={
            "nano-banana": [],
            "gpt-image-1": ["pattern_leak"],
            "qwen-image-edit": ["wrong_orientation:mug", "no_pattern"],
        },
    ),
    # demo-07..09: the borderline cases of the conflict rules (see SUBJECTS).
    TaskSpec(
        task_id="demo-07",
        instruction="On the night street of Image_2, the orange tabby cat of Image_0 sits "
        "beside the blue mug of Image_1, each in its box of Image_3 (red box: cat, blue box: "
        "mug). Turn them as the pyramids of Image_4 show (the orange base is the front): the "
        "cat faces screen-right, slightly up; the mug faces slightly left and down. A breeze "
        f"blows from the left, as the cyan arrow of Image_5 shows. {NO_MARKS}",
        refs=[("tabby", "orange tabby cat"), ("mug", "blue mug"),
              ("scene:night_city", "night street")],
        layout=[("tabby", [0.06, 0.44, 0.52, 0.92]), ("mug", [0.60, 0.56, 0.90, 0.90])],
        formula="C(f1⊕g_view1, f2⊕g_view2)⊕g_bg⊕g_vfx",
        background="night_city",
        orientation=[
            {"subject": "tabby", "yaw": 20, "pitch": 10},
            {"subject": "mug", "yaw": -20, "pitch": -15},
        ],
        arrows=[{"kind": "wind", "start": [0.08, 0.30], "end": [0.70, 0.38]}],
        questions=[
            Q(
                "Is the orange tabby cat of Image_0 present?",
                "f",
                "f1",
                "the tabby cat is there",
                "the cat is missing or different",
                ("missing:tabby", "identity:tabby"),
            ),
            Q(
                "Is the blue mug of Image_1 present?",
                "f",
                "f2",
                "the blue mug is there",
                "the mug is missing or different",
                ("missing:mug", "identity:mug"),
            ),
            Q(
                "Does the cat face screen-right, as its pyramid in Image_4 shows?",
                "⊕",
                "f1⊕g_view1",
                "the cat faces right",
                "the cat faces left, against its pyramid",
                ("wrong_orientation:tabby",),
                depends_on=(1,),
            ),
            Q(
                "Does the mug face toward the left (handle on the right), as its pyramid "
                "shows?",
                "⊕",
                "f2⊕g_view2",
                "the mug faces left",
                "the mug still faces right, like its reference",
                ("wrong_orientation:mug",),
                depends_on=(2,),
            ),
            Q(
                "Does the breeze visibly blow from left to right (fur, leaves), as the cyan "
                "arrow of Image_5 shows?",
                "⊕",
                "C⊕g_vfx, wind",
                "the breeze blows to the right",
                "no wind along the arrow",
                ("no_wind",),
            ),
        ],
        defects={
            "nano-banana": ["wrong_orientation:tabby"],
            "gpt-image-1": ["wrong_orientation:mug"],
            "qwen-image-edit": ["no_wind", "blur"],
        },
    ),
    TaskSpec(
        task_id="demo-08",
        instruction="On the beach of Image_2, the orange tabby cat of Image_0 and the grey "
        "cat of Image_1 sit in their boxes of Image_3 (red box: tabby, blue box: grey cat). "
        "Both face screen-right as the pyramids of Image_4 show. The light comes from the "
        f"upper left, as the yellow arrow of Image_5 shows. {NO_MARKS}",
        refs=[("tabby", "orange tabby cat"), ("kitten", "grey cat"), ("scene:beach", "beach")],
        layout=[("tabby", [0.06, 0.40, 0.48, 0.90]), ("kitten", [0.54, 0.50, 0.92, 0.90])],
        formula="C(f1⊕g_view1, f2⊕g_view2)⊕g_bg⊕g_light",
        background="beach",
        orientation=[
            {"subject": "tabby", "yaw": 21, "pitch": 10},
            {"subject": "kitten", "yaw": 35, "pitch": -10},
        ],
        arrows=[{"kind": "light", "start": [0.10, 0.08], "end": [0.55, 0.60]}],
        questions=[
            Q(
                "Are both cats present: the orange tabby of Image_0 and the grey cat of "
                "Image_1?",
                "f",
                "f1, f2",
                "both cats are there",
                "a cat is missing",
                ("missing:tabby", "missing:kitten"),
            ),
            Q(
                "Do both cats face screen-right, as the pyramids of Image_4 show?",
                "⊕",
                "f1⊕g_view1, f2⊕g_view2",
                "both cats face right",
                "the grey cat faces left, like its reference",
                ("wrong_orientation:kitten", "wrong_orientation:tabby"),
                depends_on=(1,),
            ),
            Q(
                "Does the light come from the upper left, as the yellow arrow of Image_5 "
                "shows?",
                "⊕",
                "C⊕g_light",
                "a warm light comes from the upper left",
                "the light does not follow the arrow",
                ("no_light",),
            ),
            Q(
                "Is the background the beach of Image_2?",
                "g",
                "g_bg",
                "the beach is kept",
                "the background changed",
            ),
        ],
        defects={
            "nano-banana": [],
            "gpt-image-1": ["no_light"],
            "qwen-image-edit": ["wrong_orientation:kitten"],
        },
    ),
    TaskSpec(
        task_id="demo-09",
        instruction="The dancer of Image_0 stands in the meadow of Image_1, inside the box of "
        "Image_2, turned slightly to screen-right and looking up as the pyramid of Image_3 "
        "shows. The dancer takes the pose of Image_4 instead of their own: right arm raised "
        f"high, left leg stepping out. {NO_MARKS}",
        refs=[("dancer", "dancer"), ("scene:meadow", "sunny meadow")],
        layout=[("dancer", [0.26, 0.06, 0.74, 0.94])],
        formula="C(f1⊕g_view⊕g_pose)⊕g_bg",
        background="meadow",
        orientation=[{"subject": "dancer", "yaw": 10, "pitch": 20}],
        pose="dancer",
        questions=[
            Q(
                "Is the dancer of Image_0 present (same hair, shirt and scarf)?",
                "f",
                "f1",
                "the dancer of Image_0 is there",
                "the dancer's identity changed",
                ("missing:dancer", "identity:dancer"),
            ),
            Q(
                "Is the dancer's right arm raised above the head, as in the pose of Image_4?",
                "⊕",
                "f1⊕g_pose",
                "the pose matches",
                "the dancer keeps the pose of the reference",
                ("wrong_pose",),
                depends_on=(1,),
            ),
            Q(
                "Is the background the meadow of Image_1?",
                "g",
                "g_bg",
                "the meadow is kept",
                "the background changed",
            ),
            Q(
                "Is the skeleton of Image_4 or a layout box drawn in the output?",
                "C",
                "C, VI residue",
                "no instruction marks are left",
                "instruction marks are left",
                ("residue:dancer",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": ["wrong_pose"],
            "gpt-image-1": [],
            "qwen-image-edit": ["identity:dancer", "residue:dancer"],
        },
    ),
    # demo-10: the task with a diagnostic tree (see TREE_NODES below).
    TaskSpec(
        task_id="demo-10",
        instruction="Dress the person from Image_0 in the orange-and-white striped shirt of "
        "Image_1 and show them standing beside the red cat of Image_2 on the night street of "
        "Image_3. Place each subject inside its box of the layout in Image_4 (red box: "
        f"person, blue box: cat). Only the shirt gets the stripes. {NO_MARKS}",
        refs=[
            ("person", "person with red scarf"),
            ("sub:shirt", "striped shirt"),
            ("cat", "red cat"),
            ("scene:night_city", "night street"),
        ],
        layout=[("person", [0.06, 0.12, 0.46, 0.94]), ("cat", [0.54, 0.52, 0.94, 0.92])],
        formula="C(f1⊕g1, f2)⊕g_bg",
        background="night_city",
        questions=[
            Q(
                "Is the person from Image_0 present (same face, hair and red scarf)?",
                "f",
                "f1",
                "the person of Image_0 is there",
                "the person's hair and scarf differ from Image_0",
                ("missing:person", "identity:person"),
            ),
            Q(
                "Does the person wear the orange-and-white striped shirt of Image_1?",
                "⊕",
                "f1⊕g1",
                "the person wears the striped shirt",
                "the shirt has no stripes: it is not the shirt of Image_1",
                ("missing:person", "no_pattern"),
            ),
            Q(
                "Do the shirt's stripes also appear on anything other than the person's shirt "
                "(the cat, the ground)?",
                "⊕",
                "f1⊕g1, exclusivity",
                "only the shirt is striped",
                "the stripes leak onto the cat",
                ("pattern_leak",),
                pass_answer="no",
            ),
            Q(
                "Is the red cat from Image_2 present, with its red fur?",
                "f",
                "f2",
                "the red cat of Image_2 is there",
                "the cat's fur is not the red of Image_2",
                ("missing:cat", "identity:cat"),
            ),
            Q(
                "Is the background the night street of Image_3?",
                "g",
                "g_bg",
                "the night street is kept",
                "the background changed",
            ),
            Q(
                "Does any subject appear more times than intended?",
                "C",
                "C, duplication",
                "each subject appears once",
                "a subject is duplicated",
                ("duplicate:person", "duplicate:cat"),
                pass_answer="no",
            ),
        ],
        defects={  # the root (N0) of its tree; the nodes: TREE_DEFECTS
            "nano-banana": ["identity:cat"],  # the neon light of the street recolours the cat
            "gpt-image-1": ["pattern_leak", "identity:cat"],  # the stripes land on the cat
            "qwen-image-edit": ["identity:person", "no_pattern", "blur"],
        },
    ),
)

#: Outputs that exist and were judged but whose image is not in the bundle.
IMAGE_NOT_AT_HAND = {("demo-03", "qwen-image-edit")}
