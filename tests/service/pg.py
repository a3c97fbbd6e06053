"""A throwaway PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` in a temporary directory.

Uses the Debian ``postgresql`` package's binaries (``/usr/lib/postgresql/*/bin``) or ones on
``PATH``; as root the server runs as the ``postgres`` user (PostgreSQL refuses to run as root).
Listens on 127.0.0.1 only, with trust authentication (a loopback test server).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresServer", "find_pg_bin"]


def find_pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        cands.insert(0, str(Path(on_path).resolve().parent))
    for c in cands:
        if (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    return None


class PostgresServer:
    """Start with :meth:`start` (raises RuntimeError with the reason if it cannot), stop with :meth:`stop`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.bin = find_pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="pbtest-pg-"))
        self.data = self.dir / "data"
        self.user: str | None = None

    def _run(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        if self.bin is None:
            raise RuntimeError(
                "no PostgreSQL server binaries (initdb, pg_ctl) found: install the postgresql package"
            )
        if os.geteuid() == 0:
            import pwd

            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "running as root and there is no 'postgres' user to run the server as"
                ) from None
            self.user = "postgres"
            shutil.chown(self.dir, user="postgres")
        os.chmod(self.dir, 0o700)
        r = self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stderr.strip()[-500:]}")
        opts = f"-h 127.0.0.1 -p {self.port} -k {self.dir} -c fsync=on -c max_connections=20"
        r = self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.dir / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        if r.returncode != 0:
            log = (self.dir / "log").read_text() if (self.dir / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {r.stderr.strip()[-300:]} {log[-300:]}")
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not accept connections: {exc}") from None
                time.sleep(0.2)

    def create_database(self, name: str) -> str:
        """A new empty database on this server; returns its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self.bin is not None and self.data.exists():
            self._run(
                str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
            )
        shutil.rmtree(self.dir, ignore_errors=True)
