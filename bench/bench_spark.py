"""kanon and km on Spark local[N] beside DuckDB, on the same files: seconds, and Spark's jobs,
stages and shuffle stages per run (from Spark's status tracker).

``--backends`` names ``duckdb``, ``spark`` (the embedded session) and ``spark-connect``: the
same models through a Spark Connect server (``sc://``) started from the pyspark wheel with the
embedded session's settings (shuffle partitions, adaptive execution, driver memory), so the two
Spark figures differ by the client-server path alone. Over Connect the client has no status
tracker: jobs and stages are not counted there.

The claims are generated once in DuckDB (``generate claims``: skewed diagnoses, correlated
QIs), exported as TSV and loaded by both backends with ``load table``, so both anonymize the
same records; km runs on a FIMI file of the claims' diagnoses with a two-level hierarchy. The
data's shape is printed before the figures.

Usage (from the repository root; hold the benchmark lock)::

    flock /tmp/bench.lock python bench/bench_spark.py --records 100000 --workdir /tmp/sparkbench
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from setanon_sql import api
from setanon_sql.backends.spark import embedded_tuning
from setanon_sql.models import require_model
from setanon_sql.models.kanon.generate import generate_claims
from setanon_sql.synth.shape import format_shape, shape
from tests.support.spark_connect_server import spark_connect_server

QI = ["birth_year", "sex", "month", "diagnoses"]


def spark_jobs(db: Any) -> int:
    """Jobs so far in the session: job ids are sequential, so this count is exact.

    The largest id is taken in the JVM: pyspark's getJobIdsForGroup copies the ids of all
    retained jobs (up to 1,000) one py4j call each, and two such copies per statement took
    135 s of a 344 s kanon run on 1M claims (208.8 s untraced) in :func:`trace_statements`.
    """
    context = db._spark.sparkContext
    ids = context.statusTracker()._jtracker.getJobIdsForGroup(None)
    return int(context._jvm.java.util.Arrays.stream(ids).max().orElse(-1)) + 1


def spark_counts(db: Any, since: int) -> tuple[int, int | None, int | None]:
    """Jobs numbered ``since`` and later, and their stages and shuffle boundaries (stages
    after a job's first).

    Stages are known only for the jobs Spark still retains (spark.ui.retainedJobs, 1000 by
    default): when a job of the range is no longer retained, the stage totals are unknown
    (None) rather than an undercount.
    """
    tracker = db._spark.sparkContext.statusTracker()
    jobs = spark_jobs(db) - since
    wanted = [job_id for job_id in tracker.getJobIdsForGroup(None) if job_id >= since]
    if len(wanted) < jobs:
        return jobs, None, None
    infos = [tracker.getJobInfo(job_id) for job_id in wanted]
    if any(info is None for info in infos):
        return jobs, None, None
    stages = sum(len(info.stageIds) for info in infos)
    shuffles = sum(max(0, len(info.stageIds) - 1) for info in infos)
    return jobs, stages, shuffles


def statement_kind(sql: str) -> str:
    """A statement's kind for the per-kind table: its leading keywords ('CREATE TABLE AS')."""
    text = " ".join(sql.split()).upper()
    if text.startswith("CREATE") and any(f" AS {word}" in text for word in ("SELECT", "WITH", "(")):
        return "CREATE TABLE AS"
    for kind in ("CACHE TABLE", "UNCACHE TABLE", "DROP VIEW", "DROP TABLE", "CREATE TABLE",
                 "CREATE DATABASE", "ALTER TABLE", "INSERT", "DESCRIBE TABLE EXTENDED",
                 "DESCRIBE", "SHOW TABLES", "SHOW DATABASES", "REFRESH", "SELECT", "WITH"):
        if text.startswith(kind):
            return "SELECT" if kind == "WITH" else kind
    return re.split(r"\W", text, maxsplit=1)[0]


def trace_statements(db: Any) -> dict[str, list[float]]:
    """Per statement kind: [statements, seconds, Spark jobs], filled as ``db`` executes.

    Wraps the backend's ``execute`` (every SQL text it sends to Spark passes there) and
    ``_keep`` (a working table checkpointed: kind CHECKPOINT); what is sent through the
    DataFrame API otherwise (loads, exports, catalog views) is not counted.
    """
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])

    def traced(call: Any, kind: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before, started = spark_jobs(db), time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                entry = totals[kind(*args)]
                entry[0] += 1
                entry[1] += time.perf_counter() - started
                entry[2] += spark_jobs(db) - before
        return wrapper

    db.execute = traced(db.execute, lambda sql, *_: statement_kind(sql))
    if hasattr(db, "_keep"):
        db._keep = traced(db._keep, lambda *_: "CHECKPOINT")
    return totals


def jvm_heap_peak(db: Any, reset: bool = False) -> float:
    """The driver JVM's heap pools' peak uses, summed, in MiB since the last reset (in
    ``local[N]`` the executors run in that JVM too, so this is Spark's whole heap).

    Each pool (eden, survivor, old generation) peaks at its own moment, so the sum bounds the
    heap in use at any one time from above and can exceed the heap's maximum (at 10M claims:
    6,223 MiB summed under a 4 GB driver); it counts garbage not yet collected."""
    pools = db._spark.sparkContext._jvm.java.lang.management.ManagementFactory \
        .getMemoryPoolMXBeans()
    peak = 0
    for pool in pools:
        if str(pool.getType().toString()) == "Heap memory":
            peak += pool.getPeakUsage().getUsed()
            if reset:
                pool.resetPeakUsage()
    return peak / 2**20


def print_statements(name: str, model: str, totals: dict[str, list[float]], seconds: float,
                     rounds: Any) -> None:
    spent = sum(entry[1] for entry in totals.values())
    print(f"#   {name} {model}: statements by kind (count, seconds, Spark jobs; per round "
          f"over {rounds} rounds); {seconds - spent:.1f} s outside Spark's SQL calls")
    for kind, (count, kind_seconds, jobs) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        per = f"{count / rounds:.1f}" if isinstance(rounds, int) and rounds else "-"
        print(f"#     {kind:24} {int(count):6} {kind_seconds:8.1f} s {int(jobs):6} jobs  "
              f"({per} per round)")
    totals.clear()


def prepare(workdir: Path, records: int, seed: int) -> tuple[Path, Path, Path]:
    """Claims TSV, a FIMI file of their diagnoses, and a hierarchy of the diagnosis codes."""
    tsv, fimi, hierarchy = (workdir / f"claims{records}.tsv", workdir / f"dx{records}.dat",
                            workdir / "dx_hierarchy.txt")
    if tsv.exists() and fimi.exists() and hierarchy.exists():
        return tsv, fimi, hierarchy
    source = workdir / "source.duckdb"
    source.unlink(missing_ok=True)
    db = api.open_database(f"duckdb:///{source}")
    try:
        dataset = generate_claims(db, "claims", records, seed, replace=True)
        print("# " + format_shape(shape(db, dataset, QI[:3])).replace("\n", "\n# "))
        api.export_dataset(db, dataset, tsv, fmt="tsv")
    finally:
        db.close()
        source.unlink(missing_ok=True)
    header, *rows = tsv.read_text(encoding="utf-8").splitlines()
    column = header.split("\t").index("diagnoses")
    labels: set[str] = set()
    with fimi.open("w", encoding="utf-8") as out:
        for row in rows:
            items = row.split("\t")[column].split()
            labels.update(items)
            out.write(" ".join(items) + "\n")
    hierarchy.write_text("".join(f"{label};g{int(label) // 10};*\n"
                                 for label in sorted(labels, key=int)), encoding="utf-8")
    return tsv, fimi, hierarchy


def run_rounds(figures: dict[str, Any]) -> Any:
    """A run's rounds from its figures (kanon keeps a list of iterations, km a count)."""
    rounds = figures.get("iterations", figures.get("rounds", "-"))
    return len(rounds) if isinstance(rounds, list) else rounds


def run(url: str, name: str, tsv: Path, fimi: Path, hierarchy: Path, k: int,
        models: list[str], statements: bool, memory: bool = False) -> None:
    db = api.open_database(url, "bench")
    try:
        counts = name == "spark"  # no status tracker over Connect
        totals = trace_statements(db) if statements and counts else None
        started = time.perf_counter()
        claims = api.load_table(db, tsv, "claims", "claim_id", ["diagnoses", "drugs"],
                                replace=True)
        baskets = api.load_transactions(db, fimi, "dx", replace=True)
        api.load_hierarchy(db, hierarchy, baskets)
        baskets = api.get_dataset(db, "dx")
        print(f"{name} | load both | {time.perf_counter() - started:.1f} s", flush=True)
        for model, dataset, params in (
                ("kanon", claims, {"k": k, "qi": QI, "suppress_budget": 0.01}),
                ("km", baskets, {"k": str(k), "m": 2})):
            if model not in models:
                continue
            if totals is not None:
                totals.clear()
            first_job = spark_jobs(db) if counts else 0
            if memory:
                tracemalloc.start()
                if counts:
                    jvm_heap_peak(db, reset=True)
            started = time.perf_counter()
            run_id = api.anonymize(db, dataset, require_model(model), params, seed=1,
                                   check=False)
            seconds = time.perf_counter() - started
            if memory:
                heap = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                jvm = "- (remote)" if name == "spark-connect" else "-"
                if counts:
                    jvm = (f"{jvm_heap_peak(db):.0f} MiB (its pools' peaks summed: an upper bound, "
                           "garbage included)")
                print(f"#   {name} {model}: controller's Python heap peak {heap:.1f} MiB "
                      f"(tracemalloc, the run alone), process peak RSS {rss:.0f} MiB (since "
                      f"start), Spark JVM heap peak {jvm}", flush=True)
            spent = ("-" if not counts else " | ".join(
                "-" if value is None else str(value) for value in spark_counts(db, first_job)))
            rounds = run_rounds(api.get_run(db, dataset, run_id).figures)
            print(f"{name} | {model} k={k} | {seconds:.1f} s | rounds {rounds} | "
                  f"jobs | stages | shuffle stages: {spent}", flush=True)
            if totals is not None:
                print_statements(name, model, totals, seconds, rounds)
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--backends", default="duckdb,spark")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sparkbench"))
    parser.add_argument("--models", default="kanon,km")
    parser.add_argument("--statements", action="store_true",
                        help="also print Spark's statements by kind: count, seconds, jobs")
    parser.add_argument("--memory", action="store_true",
                        help="also print the controller's Python heap peak (tracemalloc), the "
                             "process's peak RSS and the Spark JVM's heap peak per model")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    tsv, fimi, hierarchy = prepare(args.workdir, args.records, args.seed)
    print(f"# {args.records:,} claims; load average {os.getloadavg()[0]:.1f}")
    models = args.models.split(",")
    for name in args.backends.split(","):
        if name == "duckdb":
            path = args.workdir / "bench.duckdb"
            path.unlink(missing_ok=True)
            run(f"duckdb:///{path}?threads={args.cores}", name, tsv, fimi, hierarchy, args.k,
                models, args.statements, args.memory)
            path.unlink(missing_ok=True)
        elif name == "spark-connect":
            root = args.workdir / "connect"
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            tuning = embedded_tuning()
            driver_memory = tuning.pop("spark.driver.memory")
            with spark_connect_server(root, tuning, args.cores, driver_memory) as url:
                run(url, name, tsv, fimi, hierarchy, args.k, models, args.statements,
                    args.memory)
        else:
            warehouse = args.workdir / "warehouse"
            shutil.rmtree(warehouse, ignore_errors=True)
            run(f"spark://local[{args.cores}]?warehouse={warehouse}", name, tsv, fimi,
                hierarchy, args.k, models, args.statements, args.memory)
    print(f"# load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
