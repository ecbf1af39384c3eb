"""SAMPLESUPPRESSOR ((ε, δ)-ρ^m) checked by the exact unsafe share H_ℓ of a brute-force oracle."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.prho.adversaries import sample
from setanon_sql.models.prho.sampler import sweep_delta
from setanon_sql.stats.binomial import upper_bound
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


@pytest.mark.on_spark(seeds=[6])
@pytest.mark.parametrize(("setting", "seed", "pool"),
                         [("personalized", 5, 1), ("personalized+", 6, 4), ("fixed", 7, 2)])
def test_bound_stop_rule_keeps_the_share_below_epsilon(db: Backend, tmp_path: Path,
                                                       setting: str, seed: int, pool: int) -> None:
    """--stop-rule bound: the last sweep's bounds are below epsilon and it repaired nothing;
    the exact unsafe share (oracle, every adversary) is below epsilon for every l."""
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 40, 8, 6))
    original = oracle.read_fimi(source)
    constraint = oracle.generated_constraint(original, setting, seed, 0.3, 0.1)
    dataset = api.load_transactions(db, source, "d")
    epsilon, delta = 0.1, 0.01
    api.anonymize(db, dataset, PRHO, {"rho": 0.5, "setting": setting, "sensitive_fraction": 0.3,
                                      "noise": 0.1, "m": 3, "epsilon": epsilon, "delta": delta,
                                      "repair_pool": pool, "stop_rule": "bound"}, seed=seed)
    run = api.get_run(db, dataset, "latest")
    output = published(db, dataset, run, tmp_path)
    assert run.figures["stop_rule"] == "bound"
    n_s, sweeps = run.figures["samples_per_l"], run.figures["sweeps"]
    assert n_s == 231  # ⌈ln 100 / (2 · 0.01)⌉
    last = [entry for entry in run.figures["history"] if entry["sweep"] == sweeps]
    assert [entry["l"] for entry in last] == [1, 2, 3]
    for entry in last:
        drawn = entry.get("unsafe_in_pool", entry["unsafe_samples"])
        assert entry["share_upper_bound"] == round(
            upper_bound(drawn, pool * n_s, sweep_delta(delta, sweeps)), 6) < epsilon
        assert "repaired" not in entry
    # Each sweep tests every size after a sweep that repaired nothing (and first), else the
    # sizes just repaired and those whose last bound was at least epsilon / 2; it repairs,
    # together in one entry, exactly the sizes whose bound was not below epsilon.
    history, bounds, tested = run.figures["history"], {}, [1, 2, 3]
    for sweep in range(1, sweeps + 1):
        checks = [e for e in history if e["sweep"] == sweep and "l" in e]
        repairs = [e for e in history if e["sweep"] == sweep and "repaired_sizes" in e]
        assert [e["l"] for e in checks] == tested
        bounds.update({e["l"]: e["share_upper_bound"] for e in checks})
        failing = [e["l"] for e in checks if e["share_upper_bound"] >= epsilon]
        assert [e["l"] for e in checks if e.get("repaired")] == failing
        if failing:
            [repair] = repairs
            assert repair["repaired_sizes"] == failing
            assert repair["rules"] > 0 and repair["suppressed"] > 0 and repair["passes"] > 0
        else:
            assert repairs == []
        assert (sweep == sweeps) == (not failing and tested == [1, 2, 3])
        tested = ([ell for ell in (1, 2, 3) if ell in failing or bounds[ell] >= epsilon / 2]
                  if failing else [1, 2, 3])
    assert oracle.is_record_subset(original, output)
    rho = Fraction(1, 2)
    assert max(oracle.unsafe_share(original, original, constraint, rho, ell)
               for ell in (1, 2, 3)) >= epsilon, "the input already met the guarantee"
    for ell in (1, 2, 3):
        assert oracle.unsafe_share(original, output, constraint, rho, ell) < epsilon
    result = api.verify(db, dataset, run)
    assert result.ok, result.details
    assert result.details["per_l"]["1"]["samples"] == 4 * pool * n_s


@pytest.mark.parametrize(("setting", "seed", "upto"),
                         [("personalized+", 11, 1), ("fixed", 12, 2), ("personalized", 13, 2)])
def test_exact_upto_starts_the_sweeps_from_suppressor(db: Backend, tmp_path: Path,
                                                      setting: str, seed: int, upto: int
                                                      ) -> None:
    """--exact-upto L: the first sweep draws no unsafe adversary of up to L items (it tests
    SUPPRESSOR's output for them before any repair), and the exact unsafe share (oracle) of
    the output is below epsilon for every l, as without it."""
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 40, 8, 6))
    original = oracle.read_fimi(source)
    constraint = oracle.generated_constraint(original, setting, seed, 0.3, 0.1)
    dataset = api.load_transactions(db, source, "d")
    epsilon, rho = 0.1, Fraction(1, 2)
    api.anonymize(db, dataset, PRHO, {"rho": 0.5, "setting": setting, "sensitive_fraction": 0.3,
                                      "noise": 0.1, "m": 3, "epsilon": epsilon, "delta": 0.05,
                                      "stop_rule": "bound", "exact_upto": upto}, seed=seed)
    run = api.get_run(db, dataset, "latest")
    assert run.figures["exact_upto"] == upto
    assert run.figures["exact_phase"]["upto"] == upto
    assert max(oracle.unsafe_share(original, original, constraint, rho, ell)
               for ell in range(1, upto + 1)) > 0, "nothing for the exact phase to repair"
    history = run.figures["history"]
    exact = [entry for entry in history if entry.get("phase") == "exact"]
    assert exact and sum(int(entry.get("suppressed", 0)) for entry in exact) > 0
    first = [entry for entry in history if entry.get("sweep") == 1 and "l" in entry]
    assert [entry["unsafe_samples"] for entry in first[:upto]] == [0] * upto
    output = published(db, dataset, run, tmp_path)
    assert oracle.is_record_subset(original, output)
    for ell in (1, 2, 3):
        assert oracle.unsafe_share(original, output, constraint, rho, ell) < epsilon
    result = api.verify(db, dataset, run)
    assert result.ok, result.details


def test_exact_upto_m_is_suppressor_then_one_sweep(db: Backend, tmp_path: Path) -> None:
    """--exact-upto m: the sweeps start from SUPPRESSOR's output at --m m, which is safe for
    every adversary, so one sweep finds nothing to repair and the output is SUPPRESSOR's."""
    rng = random.Random(21)
    source = write(tmp_path / "in.dat", random_baskets(rng, 40, 8, 6))
    dataset = api.load_transactions(db, source, "d")
    common = {"rho": 0.5, "setting": "personalized", "sensitive_fraction": 0.3, "m": 2}
    api.anonymize(db, dataset, PRHO, common, seed=21)
    exact = published(db, dataset, api.get_run(db, dataset, "latest"), tmp_path)
    api.anonymize(db, dataset, PRHO, {**common, "epsilon": 0.1, "delta": 0.05,
                                      "stop_rule": "bound", "exact_upto": 2}, seed=21)
    run = api.get_run(db, dataset, "latest")
    assert run.figures["sweeps"] == 1
    assert [entry["unsafe_samples"] for entry in run.figures["history"]
            if entry.get("sweep") == 1] == [0, 0]
    assert published(db, dataset, run, tmp_path) == exact
    assert api.verify(db, dataset, run).ok


@pytest.mark.on_spark(connect=True)
def test_draws_are_uniform_over_the_long_enough_records(db: Backend) -> None:
    """sample(): record u of rank md5(salt:s) mod N_l among the records with >= l items, and
    l distinct items of it; the same draws for the same salt."""
    name = f"t_{uuid.uuid4().hex[:8]}"
    rows = [(r, i) for r in range(1, 9) for i in range(1, r + 1)]  # record r has r items

    def table(purpose: str) -> exp.Table:
        return db.table(f"{name}_{purpose}")

    items = table("items")
    db.materialize(items, exp.select(
        exp.column("record_id", quoted=True), exp.column("item_id", quoted=True)).from_(
        exp.Values(expressions=[exp.Tuple(expressions=[exp.convert(r), exp.convert(i)])
                                for r, i in rows],
                   alias=exp.TableAlias(this=exp.to_identifier("v"),
                                        columns=[exp.to_identifier("record_id", quoted=True),
                                                 exp.to_identifier("item_id", quoted=True)]))))
    olen = table("olen")
    db.materialize(olen, "prho_lengths", tables={"items": items})
    try:
        draws = []
        for _ in range(2):
            samp, hits = sample(db, table, items, olen, 3, 1200, 6, "7:1:3")
            draws.append((sorted(db.query(exp.select("*").from_(samp))),
                          sorted(db.query(exp.select("*").from_(hits)))))
        assert draws[0] == draws[1]
        picked, chosen = draws[0]
        assert [s for s, _ in picked] == list(range(1, 1201))
        counts = Counter(int(u) for _, u in picked)
        assert set(counts) == set(range(3, 9))  # the six records with at least 3 items
        assert all(150 <= c <= 250 for c in counts.values()), counts  # 200 each expected
        per_sample = Counter(int(s) for s, _, _ in chosen)
        assert set(per_sample.values()) == {3}
        owner = dict(picked)
        assert all(owner[s] == u and 1 <= i <= u for s, u, i in chosen)
        assert len({(s, i) for s, _, i in chosen}) == 3 * 1200
    finally:
        for leftover in db.table_names(name):
            db.drop_table(db.table(leftover))


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
