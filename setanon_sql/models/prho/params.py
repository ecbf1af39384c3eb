"""The parameters of ``--model prho``, checked before the run is recorded (nothing is written)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import InputError, UsageError
from setanon_sql.models.rho.suppression import rho_fraction

SETTINGS = ("fixed", "personalized", "fixed+", "personalized+")
DEFAULT_NOISE = 0.01  # Nakagawa et al. Sec. 6.1: "adding 1% of noise"
CHOICES = ("paper", "fewest")  # d and the records of Alg. 1 l.12-14 (see rules.suppress)
STOP_RULES = ("paper", "bound")  # when SAMPLESUPPRESSOR ends (see sampler.py)


@dataclass(frozen=True)
class PrhoParams:
    """Validated parameters. ``m`` None is ``--m all`` (any subset of a record, Def. 3).

    ``epsilon``/``delta`` set: SAMPLESUPPRESSOR (Alg. 2) for (ε, δ)-ρ^m; else SUPPRESSOR (Alg. 1).
    """

    rho: Fraction
    m: int | None
    epsilon: float | None
    delta: float | None
    constraint: str | None
    setting: str | None
    sensitive_fraction: float | None
    noise: float
    column: str | None
    choice: str = "paper"
    repair_pool: int = 1
    stop_rule: str = "paper"
    exact_upto: int = 0

    @property
    def sampled(self) -> bool:
        return self.epsilon is not None

    @property
    def n_samples(self) -> int:
        """n_S = ⌈ln(1/δ) / (2ε²)⌉ adversaries per ℓ (Alg. 2 l.2, eq. 11)."""
        assert self.epsilon is not None and self.delta is not None
        return sample_size(self.epsilon, self.delta)


def sample_size(epsilon: float, delta: float) -> int:
    """Theorem 7: |S| >= ln(1/δ) / (2ε²) samples, all safe, give Pr[H_ℓ < ε] >= 1 - δ."""
    return math.ceil(math.log(1 / delta) / (2 * epsilon * epsilon))


def _unit(params: dict[str, Any], key: str, option: str, what: str) -> float | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise UsageError(f"{option} {value!r} must be a number in (0, 1): {what}")
    return float(value)


def _parse_m(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().lower() == "all":
        return None
    try:
        m = int(value) if not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        m = 0
    if m < 1 or (isinstance(value, float) and value != m):
        raise UsageError(f"--m {value!r}: give the largest number of items the adversary knows "
                         "(an integer >= 1, e.g. 5) or 'all'")
    return m


def count_lines(path: Path) -> int:
    """Lines of a FIMI file as the loader counts them (a final newline ends the last line)."""
    count, last = 0, b"\n"
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def parse_params(params: dict[str, Any]) -> PrhoParams:
    """Check every parameter and say which one is wrong and what to give instead."""
    rho = params.get("rho")
    try:
        value = rho_fraction(rho) if rho is not None and not isinstance(rho, bool) else None
    except (ValueError, TypeError):
        value = None
    if value is None or not 0 < value < 1:
        raise UsageError(f"--rho {rho!r} must be a number in (0, 1): the highest confidence an "
                         "adversary may have in one of the target's sensitive items (e.g. 0.5)")
    m = _parse_m(params.get("m", "all"))
    epsilon = _unit(params, "epsilon", "--epsilon", "the tolerated share of unsafe adversaries")
    delta = _unit(params, "delta", "--delta", "the probability that the share exceeds epsilon")
    if (epsilon is None) != (delta is None):
        raise UsageError("give both --epsilon and --delta (e.g. 0.05 0.05) for SAMPLESUPPRESSOR, "
                         "or neither for the exact SUPPRESSOR")
    if epsilon is not None and m is None:
        raise UsageError("--epsilon/--delta sample adversaries of 1..m items: give --m N "
                         "(e.g. --m 5), not --m all")
    constraint, setting = params.get("constraint"), params.get("setting")
    if (constraint is None) == (setting is None):
        raise UsageError("give the sensitive constraint with --constraint FILE (line n = the "
                         "items record n protects) or generate it with --setting "
                         f"{'|'.join(SETTINGS)}, not both")
    fraction = params.get("sensitive_fraction")
    noise = params.get("noise")
    if setting is not None:
        if setting not in SETTINGS:
            raise UsageError(f"--setting {setting!r} is not one of {', '.join(SETTINGS)}")
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
                or not 0 < fraction <= 1:
            raise UsageError(f"--sensitive-fraction {fraction!r} must be in (0, 1] with "
                             "--setting (0.4 = 40% of the item types, as in Exp. 1)")
        if noise is not None and (isinstance(noise, bool) or not isinstance(noise, (int, float))
                                  or not 0 <= noise < 0.5):
            raise UsageError(f"--noise {noise!r} must be in [0, 0.5) (0.01 = 1%, Exp. 2)")
    elif fraction is not None or noise is not None:
        raise UsageError("--sensitive-fraction and --noise generate a constraint: use them with "
                         "--setting, not with --constraint FILE")
    choice = params.get("choice") or "paper"
    if choice not in CHOICES:
        raise UsageError(f"--choice {choice!r} is not one of {', '.join(CHOICES)} ('paper' = "
                         "eq. 8 and random records, 'fewest' = fewest suppressions)")
    pool = params.get("repair_pool")
    pool = 1 if pool is None else pool
    if isinstance(pool, bool) or not isinstance(pool, int) or pool < 1:
        raise UsageError(f"--repair-pool {pool!r} must be a whole number >= 1 (1 = the paper: "
                         "a sweep repairs the unsafe adversaries among its n_S check samples)")
    if pool > 1 and epsilon is None:
        raise UsageError("--repair-pool applies to SAMPLESUPPRESSOR: give --epsilon and "
                         "--delta too, or leave it out")
    stop_rule = params.get("stop_rule") or "paper"
    if stop_rule not in STOP_RULES:
        raise UsageError(f"--stop-rule {stop_rule!r} is not one of {', '.join(STOP_RULES)} "
                         "('paper' = a sweep whose n_S check samples are all safe, 'bound' = a "
                         "sweep whose drawn unsafe share has an upper confidence bound below "
                         "epsilon)")
    if stop_rule != "paper" and epsilon is None:
        raise UsageError("--stop-rule applies to SAMPLESUPPRESSOR: give --epsilon and --delta "
                         "too, or leave it out")
    exact_upto = _parse_exact_upto(params.get("exact_upto"), m, epsilon, choice)
    if constraint is not None and not Path(constraint).is_file():
        raise InputError(f"--constraint {constraint!r}: no such file; give a FIMI file whose "
                         "line n lists the items record n protects")
    return PrhoParams(value, m, epsilon, delta, constraint, setting,
                      float(fraction) if fraction is not None else None,
                      float(noise) if noise is not None else DEFAULT_NOISE, params.get("column"),
                      choice, pool, stop_rule, exact_upto)


def _parse_exact_upto(value: Any, m: int | None, epsilon: float | None, choice: str) -> int:
    """``--exact-upto L``: SAMPLESUPPRESSOR starts from SUPPRESSOR's output for qids of up to L
    items (0: from D, as Alg. 2 does)."""
    upto = 0 if value is None else value
    if isinstance(upto, bool) or not isinstance(upto, int) or upto < 0:
        raise UsageError(f"--exact-upto {value!r} must be a whole number >= 0 (the largest "
                         "adversary made safe by SUPPRESSOR before the sampled sweeps)")
    if upto and epsilon is None:
        raise UsageError("--exact-upto applies to SAMPLESUPPRESSOR: give --epsilon and --delta "
                         "too, or leave it out (without them every size is exact)")
    if upto and m is not None and upto > m:
        raise UsageError(f"--exact-upto {upto} is above --m {m}: give at most --m")
    if upto and choice != "paper":
        raise UsageError("--exact-upto runs SUPPRESSOR with eq. 8's choice: leave out --choice "
                         f"{choice} or --exact-upto")
    return upto


def validate(backend: Backend, dataset: Dataset, params: dict[str, Any]) -> None:
    """The Model's validate hook: parameters, and the constraint file's line count."""
    chosen = parse_params(params)
    if chosen.constraint is not None:
        lines = count_lines(Path(chosen.constraint))
        if lines != dataset.n_records:
            raise InputError(
                f"--constraint {chosen.constraint}: {lines:,} lines, but dataset "
                f"{dataset.name!r} has {dataset.n_records:,} records; line n must list the "
                "sensitive items of record n (an empty line protects nothing)")
