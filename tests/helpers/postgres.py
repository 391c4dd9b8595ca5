"""A throwaway PostgreSQL cluster for the tests (issue #18, item 6).

:class:`Cluster` runs Debian's server binaries (``/usr/lib/postgresql/*/bin``, or
``$JUDGE_AUDIT_PG_BIN``) as an unprivileged user: ``initdb`` in a temporary folder with
trust authentication, C locale, no TCP port (a Unix socket in that folder), ``fsync`` off
(the crash test kills a client, never the machine: a commit survives that without it). As
root, the server runs as ``$JUDGE_AUDIT_PG_USER`` (default ``nobody``), which owns the
folder. :func:`start` returns None (the tests skip) where no server binaries or no psycopg
are present, or the cluster does not start.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "ja"


def server_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``, newest version first, or None."""
    configured = os.environ.get("JUDGE_AUDIT_PG_BIN")
    candidates = [configured] if configured else sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2])
        if p.split("/")[-2].isdigit() else 0, reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file():
            return Path(folder)
    return None


@dataclass
class Cluster:
    root: Path
    bin: Path
    run_as: str | None

    @property
    def socket_dir(self) -> Path:
        return self.root

    def _cmd(self, *args: str) -> list[str]:
        if self.run_as is None:
            return list(args)
        return ["runuser", "-u", self.run_as, "--", *args]

    def url(self, dbname: str, *, media: Path | None = None) -> str:
        """The ``postgresql://`` URL of database ``dbname`` (with its media folder)."""
        url = f"postgresql:///{dbname}?host={self.socket_dir}&user={SUPERUSER}"
        return url + (f"&media={media}" if media is not None else "")

    def admin(self) -> object:
        import psycopg

        return psycopg.connect(f"postgresql:///postgres?host={self.socket_dir}"
                               f"&user={SUPERUSER}", autocommit=True)

    def create_database(self, *, template: str | None = None) -> str:
        """A new empty database (or a copy of ``template``); its name."""
        name = "t_" + uuid.uuid4().hex[:12]
        with self.admin() as conn:  # type: ignore[attr-defined]
            conn.execute(f"CREATE DATABASE {name}"
                         + (f" TEMPLATE {template}" if template else ""))
        return name

    def restart(self) -> None:
        """Restart the server (``pg_ctl restart -m fast``, its options kept): every
        connection to it is dropped."""
        subprocess.run(self._cmd(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"),
                                 "-m", "fast", "-l", str(self.root / "server.log"), "-w",
                                 "-t", "60", "restart"),
                       capture_output=True, timeout=120, check=True)

    def stop(self) -> None:
        subprocess.run(self._cmd(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"),
                                 "-m", "immediate", "stop"), capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


def start() -> Cluster | None:
    """Start a throwaway cluster; None where that is not possible here."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None
    folder = server_bin()
    if folder is None:
        return None
    root = Path(tempfile.mkdtemp(prefix="ja-pg-"))
    run_as = None
    if os.geteuid() == 0:
        run_as = os.environ.get("JUDGE_AUDIT_PG_USER", "nobody")
        shutil.chown(root, user=run_as)
    root.chmod(0o755)
    cluster = Cluster(root, folder, run_as)
    init = subprocess.run(cluster._cmd(
        str(folder / "initdb"), "-D", str(root / "data"), "-A", "trust", "-U", SUPERUSER,
        "--no-locale", "-E", "UTF8"), capture_output=True, text=True, timeout=120)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        return None
    options = (f"-c listen_addresses='' -c unix_socket_directories={root}"
               " -c max_connections=200 -c shared_buffers=64MB -c fsync=off")
    started = subprocess.run(cluster._cmd(
        str(folder / "pg_ctl"), "-D", str(root / "data"), "-o", options,
        "-l", str(root / "server.log"), "-w", "-t", "60", "start"),
        capture_output=True, text=True, timeout=120)
    if started.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        return None
    return cluster
