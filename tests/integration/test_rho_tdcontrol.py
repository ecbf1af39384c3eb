"""--model rho --heuristic tdcontrol (Cao et al.'s TDControl), checked by brute-force oracles
on both backends: a cut generalization plus global suppression, ρ-uncertain for every qid."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from tests.conftest import write
from tests.oracle import rho_oracle, tdcontrol_oracle
from tests.support.hierarchies import random_hierarchy

RHO = require_model("rho")


def random_case(tmp_path: Path, seed: int) -> tuple[Path, Path, set[str]]:
    """Skewed baskets over 8-12 items, a random hierarchy, 3 sensitive items."""
    rng = random.Random(seed)
    universe = [str(i) for i in range(1, rng.randint(9, 13))]
    weights = [1.0 / (rank + 1) for rank in range(len(universe))]
    lines = []
    for _ in range(rng.randint(25, 40)):
        size = rng.randint(1, 5)
        lines.append(" ".join(sorted(set(rng.choices(universe, weights, k=size)), key=int)))
    data = write(tmp_path / f"d{seed}.dat", "\n".join(lines) + "\n")
    hierarchy = write(tmp_path / f"h{seed}.txt", random_hierarchy(universe, rng))
    used = sorted({i for line in lines for i in line.split()}, key=int)
    return data, hierarchy, set(rng.sample(used, 3))


def run_tdc(db: Backend, tmp_path: Path, seed: int,
            **params: Any) -> tuple[api.Dataset, api.Run, list[frozenset[str]], Path, set[str]]:
    data, hierarchy, sensitive = random_case(tmp_path, seed)
    sens = write(tmp_path / f"s{seed}.txt", "\n".join(sorted(sensitive)) + "\n")
    dataset = api.load_transactions(db, data, f"d{seed}")
    api.anonymize(db, dataset, RHO, {"heuristic": "tdcontrol", "hierarchy": str(hierarchy),
                                     "sensitive": str(sens), **params}, seed=seed)
    run = api.get_run(db, dataset, "latest")
    out = api.export_dataset(db, dataset, tmp_path / f"o{seed}.dat", run=run)
    return dataset, run, rho_oracle.read_fimi(out), hierarchy, sensitive


@pytest.mark.parametrize(("seed", "rho", "m"), [(1, "0.5", None), (2, "0.7", 2), (3, "0.5", 2),
                                                 (4, "0.6", None), (5, "0.4", 1)])
def test_output_is_a_generalization_and_rho_uncertain(db: Backend, tmp_path: Path, seed: int,
                                                      rho: str, m: int | None) -> None:
    params: dict[str, Any] = {"rho": float(rho)} if m is None else {"rho": float(rho), "m": m}
    dataset, run, output, hierarchy, sensitive = run_tdc(db, tmp_path, seed, **params)
    original = rho_oracle.read_fimi(tmp_path / f"d{seed}.dat")
    parent = tdcontrol_oracle.read_hierarchy(hierarchy)
    assert rho_oracle.unsafe_rules(original, sensitive, Fraction(rho), m), "input already safe"
    assert tdcontrol_oracle.generalization_faults(original, output, parent, sensitive) == []
    assert rho_oracle.unsafe_rules(output, sensitive, Fraction(rho), m) == []
    gone = tdcontrol_oracle.suppressed_types(original, output, sensitive)
    counts = Counter(i for record in original for i in record)
    assert run.figures["suppressed"] == sum(counts[e] for e in gone)
    assert run.figures["suppressed_item_types"] == len(gone)
    assert run.figures["trials"] == (run.figures["specializations_kept"]
                                     + run.figures["specializations_rejected"])
    result = api.verify(db, dataset, run)
    assert result.ok, result.details
    assert result.details["rows_not_the_generalization_of_the_input"] == 0


def test_specializes_when_it_costs_no_suppression(db: Backend, tmp_path: Path) -> None:
    """With a sensitive item no rule can reach (it occurs once among many), the most specific
    cut is safe: TDControl specializes all the way down and suppresses nothing."""
    data = write(tmp_path / "a.dat", "1 2\n1 3\n2 4\n3 4\n1 2 3\n2 3 4\n1 4\n5\n")
    hierarchy = write(tmp_path / "h.txt", "1;a;*\n2;a;*\n3;b;*\n4;b;*\n5;*\n")
    sens = write(tmp_path / "s.txt", "5\n")
    dataset = api.load_transactions(db, data, "a")
    api.anonymize(db, dataset, RHO, {"rho": 0.9, "heuristic": "tdcontrol",
                                     "hierarchy": str(hierarchy), "sensitive": str(sens)}, seed=1)
    run = api.get_run(db, dataset, "latest")
    out = rho_oracle.read_fimi(api.export_dataset(db, dataset, tmp_path / "o.dat", run=run))
    assert out == rho_oracle.read_fimi(data)
    assert run.figures["suppressed"] == 0 and run.figures["generalized_share"] == 0
    assert api.verify(db, dataset, run).ok


def test_verify_finds_a_tampered_publication(db: Backend, tmp_path: Path) -> None:
    """A published sensitive item put back into one record breaks global suppression or ρ."""
    dataset, run, *_ = run_tdc(db, tmp_path, 2, rho=0.5)
    table = db.render(db.table(f"r{run.run_id}_items_1"))
    pdict = db.render(db.table(f"r{run.run_id}_dict_1"))
    db.execute(f"DELETE FROM {table} WHERE item_id IN (SELECT min(item_id) FROM {pdict})")
    result = api.verify(db, dataset, run)
    assert not result.ok
    assert result.details["rows_not_the_generalization_of_the_input"] > 0
