"""verify's sequential sampled check (setanon_sql/models/km/verify.py): the looks are fixed
before any sample is drawn, the error δ is split over them, and the chance that the check ends
on a wrong verdict, computed exactly over every path of bad counts, stays within δ."""

from __future__ import annotations

import functools
import math

import pytest

from setanon_sql.models.km.samplesize import gamma
from setanon_sql.models.km.verify import look_delta, sample_looks
from setanon_sql.stats.binomial import decide


def test_looks_rise_to_gamma_and_spend_delta_once() -> None:
    for sigma in (0.9, 0.99, 0.995, 0.999):
        looks = sample_looks(gamma(sigma))
        assert looks == sorted(set(looks)) and looks[-1] == gamma(sigma)
        spent = [look_delta(0.01, len(looks), j) for j in range(len(looks))]
        assert sum(spent) == pytest.approx(0.01) and min(spent) > 0
    assert sample_looks(gamma(0.99)) == [45_845]  # one look, all of δ: as before the looks
    assert look_delta(0.01, 1, 0) == 0.01
    assert sample_looks(gamma(0.999)) == [50_000, 400_000, 3_200_000, 5_866_617]


@functools.cache
def _outcome(x: int, n: int, limit: float, delta: float) -> str:
    return decide(x, n, limit, delta).outcome


def _pmf(n: int, p: float) -> list[float]:
    return [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]


def wrong_verdict_chance(looks: list[int], limit: float, p: float, delta: float,
                         split: bool = True) -> float:
    """The exact chance that the check, stopping at its first decided look, ends on the wrong
    verdict ("passed" when p > limit, else "failed"), with each look's δ_j (or, without
    ``split``, δ at every look): a walk over the cumulative bad counts, look by look."""
    wrong = "passed" if p > limit else "failed"
    going, before, chance = {0: 1.0}, 0, 0.0
    for j, n in enumerate(looks):
        step = _pmf(n - before, p)
        reached: dict[int, float] = {}
        for x, q in going.items():
            for i, r in enumerate(step):
                reached[x + i] = reached.get(x + i, 0.0) + q * r
        d = look_delta(delta, len(looks), j) if split else delta
        going = {}
        for x, q in reached.items():
            outcome = _outcome(x, n, limit, d)
            if outcome == wrong:
                chance += q
            elif outcome == "inconclusive":
                going[x] = q
        before = n
    return chance


@pytest.mark.parametrize("delta", [0.01, 0.1])
def test_a_wrong_verdict_over_all_looks_is_within_delta(delta: float) -> None:
    looks, limit = [30, 240, 600], 0.05
    for factor in (0.3, 0.6, 0.9, 0.99, 1.01, 1.1, 1.5, 2.0):
        p = limit * factor
        assert wrong_verdict_chance(looks, limit, p, delta) <= delta, (p, delta)


def test_without_the_split_the_looks_would_err_more_often() -> None:
    # The reason for δ_j: deciding at every look with all of δ ends wrong more often than δ
    # for some share (this case's walk shows it), while the split stays within δ.
    looks, limit, delta = [30, 60, 120, 240, 480], 0.1, 0.1
    chances = [wrong_verdict_chance(looks, limit, limit * f, delta, split=False)
               for f in (0.7, 0.8, 0.9, 1.1, 1.2, 1.3)]
    assert max(chances) > delta
