"""Peak memory of the setanon process for `anonymize --in-place` at growing sizes, any model.

Issue 9 asks that the Python process's peak memory stay flat from 1M to 10M records: the data
must stay in the DBMS. For each size this script generates customers(customer, birth, sex) and
purchases(id, customer, product) inside the DBMS from the realistic claims generator (issue 22:
birth years skewed young, drug sets of 1-10 of 1,500 skewed, correlated items; SQL only, nothing
passes through Python), prints their shape, attaches them, and runs one `anonymize --in-place`
in a child process. It reports:

* peak RSS of the child (VmHWM, polled by the parent, and the child's own ru_maxrss at the end).
  On PostgreSQL the engine is another process, so this is the controller's memory. DuckDB runs
  inside the child, so there it includes the engine; `--duckdb-memory-limit` caps DuckDB's
  buffer manager (set on the child's connection; a `?memory_limit=` in the --db URL does the
  same).
* the peak of the Python heap (tracemalloc) of the child: the controller's own memory on both
  backends (DuckDB's C++ allocations are not traced).

`--generate-in-duckdb` (PostgreSQL) generates the same rows in a DuckDB file and copies them in
with COPY, in minutes where PostgreSQL's own generation of 10M claims took over half an hour.
`--stage prepare` and `--stage run` split the two, so that
each fits one benchmark-lock slot at 10M (a run applies in place: prepare again before the next).
A child still running at `--time-limit` is stopped; its peaks so far are reported (a lower bound
of the whole run's).

    python bench/bench_memory.py --db postgresql://... --model kanon --sizes 1000000,10000000
    python bench/bench_memory.py --db duckdb:////tmp/memory/m.duckdb --model swap --sizes 1000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import click
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.kanon.generate import generate_claims
from setanon_sql.names import qi_column
from setanon_sql.sqlrender import qualified_table
from setanon_sql.synth.shape import format_shape, shape

USER_SCHEMA = "bench_mem_user"
MODEL_ARGS = {
    "kanon": ["--k", "5", "--suppress-budget", "0.01"],
    "km": ["--k", "20", "--m", "2"],
    "rho": ["--rho", "0.5", "--sensitive-fraction", "0.05", "--m", "2"],
    "prho": ["--rho", "0.5", "--setting", "fixed", "--sensitive-fraction", "0.1", "--m", "2"],
    "swap": ["--random-categories", "5", "--method", "random", "--no-metrics"],
}
# The claims generator's (issue 22) drug sets: 1,500 items, 1-10 per record (mean 3.7),
# Zipf-like within condition profiles that correlate them; birth year skewed young and sex.
DRUGS_ATTR, BIRTH_ATTR, SEX_ATTR = 9, 2, 3


def generate(db: Backend, records: int) -> int:
    """Create the user's tables customers(customer, birth, sex) and purchases(id, customer,
    product) in USER_SCHEMA from the realistic claims generator, inside the DBMS (nothing
    passes through Python); returns the item rows."""
    db.execute(f'DROP SCHEMA IF EXISTS "{USER_SCHEMA}" CASCADE')
    db.execute(f'CREATE SCHEMA "{USER_SCHEMA}"')
    source = generate_claims(db, "mem_source", records, seed=1, replace=True)
    drugs = next(a for a in source.set_attributes if a.attr_no == DRUGS_ATTR)
    claims, items = db.table(source.records_table, "r"), db.table(source.items_table(drugs), "i")
    customers = qualified_table(USER_SCHEMA, "customers")
    purchases = qualified_table(USER_SCHEMA, "purchases")
    db.run(exp.Create(this=customers, kind="TABLE", expression=exp.select(
        exp.column("record_id", table="r").as_("customer"),
        exp.cast(exp.column(qi_column(BIRTH_ATTR), table="r"), "TEXT").as_("birth"),
        exp.column(qi_column(SEX_ATTR), table="r").as_("sex")).from_(claims)))
    db.run(exp.Create(this=purchases, kind="TABLE", expression=exp.select(
        # unique: a record holds each drug id (<= 1,500) at most once
        (exp.column("record_id", table="i") * 2048 + exp.column("item_id", table="i")).as_("id"),
        exp.column("record_id", table="i").as_("customer"),
        exp.cast(exp.column("item_id", table="i"), "TEXT").as_("product")).from_(items)))
    api.drop_dataset(db, source, force=True)
    # A user's table in use has planner statistics (autovacuum gathers them); fresh ones do not.
    db.analyze(customers)
    db.analyze(purchases)
    return int(db.scalar(exp.select(exp.func("count", exp.Star())).from_(purchases)))


USER_TABLES = {  # the user's tables and their columns' types, as generate() makes them
    "customers": {"customer": "BIGINT", "birth": "TEXT", "sex": "TEXT"},
    "purchases": {"id": "BIGINT", "customer": "BIGINT", "product": "TEXT"},
}


def _generated_files(records: int, workdir: Path) -> None:
    """generate() in a DuckDB file, its tables written to ``workdir``/NAME.csv (run in a process
    of its own, so that DuckDB's memory never counts in the peak RSS the model's child
    inherits: Linux carries ru_maxrss across fork and exec)."""
    with api.open_database(f"duckdb:///{workdir / 'generate.duckdb'}", "generate") as source:
        generate(source, records)
        for name, columns in USER_TABLES.items():
            source.copy_to_file(
                exp.select(*columns).from_(qualified_table(USER_SCHEMA, name))
                .order_by(next(iter(columns))),
                workdir / f"{name}.csv", ",", list(columns), quoted=False)
    (workdir / "generate.duckdb").unlink()


def generate_in_duckdb(db: Backend, records: int, workdir: Path) -> int:
    """generate(), run in a DuckDB file and copied into ``db`` through delimited files: the
    same rows (the generator is the same SQL on every engine, its hash is portable), in
    minutes where PostgreSQL's own generation of 10M claims took over half an hour. The rows
    pass through files and the drivers' bulk paths (COPY), not through Python objects."""
    writer = multiprocessing.get_context("spawn").Process(
        target=_generated_files, args=(records, workdir))
    writer.start()
    writer.join()
    if writer.exitcode != 0:
        raise SystemExit(f"generating {records:,} records in DuckDB failed "
                         f"(exit code {writer.exitcode})")
    db.execute(f'DROP SCHEMA IF EXISTS "{USER_SCHEMA}" CASCADE')
    db.execute(f'CREATE SCHEMA "{USER_SCHEMA}"')
    for name, columns in USER_TABLES.items():
        staging, path = qualified_table(USER_SCHEMA, f"{name}_file"), workdir / f"{name}.csv"
        db.load_delimited(path, staging, len(columns), ",", quoted=False)
        path.unlink()
        db.run(exp.Create(this=qualified_table(USER_SCHEMA, name), kind="TABLE",
                          expression=exp.select(*(
                              exp.cast(exp.column(f"c{i}"), kind).as_(column)
                              for i, (column, kind) in enumerate(columns.items(), start=1)))
                          .from_(staging).order_by("pos")))
        db.drop_table(staging)
        db.analyze(qualified_table(USER_SCHEMA, name))
    return int(db.scalar(exp.select(exp.func("count", exp.Star())).from_(
        qualified_table(USER_SCHEMA, "purchases"))))


def hierarchy(path: Path, products: list[str]) -> Path:
    """A 3-level hierarchy over the products (km): groups of 10 consecutive drug ids, then of
    100 (the generator's condition profiles draw from id ranges, so these groups are related)."""
    path.write_text("".join(f"{p};g{int(p) // 10};h{int(p) // 100};*\n" for p in products))
    return path


def model_params(model: Any, args: list[str]) -> dict[str, Any]:
    """The model's click options parsed as `setanon anonymize` parses them."""
    command = click.Command(model.name, params=list(model.options))
    with command.make_context(model.name, list(args)) as context:
        return dict(context.params)


def _report_heap(path: Path) -> None:
    """Write the tracemalloc peak every second, so a run stopped at the time limit has one."""
    while True:
        path.write_text(json.dumps(tracemalloc.get_traced_memory()[1] / 2**20))
        time.sleep(1.0)


def child(url: str, schema: str, model_name: str, args: list[str], memory_limit: str,
          heap_file: Path) -> None:
    """The measured process: open, (cap DuckDB), anonymize in place; print figures as JSON."""
    tracemalloc.start()
    threading.Thread(target=_report_heap, args=(heap_file,), daemon=True).start()
    started = time.perf_counter()
    with api.open_database(url, schema) as db:
        if memory_limit and db.name == "duckdb":
            limit = exp.Literal.string(memory_limit).sql(dialect="duckdb")
            db.execute(f"SET memory_limit = {limit}")
        model = require_model(model_name)
        run_id = api.anonymize(db, api.get_dataset(db, "mem"), model,
                               model_params(model, args), seed=1, in_place=True)
    print(json.dumps({"run": run_id, "seconds": time.perf_counter() - started,
                      "tracemalloc_peak_mib": tracemalloc.get_traced_memory()[1] / 2**20,
                      "ru_maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _hwm_mib(pid: int) -> float | None:
    """VmHWM (peak resident set) of a running process, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGINT first: the drivers then cancel the running statement (psycopg sends a cancel
    request; a SIGKILLed client's query ran on in PostgreSQL for 20 more minutes)."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def fresh_database(url: str, schema: str) -> None:
    """Drop what an earlier size left: the DuckDB file, or both schemas on PostgreSQL."""
    if url.startswith("duckdb:"):
        path = Path(url.split("://", 1)[1][1:])
        for leftover in (path, Path(f"{path}.wal")):
            leftover.unlink(missing_ok=True)
        return
    with api.open_database(url, schema) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        db.execute(f'DROP SCHEMA IF EXISTS "{USER_SCHEMA}" CASCADE')


def _shape(db: Backend) -> str:
    """The attached data's shape (distinct rows, birth x sex combinations, item skew, set
    sizes), printed beside the figures."""
    return format_shape(shape(db, api.get_dataset(db, "mem")))


def prepare(url: str, schema: str, model: str, records: int, workdir: Path,
            in_duckdb: bool = False) -> tuple[int, float, str]:
    """Generate and attach one size; returns (item rows, seconds, shape)."""
    started = time.perf_counter()
    fresh_database(url, schema)
    with api.open_database(url, schema) as db:
        item_rows = (generate_in_duckdb(db, records, workdir) if in_duckdb
                     else generate(db, records))
        dataset = api.attach(db, "mem", f"{USER_SCHEMA}.purchases", "customer", "product",
                             records_table=f"{USER_SCHEMA}.customers")
        if model == "km":
            products = [str(p) for (p,) in db.query(exp.select("product").distinct().from_(
                qualified_table(USER_SCHEMA, "purchases")))]
            api.load_hierarchy(db, hierarchy(workdir / "h.txt", products), dataset)
        seconds = time.perf_counter() - started
        return item_rows, seconds, _shape(db)


def prepared(url: str, schema: str, records: int) -> tuple[int, str]:
    """With --stage run: the item rows and shape of what --stage prepare left, checked against
    the size."""
    with api.open_database(url, schema) as db:
        attached = api.get_dataset(db, "mem").n_records
        if attached != records:
            raise SystemExit(f"--stage run: {attached:,} records are attached, not {records:,}; "
                             "run --stage prepare with this size first")
        purchases = qualified_table(USER_SCHEMA, "purchases")
        return (int(db.scalar(exp.select(exp.func("count", exp.Star())).from_(purchases))),
                _shape(db))


def measure(args: argparse.Namespace, records: int, workdir: Path) -> dict[str, Any]:
    """One size: prepare, then run the child under a time limit while polling its VmHWM."""
    if args.stage == "run":
        (item_rows, data_shape), prepare_seconds = prepared(args.db, args.schema, records), 0.0
    else:
        item_rows, prepare_seconds, data_shape = prepare(args.db, args.schema, args.model,
                                                         records, workdir, args.generate_in_duckdb)
    print("# " + data_shape.replace("\n", "\n# "), flush=True)
    if args.stage == "prepare":
        return {"stage": "prepare", "records": records, "item_rows": item_rows,
                "prepare_s": round(prepare_seconds, 1)}
    model_args = [*MODEL_ARGS[args.model], *args.extra]
    command = [sys.executable, __file__, "--child", "--db", args.db, "--schema", args.schema,
               "--model", args.model, "--duckdb-memory-limit", args.duckdb_memory_limit,
               "--heap-file", str(workdir / "heap.json"), "--", *model_args]
    (workdir / "heap.json").unlink(missing_ok=True)
    started, peak = time.perf_counter(), 0.0
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        while proc.poll() is None and time.perf_counter() - started < args.time_limit:
            peak = max(peak, _hwm_mib(proc.pid) or 0.0)
            time.sleep(0.5)
        finished = proc.poll() is not None
        if not finished:
            _stop(proc)
        out, err = proc.communicate()
    row: dict[str, Any] = {
        "backend": "duckdb" if args.db.startswith("duckdb:") else "postgres",
        "model": args.model, "args": " ".join(model_args), "records": records,
        "item_rows": item_rows, "prepare_s": round(prepare_seconds, 1),
        "generated_in": "duckdb" if args.generate_in_duckdb else "the database",
        "wall_s": round(time.perf_counter() - started, 1), "polled_hwm_mib": round(peak, 1),
        "duckdb_memory_limit": args.duckdb_memory_limit, "load": os.getloadavg()[0]}
    if finished and proc.returncode == 0:
        row.update({k: round(v, 1) if isinstance(v, float) else v
                    for k, v in json.loads(out.strip().splitlines()[-1]).items()})
        row["status"] = "done"
    else:
        reason = err.strip().splitlines()[-1] if err.strip() else ""
        heap = workdir / "heap.json"
        if heap.exists():
            row["tracemalloc_peak_mib"] = round(json.loads(heap.read_text()), 1)
        row["status"] = (f"failed: {reason}" if finished
                         else f"stopped after {args.time_limit:.0f} s")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--schema", default="bench_mem")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--model", default="kanon", choices=sorted(MODEL_ARGS))
    parser.add_argument("--duckdb-memory-limit", default="4GB",
                        help="DuckDB memory_limit of the child ('' = DuckDB's default)")
    parser.add_argument("--time-limit", type=float, default=600.0,
                        help="seconds before the child is stopped (its peak so far is kept)")
    parser.add_argument("--stage", default="all", choices=("all", "prepare", "run"),
                        help="prepare: only generate and attach; run: only run on what "
                        "prepare left (one size; for 10M, where each needs its own lock slot)")
    parser.add_argument("--generate-in-duckdb", action="store_true",
                        help="PostgreSQL: generate the same rows in a DuckDB file and COPY them "
                        "in (10M in minutes instead of over half an hour)")
    parser.add_argument("--results", type=Path, help="append one JSON line per size here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--heap-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("extra", nargs="*", help="after --: extra options of the model")
    args = parser.parse_args()
    if args.child:
        child(args.db, args.schema, args.model, args.extra, args.duckdb_memory_limit,
              args.heap_file)
        return
    if args.stage == "run" and "," in args.sizes:
        parser.error("--stage run takes one size (the one --stage prepare left)")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            row = measure(args, size, Path(tmp))
            print(json.dumps(row), flush=True)
            if args.results:
                with args.results.open("a") as out:
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
