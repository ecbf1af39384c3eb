"""Where a --model rho run spends its time: every SQL statement timed, summed by what it builds.

Usage: python bench/profile_rho.py --data bms1 [--m 2] [--heuristic mine] [--backend URL]
       [--rho 0.7] [--fraction 0.4] [--top 25] [--verify]
       [--model prho --setting personalized]  (personalized rho by the same suppressor)

Statements are grouped by the work table they create or update (``r<run>_<purpose>``, digits
stripped: ``lvl1..lvl4`` -> ``lvl``, ``cur0/cur1`` -> ``cur``, ``supx1r0`` -> ``supx``) or by the
first words of a query. Prints the anonymization's rounds (unsafe rules, suppressions, seconds
each) and a table of the statements that cost the time, so a note can say which step to remove.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

from setanon_sql import api
from setanon_sql.models import require_model
from setanon_sql.progress import Step, reporting_to

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
FILES = {"bms1": DATA / "bms-webview-1/BMS1.dat", "bms2": DATA / "bms-webview-2/BMS2.dat",
         "retail": DATA / "retail/retail.dat"}
TARGET = re.compile(r'(CREATE (?:UNLOGGED |TEMPORARY )?TABLE|CREATE INDEX\s+"[^"]+"\s+ON|UPDATE|'
                    r'DROP TABLE IF EXISTS|ANALYZE)\s+'
                    r'(?:"[^"]+"\.)*"?r\d+_([a-z_]+?)(?:\d+[xr]?\d*)?"?(?:[\s(]|$)',
                    re.IGNORECASE)

ROUND = re.compile(r"round \d+: ([\d,]+) unsafe rules")


def kind(sql: str) -> str:
    """What a statement does: the work table it writes, or the start of the query."""
    found = TARGET.search(sql)
    if found:
        verb = found.group(1).lower()
        return f"{'index' if verb.startswith('create index') else verb.split()[0]} {found.group(2)}"
    return " ".join(sql.split()[:4])[:40]


class Printer:
    """Progress lines with the time, on stderr; notes where each stage's statements start."""

    def __init__(self, log: list[tuple[str, float]]) -> None:
        self.log = log
        self.marks: list[tuple[str, int]] = [("setup", 0)]
        # (unsafe rules, first statement) of every round, for --tail-below and --head-from.
        self.rounds: list[tuple[int, int]] = []

    def show(self, step: Step) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {step.phase}: {step.detail}", file=sys.stderr,
              flush=True)
        if step.detail.startswith("stage "):
            self.marks.append((step.detail.split(":")[0], len(self.log)))
        found = ROUND.match(step.detail)
        if found:
            self.rounds.append((int(found.group(1).replace(",", "")), len(self.log)))


def summarize(title: str, log: list[tuple[str, float]], total: float, top: int) -> None:
    """The statements of one part of the run, by what they build, costliest first."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for sql, seconds in log:
        cell = sums[kind(sql)]
        cell[0] += seconds
        cell[1] += 1
    part = sum(seconds for seconds, _ in sums.values())
    print(f"\n{title}: {part:.1f} s\n\n| statement | calls | seconds | share of run |\n"
          "|---|---|---|---|")
    for name, (seconds, calls) in sorted(sums.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"| {name} | {int(calls)} | {seconds:.1f} | {seconds / total:.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="duckdb:////tmp/rho_prof/prof.duckdb")
    parser.add_argument("--data", default="bms1",
                        help="bms1, bms2, retail, or a dataset already in the database")
    parser.add_argument("--file", default=None, help="a FIMI file instead of --data's")
    parser.add_argument("--heuristic", default="mine")
    parser.add_argument("--model", default="rho", choices=("rho", "prho"))
    parser.add_argument("--setting", default="fixed",
                        help="prho: fixed, fixed+, personalized or personalized+")
    parser.add_argument("--rho", type=float, default=0.7)
    parser.add_argument("--fraction", type=float, default=0.4)
    parser.add_argument("--m", type=int, default=None)
    parser.add_argument("--trim-above", type=int, default=None,
                        help="any qid size: trim long records' sensitive items (no --m)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--b-max", type=int, default=None, help="the qid buffer's capacity")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--slowest", type=int, default=0,
                        help="also print the N slowest single statements, SQL abridged")
    parser.add_argument("--tail-below", type=int, default=None,
                        help="also sum the statements of the rounds that start with fewer "
                             "unsafe rules than this (a stage's tail)")
    parser.add_argument("--head-from", type=int, default=None,
                        help="also sum the statements of the rounds that start with at least "
                             "this many unsafe rules (a stage's first rounds)")
    args = parser.parse_args()
    Path("/tmp/rho_prof").mkdir(exist_ok=True)
    db = api.open_database(args.backend, "rhoprof")
    # A --file loads (and is found again) under its own name, never under --data's; a --data
    # that names no shared file is a dataset already in the database (`setanon generate quest`).
    name = Path(args.file).stem if args.file else args.data
    dataset = api.find_dataset(db, name)
    if dataset is None:
        if not args.file and name not in FILES:
            parser.error(f"--data {name}: neither {', '.join(FILES)} nor a dataset in "
                         f"{args.backend}; generate it first (setanon "
                         "generate quest --schema rhoprof --name NAME)")
        dataset = api.load_transactions(db, Path(args.file) if args.file else FILES[name], name)
    params: dict[str, object] = {"rho": args.rho, "sensitive_fraction": args.fraction}
    if args.model == "rho":
        params |= {"heuristic": args.heuristic, "m": args.m, "trim_above": args.trim_above,
                   "b_max": args.b_max}
    else:
        params |= {"setting": args.setting, "m": args.m or "all"}
    db.statement_log = []
    printer = Printer(db.statement_log)
    started = time.perf_counter()
    with reporting_to(printer):
        api.anonymize(db, dataset, require_model(args.model), params, seed=args.seed)
    total = time.perf_counter() - started
    log, db.statement_log = db.statement_log, None
    run = api.get_run(db, dataset, "latest")
    f = run.figures
    if args.m:
        bound = f"--m {args.m}"
    else:
        bound = "--m all" if args.model == "prho" else f"--trim-above {args.trim_above}"
    how = args.heuristic if args.model == "rho" else f"prho {args.setting}"
    share = f["suppressed"] / f["occurrences"]
    print(f"{name} {bound} {how}: {total:.1f} s, {f.get('rounds')} rounds, "
          f"suppressed {f['suppressed']} of {f['occurrences']} ({share:.3f})")
    for key in ("qid_bound_m", "largest_qid_checked", "long_records", "count_rows",
                "unique_rule_rows"):
        if key in f:
            print(f"  {key}: {f[key]}")
    print("\n| round | unsafe rules | ranked as one (collapsed) | suppressed | settling steps "
          "| then counted from scratch | seconds |\n|---|---|---|---|---|---|---|")
    for entry in f.get("history", []):
        recounted = "yes" if entry.get("recounted") else ""
        print(f"| {entry['round']} | {entry.get('unsafe_rules', 'recount')} | "
              f"{entry.get('rules_collapsed', '')} | "
              f"{entry.get('suppressed', '')} | {entry.get('settle_steps', '')} | "
              f"{recounted} | {entry['seconds']} |")
    bounds = [*printer.marks, ("end", len(log))]
    for (name, lo), (_, hi) in pairwise(bounds):
        summarize(name, log[lo:hi], total, args.top)
    spans = [(unsafe, log[lo:hi])
             for (unsafe, lo), (_, hi) in pairwise([*printer.rounds, (0, len(log))])]
    if args.slowest:
        print(f"\n{args.slowest} slowest statements:\n")
        for sql, seconds in sorted(log, key=lambda entry: -entry[1])[:args.slowest]:
            print(f"- {seconds:.1f} s `{kind(sql)}`: {' '.join(sql.split())[:600]}")
    if args.tail_below is not None:
        tail = [part for unsafe, part in spans if 0 < unsafe < args.tail_below]
        summarize(f"{len(tail)} rounds with 1 to {args.tail_below - 1} unsafe rules",
                  [entry for part in tail for entry in part], total, args.top)
    if args.head_from is not None:
        head = [part for unsafe, part in spans if unsafe >= args.head_from]
        summarize(f"{len(head)} rounds with at least {args.head_from} unsafe rules",
                  [entry for part in head for entry in part], total, args.top)
    if args.verify:
        started = time.perf_counter()
        result = api.verify(db, dataset, run)
        print(f"\nverify: {'ok' if result.ok else 'FAIL'} in {time.perf_counter() - started:.1f} s"
              f" {result.details}")
    db.close()


if __name__ == "__main__":
    main()
