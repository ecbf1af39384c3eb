"""kanon on Spark local[N] under different Spark and JVM settings: which of them pays.

The claims of ``bench_spark.py`` (the same files in ``--workdir``) are loaded once into a Spark
warehouse; then each run times ``anonymize --model kanon`` in a process of its own, with its
settings given to Spark the way a user would give them: Spark settings in
``$SPARK_CONF_DIR/spark-defaults.conf`` (read by the pyspark launcher, as by ``spark-submit``)
and JVM flags in ``JAVA_TOOL_OPTIONS``. A run's seconds include nothing but the anonymization
(the JVM starts before the clock). Runs take turns variant by variant (``--repeat`` rounds), so
a drift of the machine shows as a spread within a variant, not as a difference between them.

Usage (from the repository root; hold the benchmark lock)::

    flock /tmp/bench.lock python bench/bench_spark_settings.py --records 1000000 \\
        --workdir /tmp/sparkbench --variants default,parallel-gc,broadcast-256m --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_spark import QI, prepare, run_rounds

# name -> (Spark settings for spark-defaults.conf, JVM flags for JAVA_TOOL_OPTIONS)
VARIANTS: dict[str, tuple[dict[str, str], str]] = {
    "default": ({}, ""),
    # throughput collector instead of G1: the driver is the only executor in local[N]
    "parallel-gc": ({}, "-XX:+UseParallelGC"),
    # hash joins against sides of up to 256 MiB instead of 10 MiB: fewer shuffles of the
    # record-level side when a class-level table is joined to it
    "broadcast-256m": ({"spark.sql.autoBroadcastJoinThreshold": str(256 * 2**20)}, ""),
    # no compression of working tables' parquet files and of shuffle files
    "uncompressed": ({"spark.sql.parquet.compression.codec": "uncompressed",
                      "spark.shuffle.compress": "false",
                      "spark.shuffle.spill.compress": "false"}, ""),
}
VARIANTS["parallel-gc+broadcast-256m"] = (VARIANTS["broadcast-256m"][0],
                                          VARIANTS["parallel-gc"][1])


def child(url: str, k: int) -> None:
    """One timed kanon run on the loaded claims; prints its figures as JSON."""
    from setanon_sql import api
    from setanon_sql.models import require_model

    db = api.open_database(url, "bench")
    try:
        claims = api.get_dataset(db, "claims")
        started = time.perf_counter()
        run_id = api.anonymize(db, claims, require_model("kanon"),
                               {"k": k, "qi": QI, "suppress_budget": 0.01}, seed=1,
                               check=False)
        seconds = time.perf_counter() - started
        print(json.dumps({"seconds": seconds,
                          "rounds": run_rounds(api.get_run(db, claims, run_id).figures)}))
    finally:
        db.close()


def load(url: str, tsv: Path) -> None:
    """Load the claims into the warehouse; prints the seconds as JSON."""
    from setanon_sql import api

    db = api.open_database(url, "bench")
    try:
        started = time.perf_counter()
        api.load_table(db, tsv, "claims", "claim_id", ["diagnoses", "drugs"], replace=True)
        print(json.dumps({"seconds": time.perf_counter() - started}))
    finally:
        db.close()


def in_child(arguments: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """Run this script with ``arguments`` in a new process (one Spark session and one Derby
    metastore lock per process); its last line of output, parsed."""
    done = subprocess.run([sys.executable, __file__, *arguments], env=env,
                          stdout=subprocess.PIPE, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def timed_run(url: str, k: int, variant: str, confdir: Path) -> dict[str, object]:
    """Run :func:`child` in a new process under ``variant``'s settings."""
    settings, java = VARIANTS[variant]
    confdir.mkdir(parents=True, exist_ok=True)
    (confdir / "spark-defaults.conf").write_text(
        "".join(f"{name} {value}\n" for name, value in settings.items()), encoding="utf-8")
    env = {**os.environ, "SPARK_CONF_DIR": str(confdir)}
    env.pop("JAVA_TOOL_OPTIONS", None)
    if java:
        env["JAVA_TOOL_OPTIONS"] = java
    return in_child(["--child", url, "--k", str(k)], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sparkbench"))
    parser.add_argument("--variants", default="default,parallel-gc,broadcast-256m",
                        help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of all the variants")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--load", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.load:
        load(args.child, args.load)
        return
    if args.child:
        child(args.child, args.k)
        return
    variants = args.variants.split(",")
    unknown = [name for name in variants if name not in VARIANTS]
    if unknown:
        parser.error(f"--variants: {unknown[0]!r} is not known; use {', '.join(VARIANTS)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    tsv, _, _ = prepare(args.workdir, args.records, args.seed)
    warehouse = args.workdir / "settings-warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    url = f"spark://local[{args.cores}]?warehouse={warehouse}"
    with tempfile.TemporaryDirectory() as scratch:
        confdir = Path(scratch) / "conf"
        loaded = in_child(["--child", url, "--load", str(tsv)])
        print(f"# {args.records:,} claims; load average {os.getloadavg()[0]:.1f}; loaded into "
              f"Spark once in {loaded['seconds']:.1f} s")
        print("| variant | Spark settings | JVM flags | kanon s | rounds |")
        print("|---|---|---|---|---|")
        for _ in range(args.repeat):
            for name in variants:
                result = timed_run(url, args.k, name, confdir / name)
                settings, java = VARIANTS[name]
                shown = ", ".join(f"{key}={value}" for key, value in settings.items())
                print(f"| {name} | {shown or '-'} | {java or '-'} | {result['seconds']:.1f} | "
                      f"{result['rounds']} |", flush=True)
    shutil.rmtree(warehouse, ignore_errors=True)
    print(f"# load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
