"""A failpoint for crash tests: stop the process when a run reaches a named phase.

With ``SETANON_PAUSE_AT=<phase>`` in the environment (``search``, ``publish``, ``verify``,
``apply``), a process whose run records that phase (after the phase is committed to the catalog)
prints ``paused at <phase>`` on stderr and sleeps, so a test can SIGKILL it exactly there and
check what the next process sees. ``apply-commit`` pauses inside the in-place transaction, after
every write and check, just before it commits. Without the variable this is one dictionary
lookup per phase change; nothing else in setanon reads it.
"""

from __future__ import annotations

import os
import sys
import time

PAUSE_VARIABLE = "SETANON_PAUSE_AT"


def pause_if_asked(phase: str) -> None:
    """Sleep forever (until killed) when the failpoint names ``phase``."""
    if os.environ.get(PAUSE_VARIABLE) != phase:
        return
    print(f"paused at {phase}", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)
