"""Project overview tables for the home page and ``judge-audit info``: pure DataFrame code."""

from __future__ import annotations

import pandas as pd

from annotation.store import Store


def generators_table(store: Store) -> pd.DataFrame:
    """One row per generator: outputs; with an image; judged but image not at hand;
    missing (the generator produced nothing)."""
    outputs = store.outputs_df()
    if outputs.empty:
        return pd.DataFrame(columns=["generator", "outputs", "with image", "not at hand",
                                     "missing"])
    has_image = outputs["path"].notna()
    table = pd.DataFrame({
        "generator": outputs["generator"],
        "with image": has_image,
        "not at hand": ~has_image & (outputs["missing"] == 0),
        "missing": outputs["missing"] == 1,
    }).groupby("generator", sort=True).agg(
        outputs=("with image", "size"),
        **{c: (c, "sum") for c in ["with image", "not at hand", "missing"]},
    )
    return table.reset_index().astype({c: int for c in table.columns})


def judges_table(store: Store) -> pd.DataFrame:
    """One row per judge: kind, outputs judged, checklist answers, criterion scores, and
    answers whose text could not be parsed."""
    judges = store.judges_df()
    judgments = store.judgments_df()
    rows = []
    for judge in judges.itertuples():
        mine = judgments[judgments["judge"] == judge.name]
        rows.append({
            "judge": judge.name,
            "kind": judge.kind,
            "outputs": mine["output_id"].nunique(),
            "answers": int(mine["question_id"].notna().sum()),
            "scores": int(mine["criterion"].notna().sum()),
            "unparsed": int((mine["parse_status"] == "unparsed").sum()),
        })
    return pd.DataFrame(rows, columns=["judge", "kind", "outputs", "answers",
                                       "scores", "unparsed"])


def criteria_table(store: Store) -> pd.DataFrame:
    """The rating criteria with their scales, in display order."""
    criteria = store.criteria_df()
    if criteria.empty:
        return pd.DataFrame(columns=["criterion", "label", "scale", "level"])

    def scale(row: pd.Series) -> str:
        step = "continuous" if pd.isna(row["step"]) else f"step {row['step']:g}"
        return f"{row['min']:g}-{row['max']:g} ({step})"

    return pd.DataFrame({
        "criterion": criteria["name"],
        "label": criteria["label"],
        "scale": criteria.apply(scale, axis=1),
        "level": criteria["level"],
    })


def import_log_table(store: Store) -> pd.DataFrame:
    """The import log, newest first, with counts summarized in one text column."""
    log = store.import_log()
    if log.empty:
        return pd.DataFrame(columns=["#", "when (UTC)", "format", "source", "rows", "warnings"])
    return pd.DataFrame({
        "#": log["import_id"],
        "when (UTC)": log["started_at"].str.slice(0, 19).str.replace("T", " "),
        "format": log["format"],
        "source": log["source"],
        "rows": log["counts"].map(
            lambda c: ", ".join(f"{k} {v}" for k, v in c.items() if v) or "nothing new"),
        "warnings": log["warnings"].map(len),
        "by": log["user"],
    }).iloc[::-1].reset_index(drop=True)



def import_warnings_table(store: Store) -> pd.DataFrame:
    """Every warning of every import, one row each: ``import``, ``warning``."""
    log = store.import_log()
    rows = [{"import": row.import_id, "warning": w}
            for row in log.itertuples() for w in row.warnings]
    return pd.DataFrame(rows, columns=["import", "warning"])
