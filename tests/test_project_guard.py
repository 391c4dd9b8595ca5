"""The project's own files are never import input, and never opened by ordinary reads.

The attack (issue #12, item 1): an admin types the project's own ``.db`` path into Import ->
"A folder on the server". Format detection (``zipfile.is_zipfile``) opened and closed the
database inside the server process; on POSIX that drops every lock the process holds on the
file, so the next CLI command (``judge-audit info``) saw no other connection and deleted
``-wal`` and ``-shm`` under the running app: answers acknowledged afterwards were lost and
``PRAGMA integrity_check`` failed.

Every test here holds a real WAL database open in the test process, as the app does, and
writes answers through the store before and after. The sequence tests run the real CLI in
a subprocess between them and then count every acknowledged answer with a new connection.
The "nothing opened" tests watch every ``open`` the process makes (an audit hook) while
the import runs, by inode, so a symlink or a hard link is seen too.
"""

# SQLite only: the guard protects a project's own files (the .db, its -wal, -shm) and the
# checks read them with raw sqlite3 (integrity_check); a PostgreSQL project has no such file.

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image

from annotation.formats.importers import import_path
from annotation.records import Annotation, ImportRefused
from annotation.store import Store
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account, read_jsonl, write_doc_example, write_jsonl

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ watching every open()
_watch: dict[tuple[int, int], str] | None = None
_seen: list[str] = []


def _spy(event: str, args: tuple) -> None:
    if event != "open" or _watch is None or args[0] is None or isinstance(args[0], int):
        return
    try:
        st = os.stat(args[0])
    except (OSError, ValueError, TypeError):
        return
    name = _watch.get((st.st_dev, st.st_ino))
    if name is not None:
        _seen.append(f"{name} (opened as {os.fsdecode(args[0])})")


sys.addaudithook(_spy)  # hooks cannot be removed: it records only inside watching()


@contextlib.contextmanager
def watching(db: Path) -> Iterator[list[str]]:
    """Record every ordinary open of the database, its -wal, -shm and media files."""
    global _watch
    files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    media = db.with_name(db.stem + "_media")
    files += [p for p in media.rglob("*") if p.is_file()]
    _watch = {(st.st_dev, st.st_ino): p.name for p in files if p.exists()
              for st in [p.stat()]}
    _seen.clear()
    try:
        yield _seen
    finally:
        _watch = None


# ------------------------------------------------------------------ a project, held open
class Project:
    """A real project (WAL) held open like the app's, and every answer acknowledged."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.db = folder / "study.db"
        with Store.open(self.db) as store:
            import_path(store, write_doc_example(folder.parent / "source"))
        self.store = Store.open(self.db)  # the app's connection: open all along
        self.acknowledged: list[int] = []
        self.n = 0

    def answer(self, count: int = 4) -> None:
        """``count`` answers through the store, each acknowledged (its row id kept)."""
        for _ in range(count):
            self.n += 1
            given = "yes" if self.n % 2 else "no"
            self.acknowledged.append(self.store.record_annotation(Annotation(
                f"ann{self.n % 3}", "t1/modelA", f"t1.q{1 + self.n % 3}", None, given,
                None, None, None)))

    @property
    def media_file(self) -> Path:
        return next(p for p in self.db.with_name("study_media").rglob("*") if p.is_file())

    def assert_intact(self) -> None:
        """integrity_check passes and every acknowledged answer is there, read by a new
        connection while the app's is still open, and again after it closed."""
        for _ in range(2):
            conn = sqlite3.connect(self.db)
            try:
                check = conn.execute("PRAGMA integrity_check").fetchall()
                ids = {r[0] for r in conn.execute("SELECT annotation_id FROM annotations")}
            except sqlite3.DatabaseError as exc:
                pytest.fail(f"the database cannot be read any more: {exc}")
            finally:
                conn.close()
            assert check == [("ok",)]
            missing = [a for a in self.acknowledged if a not in ids]
            assert missing == [], (f"{len(missing)} of {len(self.acknowledged)} acknowledged "
                                   "answers lost")
            if self.store is not None:
                assert self.db.with_name("study.db-wal").exists(), "the -wal was removed"
                self.store.close()
                self.store = None  # type: ignore[assignment]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    folder = tmp_path / "projects"
    folder.mkdir()
    p = Project(folder)
    yield p
    if p.store is not None:
        p.store.close()


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The real ``judge-audit`` in a subprocess (another process, like an admin's shell)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "annotation.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False, input=stdin)


# ------------------------------------------------------------------ the attacks
def _bundle_naming(root: Path, image: str) -> Path:
    """A valid bundle at ``root`` whose output image is the path ``image`` (relative)."""
    write_doc_example(root)
    outputs = read_jsonl(root / "outputs.jsonl")
    outputs[0]["path"] = image
    write_jsonl(root / "outputs.jsonl", outputs)
    return root


def db_itself(p: Project) -> Path:
    return p.db


def wal(p: Project) -> Path:
    return p.db.with_name("study.db-wal")


def shm(p: Project) -> Path:
    return p.db.with_name("study.db-shm")


def media_folder(p: Project) -> Path:
    return p.db.with_name("study_media")


def media_file(p: Project) -> Path:
    return p.media_file


def parent_with_bundle(p: Project) -> Path:
    """The project's own folder made a bundle whose output image is the database."""
    return _bundle_naming(p.folder, "study.db")


def symlink_to_db(p: Project) -> Path:
    link = p.folder.parent / "innocent.zip"
    link.symlink_to(p.db)
    return link


def symlink_to_folder(p: Project) -> Path:
    _bundle_naming(p.folder, "study.db")
    link = p.folder.parent / "data-link"
    link.symlink_to(p.folder, target_is_directory=True)
    return link


def dotdot(p: Project) -> Path:
    (p.folder.parent / "uploads").mkdir()
    return p.folder.parent / "uploads" / ".." / "projects" / "." / "study.db"


def hard_link(p: Project) -> Path:
    link = p.folder.parent / "bundle.zip"
    os.link(p.db, link)
    return link


def hard_link_inside_bundle(p: Project) -> Path:
    root = _bundle_naming(p.folder.parent / "elsewhere", "outputs/modelA/t1.png")
    target = root / "outputs/modelA/t1.png"
    target.unlink()
    os.link(p.db, target)
    return root


def tiif_prompt_links_to_db(p: Project) -> Path:
    """A TIIF-Bench checkout whose prompt file is a symlink to the database."""
    root = p.folder.parent / "tiif"
    (root / "data/test_prompts").mkdir(parents=True)
    (root / "data/test_eval_prompts").mkdir(parents=True)
    (root / "data/test_eval_prompts/color_eval_prompts.jsonl").write_text("{}\n")
    (root / "data/test_prompts/color_prompts.jsonl").symlink_to(p.db)
    return root


ATTACKS: dict[str, Callable[[Project], Path]] = {
    "the database": db_itself, "its -wal": wal, "its -shm": shm,
    "the media folder": media_folder, "a media file": media_file,
    "the project's folder as a bundle naming the database": parent_with_bundle,
    "a symlink to the database": symlink_to_db,
    "a symlink to the project's folder": symlink_to_folder,
    "a '..' path to the database": dotdot, "a hard link to the database": hard_link,
    "a bundle whose image is a hard link to the database": hard_link_inside_bundle,
    "a TIIF-Bench prompt file linked to the database": tiif_prompt_links_to_db,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_import_source_that_reaches_a_project_file_is_refused_before_opening_it(
        project: Project, attack: str):
    project.answer()
    source = ATTACKS[attack](project)
    before = project.store.counts()
    with watching(project.db) as opened, pytest.raises(ImportRefused) as refused:
        import_path(project.store, source)
    assert opened == [], f"opened before the refusal: {opened}"
    message = refused.value.report()
    assert "project's own" in message, message
    located = refused.value.problems[0]
    assert located.file in (str(source), "outputs.jsonl", "data/test_prompts/color_prompts.jsonl")
    if located.file == "outputs.jsonl":  # a link inside a bundle: file, line and field
        assert (located.line, located.field) == (1, "path")
    assert project.store.counts() == before
    project.answer()
    project.assert_intact()


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["the database", "a hard link to the database",
                                    "the project's folder as a bundle naming the database",
                                    "a TIIF-Bench prompt file linked to the database"])
def test_a_refused_import_then_a_cli_command_loses_no_acknowledged_answer(project: Project,
                                                                         attack: str):
    """The exact sequence of the report: app running, path import, CLI, more answers."""
    project.answer()
    source = ATTACKS[attack](project)
    with pytest.raises(ImportRefused):
        import_path(project.store, source)
    info = cli("info", "--db", str(project.db))
    assert info.returncode == 0, info.stderr
    project.answer()
    project.assert_intact()


@pytest.mark.slow
def test_the_import_page_refuses_the_database_path_and_no_answer_is_lost(project: Project,
                                                                        monkeypatch):
    """The same sequence through the real Import page (AppTest), then `judge-audit info`,
    `user add` and `backup`, with answers between them."""
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(project.db))
    ensure_account(project.db, "boss", "admin")
    project.answer()
    at = signed_in(str(ROOT / "pages" / "import_data.py"), "boss", "admin")
    at.run()
    at.text_input[0].input(str(project.db)).run()
    with watching(project.db) as opened:
        next(b for b in at.button if b.label == "Import the folder").click().run()
    assert not at.exception
    assert any("nothing was written" in e.value for e in at.error)
    for command, stdin in (
            (["info", "--db", str(project.db)], None),
            (["user", "add", "newcomer", "--role", "annotator", "--db", str(project.db)],
             "a-long-enough-pass-phrase-42\n"),
            (["backup", "--db", str(project.db), "--out",
              str(project.folder.parent / "backup.db")], None)):
        done = cli(*command, stdin=stdin)
        assert done.returncode == 0, done.stderr
        project.answer(2)
    project.answer()
    project.assert_intact()
    assert "project's own database" in at.code[0].value
    assert opened == []


def test_an_uploaded_zip_opens_no_project_file(project: Project, monkeypatch, tmp_path):
    """The upload path writes the zip to a temporary folder: whatever its name says, no
    project file is opened, and a good bundle imports (here the project's own content
    again: harmless, nothing changes)."""
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(project.db))
    ensure_account(project.db, "boss", "admin")
    source = write_doc_example(tmp_path / "good")  # the project's content: imports unchanged
    archive = tmp_path / "good.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(source).as_posix())
    at = signed_in(str(ROOT / "pages" / "import_data.py"), "boss", "admin")
    at.run()
    name = f"{project.folder}/../projects/study.db/../good.zip"  # a path: only its name is used
    at.file_uploader[0].upload(name, archive.read_bytes(), "application/zip").run()
    with watching(project.db) as opened:
        next(b for b in at.button if b.label == "Import the upload").click().run()
    assert not at.exception
    assert opened == []
    assert any("done" in s.value for s in at.success), [c.value for c in at.code]
    project.answer()
    project.assert_intact()


@pytest.mark.slow
def test_a_served_project_refuses_every_ordinary_open_of_its_database(project: Project):
    """Layer 3: once the app guards its store (annotation.store.guard.protect, called by
    app_state.open_store), no code of the process can open the database, -wal or -shm with
    an ordinary read: sniffing, hashing, decoding, copying all fail before the open; the
    locks stay, and a CLI command afterwards removes nothing."""
    from annotation.formats.images import sha256_file
    from annotation.store import guard

    guard.protect(project.store)
    project.answer()
    wal_file = project.db.with_name("study.db-wal")
    for attempt in (lambda: open(project.db, "rb"), lambda: project.db.read_bytes(),  # noqa: SIM115
                    lambda: os.open(wal_file, os.O_RDONLY), lambda: sha256_file(project.db),
                    lambda: Image.open(project.db.with_name("study.db-shm"))):
        with pytest.raises(guard.ProtectedFileError, match="refused to open"):
            attempt()
    assert zipfile.is_zipfile(project.db) is False  # refused inside, reported as "not a zip"
    info = cli("info", "--db", str(project.db))
    assert info.returncode == 0, info.stderr
    project.answer()
    project.assert_intact()
