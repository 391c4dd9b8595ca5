"""Zip bombs and encrypted zips are refused from the archive's directory, before extraction.

The attacks (issue #12, item 2): the ratio check looked only at members over 10 MiB, so a
3 MB zip of 300 members of 10 MiB each expanded to 3.3 GB and was accepted, by the CLI and
by the app; a zip of 100,000 files was accepted; an encrypted zip raised an uncaught
``RuntimeError`` on the Import page and in the CLI.

Real archives: the documented example bundle plus the bomb, written byte by byte
(tests/helpers/zips.py) so one 10 KB compressed member serves 300 times, and an encrypted zip made
with the traditional PKWARE cipher, which :mod:`zipfile` itself decrypts with the password.
"Before extraction" is checked three ways: an audit hook refuses (and records) any open of
a file for writing inside an extraction folder; the CLI runs in a subprocess that may write
no file over 4 MiB (``RLIMIT_FSIZE``: the kernel refuses the write past it, EFBIG, which
Python reports as "File too large"); and ``_extract_zip`` into an empty folder leaves it
empty.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from annotation.formats import bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import db_checksum, ensure_account, write_doc_example
from tests.helpers.zips import RawMember, bundle_members, deflated, write_raw_zip, zeros

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024
FILE_LIMIT = 4 * MiB  # no file a refused import writes may be larger (RLIMIT_FSIZE)

# ------------------------------------------------------------------ no extraction, ever
_writes: list[str] | None = None


def _no_extraction(event: str, args: tuple) -> None:
    """Refuse, and record, an open for writing of a file inside an extraction folder."""
    if event != "open" or _writes is None or args[0] is None or isinstance(args[0], int):
        return
    path, mode, flags = args
    writing = (isinstance(mode, str) and any(c in mode for c in "wxa+")) or (
        isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR))
    if writing and "judge-audit-zip-" in os.fsdecode(path):
        _writes.append(os.fsdecode(path))
        raise PermissionError(f"test: extraction started ({os.fsdecode(path)})")


sys.addaudithook(_no_extraction)


@pytest.fixture
def extraction() -> list[str]:
    """The files an import opened for writing in its extraction folder (must stay [])."""
    global _writes
    _writes = []
    yield _writes
    _writes = None


# ------------------------------------------------------------------ archives
@pytest.fixture
def example(tmp_path: Path) -> Path:
    return write_doc_example(tmp_path / "example")


def bomb_zip(tmp_path: Path, example: Path, count: int = 300, size: int = 10 * MiB) -> Path:
    """The example bundle plus ``count`` members of ``size`` zero bytes (one compression)."""
    padding = zeros("padding/0.bin", size)
    copies = [RawMember(f"padding/{i}.bin", padding.data, padding.crc, padding.size)
              for i in range(count)]
    return write_raw_zip(tmp_path / "bomb.zip", bundle_members(example) + copies)


def many_members_zip(tmp_path: Path, example: Path, count: int = 100_000) -> Path:
    """The example bundle plus ``count`` empty files (zip64, written by :mod:`zipfile`)."""
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(example.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(example).as_posix())
        for i in range(count):
            zf.writestr(f"extra/{i}.txt", b"")
    return archive


def encrypted_zip(tmp_path: Path, example: Path, only: str | None = None) -> Path:
    """The example bundle encrypted with the password ``secret`` (or only member ``only``)."""
    members = [m if only not in (None, m.name) else
               deflated(m.name, (example / m.name).read_bytes(), b"secret")
               for m in bundle_members(example)]
    archive = write_raw_zip(tmp_path / "locked.zip", members)
    with zipfile.ZipFile(archive) as zf:  # a real encrypted zip: readable with the password
        assert zf.read("bundle.json", pwd=b"secret") == (example / "bundle.json").read_bytes()
    return archive


def cli_import(archive: Path, db: str | Path, tmp: Path) -> subprocess.CompletedProcess:
    """``judge-audit import`` in a subprocess whose temporary files go to ``tmp`` and which
    cannot write any file over :data:`FILE_LIMIT` (the kernel refuses the write: EFBIG;
    Python ignores SIGXFSZ, so the process gets an OSError instead of being killed)."""
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))

    return subprocess.run([sys.executable, "-m", "annotation.cli", "import", str(archive),
                           "--db", str(db)], capture_output=True, text=True, env=env,
                          preexec_fn=limit, timeout=300, check=False)


def new_db(location: str | Path) -> str | Path:
    """``location`` made a (migrated, empty) project."""
    Store.open(location).close()
    return location


# ------------------------------------------------------------------ many big members
def test_300_members_of_10_mib_are_refused_before_extraction(tmp_path, example, extraction,
                                                             engine_db):
    archive = bomb_zip(tmp_path, example)
    assert archive.stat().st_size < 4 * MiB  # 3 GB from a 3 MB file
    db = new_db(engine_db)
    before = db_checksum(db)
    with Store.open(db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    message = refused.value.report()
    assert message.startswith("bomb.zip: 309 members expand to 2.9 GiB from a"), message
    assert "the limit is 20 times" in message and "zip bomb" in message
    assert extraction == []
    assert db_checksum(db) == before
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ImportRefused):
        bundle._extract_zip(archive, dest)
    assert list(dest.iterdir()) == []


@pytest.mark.slow
def test_the_cli_refuses_the_bomb_without_writing_a_big_file(tmp_path, example, engine_db):
    archive = bomb_zip(tmp_path, example)
    db = new_db(engine_db)
    before = db_checksum(db)
    done = cli_import(archive, db, tmp_path / "tmp")
    assert "File too large" not in done.stderr, "the CLI started writing the bomb out"
    assert done.returncode not in (-signal.SIGXFSZ, 0), done.stderr
    assert done.returncode == 1, done.stderr
    assert "import refused, nothing was written" in done.stderr
    assert "bomb.zip: 309 members expand to 2.9 GiB" in done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
    assert db_checksum(db) == before


def test_the_import_page_refuses_an_uploaded_bomb(tmp_path, example, monkeypatch, extraction,
                                                  engine_db):
    archive = bomb_zip(tmp_path, example)
    db = engine_db
    ensure_account(db, "boss", "admin")
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = signed_in(str(ROOT / "pages" / "import_data.py"), "boss", "admin")
    at.run()
    before = db_checksum(db)  # after signing in, which writes the session's row
    at.file_uploader[0].upload("bomb.zip", archive.read_bytes(), "application/zip").run()
    next(b for b in at.button if b.label == "Import the upload").click().run()
    assert not at.exception
    assert any("nothing was written" in e.value for e in at.error)
    assert "309 members expand to 2.9 GiB" in at.code[0].value
    assert extraction == []
    assert db_checksum(db) == before


# ------------------------------------------------------------------ many members
@pytest.mark.slow
def test_100000_members_are_refused_before_the_directory_is_parsed(tmp_path, example,
                                                                   extraction, monkeypatch,
                                                                   engine_db, make_engine_db):
    archive = many_members_zip(tmp_path, example)
    parsed: list[int] = []
    real_init = zipfile.ZipFile.__init__

    def counting_init(self, file, *args, **kwargs) -> None:
        parsed.append(1)
        real_init(self, file, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "__init__", counting_init)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    assert str(refused.value.problems[0]) == (
        f"many.zip: {100_000 + 9:,} members, more than the limit of "
        f"{bundle.MAX_ZIP_MEMBERS:,}: import the bundle as a folder, or in several zips")
    assert parsed == []  # refused from the end record: no ZipInfo for 100,009 entries
    assert extraction == []
    done = cli_import(archive, new_db(make_engine_db("q.db")), tmp_path / "tmp")
    assert done.returncode == 1 and "100,009 members, more than the limit" in done.stderr


@pytest.mark.slow
def test_an_end_record_that_understates_the_members_is_caught_after_parsing(tmp_path, example,
                                                                          extraction, engine_db):
    members = bundle_members(example)
    empty = deflated("x", b"")
    members += [RawMember(f"e/{i}", empty.data, empty.crc, 0) for i in range(60_000)]
    archive = write_raw_zip(tmp_path / "liar.zip", members, declared=5)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    assert "60,009 members, more than the limit" in str(refused.value)
    assert extraction == []


# ------------------------------------------------------------------ totals and ratios
def test_the_total_size_limit_is_checked_from_the_directory(tmp_path, example, extraction,
                                                            monkeypatch, engine_db):
    """Below the ratio limits but over the total (lowered for the test: 4 GiB is more than
    a test should write even compressed)."""
    monkeypatch.setattr(bundle, "MAX_ZIP_BYTES", 8 * MiB)
    noise = os.urandom(3 * MiB)  # incompressible: every ratio is 1
    members = bundle_members(example) + [deflated(f"big/{i}.bin", noise) for i in range(3)]
    archive = write_raw_zip(tmp_path / "big.zip", members)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    assert str(refused.value.problems[0]).startswith(
        "big.zip: the archive expands to 9.0 MiB, more than the limit of 8.0 MiB")
    assert extraction == []


def test_one_member_with_a_high_ratio_is_refused(tmp_path, example, extraction, engine_db):
    archive = write_raw_zip(tmp_path / "one.zip",
                            bundle_members(example) + [zeros("padding.bin", 64 * MiB)])
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    problem = refused.value.problems[0]
    assert (problem.file, problem.field) == ("one.zip", "padding.bin")
    assert "compression ratio too high: expands from" in problem.message
    assert extraction == []


def test_a_small_archive_may_compress_well(tmp_path, example, engine_db):
    """Under 100 MiB uncompressed the whole-archive ratio is not checked: five members of
    9 MiB of zeros (1000 times smaller each) import."""
    archive = bomb_zip(tmp_path, example, count=5, size=9 * MiB)
    with Store.open(engine_db) as store:
        summary = import_path(store, archive)
        assert summary.written["tasks"] == 1


# ------------------------------------------------------------------ encryption
@pytest.mark.parametrize("only", [None, "images/t1/cat.png"])
def test_an_encrypted_zip_is_refused_with_a_message(tmp_path, example, extraction, only, engine_db):
    archive = encrypted_zip(tmp_path, example, only)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    problem = refused.value.problems[0]
    assert problem.file == "locked.zip"
    assert problem.field == (only or "annotations.jsonl")  # the first member
    assert problem.message == "the member is encrypted: a bundle zip must be made without a " \
                              "password"
    assert extraction == []


@pytest.mark.slow
def test_the_cli_and_the_import_page_refuse_an_encrypted_zip(tmp_path, example, monkeypatch,
                                                             engine_db):
    archive = encrypted_zip(tmp_path, example)
    db = engine_db
    ensure_account(db, "boss", "admin")
    before = db_checksum(db)
    done = cli_import(archive, db, tmp_path / "tmp")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "locked.zip: annotations.jsonl: the member is encrypted" in done.stderr
    assert db_checksum(db) == before
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = signed_in(str(ROOT / "pages" / "import_data.py"), "boss", "admin")
    at.run()
    before = db_checksum(db)  # after signing in, which writes the session's row
    at.file_uploader[0].upload("locked.zip", archive.read_bytes(), "application/zip").run()
    next(b for b in at.button if b.label == "Import the upload").click().run()
    assert not at.exception
    assert "locked.zip: annotations.jsonl: the member is encrypted" in at.code[0].value
    assert db_checksum(db) == before


def test_limits_are_documented_with_their_values():
    doc = (ROOT / "docs" / "bundle-format.md").read_text(encoding="utf-8")
    for name, shown in (("MAX_ZIP_MEMBERS", "50,000"), ("MAX_ZIP_BYTES", "4 GiB"),
                        ("MAX_ZIP_RATIO", "20"), ("ZIP_RATIO_FREE_BYTES", "100 MiB"),
                        ("MAX_ZIP_MEMBER_RATIO", "200"),
                        ("ZIP_MEMBER_RATIO_FREE_BYTES", "10 MiB"),
                        ("MAX_ZIP_DIRECTORY_BYTES", "32 MiB")):
        assert f"`{name}`" in doc and shown in doc, name
