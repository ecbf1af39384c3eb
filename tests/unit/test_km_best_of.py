"""bench/bench_km_best_of.py: A^(r) assembled from r separate verified runs.

The script publishes figures for the paper's r = 10 at σ = 0.999 (BENCHMARKS.md), so what it
combines is checked here: the best run after each size is the one of least error among all
runs (a brute-force minimum over random figures, several seeds), the first seed's run is
reported beside it, and runs that are not draws of one experiment are refused.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from setanon_sql.catalog import Run

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_km_best_of.py"
_spec = importlib.util.spec_from_file_location("bench_km_best_of", SCRIPT)
assert _spec is not None and _spec.loader is not None
best_of_script = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = best_of_script  # its dataclass looks its module up there
_spec.loader.exec_module(best_of_script)

PARAMS = {"k": "20", "m": 11, "sigma": "0.999", "exact_upto": 4, "trials": 1,
          "certify": "auto", "error": "geo"}


def _run(seed: int, rows: list[dict[str, Any]], source: str = "/data/cdr.dat",
         **params: Any) -> Any:
    run = Run(seed, 1, "km", {**PARAMS, "graph": f"/w{seed}/graph.tsv", **params}, seed,
              "duckdb", "done", "0", 1.0, {"utility_by_size": rows}, None,
              verification="passed")
    return best_of_script.RecordedRun(f"w{seed}", Path(source), run)


def _rows(rng: random.Random, sizes: range) -> list[dict[str, Any]]:
    return [{"trial": 1, "size": size, "published_labels": rng.randint(10, 60),
             "geo_error": rng.uniform(300, 700)} for size in sizes]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_best_after_each_size_is_the_least_error_of_all_runs(seed: int) -> None:
    rng = random.Random(seed)
    runs = [_run(s, _rows(rng, range(1, 12))) for s in rng.sample(range(1, 50), 6)]
    assert best_of_script.same_experiment(runs)["k"] == "20"
    lines = best_of_script.best_of(runs, list(range(5, 12)))
    assert [line["size"] for line in lines] == list(range(5, 12))
    first = min(runs, key=lambda r: r.run.seed)
    for line in lines:
        errors = {r.run.seed: next(row["geo_error"] for row in r.run.figures["utility_by_size"]
                                   if row["size"] == line["size"]) for r in runs}
        assert line["best"]["geo_error"] == min(errors.values())
        assert errors[line["best_seed"]] == min(errors.values())
        assert line["first_seed"] == first.run.seed
        assert line["first"]["geo_error"] == errors[first.run.seed]
        assert sorted(line["geo"]) == sorted(errors.values())


def test_a_run_missing_a_size_is_refused() -> None:
    rng = random.Random(0)
    runs = [_run(1, _rows(rng, range(1, 12))), _run(2, _rows(rng, range(1, 9)))]
    with pytest.raises(SystemExit, match="size 9: only 1 of 2 runs"):
        best_of_script.best_of(runs, list(range(5, 12)))


@pytest.mark.parametrize(("other", "message"), [
    ({"seed": 1}, "a seed twice"),
    ({"source": "/data/other.dat"}, "one data file"),
    ({"k": "10"}, "only the seed may differ"),
    ({"trials": 10}, "only the seed may differ"),
])
def test_runs_of_another_experiment_are_refused(other: dict[str, Any], message: str) -> None:
    rows = _rows(random.Random(0), range(1, 12))
    seed = other.pop("seed", 2)
    runs = [_run(1, rows), _run(seed, rows, **other)]
    with pytest.raises(SystemExit, match=message):
        best_of_script.same_experiment(runs)


def test_runs_without_geographic_error_are_refused() -> None:
    rows = _rows(random.Random(0), range(1, 12))
    runs = [_run(1, rows, error="ncp"), _run(2, rows, error="ncp")]
    with pytest.raises(SystemExit, match="geographic error"):
        best_of_script.same_experiment(runs)


def test_runs_of_several_trials_each_are_refused() -> None:
    rows = _rows(random.Random(0), range(1, 12))
    runs = [_run(1, rows, trials=10), _run(2, rows, trials=10)]
    with pytest.raises(SystemExit, match="one trial"):
        best_of_script.same_experiment(runs)
