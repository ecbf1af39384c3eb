"""The sampled part of km's verify at σ = 0.999 on a published run: what one size costs.

``setanon verify`` checks a sampled size by up to γ(σ) fresh uniform samples of the ORIGINAL
ℓ-itemsets (5,866,617 at σ = 0.999), generalized by the published cut and counted in the
published data, in parts of up to 1 M (``setanon_sql/models/km/risk.py``,
``sampled_violations``). At 1 M CDR-like users drawing all γ is what kept a σ = 0.999 run from
being verified within an hour (BENCHMARKS.md, km, "Stop 94"). A search at σ = 0.999 takes
20-40 minutes there, so this script times the check alone on a run already published in a
``bench_km.py`` work directory (the latest verified km run of the dataset, unless ``--run``),
for each size of ``--sizes`` at the sample count of ``--sigma``, whatever σ the run itself
used: the published cut is the run's, the samples and counts are verify's own.

The samples are looked at as verify does (``verify.sample_looks``: the check stops at the
first look whose bounds decide); ``--all-samples`` draws all γ of them, as verify did before
the looks. Prints the data's shape, then one Markdown row per size (samples drawn, violating,
the verdict and the look that gave it, seconds); with ``--profile``, where each size's seconds
went, per call site. Figures only: no assertions.

Usage (from the repository root, after a ``bench_km.py`` run on the CDR-like data)::

    python bench/bench_km_verify.py --workdir /tmp/cdr1m --sizes 5,6,7 --sigma 0.999
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_km import format_profile, profile_backend
from bench.bench_km_accept import print_shape
from setanon_sql import api
from setanon_sql.io.published import published
from setanon_sql.models.km import risk
from setanon_sql.models.km.params import parse_params
from setanon_sql.models.km.samplesize import gamma
from setanon_sql.models.km.verify import SequentialCheck, run_tables, sample_looks


def latest_run(backend: Any, dataset_name: str, run_id: int | None) -> int:
    """``run_id``, else the latest km run of the dataset that passed verification."""
    if run_id is not None:
        return run_id
    runs = [r for r in api.list_runs(backend, dataset_name)
            if r["model"] == "km" and r["verification"] == "passed"]
    if not runs:
        raise SystemExit(f"no verified km run of {dataset_name!r}: run bench_km.py first")
    return int(runs[-1]["run_id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True,
                        help="a bench_km.py work directory (its km.duckdb)")
    parser.add_argument("--dataset", default="cdr")
    parser.add_argument("--run", type=int, default=None)
    parser.add_argument("--sizes", default="5,6,7")
    parser.add_argument("--sigma", type=float, default=0.999,
                        help="the samples per size are γ(σ) (Theorem 1)")
    parser.add_argument("--k", type=int, default=None, help="default: the run's k at ℓ")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--all-samples", action="store_true",
                        help="draw all γ samples (no early look decides)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    backend = api.open_database(f"duckdb:///{args.workdir / 'km.duckdb'}", "km_bench")
    dataset = api.find_dataset(backend, args.dataset)
    if dataset is None:
        raise SystemExit(f"no dataset {args.dataset!r} in {args.workdir / 'km.duckdb'}")
    run = api.get_run(backend, dataset, latest_run(backend, args.dataset, args.run))
    params = parse_params(run.params)
    attribute = dataset.set_attribute(params.column, "bench_km_verify")
    tables = run_tables(backend, dataset, attribute, published(backend, dataset, run))
    print_shape(backend, tables["items"])
    print(f"# run {run.run_id}: k = {params.k[-1]}, m = {params.m}, σ = {params.sigma[-1]}, "
          f"{run.figures.get('published_labels')} published labels", flush=True)
    profile = profile_backend(backend) if args.profile else None
    print("| ℓ | k | samples | violating | verdict (look of looks) | seconds |")
    print("|---|---|---|---|---|---|", flush=True)
    for ell in (int(s) for s in args.sizes.split(",")):
        k = args.k or params.k[min(ell, params.m) - 1]
        looks = [gamma(args.sigma)] if args.all_samples else sample_looks(gamma(args.sigma))
        check = SequentialCheck(1 - args.sigma, looks)
        started = time.perf_counter()
        with backend.working_tables(), backend.whole_table_joins():
            bad, drawn = risk.sampled_violations(backend, dataset, tables, tables["items"], ell,
                                                 k, looks[-1], args.seed, looks[:-1],
                                                 check.settled)
        seconds = time.perf_counter() - started
        verdict = (f"{check.decisions[-1].outcome} ({len(check.decisions)} of {len(looks)})"
                   if check.decisions else "nothing drawn")
        print(f"| {ell} | {k} | {drawn:,} | {bad:,} | {verdict} | {seconds:.1f} |", flush=True)
        if profile is not None:
            print(f"# profile of ℓ = {ell}\n{format_profile(profile.totals, 12)}",
                  file=sys.stderr, flush=True)
            profile.totals.clear()
    backend.close()


if __name__ == "__main__":
    main()
