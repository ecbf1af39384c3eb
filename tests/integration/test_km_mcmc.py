"""--sampler mcmc: the Metropolis-Hastings sampler of Alg. 1 against a brute-force enumeration
of Omega^ℓ (chi-square), and σ-k^m runs with it checked by the oracle, on both backends."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.km.mcmc import McmcSampler
from tests.integration.test_km import random_case, run_km
from tests.oracle import km_oracle


def _mcmc_draws(db: Backend, data: Path, ell: int, chains: int, seed: int,
                max_steps: int) -> tuple[Counter[tuple[str, ...]], McmcSampler]:
    """``chains`` MCMC samples of size ℓ, as itemsets of labels; supports checked on the way."""
    dataset = api.load_transactions(db, data, f"s{data.stem}")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    dictionary = db.table(dataset.dict_table(dataset.set_attributes[0]))
    labels = dict(db.query(exp.select("item_id", "label").from_(dictionary)))
    sampler = McmcSampler(db, items, lambda p: db.table(f"x_{p}"), seed=seed, stream=1,
                          max_steps=max_steps)
    target = db.table("x_target")
    assert sampler.draw(ell, chains, target) == chains
    by_sample: dict[int, list[str]] = {}
    supports: dict[int, int] = {}
    for sid, item_id, supp in db.query(exp.select("sid", "item_id", "supp").from_(target)):
        by_sample.setdefault(sid, []).append(labels[item_id])
        supports[sid] = supp
    omega = km_oracle.itemset_supports(km_oracle.read_fimi(data), ell)
    draws = {sid: tuple(sorted(v)) for sid, v in by_sample.items()}
    assert all(omega[x] == supports[sid] for sid, x in draws.items())
    assert len(draws) == chains
    assert db.table_names("x_") == ["x_target"]  # work tables dropped
    return Counter(draws.values()), sampler


@pytest.mark.parametrize(("seed", "ell"), [(11, 2), (12, 3)])
def test_mcmc_samples_pass_a_chi_square_test_of_uniformity(db: Backend, tmp_path: Path,
                                                           seed: int, ell: int) -> None:
    data, _ = random_case(tmp_path, seed)
    omega = km_oracle.itemset_supports(km_oracle.read_fimi(data), ell)
    counts, sampler = _mcmc_draws(db, data, ell, 25 * len(omega), seed, 4096)
    statistic, critical = km_oracle.chi_square_uniform(counts, omega)
    assert statistic < critical, (statistic, critical, sampler.chains)
    assert sampler.chains[0]["converged"]
    records = km_oracle.read_fimi(data)
    truth = km_oracle.largest_record_uniqueness(records, ell)
    drawn = sampler.chains[0]
    assert abs(drawn["r_star"] - truth) <= 0.1  # 512 draws: 4.5 standard errors at worst
    if drawn["r_star"]:
        holders = sum(1 for r in records if r)
        assert drawn["theorem3_cap"] == math.ceil(holders * math.log(100) / drawn["r_star"])


def test_mcmc_draws_are_reproducible(db: Backend, tmp_path: Path) -> None:
    data, _ = random_case(tmp_path, 15)
    first, _ = _mcmc_draws(db, data, 2, 200, 4, 32)
    dataset = api.load_transactions(db, data, "again")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    sampler = McmcSampler(db, items, lambda p: db.table(f"y_{p}"), seed=4, stream=1,
                          max_steps=32)
    sampler.draw(2, 200, db.table("y_target"))
    rows = [sorted(db.query(exp.select("sid", "item_id").from_(db.table(t))))
            for t in ("x_target", "y_target")]
    assert rows[0] == rows[1]
    assert sum(first.values()) == 200


@pytest.mark.parametrize("seed", [11, 14])
def test_record_then_subset_sampling_fails_the_same_test(db: Backend, tmp_path: Path,
                                                          seed: int) -> None:
    """With no MH step the samples are Alg. 1's proposals: biased toward itemsets of many and
    small records. The chi-square test must reject them, so it can tell a wrong sampler."""
    data, _ = random_case(tmp_path, seed)
    omega = km_oracle.itemset_supports(km_oracle.read_fimi(data), 2)
    counts, _ = _mcmc_draws(db, data, 2, 25 * len(omega), seed, 0)
    statistic, critical = km_oracle.chi_square_uniform(counts, omega)
    assert statistic > critical


@pytest.mark.parametrize("seed", [1, 2])
def test_sampled_km_with_mcmc_meets_sigma(db: Backend, tmp_path: Path, seed: int) -> None:
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.85
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=2,
                                             sigma=str(sigma), sampler="mcmc",
                                             exact_upto=seed % 2, mcmc_min_steps=8 + 12 * seed)
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    for ell in (1, 2):
        share = km_oracle.violating_share(original, published, mapping, k, ell)
        assert share <= 1 - sigma, (ell, share)
    assert km_oracle.cut_problems(mapping, km_oracle.read_hierarchy(hierarchy)) == []
    assert km_oracle.generalization_problems(original, published, mapping) == []
    assert run.figures["sampler"] == "mcmc"
    assert all(c["converged"] and c["steps"] >= 8 + 12 * seed for c in run.figures["mcmc_chains"])
    assert api.verify(db, dataset, run).ok
