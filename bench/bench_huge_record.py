"""Issue 21, item 6: one record of 100,000 items among 2,000 ordinary records.

Builds that input (a FIMI file: ordinary records of 1-20 items, Zipf-like over 5,000 items;
the long record holds items 1..100,000, so it shares the common items), loads it into a fresh
DuckDB file, then runs, each as its own child process with a time limit:

    setanon risk big --m 3
    setanon anonymize big --model swap --random-categories 10

(swap needs a category source; ``--random-categories 10`` is the paper's artificial one), and
with ``--cap N`` also both commands with ``--max-items-per-record N`` where they take it.
For each: exit code, wall time, peak RSS of the child (its own ru_maxrss, read by a wrapper
process per command, so one command's peak is not mixed with another's), the last line of
its output, and whether a DuckDB spill directory (``*.duckdb.tmp``) was left behind.

    python bench/bench_huge_record.py --workdir /tmp/huge --time-limit 180
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs argv, then prints its own children's peak RSS (KiB) on the last line of stderr.
_WRAPPER = ("import resource, subprocess, sys\n"
            "try:\n"
            "    code = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode\n"
            "except subprocess.TimeoutExpired:\n"
            "    code = 'timeout'\n"
            "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code,\n"
            "      file=sys.stderr)\n")


def build_input(path: Path, seed: int = 21) -> None:
    """2,000 ordinary records, then one record of 100,000 items (record 2001)."""
    rng = random.Random(seed)
    weights = [1.0 / (rank ** 1.1) for rank in range(1, 5001)]
    population = list(range(1, 5001))
    lines = []
    for _ in range(2000):
        size = min(20, 1 + int(rng.expovariate(1 / 4)))
        lines.append(" ".join(map(str, sorted(set(rng.choices(population, weights, k=size))))))
    lines.append(" ".join(str(i) for i in range(1, 100_001)))
    path.write_text("\n".join(lines) + "\n")


def run(argv: list[str], time_limit: float) -> dict[str, object]:
    command = [sys.executable, "-m", "setanon_sql", *argv]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAPPER, str(time_limit), *command],
                          capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    lines = done.stderr.strip().splitlines()
    _, peak_kib, code = lines[-1].split()
    shown = (done.stdout.strip().splitlines() + lines[:-1])
    return {"command": "setanon " + " ".join(argv[:-2]), "exit": code,
            "seconds": round(seconds, 1), "peak_rss_mib": round(int(peak_kib) / 1024),
            "said": shown[-1][:300] if shown else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/setanon-huge-record")
    parser.add_argument("--time-limit", type=float, default=180.0)
    parser.add_argument("--cap", type=int, default=None,
                        help="also run with --max-items-per-record N (swap)")
    args = parser.parse_args()
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    data, database = work / "big.dat", work / "big.duckdb"
    build_input(data)
    db = ["--db", f"duckdb:///{database}"]
    loaded = subprocess.run([sys.executable, "-m", "setanon_sql", "load", "transactions",
                             str(data), "--name", "big", *db], cwd=ROOT, capture_output=True,
                            text=True)
    if loaded.returncode:
        sys.exit(f"load failed: {loaded.stderr}")
    commands = [["risk", "big", "--m", "3"],
                ["anonymize", "big", "--model", "swap", "--random-categories", "10"]]
    if args.cap:
        commands.append(["anonymize", "big", "--model", "swap", "--random-categories", "10",
                         "--max-items-per-record", str(args.cap)])
    print(f"input: 2,000 ordinary records + 1 record of 100,000 items; "
          f"physical memory {_physical_gib():.1f} GiB")
    for argv in commands:
        result = run([*argv, *db], args.time_limit)
        spill = sorted(str(p) for p in work.glob("*.tmp") if any(p.iterdir()))
        print(f"{result['command']}: exit {result['exit']}, {result['seconds']} s, "
              f"peak RSS {result['peak_rss_mib']} MiB, spill left: {spill or 'none'}")
        print(f"    {result['said']}")
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)")


def _physical_gib() -> float:
    import os
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024 ** 3


if __name__ == "__main__":
    main()
