"""Throwaway real servers for the shared-deployment tests and benchmarks: PostgreSQL and Chroma.

Both listen on loopback only, on free ports, with their data in a temporary folder that is
removed when they stop. PostgreSQL's ``initdb`` and ``postgres`` refuse to run as root
(CI runs as root): as root they run as the ``postgres`` user, on a folder it owns.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PG_BIN = Path(os.environ.get("SKILLS_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
#: how long a server may take to accept connections
START_TIMEOUT_SECONDS = 60
PG_USER = "skills"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_missing() -> str | None:
    """Why a PostgreSQL cluster cannot be started here (None: it can)."""
    for tool in ("initdb", "pg_ctl"):
        if not (PG_BIN / tool).exists():
            return f"PostgreSQL binaries not found in {PG_BIN} (set SKILLS_TEST_PG_BIN)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb/postgres as"
        if not shutil.which("runuser"):
            return "running as root and runuser is missing"
    return None


def chroma_missing() -> str | None:
    """Why a Chroma server cannot be started here (None: it can)."""
    return None if chroma_command() else "the `chroma` command (chromadb) is not installed"


def chroma_command() -> str | None:
    beside = Path(sys.executable).parent / "chroma"
    return str(beside) if beside.exists() else shutil.which("chroma")


class PostgresServer:
    """``initdb`` + ``pg_ctl start`` in a temporary folder; password auth on 127.0.0.1."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="skills-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self._as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = [str(PG_BIN / args[0]), *args[1:]]
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_SECONDS)
        if done.returncode:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> "PostgresServer":
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as_root:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        self.root.chmod(0o700)
        self._run("initdb", "-D", str(self.data), "-U", PG_USER, "-A", "scram-sha-256",
                  f"--pwfile={pwfile}", "--no-sync", "-E", "UTF8")
        pwfile.unlink()
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w",
                  "-t", str(START_TIMEOUT_SECONDS), "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{PG_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; its SQLAlchemy URL."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=PG_USER, password=self.password,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.data.exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class ChromaServer:
    """``chroma run --path TMP --host 127.0.0.1 --port P``; restartable on the same data."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="skills-chroma-"))
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ChromaServer":
        command = chroma_command()
        assert command is not None
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        self._process = subprocess.Popen(
            [command, "run", "--path", str(self.root / "data"), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=open(self.root / "log", "ab"), stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self._process.returncode}: "
                                   f"{(self.root / 'log').read_text()[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop_process()
        raise RuntimeError(f"chroma run did not listen on port {self.port} within {START_TIMEOUT_SECONDS} s")

    def stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def restart(self, pause: float = 0.0) -> None:
        self.stop_process()
        time.sleep(pause)
        self.start()

    def stop(self) -> None:
        try:
            self.stop_process()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
