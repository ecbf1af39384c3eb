"""SAMPLESUPPRESSOR ((ε, δ)-ρ^m) checked by the exact unsafe share H_ℓ of a brute-force oracle."""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from tests.conftest import write
from tests.integration.test_prho import published, random_baskets
from tests.oracle import prho_oracle as oracle

PRHO = require_model("prho")


@pytest.mark.parametrize(("setting", "seed", "choice", "pool"),
                         [("personalized+", 1, "paper", 1), ("fixed", 2, "paper", 1),
                          ("personalized", 3, "fewest", 1), ("personalized+", 4, "paper", 5)])
def test_unsafe_share_is_below_epsilon_for_every_l(db: Backend, tmp_path: Path, setting: str,
                                                   seed: int, choice: str, pool: int) -> None:
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 30, 8, 5))
    original = oracle.read_fimi(source)
    constraint = oracle.generated_constraint(original, setting, seed, 0.3, 0.1)
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, PRHO, {"rho": 0.5, "setting": setting, "sensitive_fraction": 0.3,
                                      "noise": 0.1, "m": 3, "epsilon": 0.1, "delta": 0.1,
                                      "choice": choice, "repair_pool": pool},
                  seed=seed)
    run = api.get_run(db, dataset, "latest")
    output = published(db, dataset, run, tmp_path)
    assert run.figures["samples_per_l"] == 116  # ⌈ln 10 / (2 · 0.01)⌉, as in Sec. 5.3
    assert run.figures["repair_pool"] == pool
    last = [entry for entry in run.figures["history"] if entry["sweep"] == run.figures["sweeps"]]
    assert [entry["unsafe_samples"] for entry in last] == [0, 0, 0]  # Alg. 2 l.4-10
    assert oracle.is_record_subset(original, output)
    rho = Fraction(1, 2)
    assert max(oracle.unsafe_share(original, original, constraint, rho, ell)
               for ell in (1, 2, 3)) >= 0.1, "the input already met the guarantee"
    for ell in (1, 2, 3):
        assert oracle.unsafe_share(original, output, constraint, rho, ell) < 0.1
    result = api.verify(db, dataset, run)
    assert result.ok, result.details
    assert set(result.details["per_l"]) == {"1", "2", "3"}
    assert result.details["per_l"]["1"]["samples"] == 4 * 116


def test_sampled_verify_rejects_the_input(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "in.dat", "1 2\n1 2\n1 2\n1 3\n2 3\n")
    write(tmp_path / "e.dat", "2\n2\n2\n2\n\n")
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, PRHO, {"rho": 0.5, "constraint": str(tmp_path / "e.dat"),
                                      "m": 1, "epsilon": 0.2, "delta": 0.2}, seed=3)
    run = api.get_run(db, dataset, "latest")
    original, output = oracle.read_fimi(source), published(db, dataset, run, tmp_path)
    constraint = [{"2"}] * 4 + [set()]
    assert oracle.unsafe_share(original, output, constraint, Fraction(1, 2), 1) < 0.2
    items = db.render(db.table(dataset.items_table(dataset.set_attributes[0])))
    table = db.render(db.table(f"r{run.run_id}_items_1"))
    db.execute(f"DELETE FROM {table}")
    db.execute(f"INSERT INTO {table} SELECT record_id, item_id FROM {items}")
    result = api.verify(db, dataset, run)
    assert not result.ok and result.details["per_l"]["1"]["unsafe"] > 0
