"""The sequential pool rule of the sampled search (models/km/sampled.py, Alg. 2 l.7-15).

A pool passes once γ samples drawn after the last merge are clean and fails at the first
violating sample; drawn in growing parts, it must pass a cut whose violating share is ε (the
worst case Theorem 1 allows) with probability at most δ, whatever the part sizes.
"""

from __future__ import annotations

import math
import random

import pytest

from setanon_sql.models.km.sampled import WHOLE_MAX, PoolRule
from setanon_sql.models.km.samplesize import gamma_bound


def run_pool(rule: PoolRule, share: float, rng: random.Random) -> tuple[str, int]:
    """One pool over i.i.d. samples violating with probability ``share``: (outcome, drawn)."""
    clean, part, drawn = 0, None, 0
    while True:
        part = rule.next_part(clean, part)
        bad = sum(rng.random() < share for _ in range(part))
        drawn += part
        outcome = rule.decide(clean + part - bad, bad)
        if outcome != "continue":
            return outcome, drawn
        clean += part


@pytest.mark.parametrize("sigma", [0.7, 0.8, 0.9])
def test_gamma_bound_is_consistent(sigma: float) -> None:
    count, epsilon, delta = gamma_bound(sigma)
    assert (1 - epsilon) * (1 - delta) == pytest.approx(sigma)
    assert count >= math.log(2 / delta) / (2 * epsilon ** 2) - 1e-9
    assert (1 - epsilon) ** count <= delta  # the zero-violation rule is at least that strict


@pytest.mark.parametrize(("sigma", "first", "seed"), [(0.7, 1, 1), (0.8, 4, 2), (0.9, 16, 3)])
def test_pass_rate_at_the_worst_allowed_share_is_within_delta(sigma: float, first: int,
                                                              seed: int) -> None:
    count, epsilon, delta = gamma_bound(sigma)
    rule = PoolRule(count, first=first, largest=64)
    rng = random.Random(seed)
    trials = 4000
    passed = sum(run_pool(rule, epsilon, rng)[0] == "passed" for _ in range(trials))
    exact = (1 - epsilon) ** count  # the pass probability: every one of γ samples clean
    assert exact <= delta
    # the measured rate agrees with the exact one within 4 standard errors, so it is <= δ
    # up to that noise: growing parts do not change the error probability
    spread = 4 * math.sqrt(exact * (1 - exact) / trials) + 1 / trials
    assert abs(passed / trials - exact) <= spread
    assert passed / trials <= delta + spread


def test_clean_cut_always_passes_with_exactly_gamma_samples() -> None:
    rule = PoolRule(321, first=10, largest=64)
    outcome, drawn = run_pool(rule, 0.0, random.Random(0))
    assert (outcome, drawn) == ("passed", 321)


def test_parts_double_and_never_overshoot_gamma() -> None:
    rule = PoolRule(1000, first=100, largest=300)
    sizes, clean, part = [], 0, None
    while clean < 1000:
        part = rule.next_part(clean, part)
        sizes.append(part)
        clean += part
    assert sizes == [100, 200, 300, 300, 100] and sum(sizes) == 1000


def test_a_violating_sample_fails_the_pool_at_once() -> None:
    rule = PoolRule(1000)
    assert rule.decide(999, 1) == "failed"
    assert rule.decide(999, 0) == "continue"
    assert rule.decide(1000, 0) == "passed"
    # a failing pool stops early: at a high violating share the first part decides
    outcome, drawn = run_pool(PoolRule(45_845), 0.5, random.Random(1))
    assert (outcome, drawn) == ("failed", 45_845 // 8)


def test_the_first_pool_of_a_size_is_drawn_whole() -> None:
    rule = PoolRule(45_845, largest=30_000)
    assert rule.next_part(0, None, whole=True) == 30_000  # all of γ, within the largest part
    assert rule.next_part(30_000, 30_000, whole=True) == 15_845
    assert rule.next_part(0, None) == 45_845 // 8


def test_a_whole_first_pool_stops_at_whole_max_then_doubles() -> None:
    rule = PoolRule(5_866_617)  # σ = 0.999
    assert rule.next_part(0, None, whole=True) == WHOLE_MAX
    assert rule.next_part(WHOLE_MAX, WHOLE_MAX, whole=True) == 2 * WHOLE_MAX
    assert PoolRule(45_845).next_part(0, None, whole=True) == 45_845  # σ = 0.99: all of γ
