"""Find or start a PostgreSQL server for tests and benchmarks.

Order: ``$SETANON_TEST_PG_URL``; a testcontainers PostgreSQL when a Docker engine answers; the
PostgreSQL server binaries on this machine (``initdb``/``pg_ctl``), started in a temporary
directory as a non-root user. ``None`` when none of these is available.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_pg_bin() -> Path | None:
    """Directory holding initdb and pg_ctl, preferring the newest installed version."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name))
    return Path(candidates[-1]).parent if candidates else None


def _as_user(cmd: list[str]) -> list[str]:
    """Run as the 'postgres' user when we are root: the server refuses to run as root."""
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@contextlib.contextmanager
def local_postgres() -> Iterator[str]:
    """Start a throwaway server from the local binaries; yields its URL."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
    root = Path(tempfile.mkdtemp(prefix="setanon-pg-"))
    data, log = root / "data", root / "server.log"
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    port = _free_port()
    try:
        subprocess.run(_as_user([str(bin_dir / "initdb"), "-D", str(data), "-U", "setanon",
                                 "--auth=trust", "-E", "UTF8", "--no-locale"]),
                       check=True, capture_output=True)
        # fsync off, as a throwaway server may; synchronous_commit keeps its default, so that
        # setanon's own session setting of it is what the tests see.
        options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c max_connections=50")
        subprocess.run(_as_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log),
                                 "-o", options, "-w", "-t", "60", "start"]),
                       check=True, capture_output=True)
        yield f"postgresql://setanon@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                                 "stop"]), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _docker_answers() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextlib.contextmanager
def postgres_url() -> Iterator[str | None]:
    """A PostgreSQL URL for the duration of the block, or None when none can be had."""
    if os.environ.get("SETANON_TEST_PG_URL"):
        yield os.environ["SETANON_TEST_PG_URL"]
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16", driver=None) as container:
            yield container.get_connection_url()
        return
    if find_pg_bin() is not None:
        with local_postgres() as url:
            yield url
        return
    yield None
