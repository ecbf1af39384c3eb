"""SIGKILL a run in each of its phases (the failpoint of setanon_sql.failpoints stops it there):
the run's recorded phase is the one it was killed in, nothing of it can be exported, applied or
reported, and the user's table is unchanged, also when the kill lands inside the in-place
transaction just before it commits.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.errors import NotPublishableError
from setanon_sql.failpoints import PAUSE_VARIABLE
from setanon_sql.report.build import build_report
from tests.conftest import DbUrl
from tests.integration.test_crash import CLI, checksum, crash_db, in_place_command

__all__ = ["crash_db"]  # the fixture, imported for pytest

PAUSE_TIMEOUT = 120.0


def run_until_paused(command: list[str], phase: str) -> subprocess.Popen[str]:
    """Start ``command`` with the failpoint at ``phase``; return once it says it paused."""
    env = {**os.environ, PAUSE_VARIABLE: phase}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stderr is not None
    for line in process.stderr:  # blocks until the failpoint speaks (or the process ends)
        if line.strip() == f"paused at {phase}":
            return process
    process.wait(timeout=PAUSE_TIMEOUT)
    raise AssertionError(f"the run never reached {phase!r} (exit {process.returncode})")


@pytest.mark.parametrize("phase", ["search", "publish", "verify", "apply", "apply-commit"])
def test_kill_in_each_phase_publishes_nothing(crash_db: tuple[DbUrl, Path], user_schema: str,
                                              tmp_path: Path, phase: str) -> None:
    db_url, hierarchy = crash_db
    with api.open_database(db_url.url, db_url.schema) as db:
        before, _ = checksum(db, user_schema)
    process = run_until_paused(in_place_command(db_url, hierarchy), phase)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=PAUSE_TIMEOUT)
    with api.open_database(db_url.url, db_url.schema) as db:
        assert checksum(db, user_schema)[0] == before  # untouched, whatever the phase
        dataset = api.get_dataset(db, "shop")
        run = api.get_run(db, dataset, "latest")
        recorded = "apply" if phase == "apply-commit" else phase
        assert (run.status, run.phase) == (("done" if recorded in ("verify", "apply")
                                            else "running"), recorded)
        if recorded == "verify":
            assert run.verification is None  # the check never finished: not publishable
        target = tmp_path / "out.dat"
        if recorded != "apply":
            with pytest.raises(NotPublishableError, match=f"run {run.run_id} of 'shop'"):
                api.export_dataset(db, dataset, target, run=run)
            with pytest.raises(NotPublishableError):
                build_report(db, dataset, run, None)
            with pytest.raises(NotPublishableError):
                api.apply_in_place(db, dataset, run)
            assert not target.exists()
        applied = db.scalar(exp.select(exp.func("count", exp.Star()))
                            .from_(db.table("inplace_applies")))
        assert applied == 0
    assert subprocess.run([*CLI, "runs", "--cleanup", *db_url.args], capture_output=True,
                          text=True, timeout=PAUSE_TIMEOUT).returncode == 0
