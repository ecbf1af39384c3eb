"""Peak memory of `setanon verify` beside the run it checks (issue 22: a verifier that fits
where the run fits).

Generates N synthetic claims (:func:`setanon_sql.models.kanon.generate.generate_claims`) in the
database, then runs two child processes one after the other, each the `setanon` command a user
would type: ``anonymize --model kanon --no-verify`` and ``verify``. For each it prints the wall
time and the peak resident set: VmHWM of the child's /proc status, polled every 0.1 s (per
address space, so it starts afresh at exec; the child's ru_maxrss would not: Linux carries the
parent's peak at fork into it, and this parent has just generated the data). On
DuckDB the engine runs inside the child, so the peak includes DuckDB's buffers (capped by its
``memory_limit``: give ``?memory_limit=...`` in the URL to pin it); on PostgreSQL it is the
controller alone.

Usage (from the repository root)::

    python bench/bench_verify_memory.py --db duckdb:////tmp/vm/v.duckdb --records 10000000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from setanon_sql import api
from setanon_sql.models.kanon.generate import generate_claims
from setanon_sql.synth.shape import format_shape, shape

CLI = [str(Path(sys.executable).parent / "setanon")]  # the virtualenv's console script


def _hwm_mib(pid: int) -> float | None:
    """VmHWM (peak resident set) of a running process, from /proc."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def child(command: list[str]) -> tuple[float, float, int]:
    """Seconds, peak RSS (MiB, polled VmHWM) and exit code of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, _hwm_mib(process.pid) or 0.0)
        time.sleep(0.1)
    return time.perf_counter() - started, peak, int(process.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--schema", default="verify_memory")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--qi", default="birth_year,sex,month,diagnoses")
    parser.add_argument("--k", default="5")
    parser.add_argument("--suppress-budget", default="0.01")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", default="generate,anonymize,verify",
                        help="comma-separated subset of generate,anonymize,verify: e.g. "
                             "'verify' re-checks the latest run of an earlier invocation "
                             "(same --db and --schema) with the code as it is now")
    parser.add_argument("--no-shape", action="store_true",
                        help="skip printing the data's shape (minutes at 10M; the invocation "
                             "that generated the data printed it)")
    args = parser.parse_args()
    steps = set(args.steps.split(","))
    with api.open_database(args.db, args.schema) as db:
        if "generate" in steps:
            started = time.perf_counter()
            dataset = generate_claims(db, "claims", args.records, args.seed, replace=True)
            print(f"# generated {args.records:,} claims in "
                  f"{time.perf_counter() - started:.1f} s")
        else:
            dataset = api.get_dataset(db, "claims")
        if not args.no_shape:
            print("# " + format_shape(shape(db, dataset, ["birth_year", "sex", "month"]))
                  .replace("\n", "\n# "), flush=True)
    common = ["--db", args.db, "--schema", args.schema, "--quiet"]
    print("| command | seconds | peak RSS MiB | exit code | load average before |")
    print("|---|---|---|---|---|")
    for name, command in (
            ("anonymize --model kanon --no-verify",
             ["anonymize", "claims", "--model", "kanon", "--k", args.k, "--suppress-budget",
              args.suppress_budget, "--qi", args.qi, "--seed", str(args.seed), "--no-verify"]),
            ("verify", ["verify", "claims", "--run", "latest"])):
        if name.split()[0] not in steps:
            continue
        load = os.getloadavg()
        seconds, peak, code = child([*CLI, *command, *common])
        print(f"| {name} | {seconds:.1f} | {peak:,.0f} | {code} | "
              f"{load[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
