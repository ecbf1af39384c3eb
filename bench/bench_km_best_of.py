"""The paper's A^(r) made of r separate runs: the best cut after each size over their outputs.

A^(r) (Acs et al., Sec. IV-D) runs the randomized search A r times and publishes the run of
least error. ``bench_km.py --trials r`` does that inside one run; at 1 M CDR-like users and
σ = 0.999 one trial of sizes 5..11 takes about half an hour on a 2-core machine, so r = 10
outlasts a working session, and a run that is stopped leaves nothing. Runs with different
``--seed`` are independent draws of A as the trials of one run are (the exact sizes use no
randomness, so they reach the same cut in both): the best of r of them, size by size, is the
curve the paper plots for A^(r) (a size never looks ahead, so the cut after size ℓ of a run at
m is what ``--m ℓ`` would publish; ``bench_km.py --every-m`` reads it the same way).

Only finished runs whose latest verification passed count (the gate's own rule), all of one
data file, with the same parameters but the seed, and no seed twice. Prints, per size, the
best run (what A^(r) publishes), the run of the first seed and the range over all runs; with
``--plot``, adds the series (r = the number of runs) to the plot and its ``.json`` as
``bench_km.py --plot`` does. Figures only: no assertions.

Usage (from the repository root)::

    python bench/bench_km_best_of.py --run /tmp/s1 --run /tmp/s2:3 ... \\
        --plot docs/km-cdr-1m-hybrid.png

A ``--run`` is a ``bench_km.py`` work directory (its latest run of the dataset) or
``DIR:RUN_ID``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_km import merged_points, plot_cdr  # noqa: E402
from setanon_sql import api  # noqa: E402
from setanon_sql.catalog import Run  # noqa: E402
from setanon_sql.gate import is_publishable  # noqa: E402

# Parameters that name files, which differ between work directories holding the same data.
PATH_PARAMS = ("graph", "coordinates")


@dataclass(frozen=True)
class RecordedRun:
    """One verified run and where it came from."""

    where: str
    source: Path
    run: Run


def load_run(spec: str, dataset_name: str) -> RecordedRun:
    """The run named by ``spec`` (``DIR`` or ``DIR:RUN_ID``); SystemExit naming it if it is
    missing, unfinished or not verified."""
    directory, _, run_id = spec.partition(":")
    database = Path(directory) / "km.duckdb"
    if not database.exists():
        raise SystemExit(f"--run {spec}: no {database} (a bench_km.py --workdir holds one)")
    db = api.open_database(f"duckdb:///{database.resolve()}", "km_bench")
    dataset = api.find_dataset(db, dataset_name)
    if dataset is None:
        raise SystemExit(f"--run {spec}: {database} has no dataset {dataset_name!r}")
    run = api.get_run(db, dataset, run_id or "latest")
    if run.model != "km" or not is_publishable(dataset, run):
        raise SystemExit(f"--run {spec}: run {run.run_id} ({run.model}, {run.status}, "
                         f"verification {run.verification}) is not a finished, verified km "
                         "run; only those count")
    if not dataset.source:
        raise SystemExit(f"--run {spec}: dataset {dataset_name!r} records no source file")
    return RecordedRun(f"{directory}:{run.run_id}", Path(dataset.source).resolve(), run)


def same_experiment(runs: list[RecordedRun]) -> dict[str, Any]:
    """The parameters the runs share; SystemExit where data, parameters or seeds differ."""
    first = runs[0]

    def setting(run: RecordedRun) -> dict[str, Any]:
        return {key: value for key, value in run.run.params.items() if key not in PATH_PARAMS}

    for other in runs[1:]:
        if other.source != first.source:
            raise SystemExit(f"{other.where} anonymized {other.source}, {first.where} "
                             f"{first.source}: A^(r) compares runs on one data file")
        if setting(other) != setting(first):
            raise SystemExit(f"{other.where} ran with {setting(other)}, {first.where} with "
                             f"{setting(first)}: only the seed may differ")
    seeds = [run.run.seed for run in runs]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"seeds {seeds}: a seed twice is the same draw of A twice")
    if any(int(run.run.params.get("trials", 1)) != 1 for run in runs):
        raise SystemExit("every run must be one trial (--trials 1): each is one draw of A")
    shared = setting(first)
    if shared.get("error") != "geo":
        raise SystemExit(f"{first.where} ran with error {shared.get('error')!r}: the "
                         "runs are compared by geographic error (--graph, --error geo)")
    return shared


def after_each_size(run: Run) -> dict[int, dict[str, Any]]:
    """The run's cut after each size (its ``utility_by_size``, one trial)."""
    return {int(row["size"]): row for row in run.figures.get("utility_by_size", [])}


def best_of(runs: list[RecordedRun], sizes: list[int]) -> list[dict[str, Any]]:
    """Per size: the run of least geographic error after it (A^(r)'s choice), the first
    seed's run, and the range over all runs."""
    lines = []
    by_run = [(run, after_each_size(run.run)) for run in runs]
    first_seed = min(by_run, key=lambda pair: pair[0].run.seed or 0)
    for size in sizes:
        at = [(run, cuts[size]) for run, cuts in by_run if size in cuts]
        if len(at) != len(runs):
            raise SystemExit(f"size {size}: only {len(at)} of {len(runs)} runs reached it")
        best_run, best = min(at, key=lambda pair: pair[1]["geo_error"])
        lines.append({"size": size, "best": best, "best_seed": best_run.run.seed,
                      "first": first_seed[1][size], "first_seed": first_seed[0].run.seed,
                      "labels": [row["published_labels"] for _, row in at],
                      "geo": [row["geo_error"] for _, row in at]})
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True,
                        help="a bench_km.py work directory, or DIR:RUN_ID (repeat)")
    parser.add_argument("--dataset", default="cdr")
    parser.add_argument("--plot", type=Path, default=None,
                        help="add the series to this plot (and its .json)")
    args = parser.parse_args()
    runs = [load_run(spec, args.dataset) for spec in args.run]
    setting = same_experiment(runs)
    # The sizes after the exact ones (the paper's m axis); every run reaches each of them.
    sizes = sorted(size for size in after_each_size(runs[0].run)
                   if size > int(setting.get("exact_upto", 0)))
    r = len(runs)
    print(f"# A^({r}) of {r} runs on {runs[0].source}: {setting}")
    for run in runs:
        print(f"# {run.where}: seed {run.run.seed}, {run.run.seconds or 0:.1f} s, "
              f"verification {run.run.verification}")
    print(f"| m | A^({r}): partitions, error | seed | first seed: partitions, error | "
          f"range over the {r} runs |")
    print("|---|---|---|---|---|")
    points = []
    for line in best_of(runs, sizes):
        best, first = line["best"], line["first"]
        print(f"| {line['size']} | {best['published_labels']}, {best['geo_error']:.0f} m | "
              f"{line['best_seed']} | {first['published_labels']}, {first['geo_error']:.0f} m "
              f"(seed {line['first_seed']}) | {min(line['labels'])}-{max(line['labels'])} "
              f"partitions, {min(line['geo']):.0f}-{max(line['geo']):.0f} m |")
        points.append({"sigma": float(setting["sigma"]), "k": int(setting["k"]),
                       "m": line["size"], "trials": r, "labels": best["published_labels"],
                       "geo": best["geo_error"]})
    if args.plot is not None:
        plot_cdr(merged_points(points, args.plot.with_suffix(".json")), args.plot)
        print(f"# plot: {args.plot}")


if __name__ == "__main__":
    main()
