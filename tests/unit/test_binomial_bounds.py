"""The one-sided Clopper-Pearson bounds against exact binomial sums (fractions, no floats in
the oracle) and their defining property: coverage of at least 1 - delta, computed exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from setanon_sql.stats.binomial import binomial_cdf, decide, lower_bound, upper_bound


def exact_cdf(x: int, n: int, p: Fraction) -> Fraction:
    return sum((math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(x + 1)),
               Fraction(0))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 120), data=st.data(),
       p=st.fractions(min_value=Fraction(1, 1000), max_value=Fraction(999, 1000),
                      max_denominator=1000))
def test_cdf_matches_the_exact_sum(n: int, data: st.DataObject, p: Fraction) -> None:
    x = data.draw(st.integers(0, n))
    assert binomial_cdf(x, n, float(p)) == pytest.approx(float(exact_cdf(x, n, p)), abs=1e-12)


def test_known_values() -> None:
    # 0 of n: U = 1 - delta^(1/n); 5 of 100 at 95%: the two-sided 90% interval [0.0199, 0.1023]
    assert upper_bound(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert upper_bound(5, 100, 0.05) == pytest.approx(0.10225, abs=1e-5)
    assert lower_bound(5, 100, 0.05) == pytest.approx(0.01991, abs=1e-5)
    assert (lower_bound(0, 10, 0.05), upper_bound(10, 10, 0.05)) == (0.0, 1.0)


@pytest.mark.parametrize(("n", "p", "delta"), [(50, 0.02, 0.05), (300, 0.1, 0.01),
                                               (1000, 0.005, 0.05)])
def test_coverage_is_at_least_one_minus_delta(n: int, p: float, delta: float) -> None:
    """P[U(X) < p] <= delta and P[L(X) > p] <= delta, summed exactly over every outcome x."""
    pmf = [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]
    miss_upper = sum(w for x, w in enumerate(pmf) if upper_bound(x, n, delta) < p)
    miss_lower = sum(w for x, w in enumerate(pmf) if lower_bound(x, n, delta) > p)
    assert miss_upper <= delta + 1e-12 and miss_lower <= delta + 1e-12


def test_decisions() -> None:
    assert decide(0, 45_845, 0.01, 0.01).outcome == "passed"
    assert decide(600, 45_845, 0.01, 0.01).outcome == "failed"
    assert decide(458, 45_845, 0.01, 0.01).outcome == "inconclusive"  # share 0.00999
    assert "Clopper-Pearson" in decide(3, 100, 0.1, 0.05).describe()
    with pytest.raises(ValueError):
        upper_bound(5, 3, 0.05)
