"""Issue #7, part 3: backups taken while annotators write, and restores.

A backup taken while worker processes write answers (the page's code path, see
:func:`test_concurrency.annotate_loop`) passes ``integrity_check`` and holds a consistent
prefix of the history: exactly the rows committed before some moment, never a half
transaction. A restore reproduces the backed-up project row for row, image for image;
it refuses damaged, foreign or newer backups and, without ``force``, existing databases.

SQLite-only by nature (issue #18): file-level backups and restores of SQLite project files,
read and damaged with sqlite3 directly (PostgreSQL's backup is annotation.store.pgops).
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

import pytest

from annotation.accounts import auth
from annotation.cli import main
from annotation.store import Store
from annotation.store.backup import RecoveryError, backup, media_dir, restore
from annotation.work import workflow
from tests.helpers.bundles import db_checksum
from tests.test_concurrency import (
    N_QUESTIONS,
    assert_acks_stored,
    make_project,
    read_acks,
    worker_command,
    worker_env,
)

N_WRITERS = 4
N_BACKUPS = 4


def _rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _media(db: Path) -> dict[str, bytes]:
    root = media_dir(db)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _assert_sound(db: Path) -> None:
    assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert _rows(db, "PRAGMA foreign_key_check") == []


@pytest.mark.slow
def test_backup_while_annotators_write_is_a_consistent_prefix(tmp_path: Path) -> None:
    db = make_project(tmp_path)
    go, stop = tmp_path / "go", tmp_path / "stop"
    procs = []
    for i in range(N_WRITERS):
        acks = tmp_path / f"acks-{i}.jsonl"
        cmd = worker_command(db, f"ann{i}", answers=0, seed=i, out=acks, go=go, stop=stop)
        procs.append((acks, subprocess.Popen(cmd, env=worker_env(), stderr=subprocess.PIPE,
                                             text=True)))
    backups: list[Path] = []
    try:
        started = time.monotonic()
        while not all(f.exists() and f.read_text().count("\n") for f, _ in procs):
            assert all(p.poll() is None for _, p in procs), "a writer died before starting"
            assert time.monotonic() - started < 60
            time.sleep(0.02)
        go.touch()
        while sum(f.read_text().count("\n") for f, _ in procs) < 50:
            assert all(p.poll() is None for _, p in procs), "a writer died"
            time.sleep(0.02)
        for n in range(N_BACKUPS):
            out = tmp_path / "backups" / f"b{n}.db"
            summary = backup(db, out)
            assert summary.media_missing == ()
            backups.append(out)
            time.sleep(0.3)
        assert all(p.poll() is None for _, p in procs), "a writer stopped while backing up"
        stop.touch()
        for _, p in procs:
            p.wait(timeout=120)
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
    assert [(p.returncode, p.stderr.read()) for _, p in procs] == [(0, "")] * N_WRITERS
    acks = [a for f, _ in procs for a in read_acks(f.read_text())]
    assert_acks_stored(db, acks)  # the writers lost nothing to the backups either

    final = {r[0]: r for r in _rows(db, "SELECT * FROM annotations")}
    final_audit = {r[0]: r for r in _rows(db, "SELECT * FROM audit_log")}
    final_subs = set(_rows(db, "SELECT * FROM submissions"))
    sizes = []
    for out in backups:
        _assert_sound(out)
        assert _rows(out, "PRAGMA journal_mode") == [("delete",)]  # one self-contained file
        assert not Path(f"{out}-wal").exists()
        # a prefix: every row committed up to the last one it holds, identical, and no other
        rows = {r[0]: r for r in _rows(out, "SELECT * FROM annotations")}
        last = max(rows)
        assert rows == {i: r for i, r in final.items() if i <= last}
        audit = {r[0]: r for r in _rows(out, "SELECT * FROM audit_log")}
        assert audit == {i: r for i, r in final_audit.items() if i <= max(audit)}
        assert set(_rows(out, "SELECT * FROM submissions")) <= final_subs
        # no half transaction: each submission's answers are all there
        incomplete = _rows(out, (
            "SELECT s.annotator, s.output_id FROM submissions s WHERE (SELECT count(*) FROM"
            " current_annotations a WHERE a.annotator = s.annotator"
            f" AND a.output_id = s.output_id) != {N_QUESTIONS + 1}"))
        assert incomplete == []
        # every image the backup names is beside it, where the store looks for it
        with Store.open(shutil.copy(out, tmp_path / "opened.db")) as copy:
            shas = [r[0] for r in copy.conn.execute("SELECT sha256 FROM files")]
        for sha in shas:
            fmt = _rows(out, f"SELECT format FROM files WHERE sha256 = '{sha}'")[0][0]
            store_path = Store(out, sqlite3.connect(":memory:")).media_path(sha, fmt)
            assert store_path.is_file()
        sizes.append(len(rows))
    # taken while the answers were being written: strictly between empty and final
    assert sizes[0] > 0 and sizes[-1] < len(final)
    assert sizes == sorted(sizes) and len(set(sizes)) > 1


@pytest.fixture
def demo(tmp_path: Path, make_demo_db) -> Path:
    """The demo project with some app work on top (answers, a change, a flag, a role)."""
    db = make_demo_db(tmp_path / "live" / "demo.db")
    with Store.open(db) as store:
        output_id = workflow.next_item(store, "alice")
        workflow.give_answer(store, "alice", output_id, criterion="visual_quality", score=3)
        workflow.give_answer(store, "alice", output_id, criterion="visual_quality", score=4)
        workflow.flag_item(store, "alice", output_id, "broken_image")
        auth.set_role(store, "alice", "admin", "admin")
    return db


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_restore_round_trip(demo: Path, tmp_path: Path) -> None:
    demo.chmod(0o600)  # a private project gives private copies
    media_dir(demo).chmod(0o700)
    out = tmp_path / "backups" / "demo-backup.db"
    summary = backup(demo, out)
    assert (_mode(out), _mode(media_dir(out))) == (0o600, 0o700)
    assert summary.media_copied == len(_media(demo)) and summary.media_present == 0
    again = backup(demo, out)  # content-addressed: nothing to copy a second time
    assert again.media_copied == 0 and again.media_present == summary.media_copied

    restored = tmp_path / "restored" / "study.db"
    result = restore(out, restored)
    assert result.set_aside is None
    assert (_mode(restored), _mode(media_dir(restored))) == (0o600, 0o700)
    assert db_checksum(restored) == db_checksum(demo)
    assert _media(restored) == _media(demo)
    _assert_sound(restored)
    assert _rows(restored, "PRAGMA journal_mode") == [("wal",)]
    with Store.open(restored) as store:  # a working project
        assert store.counts() == Store.open(demo).counts()
        output_id = workflow.next_item(store, "bob")
        workflow.give_answer(store, "bob", output_id, criterion="visual_quality", score=9)
    changed = db_checksum(restored)

    # an existing database is kept unless forced
    with pytest.raises(RecoveryError, match="exists"):
        restore(out, restored)
    assert db_checksum(restored) == changed
    # forced, while the app holds it open: the open connection sees the backup's content
    with Store.open(restored) as app:
        before = app.counts()["annotations"]
        restore(out, restored, force=True)
        assert app.counts()["annotations"] == before - 1
        assert app.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db_checksum(restored) == db_checksum(demo)


def test_restore_refuses_bad_backups(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.db"
    backup(demo, out)
    target = tmp_path / "new" / "study.db"

    # a damaged page: integrity_check fails, nothing is written
    damaged = tmp_path / "damaged.db"
    shutil.copy(out, damaged)
    shutil.copytree(media_dir(out), media_dir(damaged))
    root = _rows(damaged, "SELECT rootpage FROM sqlite_master WHERE name = 'annotations'")[0][0]
    page = _rows(damaged, "PRAGMA page_size")[0][0]
    with open(damaged, "r+b") as f:
        f.seek((root - 1) * page + 8)
        f.write(b"\xff" * 64)
    with pytest.raises(RecoveryError, match="damaged.db"):
        restore(damaged, target)
    assert not target.exists() and not media_dir(target).exists()

    not_a_db = tmp_path / "notes.db"
    not_a_db.write_bytes(b"these are not the pages you are looking for" * 200)
    with pytest.raises(RecoveryError):
        restore(not_a_db, target)

    newer = tmp_path / "newer.db"
    shutil.copy(out, newer)
    shutil.copytree(media_dir(out), media_dir(newer))
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(RecoveryError, match="newer"):
        restore(newer, target)

    lacking = tmp_path / "lacking.db"
    shutil.copy(out, lacking)
    shutil.copytree(media_dir(out), media_dir(lacking))
    next(p for p in media_dir(lacking).rglob("*") if p.is_file()).unlink()
    with pytest.raises(RecoveryError, match="missing"):
        restore(lacking, target)
    assert not target.exists()

    with pytest.raises(RecoveryError, match="no such"):
        restore(tmp_path / "nowhere.db", target)
    assert not target.exists()


def test_restore_sets_an_unreadable_database_aside(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.db"
    backup(demo, out)
    broken = tmp_path / "broken" / "study.db"
    broken.parent.mkdir()
    broken.write_bytes(b"\x00garbage" * 4096)
    result = restore(out, broken, force=True)
    assert result.set_aside is not None and result.set_aside.read_bytes().startswith(b"\x00g")
    assert db_checksum(broken) == db_checksum(demo)


def test_backup_refusals(demo: Path, tmp_path: Path) -> None:
    with pytest.raises(RecoveryError, match="no such database"):
        backup(tmp_path / "none.db", tmp_path / "b.db")
    with pytest.raises(RecoveryError, match="cannot replace"):
        backup(demo, demo)
    stale = tmp_path / "b.db-wal"
    stale.write_bytes(b"x")
    with pytest.raises(RecoveryError, match="another database"):
        backup(demo, tmp_path / "b.db")
    assert not (tmp_path / "b.db").exists()
    folder = tmp_path / "backups"
    folder.mkdir()
    with pytest.raises(RecoveryError, match="is a folder"):  # was an IsADirectoryError
        backup(demo, folder)
    assert list(folder.iterdir()) == [] and not list(tmp_path.glob(".backups*"))


@pytest.mark.slow
def test_backup_and_restore_cli(demo: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cli" / "b.db"
    target = tmp_path / "cli" / "r.db"
    assert main(["backup", "--db", str(demo), "--out", str(out)]) == 0
    assert "image files copied" in capsys.readouterr().out
    assert main(["restore", "--from", str(out), "--db", str(target)]) == 0
    assert db_checksum(target) == db_checksum(demo)
    assert main(["restore", "--from", str(out), "--db", str(target)]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["restore", "--from", str(out), "--db", str(target), "--force",
                 "--quiet"]) == 0
    assert main(["backup", "--db", str(tmp_path / "none.db"), "--out", str(out)]) == 1
