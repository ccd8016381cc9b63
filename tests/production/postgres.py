"""A throwaway PostgreSQL server on 127.0.0.1 for the tests: Debian's server binaries, a temporary cluster, a free port.

``start()`` finds ``initdb``/``pg_ctl`` (on ``PATH``, else ``/usr/lib/postgresql/<newest>/bin``), installing
Debian's ``postgresql`` when they are missing and we are root (``make postgres`` does the same before the tests);
as root the cluster belongs to the ``postgres`` user (``runuser``), since PostgreSQL refuses to run as root. The
cluster is made for speed (fsync off) and password authentication; ``stop()`` removes it.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2

USER = "mlassets"


class Unavailable(RuntimeError):
    """PostgreSQL can be neither found nor installed here."""


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def install() -> Path:
    """Install Debian's PostgreSQL (as root, with apt-get) when it is missing; return its binaries' folder."""
    if (found := binaries()) is not None:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable("PostgreSQL's server binaries (initdb, pg_ctl) are not installed, and installing Debian's "
                          "postgresql needs root and apt-get (make postgres installs it)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "postgresql"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(command)} failed: {done.stderr.strip()[-300:]}")
    if (found := binaries()) is None:
        raise Unavailable("apt-get installed postgresql, but initdb/pg_ctl are still not found")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    bindir: Path
    datadir: Path
    port: int
    password: str = field(repr=False)
    host: str = "127.0.0.1"
    user: str = USER

    def url(self, db: str, scheme: str = "postgresql") -> str:
        return f"{scheme}://{self.user}:{self.password}@{self.host}:{self.port}/{db}"

    def connect(self, db: str = "postgres"):  # noqa: ANN201 - a psycopg2 connection
        return psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password, dbname=db,
                                connect_timeout=5)

    def create_database(self, name: str) -> str:
        """Create ``name`` (dropping an older one); return its URL."""
        conn = self.connect()
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return self.url(name)

    def _ctl(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(_as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), *args]),
                              capture_output=True, text=True, timeout=timeout)

    def stop(self) -> None:
        """Stop the server (immediately: nothing in it is kept) and remove the cluster."""
        if self.datadir.exists():
            self._ctl("stop", "-m", "immediate", "-w", timeout=60)
            shutil.rmtree(self.datadir.parent, ignore_errors=True)


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def start() -> Server:
    """Make and start a cluster on 127.0.0.1 and a free port (``Unavailable`` when PostgreSQL cannot be had)."""
    bindir = install()
    root = Path(tempfile.mkdtemp(prefix="mlassets-pg-"))
    datadir, password = root / "data", secrets.token_hex(16)
    (root / "pwfile").write_text(password + "\n")
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        for path in (root, root / "pwfile"):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    init = subprocess.run(_as_owner([str(bindir / "initdb"), "-D", str(datadir), "-U", USER, "-A", "scram-sha-256",
                                     f"--pwfile={root / 'pwfile'}", "-E", "UTF8", "--no-sync"]),
                          capture_output=True, text=True, timeout=180)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-500:]}")
    for attempt in range(3):  # another process may take the free port between the check and the bind
        server = Server(bindir, datadir, _free_port(), password)
        options = (f"-c listen_addresses=127.0.0.1 -p {server.port} -k {root} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=200")
        started = server._ctl("start", "-w", "-t", "120", "-o", options, "-l", str(root / "server.log"))
        if started.returncode == 0:
            _wait_until_accepting(server)
            return server
        if attempt == 2:
            log = (root / "server.log").read_text()[-500:] if (root / "server.log").exists() else ""
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()[-300:]} {log}")
    raise AssertionError("unreachable")


def _wait_until_accepting(server: Server, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            server.connect().close()
            return
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
