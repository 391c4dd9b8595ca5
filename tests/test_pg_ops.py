"""``judge-audit backup``, ``restore`` and ``check`` on PostgreSQL (issue #18, item 3).

Against a real throwaway cluster (:mod:`tests.helpers.postgres`; skipped where none can be
started): the demo with app work on top is backed up (a ``pg_dump`` archive and its
``_media`` folder) and restored into a new, empty database: every table's rows and every
image file are the same, ``check`` passes and the restored project takes new answers. A
non-empty target is refused unless forced (then what was there is backed up first); backups
taken while an annotator writes each restore to exactly the rows their summary counted.
``check`` names a dropped and a disabled append-only trigger, a missing and a corrupted
image, and rows referring to a missing row.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from annotation.accounts import auth
from annotation.cli import main
from annotation.store import Store, pg, pgops
from annotation.store.backup import RecoveryError, backup, restore
from annotation.store.check import check_project
from annotation.store.media import media_dir
from annotation.work import workflow

pytestmark = pytest.mark.slow  # a PostgreSQL database (and pg_dump) per test


def _psycopg(url: str):
    import psycopg

    return psycopg.connect(pg.parse(url).conninfo, autocommit=True)


def _tables(url: str) -> dict[str, list[tuple]]:
    """Every table of the database, all its rows (in insertion order, the ``rowid``)."""
    with _psycopg(url) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        out = {}
        for name in names:
            cols = [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                " AND table_schema = 'public'", [name])]
            order = "rowid" if "rowid" in cols else "1"
            out[name] = conn.execute(f'SELECT * FROM "{name}" ORDER BY {order}').fetchall()
        return out


def _media(url: str | Path) -> dict[str, bytes]:
    root = media_dir(pg.parse(url).anchor) if isinstance(url, str) else media_dir(url)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def pg_demo(make_pg_demo) -> str:
    """The demo on PostgreSQL with app work on top (answers, a change, a flag, a role)."""
    url = make_pg_demo()
    with Store.open(url) as store:
        output_id = workflow.next_item(store, "alice")
        workflow.give_answer(store, "alice", output_id, criterion="visual_quality", score=3)
        workflow.give_answer(store, "alice", output_id, criterion="visual_quality", score=4)
        workflow.flag_item(store, "alice", output_id, "broken_image")
        auth.set_role(store, "alice", "admin", "admin")
    return url


@pytest.fixture
def empty_url(pg_cluster, tmp_path: Path):
    """A new database with nothing in it (no schema): where a restore goes."""
    return lambda label: pg_cluster.url(pg_cluster.create_database(),
                                        media=tmp_path / f"media-{label}")


def test_backup_restore_round_trip(pg_demo, empty_url, tmp_path, capsys) -> None:
    out = tmp_path / "backups" / "demo.dump"
    assert main(["backup", "--db", pg_demo, "--out", str(out)]) == 0
    assert "demo.dump (schema v" in capsys.readouterr().out
    # the layout of the SQLite backup: the file, and <its stem>_media/ beside it
    assert out.read_bytes()[:5] == b"PGDMP" and out.stat().st_mode & 0o077 == 0
    assert _media(out) == _media(pg_demo) and len(_media(out)) > 50

    target = empty_url("restored")
    assert main(["restore", "--from", str(out), "--db", target]) == 0
    assert _tables(target) == _tables(pg_demo)
    assert _media(target) == _media(pg_demo)
    assert main(["check", "--db", target]) == 0
    assert ": OK" in capsys.readouterr().out
    with Store.open(target) as store, Store.open(pg_demo) as source:  # a working project
        assert store.counts() == source.counts()
        output_id = workflow.next_item(store, "bob")
        workflow.give_answer(store, "bob", output_id, criterion="visual_quality", score=9)
        assert store.counts()["annotations"] == source.counts()["annotations"] + 1


def test_restore_refuses_a_non_empty_database_unless_forced(pg_demo, pg_url, tmp_path) -> None:
    out = tmp_path / "demo.dump"
    backup(pg_demo, out)
    before = _tables(pg_url)  # an empty project: the schema, no answers
    with pytest.raises(RecoveryError, match="not an empty database: restore with --force"):
        restore(out, pg_url)
    assert _tables(pg_url) == before
    assert main(["restore", "--from", str(out), "--db", pg_url]) == 1
    # forced: what was there is backed up first, then replaced in one transaction
    summary = restore(out, pg_url, force=True)
    assert summary.set_aside is not None and summary.set_aside.read_bytes()[:5] == b"PGDMP"
    assert _tables(pg_url) == _tables(pg_demo)
    assert check_project(pg_url).ok


def test_restore_refuses_foreign_and_incomplete_backups(pg_demo, empty_url, tmp_path,
                                                        make_demo_db) -> None:
    sqlite_backup = make_demo_db(tmp_path / "sqlite" / "demo.db")
    target = empty_url("t")
    with pytest.raises(RecoveryError, match="backup of a SQLite project"):
        restore(sqlite_backup, target)
    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"not a backup")
    with pytest.raises(RecoveryError, match="not a backup written by judge-audit"):
        restore(junk, target)
    out = tmp_path / "demo.dump"
    backup(pg_demo, out)
    next(p for p in media_dir(out).rglob("*") if p.is_file()).unlink()
    with pytest.raises(RecoveryError, match="1 image files of the backup are missing"):
        restore(out, target)
    assert _tables(target) == {}  # nothing written


def test_a_missing_pg_dump_is_named(pg_demo, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JUDGE_AUDIT_PG_BIN", raising=False)
    monkeypatch.setattr(pgops.glob, "glob", lambda pattern: [])
    with pytest.raises(RecoveryError, match="pg_dump not found.*postgresql-client"):
        backup(pg_demo, tmp_path / "x.dump")


def test_check_a_healthy_database_reports_as_on_sqlite(pg_demo, tmp_path, make_demo_db,
                                                       capsys) -> None:
    assert main(["check", "--db", pg_demo, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    sqlite_report = check_project(make_demo_db(tmp_path / "s.db")).to_dict()
    assert report.keys() == sqlite_report.keys()
    assert report["ok"] is True and report["problems"] == []
    assert report["images_checked"] == sqlite_report["images_checked"] > 50
    assert report["journal_mode"] == "postgresql"
    assert any("integrity_check" in note for note in report["notes"])
    # read only: nothing changed
    before = _tables(pg_demo)
    check_project(pg_demo)
    assert _tables(pg_demo) == before


def test_check_finds_a_dropped_and_a_disabled_append_only_trigger(pg_demo, capsys) -> None:
    with _psycopg(pg_demo) as conn:
        conn.execute("DROP TRIGGER annotations_no_update ON annotations")
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_delete")
    assert main(["check", "--db", pg_demo]) == 1
    err = capsys.readouterr().err
    assert "the trigger annotations_no_update of schema v" in err and "is missing" in err
    assert "audit_log_no_delete on audit_log is disabled" in err
    assert "judge-audit restore --from BACKUP.dump" in err


def test_check_finds_a_missing_and_a_corrupted_image(pg_demo, capsys) -> None:
    files = sorted(p for p in media_dir(pg.parse(pg_demo).anchor).glob("??/*"))
    deleted, corrupted = files[3], files[10]
    deleted.unlink()
    data = bytearray(corrupted.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupted.write_bytes(bytes(data))
    assert main(["check", "--db", pg_demo]) == 1
    err = capsys.readouterr().err
    assert f"{deleted.parent.name}/{deleted.name} missing" in err
    assert f"{corrupted.parent.name}/{corrupted.name} damaged" in err
    assert "(used by " in err


def test_check_finds_rows_referring_to_a_missing_row(pg_demo) -> None:
    with _psycopg(pg_demo) as conn:  # as a restore with triggers off could leave it
        conn.execute("SET session_replication_role = replica")
        conn.execute("DELETE FROM judges WHERE name = (SELECT min(judge) FROM judgments)")
    report = check_project(pg_demo)
    assert not report.ok
    assert any(p.kind == "database" and "foreign key: judgments.judge -> judges.name" in p.what
               for p in report.problems)


def test_a_database_that_is_not_a_project(empty_url, tmp_path) -> None:
    report = check_project(empty_url("none"))
    assert [p.what for p in report.problems] == ["not a judge-audit project database"]
    with pytest.raises(RecoveryError, match="not a judge-audit project"):
        backup(empty_url("none2"), tmp_path / "x.dump")
    assert not (tmp_path / "x.dump").exists()


def test_a_backup_while_an_annotator_writes_is_one_snapshot(pg_demo, empty_url,
                                                           tmp_path) -> None:
    """The counts and image list read for the summary are those of the dumped snapshot:
    a restore of each backup taken while answers are written has exactly those rows."""
    stop = threading.Event()

    def write() -> None:
        with Store.open(pg_demo) as store:
            while not stop.is_set():
                output_id = workflow.next_item(store, "carol")
                if output_id is None:
                    return
                workflow.give_answer(store, "carol", output_id, criterion="visual_quality",
                                     score=5)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        summaries = [backup(pg_demo, tmp_path / f"b{i}.dump") for i in range(3)]
    finally:
        stop.set()
        writer.join()
    for i, summary in enumerate(summaries):
        target = empty_url(f"r{i}")
        restored = restore(summary.path, target)
        assert restored.counts == summary.counts
        assert check_project(target).ok
    counts = [s.counts["annotations"] for s in summaries]
    assert counts == sorted(counts)
