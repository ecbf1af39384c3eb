"""The parameters of ``--model km``, checked before anything is written.

k and σ may be given per itemset size ℓ (Acs et al. Sec. III: vectors (k_1..k_m), (σ_1..σ_m)),
as a comma-separated list of m values or a single value for every ℓ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from setanon_sql.errors import UsageError

ERRORS = ("ncp", "geo", "share")
SAMPLERS = ("exact", "mcmc")
CERTIFY = ("auto", "samples")  # exactcheck.py: enumeration where cheaper, or always γ samples
DEFAULT_BATCH = 0.25
DEFAULT_SAMPLER = "exact"
DEFAULT_MCMC_MIN_STEPS = 16
DEFAULT_CERTIFY = "auto"


@dataclass(frozen=True)
class KmParams:
    """Validated parameters: ``k[l-1]`` and ``sigma[l-1]`` hold the requirement for size l."""

    m: int
    k: tuple[int, ...]
    sigma: tuple[float, ...]
    error: str
    hierarchy: str | None
    column: str | None
    trials: int
    exact_upto: int
    batch: float
    sampler: str = DEFAULT_SAMPLER
    graph: str | None = None
    coordinates: str | None = None
    mcmc_min_steps: int = DEFAULT_MCMC_MIN_STEPS
    certify: str = DEFAULT_CERTIFY

    def exact_at(self, ell: int) -> bool:
        """Whether itemsets of size ``ell`` are checked by enumeration (σ_ℓ = 1 or ℓ ≤ ℓ0)."""
        return self.sigma[ell - 1] >= 1.0 or ell <= self.exact_upto

    @property
    def sampled(self) -> bool:
        return not all(self.exact_at(ell) for ell in range(1, self.m + 1))


def _per_size(text: Any, m: int, name: str,
              convert: Callable[[str], Any]) -> tuple[Any, ...]:
    values = [text] if isinstance(text, (int, float)) else (
        list(text) if isinstance(text, (list, tuple)) else str(text).split(","))
    try:
        parsed = tuple(convert(str(v).strip()) for v in values)
    except ValueError:
        raise UsageError(f"--{name} {text!r}: give one number or a comma-separated list of "
                         f"{m} numbers (one per itemset size 1..{m})") from None
    if len(parsed) == 1:
        return parsed * m
    if len(parsed) != m:
        raise UsageError(f"--{name} lists {len(parsed)} values but --m is {m}: give one value "
                         f"or exactly {m}")
    return parsed


def parse_params(params: dict[str, Any]) -> KmParams:
    """Check every parameter and say which one is wrong and what to give instead."""
    m = params.get("m")
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise UsageError(f"--m {m!r}: the adversary's number of known items must be >= 1")
    k = _per_size(params.get("k", 2), m, "k", int)
    if any(value < 2 for value in k):
        raise UsageError(f"--k {params.get('k')!r}: every k must be >= 2 (k = 1 protects nobody)")
    sigma = _per_size(params.get("sigma", 1), m, "sigma", float)
    if any(not 0.5 < value <= 1 for value in sigma):
        raise UsageError(f"--sigma {params.get('sigma')!r}: every sigma must be in (0.5, 1] "
                         "(Theorem 1 needs sigma >= 0.5; 1 means exact k^m-anonymity)")
    error = params.get("error") or "ncp"
    if error not in ERRORS:
        raise UsageError(f"--error {error!r} is not one of {', '.join(ERRORS)}")
    trials = params.get("trials") or 1
    if not isinstance(trials, int) or trials < 1:
        raise UsageError(f"--trials {trials!r}: give a number of independent trials >= 1")
    exact_upto = params.get("exact_upto") or 0
    if not isinstance(exact_upto, int) or exact_upto < 0:
        raise UsageError(f"--exact-upto {exact_upto!r}: give an itemset size >= 0")
    batch = params.get("batch")
    batch = DEFAULT_BATCH if batch is None else batch
    if not isinstance(batch, (int, float)) or not 0 < batch <= 1:
        raise UsageError(f"--batch {batch!r}: give the share of proposed merges applied per "
                         "round, in (0, 1]")
    sampler = params.get("sampler") or DEFAULT_SAMPLER
    if sampler not in SAMPLERS:
        raise UsageError(f"--sampler {sampler!r} is not one of {', '.join(SAMPLERS)}")
    graph, coordinates = params.get("graph"), params.get("coordinates")
    if graph and params.get("hierarchy"):
        raise UsageError("--graph and --hierarchy both constrain the partition: give one")
    if error == "geo" and not (graph and coordinates):
        raise UsageError("--error geo needs --graph FILE and --coordinates FILE (item<TAB>x<TAB>y)")
    if coordinates and not graph:
        raise UsageError("--coordinates is used with --graph (the geographic error of regions)")
    min_steps = params.get("mcmc_min_steps")
    min_steps = DEFAULT_MCMC_MIN_STEPS if min_steps is None else min_steps
    if not isinstance(min_steps, int) or isinstance(min_steps, bool) or min_steps < 1:
        raise UsageError(f"--mcmc-min-steps {min_steps!r}: give a number of MCMC steps >= 1")
    certify = params.get("certify") or DEFAULT_CERTIFY
    if certify not in CERTIFY:
        raise UsageError(f"--certify {certify!r} is not one of {', '.join(CERTIFY)}")
    return KmParams(m, k, sigma, error, params.get("hierarchy"), params.get("column"), trials,
                    exact_upto, float(batch), sampler, graph, coordinates, min_steps, certify)
