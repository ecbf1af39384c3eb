"""Tendency hiding by swapping (``--model swap``): PartSwap vs RandSwap, DuckDB and PostgreSQL.

Prints one Markdown row per (dataset, backend, method) with the paper's figures (Gunawan &
Mambo, Figs. 3-6): frequent itemsets found in D and D~ and their similarity (Eq. 2) at the
supports given, Diss (Eq. 3), items lost to collisions, the share of records with a tendency
whose tendency is hidden, run time and whether ``verify`` passes. Figures only: no assertions.

Usage (from the repository root)::

    python bench/bench_swap.py                                  # BMS1, BMS2; both backends
    python bench/bench_swap.py --datasets bms2 --backends duckdb
    python bench/bench_swap.py --synthetic 1000000 --backends duckdb --workdir /tmp/swapbench

Categories: ``--random-categories 50`` (the paper's artificial categorization), seeded.
PostgreSQL comes from ``tests/support/pg_server.py`` (``$SETANON_TEST_PG_URL``, Docker, or the
local server binaries in a temporary directory).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

from setanon_sql import api
from setanon_sql.models import require_model

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))
DATASETS = {"bms1": "bms-webview-1/BMS1.dat", "bms2": "bms-webview-2/BMS2.dat"}


def _urls(backends: list[str], workdir: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    urls = {}
    if "duckdb" in backends:
        urls["duckdb"] = f"duckdb:///{workdir / 'swap.duckdb'}"
    if "postgres" in backends:
        from tests.support.pg_server import postgres_url

        url = stack.enter_context(postgres_url())
        if url is None:
            print("no PostgreSQL available: skipping it", file=sys.stderr)
        else:
            urls["postgres"] = url
    return urls


def _inputs(args: argparse.Namespace, workdir: Path) -> list[tuple[str, Path]]:
    if args.synthetic:
        from bench_load import synthetic_file

        return [(f"synth{n}", synthetic_file(n, workdir)) for n in args.synthetic]
    return [(name, args.data_dir / DATASETS[name]) for name in args.datasets.split(",")]


def _row(label: str, backend: str, method: str, figures: dict, seconds: float,
         verified: str) -> str:
    fi = " / ".join(f"{f['fi_original']}:{f['fi_anonymized']}:{f['fi_similarity']:.3f}"
                    for f in figures.get("frequent_itemsets", []))
    phases = figures.get("seconds", {})
    return (f"| {label} | {backend} | {method} | {figures['tendency_records']:,} | "
            f"{figures['hidden_share']:.4f} | {figures['tendency_changed_share']:.4f} | "
            f"{figures['items_lost']:,} | {figures['diss']:.5f} | {fi or '-'} | "
            f"{seconds:.1f} | {phases.get('destinations', 0):.1f} | "
            f"{phases.get('metrics', 0):.1f} | {verified} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="bms1,bms2")
    parser.add_argument("--backends", default="duckdb,postgres")
    parser.add_argument("--methods", default="similarity,random")
    parser.add_argument("--categories", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--synthetic", type=lambda s: [int(x) for x in s.split(",")],
                        default=None, help="N[,N...] synthetic records instead of --datasets")
    parser.add_argument("--no-metrics", action="store_true", help="skip FI similarity")
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    model = require_model("swap")
    print("| dataset | backend | method | records with tendency | hidden (no tendency item "
          "left) | tendency changed | items lost | Diss | FI(D):FI(D~):U per support | "
          "run s | matching s | metrics s | verify |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        inputs = _inputs(args, workdir)
        for backend_name, url in _urls(args.backends.split(","), workdir, stack).items():
            schema = f"swapbench_{int(time.time())}"
            db = api.open_database(url, schema)
            try:
                for label, path in inputs:
                    dataset = api.load_transactions(db, path, label)
                    for method in args.methods.split(","):
                        params = {"random_categories": args.categories, "method": method,
                                  "metrics": not args.no_metrics}
                        started = time.perf_counter()
                        api.anonymize(db, dataset, model, params, seed=args.seed)
                        seconds = time.perf_counter() - started
                        run = api.get_run(db, dataset, "latest")
                        verified = "-"
                        if not args.no_verify:
                            verified = "ok" if api.verify(db, dataset, run).ok else "FAILED"
                        print(_row(label, backend_name, method, run.figures, seconds, verified),
                              flush=True)
            finally:
                with contextlib.suppress(Exception):
                    db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                db.close()


if __name__ == "__main__":
    main()
