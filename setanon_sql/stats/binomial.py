"""One-sided Clopper-Pearson bounds on a binomial proportion, and the decision a sampled
verifier makes with them.

A sampled check sees ``x`` bad outcomes in ``n`` independent uniform draws and must decide
whether the true share p is at most ``limit``. With confidence 1 - δ: pass when the upper
bound U(x, n, δ) <= limit (the share is below the limit unless a 1-in-1/δ event happened), fail
when the lower bound L(x, n, δ) > limit, and otherwise the sample cannot decide
("inconclusive"). U solves P[X <= x | n, U] = δ and L solves P[X >= x | n, L] = δ (Clopper &
Pearson 1934), found by bisection on the binomial tail written as a regularized incomplete beta
function (continued fraction, as in Numerical Recipes §6.4); for x = 0 the upper bound has the
closed form 1 - δ^(1/n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_BISECTION_STEPS = 100


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta (modified Lentz's method)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return result


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function (the binomial tail's closed form)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def binomial_cdf(x: int, n: int, p: float) -> float:
    """P[X <= x] for X ~ Binomial(n, p) = I_{1-p}(n - x, x + 1)."""
    if x < 0:
        return 0.0
    if x >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return regularized_beta(n - x, x + 1, 1.0 - p)


def _bisect(predicate_low: bool, x: int, n: int, delta: float, upper: bool) -> float:
    low, high = 0.0, 1.0
    for _ in range(_BISECTION_STEPS):
        mid = (low + high) / 2
        tail = binomial_cdf(x, n, mid) if upper else 1.0 - binomial_cdf(x - 1, n, mid)
        # upper: the CDF falls as p grows, the bound is where it reaches delta;
        # lower: the upper tail grows with p, the bound is where it reaches delta.
        if (tail > delta) == upper:
            low = mid
        else:
            high = mid
    return high if upper else low


def upper_bound(x: int, n: int, delta: float) -> float:
    """One-sided upper Clopper-Pearson bound: p <= U with confidence 1 - delta."""
    _check(x, n, delta)
    if x == n:
        return 1.0
    if x == 0:
        return 1.0 - float(delta ** (1.0 / n))
    return _bisect(True, x, n, delta, upper=True)


def lower_bound(x: int, n: int, delta: float) -> float:
    """One-sided lower Clopper-Pearson bound: p >= L with confidence 1 - delta."""
    _check(x, n, delta)
    if x == 0:
        return 0.0
    if x == n:
        return float(delta ** (1.0 / n))
    return _bisect(False, x, n, delta, upper=False)


def _check(x: int, n: int, delta: float) -> None:
    if n <= 0 or not 0 <= x <= n:
        raise ValueError(f"need 0 <= x <= n and n > 0, got x={x}, n={n}")
    if not 0 < delta < 1:
        raise ValueError(f"delta {delta} must be in (0, 1)")


@dataclass(frozen=True)
class Decision:
    """What a sample of ``n`` draws with ``x`` bad ones says about ``share <= limit``."""

    x: int
    n: int
    limit: float
    delta: float
    lower: float
    upper: float

    @property
    def outcome(self) -> str:
        """'passed', 'failed' or 'inconclusive'."""
        if self.upper <= self.limit:
            return "passed"
        if self.lower > self.limit:
            return "failed"
        return "inconclusive"

    def describe(self) -> str:
        return (f"{self.x} of {self.n} bad (share {self.x / self.n:.6f}); Clopper-Pearson "
                f"one-sided bounds at confidence {1 - self.delta:g}: [{self.lower:.6f}, "
                f"{self.upper:.6f}] against the limit {self.limit:.6f}: {self.outcome}")


def decide(x: int, n: int, limit: float, delta: float) -> Decision:
    """The verdict on ``true share <= limit`` from ``x`` bad draws of ``n``; see the module."""
    return Decision(x, n, limit, delta, lower_bound(x, n, delta), upper_bound(x, n, delta))
