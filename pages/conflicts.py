"""Verify conflict labels (VIF-Bench): one task at a time, keyboard first.

Layout only: the controller is annotation.work.verification.VerifySession. Per conflict type
the page shows the reference(s) next to the visual instruction they may conflict with, the
pre-labels as editable fields (a reference this verifier already read in another task
shows that reading, "read in task X": a reading is of the image, asked once), the targets
in words and, once allowed (blind mode), the automatic decision with the rule that fired;
then the verifier's verdict.
"""

import streamlit as st

from annotation.ui import answer_panel, render
from annotation.ui.app_state import open_store
from annotation.ui.widget_keys import widget_key
from annotation.ui.widgets import inert, require, show_image
from annotation.vif.conflicts import normalize_yaw
from annotation.vif.readouts import readouts
from annotation.work import verification as vf
from annotation.work.verification import VerifySession

TITLES = vf.CONFLICT_TITLES
MEANING = {
    "orientation": "Conflict when the reference subject's facing direction is clear and the "
                   "pyramid asks for a yaw at least 60° away from it, or the other side "
                   "(left/right flip).",
    "light": "Conflict when a reference has distinctive lighting (neon, moonlight, spotlight, "
             "strong backlight, coloured light...) and the task has a light arrow.",
    "wind": "Conflict when a reference has elements that change with wind (hair, fabric, "
            "fur, feathers, smoke, flames...) and the task has a wind arrow.",
    "pose": "Conflict when the person has a clear, non-neutral pose in the reference and a "
            "pose reference is attached to that person.",
}


yes_no = vf.label_text


user = require()
store = open_store(st.session_state)
session = VerifySession(store, user.name, st.session_state.setdefault("verify", {}))
if notice := session.state.pop("notice", None):  # a stale tab was refused: say why
    st.warning(notice, icon=":material/sync_problem:")

if session.task_id is None:
    done, _ = session.progress()
    st.title("All done")
    st.success(f"You have verified {done} task(s); nothing is waiting for you right now.")
    if st.button("Review my previous task", shortcut="B", icon=":material/undo:"):
        session.back()
        st.rerun()
    st.stop()

item = session.item
settings = session.settings
readings = session.readings()
elsewhere = session.read_elsewhere()  # this verifier's readings of these images, elsewhere
verdicts = session.verdicts()
if session.keep_pending_notes(verdicts):  # notes typed before their verdict arrived
    verdicts = session.verdicts()
revealed = vf.reveal_automatic(item, readings, settings.blind)
mine = vf.decisions_on(item, readings)
done, total = session.progress()

# ------------------------------------------------------------------ header
head, bar = st.columns([3, 2], vertical_alignment="bottom")
with head:
    st.subheader(f"Verify conflicts · task {inert(item.task_id)}", anchor=False)
    if session.state.get("reviewing"):
        st.caption(":orange[Reviewing a task you already submitted: changes are kept as "
                   "history.]")
with bar:
    st.progress(min(done / total, 1.0) if total else 1.0,
                text=f"Your progress: {done} of {total} tasks")
with st.expander("Text instruction"):
    st.text(item.instruction)
if not revealed:
    st.info("**Step 1 of 2:** check each pre-label against the images and correct it where "
            "it is wrong, then confirm your reading (Enter). The automatic decision is shown "
            "after that.", icon=":material/visibility_off:")
if item.needed() and all(key in elsewhere for key in item.needed()):
    st.caption("You read every reference image of this task in other tasks (shown "
               "below, editable): only the verdicts are needed.")


def thumb(index: int, width: int = render.CHECK_SIZE) -> None:
    image = next(im for im in item.images if im.index == index)
    show_image(store, image.sha256, width, caption=inert(image.caption))


def save(index: int, attribute: str, key: str) -> None:
    session.set_reading(index, attribute, st.session_state[key])


# ------------------------------------------------------------------ one block per type
for check in item.checks:
    kind = check.conflict
    with st.container(border=True):
        st.markdown(f"#### {TITLES[kind]}")
        st.caption(MEANING[kind])
        shown = [("ref", i) for i in check.references] + [("vi", i) for i in check.instructions]
        grid = st.columns(4, gap="medium")
        for n, (what, index) in enumerate(shown):
            with grid[n % 4]:
                thumb(index)
                if what == "vi":
                    continue
                ref = item.reference(index)
                for attr in (a for a in ref.attributes if vf.ATTRIBUTE_TYPE[a] == kind):
                    key = widget_key("r", item.task_id, index, attr)
                    value = session.reading_value(index, attr)
                    given = (index, attr) in readings
                    help_text = (f"Pre-label: {ref.prelabel.get(attr)!r}"
                                 + (" · your reading is saved" if given else ""))
                    if attr == "yaw":
                        st.slider(vf.ATTRIBUTE_LABELS[attr], -180, 180,
                                  value=int(round(normalize_yaw(value)))
                                  if value is not None else 0,
                                  step=5, key=key, help=help_text + ". 0 = facing the camera, "
                                  "+90 = screen-right, -90 = screen-left, 180 = back",
                                  on_change=save, args=(index, attr, key))
                    else:
                        st.checkbox(vf.ATTRIBUTE_LABELS[attr], value=bool(value), key=key,
                                    help=help_text, on_change=save, args=(index, attr, key))
                    before = ref.prelabel.get(attr)
                    if (index, attr) in elsewhere:
                        st.caption(f":green[read in task {inert(elsewhere[(index, attr)])}]"
                                   " · an edit applies in every task with this image")
                    if given and readings[(index, attr)] != before:
                        st.caption(f":orange[changed: the pre-label said {before!r}]")
        if check.targets:
            st.caption("Target of the visual instruction: " + " · ".join(
                inert(t) for t in check.targets))
            words = [r for r in readouts(item.meta) if r["kind"] == kind]
            if words:
                with st.expander("In words: dense / medium / sparse"):
                    for r in words:
                        st.text("\n".join(
                            (f"{r['subject']}: " if r.get("subject") else "") + r[level]
                            for level in ("dense", "medium", "sparse")))
        elif not check.instructions:
            st.caption("(no visual-instruction image or target for this type)")

        if not revealed:
            continue
        st.divider()
        auto_col, verdict_col = st.columns([3, 2], gap="medium")
        with auto_col:
            source = "published label" if check.published is not None else "rules"
            st.markdown(f"Automatic label ({source}): **{yes_no(check.automatic)}**")
            st.caption(f"Rule on the pre-labels: {inert(check.rule.rule) or '–'}")
            st.caption(f"Rule on your reading: {yes_no(mine[kind].conflict)} "
                       f"({inert(mine[kind].rule) or '–'})")
        with verdict_col:
            verdict = verdicts.get(kind)
            note_key = widget_key("n", item.task_id, kind)
            st.text_input("Note on your verdict (optional)", key=note_key,
                          value=(verdict.note if verdict else session.pending_note(kind))
                          or "",
                          on_change=lambda k=kind, nk=note_key: session.set_note(
                              k, st.session_state[nk]))

# ------------------------------------------------------------------ the verdicts
def field_values(here: VerifySession) -> dict[tuple[int, str], object]:
    """What the reading fields show now (the pre-label where the verifier changed nothing)."""
    values = {}
    for idx, attr in here.item.needed():
        key = widget_key("r", here.item.task_id, idx, attr)
        if key in st.session_state:
            values[(idx, attr)] = st.session_state[key]
    return values


def on_command(command: dict) -> None:
    """A command from the answer panel (before the page runs): the controller acts on it
    once, with the reading the fields show."""
    here = VerifySession(open_store(st.session_state), user.name, st.session_state["verify"])
    here.command(command, lambda: field_values(here))


st.markdown("#### Your verdicts" if revealed else "#### Your reading")
answer_panel.show(session.panel(), person=user.name, unit=item.task_id, key="verify-panel",
                  on_command=on_command)
st.caption("Keys: A agree · D disagree (on the ▶ type) · J / K move · Enter confirm / "
           "submit · B back")
