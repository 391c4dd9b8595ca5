"""Admin: conflict-label verification settings, progress and results (VIF-Bench).

Layout only: annotation.work.verification (settings, progress) and annotation.results.conflicts
(tables, export) do the work; `judge-audit conflicts --db DB --out DIR` writes the same.
"""

import streamlit as st

from annotation.results import conflicts as cr
from annotation.results.analytics import csv_bytes
from annotation.ui.app_state import open_store
from annotation.ui.widgets import arrow_safe, require
from annotation.work import verification as vf

CAPTIONS = {
    "conflict_agreement": "Automatic labels against the verified ones (majority of verifiers, "
                          "or an admin's decision on a tie; undecided ties left out): counts, "
                          "precision, recall, agreement with its Wilson interval and Cohen's "
                          "kappa.",
    "verifier_agreement": "Verifiers against each other on the verified labels: Krippendorff's "
                          "alpha (nominal) and mean pairwise agreement, over tasks verified by "
                          "two or more people.",
    "annotator_confusion": "Each verifier's estimated confusion matrix (Dawid-Skene): "
                           "P(answer | true label), fitted to every verifier's labels; "
                           "verified labels has the Dawid-Skene label (dawid_skene) beside "
                           "the majority.",
    "conflict_statistics": "VIF-Bench Section 3.2: tasks with each instruction and how many "
                           "are conflicts, from the automatic labels (all tasks, verified tasks) "
                           "and from the verified labels.",
    "verified_labels": "Per task and conflict type: votes, their majority and the verified "
                       "label (an admin's decision where there is one: resolved_by, "
                       "resolution_note).",
    "published_vs_rules": "Published labels against the rules recomputed on the pre-labels: "
                          "an inconsistent row is worth a look before verification; "
                          "rules_on_readings: the rules on the verified readings.",
    "verdict_history": "Every verdict ever given, superseded ones included.",
    "resolution_history": "Every decision on a tied or undecided label, superseded ones "
                          "included.",
    "prelabel_accuracy": "How good the VLM pre-labels were, over distinct reference images: "
                         "the yaw error against the verified yaw (degrees: median, mean, "
                         "90th percentile, shares within 22.5 and 45) and, per yes/no "
                         "attribute, accuracy with its Wilson 95% interval.",
    "verified_prelabels": "Per reference image (content hash) and attribute: the pre-label, "
                          "each verifier's current reading (given in whichever task) and "
                          "the verified reading, with the tasks showing the image.",
    "reading_history": "Every pre-label reading ever given, superseded ones included (a "
                       "correction in one task supersedes the reading of that image made "
                       "in another).",
}

user = require("admin")
store = open_store(st.session_state)
settings = vf.get_settings(store)

st.title("Conflict labels")
done, needed = vf.overall_progress(store)
st.progress(min(done / needed, 1.0) if needed else 1.0,
            text=f"Verification: {done} of {needed} needed "
                 f"({settings.overlap} verifier(s) per task, "
                 f"{len(vf.verifiable_tasks(store))} tasks with a conflict-capable instruction)")

left, right = st.columns(2)
with left, st.form("verify-settings"):
    st.subheader("Settings", anchor=False)
    blind = st.toggle("Blind mode", settings.blind,
                      help="Hide the automatic decision until the verifier has confirmed their "
                           "own reading of the pre-labels (recommended)")
    overlap = st.number_input("Distinct verifiers per task", 1, 20, settings.overlap)
    minutes = st.number_input("Reservation timeout (minutes)", 1, 24 * 60,
                              settings.reservation_minutes)
    if st.form_submit_button("Save"):
        vf.set_settings(store, user.name, blind=bool(blind), overlap=int(overlap),
                        reservation_minutes=int(minutes))
        st.rerun()
with right:
    st.subheader("Per verifier", anchor=False)
    st.dataframe(vf.progress_by_verifier(store), hide_index=True, width="stretch")
    st.download_button("Verified labels (JSONL)", cr.verified_labels_jsonl(store),
                       file_name="verified_labels.jsonl", mime="application/jsonl",
                       icon=":material/download:")

tables = cr.conflict_tables(store)
open_labels = cr.undecided_labels(tables["verified_labels"])
st.subheader("Ties and undecided labels", anchor=False)
if open_labels.empty:
    st.caption("Every verified label has a majority or a decision.")
else:
    st.caption("The verifiers are tied on these labels. Decide each one with a note: the "
               "decision becomes the verified label and stays in the history (a later "
               "decision replaces it, never erases it).")
    st.dataframe(open_labels, hide_index=True, width="stretch")
    with st.form("resolve-conflict", clear_on_submit=True):
        choice = st.selectbox(
            "Label", list(range(len(open_labels))),
            format_func=lambda i: f"{open_labels.task_id.iloc[i]} · "
                                  f"{open_labels.conflict.iloc[i]} "
                                  f"({open_labels.votes_conflict.iloc[i]} of "
                                  f"{open_labels.n_verifiers.iloc[i]} say conflict)")
        verdict = st.radio("Decision", ["conflict", "no conflict"], horizontal=True)
        note = st.text_input("Note (why)", max_chars=2000)
        if st.form_submit_button("Decide", type="primary"):
            try:
                vf.resolve_label(store, str(open_labels.task_id.iloc[choice]),
                                 str(open_labels.conflict.iloc[choice]),
                                 verdict == "conflict", note, actor=user.name)
            except ValueError as error:
                st.error(str(error))
            else:
                st.rerun()
for name in ("conflict_agreement", "verifier_agreement", "annotator_confusion",
             "conflict_statistics",
             "verified_labels", "published_vs_rules", "prelabel_accuracy",
             "verified_prelabels", "verdict_history", "resolution_history",
             "reading_history"):
    st.subheader(name.replace("_", " ").capitalize(), anchor=False)
    st.caption(CAPTIONS[name])
    table = tables[name]
    st.dataframe(arrow_safe(table), hide_index=True, width="stretch")
    st.download_button("CSV", csv_bytes(table), file_name=f"{name}.csv", mime="text/csv",
                       key=f"csv-{name}")
