"""The parameters of ``--model rho``, checked before anything is written."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from setanon_sql.errors import UsageError
from setanon_sql.models.rho.sensitive import check_sensitive_source
from setanon_sql.models.rho.suppression import rho_fraction

HEURISTICS = ("dist", "mine", "global", "tdcontrol")


@dataclass(frozen=True)
class RhoParams:
    """Validated parameters; ``m`` None means the adversary may know any number of items.

    ``b_max`` None puts every qid in one buffer. Jia et al. bound the buffer (10^6 qids, Sec. 4)
    to bound the memory of an in-memory enumeration, and find that b_max changes only the time,
    never the loss, and that a larger buffer is faster until it holds every qid (Sec. 4.3,
    Fig. 6). Here the supports of every qid are counted in the database whatever the buffer,
    so a bound saves no memory; it only splits a stage into waves of rounds (1M Quest records
    at ``--m 3``: hundreds of rounds).
    """

    rho: Fraction
    m: int | None
    heuristic: str
    b_max: int | None
    t_max: float | None
    sensitive: str | None
    sensitive_fraction: float | None
    column: str | None
    hierarchy: str | None = None
    trim_above: int | None = None


def _positive_int(params: dict[str, Any], key: str, option: str, what: str) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"{option} {value!r}: give {what} >= 1")
    return value


def parse_params(params: dict[str, Any]) -> RhoParams:
    """Check every parameter and say which one is wrong and what to give instead."""
    rho = params.get("rho")
    try:
        value = rho_fraction(rho) if rho is not None else None
    except (ValueError, TypeError):
        value = None
    if value is None or not 0 < value < 1:
        raise UsageError(f"--rho {rho!r} must be a number in (0, 1): the highest confidence an "
                         "adversary may have in a sensitive item (e.g. 0.7)")
    m = _positive_int(params, "m", "--m", "the largest number of items the adversary knows")
    heuristic = params.get("heuristic") or "mine"
    if heuristic not in HEURISTICS:
        raise UsageError(f"--heuristic {heuristic!r} is not one of {', '.join(HEURISTICS)}")
    b_max = _positive_int(params, "b_max", "--b-max", "the qid buffer's capacity")
    t_max = params.get("t_max")
    if t_max is not None and (not isinstance(t_max, (int, float)) or t_max <= 0):
        raise UsageError(f"--t-max {t_max!r}: give the largest estimated cost of a partition "
                         "(eq. 6), > 0, e.g. 500")
    hierarchy = params.get("hierarchy")
    if heuristic == "tdcontrol" and t_max is not None:
        raise UsageError(f"--t-max {t_max!r}: --heuristic tdcontrol does not partition the data "
                         "(a cut of the hierarchy is global); drop --t-max")
    if hierarchy is not None and heuristic != "tdcontrol":
        raise UsageError(f"--hierarchy {hierarchy}: only --heuristic tdcontrol generalizes "
                         f"items; --heuristic {heuristic} suppresses them. Drop --hierarchy or "
                         "use --heuristic tdcontrol")
    trim_above = _positive_int(params, "trim_above", "--trim-above",
                               "the most items a record holding a sensitive item may keep")
    if trim_above is not None and m is not None:
        raise UsageError(f"--trim-above {trim_above} is for an adversary who knows any number of "
                         f"items; with --m {m} the check is bounded already: drop one of them")
    if trim_above is not None and heuristic == "tdcontrol":
        raise UsageError(f"--trim-above {trim_above}: --heuristic tdcontrol suppresses sensitive "
                         "item types globally and does not trim records; drop --trim-above")
    fraction = params.get("sensitive_fraction")
    check_sensitive_source(params.get("sensitive"), fraction)
    return RhoParams(value, m, heuristic, b_max,
                     float(t_max) if t_max is not None else None, params.get("sensitive"),
                     float(fraction) if fraction is not None else None, params.get("column"),
                     hierarchy, trim_above)
