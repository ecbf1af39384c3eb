"""How many uniform samples certify a probabilistic guarantee (Acs et al. Theorem 1, Sec. VI-B).

Theorem 1 needs |S| samples, all k-anonymous, with (1 - ε)(1 - δ) >= σ and a Hoeffding bound
relating |S|, ε and δ; |S| is minimized over ε numerically (Alg. 2 l.3 says any root finder).

The figures the paper quotes (26,492 for ±1% at confidence 0.99 in Sec. VI-B; 45,845 and
5,866,617 for σ = 0.99 and 0.999 in Sec. VI-E) follow from the two-sided bound
|S| >= ln(2/δ) / (2ε²), not from Theorem 1 as printed (ln(1/δ), which gives 41,917 and
5,485,662). Both are sound here; we use the two-sided bound, the more conservative one and the
one that reproduces the paper's numbers.
"""

from __future__ import annotations

import math

_GOLDEN = (math.sqrt(5) - 1) / 2


def hoeffding_samples(epsilon: float, delta: float) -> int:
    """Samples so that an estimated share is within ±ε of the truth with confidence 1 - δ."""
    return math.ceil(math.log(2 / delta) / (2 * epsilon * epsilon))


def gamma(sigma: float) -> int:
    """γ of Alg. 2 l.3: the fewest samples that certify σ (two-sided bound, see module doc)."""
    return gamma_bound(sigma)[0]


def gamma_bound(sigma: float) -> tuple[int, float, float]:
    """(γ, ε, δ): γ with the ε and δ it certifies, (1 - ε)(1 - δ) = σ (Theorem 1's proof:
    with γ clean samples, Pr[H_k < ε] >= 1 - δ)."""
    if not 0.5 <= sigma < 1:
        raise ValueError(f"sigma {sigma} must be in [0.5, 1) for a sampled guarantee")

    def needed(epsilon: float) -> float:
        delta = 1 - sigma / (1 - epsilon)  # (1 - ε)(1 - δ) = σ
        return math.log(2 / delta) / (2 * epsilon * epsilon)

    low, high = 1e-12, (1 - sigma) * (1 - 1e-12)
    for _ in range(200):  # golden-section search: needed() is convex on (0, 1 - σ)
        a, b = high - _GOLDEN * (high - low), low + _GOLDEN * (high - low)
        if needed(a) < needed(b):
            high = b
        else:
            low = a
    epsilon = (low + high) / 2
    return math.ceil(needed(epsilon)), epsilon, 1 - sigma / (1 - epsilon)
