"""Load and export timings for transaction files on DuckDB and PostgreSQL.

Prints figures only: no assertions, no time limits. For each dataset and backend it times
``load_transactions`` (file -> normalized tables, one transaction) and ``export_dataset`` (FIMI
file written by the DBMS), counts the record-item rows, and checks that the export equals the
input line by line once runs of blanks are normalized (``OK`` / ``OK (as sets)`` / ``MISMATCH``).

Usage (from the repository root)::

    python bench/bench_load.py                          # BMS1, BMS2, Retail on DuckDB + PostgreSQL
    python bench/bench_load.py --synthetic 10000000 --workdir /tmp/bench    # 10M records, DuckDB
    python bench/bench_load.py --synthetic-file /tmp/bench/synth10m.dat      # reuse a file

The shared datasets are read from ``../shared/data`` relative to the repository root
(``--data-dir`` to change). PostgreSQL comes from ``tests/support/pg_server.py``:
``$SETANON_TEST_PG_URL``, else a testcontainers server when Docker answers, else the local server
binaries started in a temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from setanon_sql.backends import connect
from setanon_sql.io.export import export_dataset
from setanon_sql.io.transactions import load_transactions
from setanon_sql.migrations import migrate

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = {
    "bms1": "bms-webview-1/BMS1.dat",
    "bms2": "bms-webview-2/BMS2.dat",
    "retail": "retail/retail.dat",
}
BENCH_SCHEMA = "setanon_bench"


@dataclass
class Result:
    dataset: str
    backend: str
    records: int
    item_rows: int
    load_s: float
    export_s: float
    roundtrip: str


# ---- synthetic data -------------------------------------------------------------------------
def generate_synthetic(n_records: int, target: Path, seed: float = 0.42) -> float:
    """Write ``n_records`` blank-separated transactions to ``target``; returns seconds taken.

    Record length is uniform in 1..9 (mean 5); items are ``floor(random()^3 * 20000) + 1``
    (Zipf-like: small ids are frequent), distinct within a record and sorted. DuckDB writes the
    file itself; ``setseed`` makes the output identical from run to run (same DuckDB version).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + ".part")
    # DuckDB >= 1.3 has Python-style lambdas; 2.0 refuses the older arrow syntax by default.
    major, minor = (int(p) for p in duckdb.__version__.split(".")[:2])
    item = "floor(pow(random(), 3) * 20000)::BIGINT + 1"
    fn = f"lambda k: {item}" if (major, minor) >= (1, 3) else f"k -> {item}"
    quoted_target = "'" + str(partial).replace("'", "''") + "'"
    started = time.perf_counter()
    con = duckdb.connect()
    try:
        con.execute("SELECT setseed(?)", [seed])
        con.execute(
            "COPY (SELECT array_to_string(list_sort(list_distinct(list_transform("
            f"range(1 + floor(random() * 9)::BIGINT), {fn}))), ' ') AS line "
            f"FROM range({int(n_records)}) AS t(r)) "
            f"TO {quoted_target} (FORMAT csv, HEADER false, QUOTE '')"
        )
    finally:
        con.close()
    partial.replace(target)
    return time.perf_counter() - started


def synthetic_file(n_records: int, workdir: Path) -> Path:
    target = workdir / f"synth-{n_records}.dat"
    if target.exists():
        print(f"# reusing {target}")
    else:
        print(f"# generating {n_records:,} synthetic records into {target} ...", flush=True)
        seconds = generate_synthetic(n_records, target)
        print(f"# generated in {seconds:.1f} s ({target.stat().st_size / 2**20:.0f} MiB)")
    return target


# ---- round trip -----------------------------------------------------------------------------
def compare(original: Path, exported: Path) -> str:
    """Compare two transaction files line by line, blanks normalized."""
    reordered = 0
    first_bad: int | None = None
    bad = 0
    with original.open(encoding="utf-8") as a, exported.open(encoding="utf-8") as b:
        for n, (x, y) in enumerate(itertools.zip_longest(a, b), start=1):
            if x is None or y is None:
                bad += 1
                first_bad = first_bad or n
                continue
            tx, ty = x.split(), y.split()
            if tx == ty:
                continue
            if sorted(set(tx)) == sorted(set(ty)):
                reordered += 1
            else:
                bad += 1
                first_bad = first_bad or n
    if bad:
        return f"MISMATCH ({bad:,} lines, first at line {first_bad})"
    if reordered:
        return f"OK (as sets; {reordered:,} lines reordered or deduplicated)"
    return "OK"


# ---- backends -------------------------------------------------------------------------------
@contextlib.contextmanager
def open_backend(kind: str, workdir: Path) -> Iterator[tuple[object, str] | None]:
    """Yield (backend, description) on a fresh database or schema; None if unavailable."""
    if kind == "duckdb":
        db_dir = Path(tempfile.mkdtemp(prefix="bench-duckdb-", dir=workdir))
        backend = connect(f"duckdb:///{db_dir / 'bench.duckdb'}", schema=BENCH_SCHEMA)
        try:
            yield backend, f"DuckDB {duckdb.__version__} (file in {db_dir})"
        finally:
            backend.close()
            shutil.rmtree(db_dir, ignore_errors=True)
        return
    sys.path.insert(0, str(REPO_ROOT))
    from tests.support.pg_server import postgres_url

    with postgres_url() as url:
        if url is None:
            yield None
            return
        backend = connect(url, schema=BENCH_SCHEMA)
        try:
            backend.execute(f"DROP SCHEMA IF EXISTS {BENCH_SCHEMA} CASCADE")
            version = backend.execute("SHOW server_version", fetch=True)[0][0]
            yield backend, f"PostgreSQL {version}"
        finally:
            with contextlib.suppress(Exception):
                backend.execute(f"DROP SCHEMA IF EXISTS {BENCH_SCHEMA} CASCADE")
            backend.close()


def bench_one(backend, kind: str, label: str, path: Path, workdir: Path,
              steps: int) -> Result:
    backend.statement_log = [] if steps else None
    started = time.perf_counter()
    dataset = load_transactions(backend, path, label, fmt="fimi", replace=True)
    load_s = time.perf_counter() - started
    log = backend.statement_log or []
    backend.statement_log = None
    attribute = dataset.set_attributes[0]
    items = backend.table(dataset.items_table(attribute)).sql(dialect=backend.dialect)
    item_rows = int(backend.execute(f"SELECT count(*) FROM {items}", fetch=True)[0][0])
    out = workdir / f"export-{kind}-{label}.dat"
    started = time.perf_counter()
    export_dataset(backend, dataset, out, fmt="fimi")
    export_s = time.perf_counter() - started
    roundtrip = compare(path, out)
    out.unlink(missing_ok=True)
    result = Result(label, kind, dataset.n_records, item_rows, load_s, export_s, roundtrip)
    print(f"# {label} on {kind}: load {load_s:.2f} s, export {export_s:.2f} s, "
          f"{roundtrip}", flush=True)
    if steps:
        logged = sum(t for _, t in log)
        print(f"#   slowest of {len(log)} logged statements ({logged:.2f} s logged; the bulk "
              "file read is not logged):")
        for sql, seconds in sorted(log, key=lambda e: -e[1])[:steps]:
            text = " ".join(sql.split())
            text = text[text.rfind("*/") + 2:].strip() if text.startswith("/*") else text
            print(f"#   {seconds:7.2f} s  {text[:110]}")
    return result


def git_revision() -> str:
    """The checked-out commit, with '+dirty' when the working tree has changes."""
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return rev + ("+dirty" if dirty.strip() else "")


def print_table(results: list[Result]) -> None:
    print()
    print("| dataset | backend | records | items rows | load s | export s | roundtrip |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in results:
        print(f"| {r.dataset} | {r.backend} | {r.records:,} | {r.item_rows:,} | "
              f"{r.load_s:.2f} | {r.export_s:.2f} | {r.roundtrip} |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=None,
                        help="comma-separated: duckdb,postgres (default: both for the shared "
                             "datasets, duckdb for --synthetic)")
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data",
                        help="directory of the shared datasets (default: ../shared/data)")
    parser.add_argument("--datasets", default=",".join(SHARED),
                        help=f"shared datasets to load (default: {','.join(SHARED)})")
    parser.add_argument("--synthetic", type=int, metavar="N",
                        help="generate (or reuse from --workdir) N synthetic records and load "
                             "only those")
    parser.add_argument("--synthetic-file", type=Path, metavar="PATH",
                        help="load this transaction file (e.g. an earlier synthetic one) only")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where synthetic files are cached and databases live "
                             "(default: a new temporary directory)")
    parser.add_argument("--steps", type=int, default=0, metavar="K",
                        help="also print the K slowest SQL statements of each load")
    args = parser.parse_args(argv)

    synthetic = args.synthetic is not None or args.synthetic_file is not None
    backends = (args.backends or ("duckdb" if synthetic else "duckdb,postgres")).split(",")
    unknown = set(backends) - {"duckdb", "postgres"}
    if unknown:
        parser.error(f"unknown backend(s): {', '.join(sorted(unknown))}")

    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="setanon-bench-")) if own_workdir else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)

    if args.synthetic_file is not None:
        label = re.sub(r"[^A-Za-z0-9_.\-]", "_", args.synthetic_file.stem) or "file"
        inputs = [(label, args.synthetic_file)]
    elif args.synthetic is not None:
        inputs = [(f"synthetic-{args.synthetic}", synthetic_file(args.synthetic, workdir))]
    else:
        inputs = [(name, args.data_dir / SHARED[name]) for name in args.datasets.split(",")]
    for _, path in inputs:
        if not path.is_file():
            parser.error(f"{path} is not a file")

    print(f"# {platform.platform()}, Python {platform.python_version()}, "
          f"DuckDB {duckdb.__version__}, setanon_sql at {git_revision()}")
    results: list[Result] = []
    try:
        for kind in backends:
            with open_backend(kind, workdir) as opened:
                if opened is None:
                    print(f"# {kind}: no server available, skipped")
                    continue
                backend, description = opened
                started = time.perf_counter()
                migrate(backend)
                print(f"# {kind}: {description}; migrate {time.perf_counter() - started:.2f} s",
                      flush=True)
                for label, path in inputs:
                    results.append(bench_one(backend, kind, label, path, workdir, args.steps))
    finally:
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(results)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"peak RSS of this process: {peak / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
