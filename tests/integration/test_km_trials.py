"""--trials with leading exact sizes (the paper's hybrid with r trials, Sec. V-B and VI-D):
the exact sizes are enumerated once and the later trials start from that cut, publishing
exactly what trials searched from scratch publish."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import setanon_sql.models.km as km
from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.models import require_model
from tests.integration.test_km import random_case
from tests.integration.test_km_graph import grid_case
from tests.oracle import km_oracle


def _published(db: Backend, dataset: Dataset, run_id: int, tmp_path: Path) -> tuple:
    run = api.get_run(db, dataset, run_id)
    out, mapping = tmp_path / f"o{run_id}.dat", tmp_path / f"m{run_id}.txt"
    api.export_dataset(db, dataset, out, run=run, mapping=mapping)
    return out.read_text(), mapping.read_text(), run.figures["rounds"], run


@pytest.mark.parametrize(("seed", "constraint"),
                         [(1, "hierarchy"), (2, "hierarchy"), (3, "hierarchy"), (7, "graph")])
@pytest.mark.on_spark(seeds=[1])
def test_trials_start_from_the_exact_cut_and_publish_the_same(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
        constraint: str) -> None:
    params: dict[str, Any] = {"k": "3", "m": 3, "sigma": "0.8", "exact_upto": 2, "trials": 3}
    if constraint == "graph":
        data, graph, coords = grid_case(tmp_path, seed)
        params.update(graph=str(graph), coordinates=str(coords), error="geo")
        dataset = api.load_transactions(db, data, "g")
    else:
        data, hierarchy = random_case(tmp_path, seed)
        dataset = api.load_transactions(db, data, "h")
        api.load_hierarchy(db, hierarchy, dataset)
    calls: Counter[int] = Counter()
    enumerate_size = km.enforce_exact

    def counted(gen: Any, ell: int, *args: Any) -> Any:
        calls[ell] += 1
        return enumerate_size(gen, ell, *args)

    trials: list[tuple] = []  # every trial's outcome, not only the one kept
    search = km._search

    def recorded(gen: Any, chosen: Any, seed: int, trial: int, *args: Any) -> Any:
        figures = search(gen, chosen, seed, trial, *args)
        trials.append((trial, figures["rounds"], figures["ncp"], figures["published_labels"]))
        return figures

    monkeypatch.setattr(km, "enforce_exact", counted)
    monkeypatch.setattr(km, "_search", recorded)
    shared = _published(db, dataset, api.anonymize(db, dataset, require_model("km"), params,
                                                   seed=seed), tmp_path)
    assert calls == {1: 1, 2: 1}  # sizes 1 and 2 enumerated once for the three trials
    monkeypatch.setattr(km, "_leading_exact_sizes", lambda chosen: 0)
    alone = _published(db, dataset, api.anonymize(db, dataset, require_model("km"), params,
                                                  seed=seed), tmp_path)
    assert calls == {1: 4, 2: 4}  # each trial from scratch
    assert shared[:3] == alone[:3]  # the same export, mapping and rounds
    assert len(trials) == 6 and trials[:3] == trials[3:]  # and every trial the same
    assert shared[3].figures["trials"] == 3
    by_size = shared[3].figures["utility_by_size"]
    assert [(row["trial"], row["size"]) for row in by_size] == [
        (trial, size) for trial in (1, 2, 3) for size in (1, 2, 3)]
    assert by_size == alone[3].figures["utility_by_size"]
    kept = [row for row in by_size if row["size"] == 3
            and row["published_labels"] == shared[3].figures["published_labels"]
            and row["ncp"] == pytest.approx(shared[3].figures["ncp"])]
    assert kept  # the published cut is one trial's cut after its last size
    published = km_oracle.read_fimi(tmp_path / f"o{shared[3].run_id}.dat")
    assert km_oracle.km_violations(published, [3, 3], 2) == []  # the exact sizes hold
    for ell in (1, 2, 3):
        share = km_oracle.violating_share(km_oracle.read_fimi(data), published,
                                          km_oracle.read_mapping(
                                              tmp_path / f"m{shared[3].run_id}.txt"), 3, ell)
        assert share <= 1 - 0.8, (ell, share)
    assert api.verify(db, dataset, shared[3]).ok
    assert not [name for name in db.table_names("r") if name.endswith("exactcut")]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.on_spark(seeds=[2])
def test_the_utility_after_a_size_is_what_that_m_publishes(db: Backend, tmp_path: Path,
                                                          seed: int) -> None:
    # A size never looks ahead, so the cut of every trial after size 2 of an --m 3 run is the
    # cut an --m 2 run reaches in that trial: one run gives the curves against m.
    data, hierarchy = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, "h")
    api.load_hierarchy(db, hierarchy, dataset)
    common: dict[str, Any] = {"k": "3", "sigma": "0.8", "trials": 2, "exact_upto": seed % 2}
    runs = {m: _published(db, dataset, api.anonymize(db, dataset, require_model("km"),
                                                     {**common, "m": m}, seed=seed), tmp_path)
            for m in (2, 3)}
    shorter, longer = (runs[m][3].figures["utility_by_size"] for m in (2, 3))
    assert shorter == [row for row in longer if row["size"] <= 2]
    best = min((row for row in shorter if row["size"] == 2), key=lambda row: row["ncp"])
    published = runs[2][3].figures
    assert (best["published_labels"], best["ncp"]) == (published["published_labels"],
                                                       pytest.approx(published["ncp"]))
    parent = km_oracle.read_hierarchy(hierarchy)
    mapping = km_oracle.read_mapping(tmp_path / f"m{runs[2][3].run_id}.txt")
    assert published["ncp"] == pytest.approx(km_oracle.ncp(km_oracle.read_fimi(data), mapping,
                                                           parent))
