"""kanon (NEC top-down k-anonymity) on synthetic claims: runtime, NCP, disclosed items, memory.

Prints one line per run: backend, records, QI pattern, k, generation and anonymization seconds,
overall NCP, disclosed-item share per set-valued QI, deleted records, classes, iterations, and
the Python process's peak memory (tracemalloc: Python heap of the controller; ru_maxrss: the
whole process, which on DuckDB includes the embedded engine's buffers). Then, per pattern and
k, the growth exponent a of time ~ n^a fitted over the sizes run.

Usage (from the repository root)::

    python bench/bench_kanon.py --sizes 1000000 2000000 5000000 10000000 --patterns QI6 --k 5
    python bench/bench_kanon.py --sizes 100000 --patterns QI1 QI2 QI3 QI4 QI5 QI6 --k 2 4 6 8 10
    python bench/bench_kanon.py --backend postgres --sizes 1000000 --patterns QI6 --k 5

PostgreSQL comes from tests/support/pg_server.py ($SETANON_TEST_PG_URL, Docker, or the local
server binaries).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import resource
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.kanon import MODEL
from setanon_sql.models.kanon.generate import generate_claims
from setanon_sql.synth.shape import format_shape, shape

# The paper's QI patterns (§4.3).
PATTERNS = {
    "QI1": ["birth_year", "sex", "month"],
    "QI2": ["birth_year", "sex", "month", "beds", "claim_type", "start_day"],
    "QI3": ["diagnoses"],
    "QI4": ["drugs"],
    "QI5": ["diagnoses", "drugs"],
    "QI6": ["birth_year", "sex", "month", "diagnoses"],
}


@contextlib.contextmanager
def database(backend: str, workdir: Path, memory_limit: str | None,
             keep: bool) -> Iterator[str]:
    """The benchmark's database; a DuckDB file is removed before and after unless ``keep``."""
    if backend == "duckdb":
        path = workdir / "kanon_bench.duckdb"
        if not keep:
            path.unlink(missing_ok=True)
        yield f"duckdb:///{path}" + (f"?memory_limit={memory_limit}" if memory_limit else "")
        if not keep:
            path.unlink(missing_ok=True)
        return
    from tests.support.pg_server import postgres_url

    with postgres_url() as url:
        if url is None:
            raise SystemExit("no PostgreSQL server available")
        yield url


class DiskWatch:
    """Largest total size (bytes) of the files under ``root`` seen while running: the DuckDB
    file and its spill directory (``<file>.tmp``). Sampled every ``every`` seconds in a thread."""

    def __init__(self, root: Path, every: float = 2.0) -> None:
        self.root, self.every, self.peak = root, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def used(self) -> int:
        total = 0
        for folder, _, files in os.walk(self.root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.stat(os.path.join(folder, name)).st_blocks * 512
        return total

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.used())

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def claims(db: Backend, n: int, seed: int, reuse: bool) -> tuple[api.Dataset, str]:
    """The dataset of ``n`` claims drawn with ``seed``: generated now, or with ``reuse`` the one
    an earlier run left (same generator, size and seed; the generator is deterministic)."""
    name = f"claims{n}"
    if reuse:
        found = api.find_dataset(db, name)
        if (found is not None and found.n_records == n
                and found.options.get("generator") == "claims"
                and found.options.get("seed") == seed):
            return found, "reused"
    started = time.perf_counter()
    dataset = generate_claims(db, name, n, seed, replace=True)
    return dataset, f"{time.perf_counter() - started:.1f} s"


def profile(log: list[tuple[str, float]]) -> str:
    """Seconds per working table (CREATE TABLE r<run>_<purpose>_<version>) or other statement."""
    totals: dict[str, list[float]] = {}
    for sql, seconds in log:
        found = re.search(r'CREATE (?:UNLOGGED )?TABLE (?:"[^"]+"\.)*'
                          r'"r[0-9]+_([a-z0-9_]+?)(?:_[0-9]+)?"', sql)
        key = found.group(1) if found else " ".join(sql.split())[:70]
        entry = totals.setdefault(key, [0.0, 0])
        entry[0] += seconds
        entry[1] += 1
    ranked = sorted(totals.items(), key=lambda item: -item[1][0])
    return "\n".join(f"#   {seconds:8.2f} s {int(calls):4d}x  {key}"
                     for key, (seconds, calls) in ranked[:15])


def fit_exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(time) over log(n)."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["duckdb", "postgres"], default="duckdb")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--patterns", nargs="+", default=["QI6"], choices=list(PATTERNS))
    parser.add_argument("--k", type=int, nargs="+", default=[5])
    parser.add_argument("--beta", type=float, default=0.0)
    parser.add_argument("--suppress-budget", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--memory-limit", default=None,
                        help="DuckDB's memory_limit (e.g. 6GB; default: setanon's, half the RAM)")
    parser.add_argument("--keep-data", action="store_true",
                        help="DuckDB: keep the file in --workdir, and reuse a dataset of the "
                             "same size and seed an earlier run left in it")
    parser.add_argument("--no-verify", action="store_true",
                        help="skip `setanon verify` after each run")
    parser.add_argument("--profile", action="store_true",
                        help="print seconds per statement kind and per iteration")
    parser.add_argument("--rows-per-grouping", type=int, default=None,
                        help="override Backend.rows_per_grouping (the most rows one GROUP BY "
                             "reads), e.g. to make a 10M run slice its steps as a 100M run does "
                             "at 12 GB; default: the engine's own answer")
    args = parser.parse_args()
    timings: dict[tuple[str, int], list[tuple[int, float]]] = {}
    print("backend | records | QI | k | generate | anonymize s | NCP | disclosed "
          "share | deleted | classes | iterations | tracemalloc peak MB | maxrss MB | "
          "disk peak GB (file + spill, DuckDB)")
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    with (database(args.backend, args.workdir, args.memory_limit, args.keep_data) as url,
          DiskWatch(args.workdir) as disk):
        db = api.open_database(url, schema="kanon_bench")
        if args.rows_per_grouping is not None:
            cap: int = args.rows_per_grouping
            type(db).rows_per_grouping = lambda self: cap  # type: ignore[method-assign]
            print(f"# rows per grouping forced to {cap:,}", flush=True)
        try:
            for n in args.sizes:
                dataset, generated = claims(db, n, args.seed, args.keep_data)
                print(f"# generated: {generated}; disk used now "
                      f"{disk.used() / 2**30:.1f} GB, load average {os.getloadavg()}",
                      flush=True)
                print("# " + format_shape(shape(db, dataset, ["birth_year", "sex", "month"]))
                      .replace("\n", "\n# "), flush=True)
                for pattern in args.patterns:
                    for k in args.k:
                        params = {"k": k, "beta": args.beta,
                                  "suppress_budget": args.suppress_budget,
                                  "qi": PATTERNS[pattern]}
                        db.statement_log = [] if args.profile else None
                        tracemalloc.start()
                        started = time.perf_counter()
                        run_id = api.anonymize(db, dataset, MODEL, params, args.seed,
                                               check=False)
                        seconds = time.perf_counter() - started
                        _, peak = tracemalloc.get_traced_memory()
                        tracemalloc.stop()
                        figures = api.get_run(db, dataset, run_id).figures
                        timings.setdefault((pattern, k), []).append((n, seconds))
                        shares = ", ".join(f"{name} {d['share']:.3f}"
                                           for name, d in figures["disclosed_items"].items())
                        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                        disk.peak = max(disk.peak, disk.used())
                        print(f"{args.backend} | {n:,} | {pattern} | {k} | {generated} | "
                              f"{seconds:.1f} | {figures['ncp_overall']:.3f} | "
                              f"{shares or '-'} | "
                              f"{figures['records_deleted']:,} | {figures['classes']['count']:,}"
                              f" | {figures['iterations']} | {peak / 2**20:.1f} | {rss:.0f} | "
                              f"{disk.peak / 2**30:.1f}", flush=True)
                        print(f"# load average after the run: {os.getloadavg()}", flush=True)
                        if args.profile:
                            print(profile(db.statement_log or []))
                            print("#   iterations: " + ", ".join(
                                f"{h['attribute']}{'*' if h.get('frozen') else ''} "
                                f"{h.get('seconds', 0):.1f}" for h in figures["history"]))
                            db.statement_log = None
                        if not args.no_verify:
                            started = time.perf_counter()
                            api.verify(db, dataset, api.get_run(db, dataset, run_id),
                                       enforce=True)
                            print(f"# verify {time.perf_counter() - started:.1f} s (met)",
                                  flush=True)
                        for table in db.table_names(f"r{run_id}_"):
                            db.drop_table(db.table(table))
        finally:
            db.close()
    for (pattern, k), points in timings.items():
        exponent = fit_exponent(points)
        if exponent is not None:
            print(f"growth {pattern} k={k}: time ~ n^{exponent:.2f} over "
                  f"{', '.join(f'{n:,}' for n, _ in points)} records")


if __name__ == "__main__":
    main()
