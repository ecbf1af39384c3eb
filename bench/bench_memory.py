"""Peak memory of the setanon process for `anonymize --in-place` at growing sizes.

The data (records x ~3 items over 50 products, with a 3-level hierarchy) is generated inside
the DBMS, attached, then one `setanon anonymize ... --in-place` runs in a child process whose
peak RSS (ru_maxrss of that child alone) is printed with the wall time. On PostgreSQL the child
is only the controller; DuckDB runs inside the child, so its RSS includes the engine.

    python bench/bench_memory.py --db postgresql://... --sizes 100000,1000000 --model km
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from setanon_sql import api

ITEMS = 50
MEASURE = ("import resource, subprocess, sys\n"
           "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
           "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
           "sys.stderr.write(done.stderr)\n")
MODEL_ARGS = {
    "km": ["--k", "20", "--m", "2"],
    "swap": ["--random-categories", "5", "--method", "random", "--no-metrics"],
    "rho": ["--rho", "0.5", "--sensitive-fraction", "0.05"],
}


def generate(db: api.Backend, schema: str, records: int) -> None:
    """purchases(id, customer, product): ~3 items per record, drawn by arithmetic in the DBMS."""
    db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    db.execute(f'CREATE SCHEMA "{schema}"')
    series = ("generate_series(1, $n) AS s(g)" if db.name == "duckdb"
              else "generate_series(1, %(n)s) AS g")
    db.execute(
        f'CREATE TABLE "{schema}".purchases AS SELECT CAST(g AS BIGINT) AS id, '
        f"CAST(g / 3 AS BIGINT) AS customer, "
        f"'p' || CAST(mod(CAST(g AS BIGINT) * 7919 + g / 3, {ITEMS}) AS TEXT) "
        f"AS product, CAST(mod(g, 9) AS INTEGER) AS qty FROM {series}", {"n": 3 * records})


def hierarchy(path: Path) -> Path:
    path.write_text("".join(f"p{i};g{i // 5};h{i // 25};*\n" for i in range(ITEMS)))
    return path


def measure(url: str, schema: str, model: str, records: int, extra: list[str]) -> None:
    with api.open_database(url, schema) as db:
        db.execute(f'DROP SCHEMA "{schema}" CASCADE')  # a fresh setanon schema per size
    with api.open_database(url, schema) as db:
        generate(db, "bench_mem_user", records)
        api.attach(db, "mem", "bench_mem_user.purchases", "customer", "product")
    command = [sys.executable, "-c", "from setanon_sql.cli import main; main()", "anonymize",
               "mem", "--model", model, *MODEL_ARGS[model], *extra, "--seed", "1",
               "--in-place", "--db", url, "--schema", schema]
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True,
                         text=True, check=True)
    code, rss_kib = out.stdout.split()
    print(f"{model} records={records:>10,} exit={code} peak_rss_mib={int(rss_kib) / 1024:8.1f} "
          f"seconds={time.perf_counter() - started:7.1f}", flush=True)
    if code != "0":
        print(out.stderr.strip().splitlines()[-1], flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--schema", default="bench_mem")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--model", default="km", choices=sorted(MODEL_ARGS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        extra = (["--hierarchy", str(hierarchy(Path(tmp) / "h.txt"))]
                 if args.model == "km" else [])
        for size in (int(s) for s in args.sizes.split(",")):
            measure(args.db, args.schema, args.model, size, extra)


if __name__ == "__main__":
    main()
