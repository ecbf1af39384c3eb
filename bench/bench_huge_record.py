"""Issue 21 item 6: one record of 100,000 items beside 2,000 ordinary records.

Builds the input (ordinary records: 1-12 items of 5,000, the huge record holds items 1..100,000),
loads it into a fresh DuckDB file, then runs, each as its own `setanon` process under
/usr/bin/time -v: `risk --m 3` (refused at once), `risk --m 3 --max-items-per-record N` with the
N the refusal suggests, and `anonymize --model swap`. Prints exit code, wall time and peak RSS.

    python bench/bench_huge_record.py [--workdir /tmp/huge]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

SETANON = [sys.executable, "-c", "from setanon_sql.cli import main; main()"]


def make_input(path: Path) -> None:
    rng = random.Random(1)
    lines = [" ".join(str(i) for i in range(1, 100_001))]
    for _ in range(2000):
        lines.append(" ".join(str(x) for x in sorted({rng.randint(1, 5000)
                                                      for _ in range(rng.randint(1, 12))})))
    path.write_text("\n".join(lines) + "\n")


def timed(args: list[str]) -> tuple[int, float, float, str]:
    """(exit code, seconds, peak RSS in GiB, last line of stderr/stdout) of one command."""
    done = subprocess.run(["/usr/bin/time", "-v", *args], capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    assert wall and rss, done.stderr
    seconds = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    said = [line for line in (done.stdout + done.stderr).splitlines()
            if line and not line.startswith("\t") and "Command exited" not in line]
    return done.returncode, seconds, int(rss.group(1)) / 2**20, said[-1] if said else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", default="/tmp/huge")
    workdir = Path(parser.parse_args().workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    data, db = workdir / "big.dat", ["--db", f"duckdb:///{workdir / 'big.duckdb'}"]
    make_input(data)
    subprocess.run([*SETANON, "load", "transactions", str(data), "--name", "big", *db],
                   check=True, capture_output=True)
    print("| command | exit | seconds | peak RSS GiB | says |\n|---|---|---|---|---|")
    refused = timed([*SETANON, "risk", "big", "--m", "3", *db])
    cap = re.search(r"N = ([\d,]+) fits", refused[3])
    commands = [["risk", "big", "--m", "3"]]
    if cap:
        commands.append(["risk", "big", "--m", "3", "--max-items-per-record",
                         cap.group(1).replace(",", "")])
    commands.append(["anonymize", "big", "--model", "swap", "--random-categories", "10",
                     "--seed", "1"])
    for command in commands:
        code, seconds, rss, said = (refused if command == commands[0]
                                    else timed([*SETANON, *command, *db]))
        print(f"| `setanon {' '.join(command)}` | {code} | {seconds:.1f} | {rss:.2f} | "
              f"{said[:140]} |")
    spill = list(workdir.glob("*.tmp"))
    print(f"\nspill left in {workdir}: {[str(p) for p in spill] or 'none'}")


if __name__ == "__main__":
    main()
