"""k^m-anonymity (``--model km``) on the shared datasets, DuckDB and PostgreSQL.

Prints one Markdown row per (dataset, backend, k, m, sigma): published labels (the paper's
"partitions"), NCP, share of occurrences generalized, rounds, run time, and whether ``verify``
passes. Figures only: no assertions.

Usage (from the repository root)::

    python bench/bench_km.py                               # BMS2, k=5, m=2, both backends
    python bench/bench_km.py --k 5,10,20 --m 2,3 --backends duckdb

PostgreSQL comes from ``tests/support/pg_server.py`` (``$SETANON_TEST_PG_URL``, Docker, or the
local server binaries in a temporary directory).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
import tempfile
import time
from pathlib import Path

from setanon_sql import api
from setanon_sql.models import require_model

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
DATASETS = {"bms2": ("bms-webview-2/BMS2.dat", "bms-webview-2/hierarchy_BMS2.txt")}


def _urls(backends: list[str], workdir: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    urls = {}
    if "duckdb" in backends:
        urls["duckdb"] = f"duckdb:///{workdir / 'km.duckdb'}"
    if "postgres" in backends:
        from tests.support.pg_server import postgres_url

        url = stack.enter_context(postgres_url())
        if url is None:
            print("no PostgreSQL available: skipping it", file=sys.stderr)
        else:
            urls["postgres"] = url
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--datasets", default="bms2")
    parser.add_argument("--backends", default="duckdb,postgres")
    parser.add_argument("--k", default="5")
    parser.add_argument("--m", default="2")
    parser.add_argument("--sigma", default="1")
    parser.add_argument("--batch", type=float, default=None)
    args = parser.parse_args()
    print("| dataset | backend | k | m | sigma | labels | NCP | generalized | rounds | "
          "seconds | verify |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        urls = _urls(args.backends.split(","), Path(tmp), stack)
        for name, (backend_name, url) in itertools.product(args.datasets.split(","),
                                                           urls.items()):
            data, hierarchy = (args.data_dir / part for part in DATASETS[name])
            db = api.open_database(url, "km_bench")
            dataset = api.find_dataset(db, name)
            if dataset is None:
                dataset = api.load_transactions(db, data, name)
                api.load_hierarchy(db, hierarchy, dataset)
            for k, m, sigma in itertools.product(args.k.split(","), map(int, args.m.split(",")),
                                                 args.sigma.split(",")):
                params = {"k": k, "m": m, "sigma": sigma}
                if args.batch is not None:
                    params["batch"] = args.batch
                started = time.perf_counter()
                run_id = api.anonymize(db, dataset, require_model("km"), params, seed=1)
                seconds = time.perf_counter() - started
                run = api.get_run(db, dataset, run_id)
                ok = api.verify(db, dataset, run).ok
                f = run.figures
                print(f"| {name} | {backend_name} | {k} | {m} | {sigma} | "
                      f"{f['published_labels']} | {f['ncp']:.4f} | "
                      f"{f['generalized_share']:.3f} | {len(f['rounds'])} | {seconds:.1f} | "
                      f"{'ok' if ok else 'FAILED'} |", flush=True)
            db.close()


if __name__ == "__main__":
    main()
