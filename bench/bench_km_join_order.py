"""The plan of km's full itemset enumerations: the engine's own join order against one join at a
time in the written order (``Backend.left_deep_joins``), per itemset size.

Reads a finished km run from a DuckDB file (``bench_km.py``'s workdir), generalizes the original
items by its published cut (``km_generalized_counts``, what the certificate and verify
enumerate), prints the shape of that table (records, nodes, record lengths, distinct node sets)
and, for each size s of ``--sizes``, the s-itemsets of the records (``itemsets.
itemset_occurrences``, counted) timed under DuckDB's own plan and with its join-order optimizer
off. With ``--postgres`` the same table is copied to a PostgreSQL server
(``tests/support/pg_server.py``) and timed through setanon's session, under the planner's own
order and ``left_deep_joins`` (``join_collapse_limit`` = 1). Figures only: no assertions.

Usage (from the repository root)::

    python bench/bench_km_join_order.py --db /work/k100/km.duckdb --dataset cdr \\
        --sizes 6,7,8,9,10,11 --postgres
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.io.published import published
from setanon_sql.models.km.itemsets import itemset_occurrences
from setanon_sql.models.km.verify import run_tables
from setanon_sql.runs import list_runs


def counted(table: exp.Table, size: int) -> exp.Select:
    return exp.select(exp.func("count", exp.Star())).from_(
        itemset_occurrences(table, size).subquery("o"))


def shape(db: Backend, counts: exp.Table) -> str:
    """Records, nodes, nodes per record and distinct node sets (``km_record_shapes``)."""
    lengths = exp.select(exp.func("count", exp.Star()).as_("len")).from_(counts.copy()).group_by(
        exp.column("record_id"))
    records, longest, mean = db.query(exp.select(
        exp.func("count", exp.Star()), exp.func("max", exp.column("len")),
        exp.func("avg", exp.column("len"))).from_(lengths.subquery("r")))[0]
    nodes = db.scalar(exp.select(exp.func("count", exp.Distinct(
        expressions=[exp.column("node_id")]))).from_(counts.copy()))
    members = db.table("jo_members")
    try:
        db.materialize(members, "km_record_shapes", None, {"counts": counts})
        sets = db.scalar(exp.select(exp.func("count", exp.Distinct(
            expressions=[exp.column("shape_id")]))).from_(members.copy()))
    finally:
        db.drop_table(members)
    return (f"records {records:,}, nodes {nodes}, nodes per record mean {float(mean):.2f} "
            f"max {longest}, distinct node sets {sets:,}")


def timed(db: Backend, counts: exp.Table, size: int, left_deep: bool) -> tuple[int, float]:
    """(s-itemsets, seconds) under the engine's own plan or in the written order (the
    package's ``left_deep_joins``, as km runs it)."""
    with db.left_deep_joins() if left_deep else contextlib.nullcontext():
        started = time.perf_counter()
        rows = int(db.scalar(counted(counts, size)))
        return rows, time.perf_counter() - started


def print_sizes(engine: str, db: Backend, counts: exp.Table, sizes: list[int]) -> None:
    for size in sizes:
        rows, own = timed(db, counts, size, left_deep=False)
        _, written = timed(db, counts, size, left_deep=True)
        print(f"| {engine} | {size} | {rows:,} | {own:.2f} | {written:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="DuckDB file holding a finished km run")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--run", type=int, default=None, help="run id (default: the last)")
    parser.add_argument("--sizes", default="6,7,8,9,10,11")
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    db = api.open_database(f"duckdb:///{args.db}", "km_bench")
    dataset = api.find_dataset(db, args.dataset)
    if dataset is None:
        sys.exit(f"{args.db} holds no dataset named {args.dataset!r}: pass --dataset as "
                 "bench_km.py loaded it (cdr, bms2, retail)")
    run_id = args.run or list_runs(db, args.dataset)[-1]["run_id"]
    run = api.get_run(db, dataset, run_id)
    original = run_tables(db, dataset, dataset.set_attributes[0], published(db, dataset, run))
    cut, counts = db.table("jo_cut"), db.table("jo_counts")
    try:
        db.materialize(cut, "km_published_cut", None, original)
        db.materialize(counts, "km_generalized_counts", None,
                       {"items": original["items"], "cut": cut})
        print(f"# {args.dataset}, run {run_id}, its published cut: {shape(db, counts)}")
        print("| engine | s | s-itemsets | own plan s | written order s |")
        print("|---|---|---|---|---|")
        print_sizes("duckdb", db, counts, sizes)
        if args.postgres:
            records = db.query(exp.select("record_id", "node_id", "c").from_(counts.copy()))
            postgres(records, sizes)
    finally:
        db.drop_table(cut)
        db.drop_table(counts)
        db.close()


def postgres(records: list[tuple[int, ...]], sizes: list[int]) -> None:
    """The same counts on a scratch PostgreSQL server, through setanon's own session (its
    work_mem and jit settings): the planner's own order against ``left_deep_joins``."""
    import psycopg

    from tests.support.pg_server import postgres_url

    with postgres_url() as url:
        if url is None:
            print("no PostgreSQL available: skipping it", file=sys.stderr)
            return
        db = api.open_database(url, "km_join_order")
        table = db.table("jo_counts")
        try:
            name = table.sql(dialect="postgres")
            with psycopg.connect(url, autocommit=True) as con:  # a bulk COPY: no API for it
                con.execute(f"CREATE TABLE {name} (record_id bigint, node_id bigint, c bigint)")
                with con.cursor().copy(f"COPY {name} FROM STDIN") as copy:
                    for row in records:
                        copy.write_row(row)
            db.analyze(table)
            print_sizes("postgres", db, table, sizes)
        finally:
            db.drop_table(table)
            db.close()


if __name__ == "__main__":
    main()
