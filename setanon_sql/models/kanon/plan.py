"""What a kanon run works on: its parameters, checked, and the kind of every quasi-identifier.

Everything here is validated before the run writes anything, so bad input fails with one line
naming the option or column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import InputError, UsageError
from setanon_sql.io.hierarchy import find_hierarchy, hierarchy_name


@dataclass(frozen=True)
class QI:
    """One quasi-identifier: 'numeric' (intervals), 'category' (hierarchy or flat) or 'set'."""

    attribute: Attribute
    kind: str
    hierarchy_id: int | None = None

    @property
    def no(self) -> int:
        return self.attribute.attr_no

    @property
    def name(self) -> str:
        return self.attribute.name


@dataclass(frozen=True)
class Plan:
    k: int
    beta: float
    epsilon: float
    n_records: int
    qis: tuple[QI, ...]

    @property
    def budget(self) -> int:
        """Records that may be deleted: epsilon |T| (§3.4), rounded down."""
        return math.floor(self.epsilon * self.n_records + 1e-9)


def _fraction(params: dict[str, Any], key: str, option: str) -> float:
    value = params.get(key)
    value = 0.0 if value is None else value
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{option} must be a number in [0, 1), got {value!r}") from None
    if not 0.0 <= value < 1.0:
        raise UsageError(f"{option} must be in [0, 1) (a share of the records), got {value}")
    return value


def _names(value: Any) -> list[str]:
    if not value:
        return []
    parts = value if isinstance(value, list | tuple) else [value]
    return [p.strip() for part in parts for p in str(part).split(",") if p.strip()]


def _has_nulls(backend: Backend, dataset: Dataset, attribute: Attribute) -> bool:
    query = (exp.select(exp.func("count", exp.Star()))
             .from_(backend.table(dataset.records_table))
             .where(exp.column(attribute.column).is_(exp.null())))
    return int(backend.scalar(query)) > 0


def _single(backend: Backend, dataset: Dataset, attribute: Attribute, numeric: set[str],
            categorical: set[str]) -> QI:
    found = find_hierarchy(backend, hierarchy_name(dataset, attribute))
    if attribute.name in numeric:
        if attribute.value_type != "integer":
            raise InputError(
                f"--numeric {attribute.name}: column {attribute.name!r} of dataset "
                f"{dataset.name!r} is not numeric (it holds text); leave it out of --numeric "
                "to generalize it as a category")
        found = None
    if found is not None or attribute.value_type != "integer" or attribute.name in categorical:
        return QI(attribute, "category", found.hierarchy_id if found else None)
    if _has_nulls(backend, dataset, attribute):
        raise InputError(
            f"numeric column {attribute.name!r} of dataset {dataset.name!r} has empty values; "
            "intervals need a value for every record: fill them, pass --categorical "
            f"{attribute.name} (an empty value is then a category of its own), or leave the "
            "column out of --qi")
    return QI(attribute, "numeric")


def make_plan(backend: Backend, dataset: Dataset, params: dict[str, Any]) -> Plan:
    """Check ``params`` against ``dataset``; raises UsageError/InputError naming the problem."""
    k = params.get("k")
    if isinstance(k, bool) or not isinstance(k, int):
        raise UsageError(f"--k must be an integer >= 2, got {k!r}")
    if k < 2:
        raise UsageError(f"--k must be >= 2 (k = 1 needs no anonymization), got {k}")
    if k > dataset.n_records:
        raise UsageError(f"--k {k} is larger than the {dataset.n_records} records of dataset "
                         f"{dataset.name!r}; choose k <= {dataset.n_records}")
    beta = _fraction(params, "beta", "--beta")
    epsilon = _fraction(params, "suppress_budget", "--suppress-budget")
    candidates = [a for a in dataset.attributes if a.role in ("qi", "set")]
    chosen = _names(params.get("qi"))
    if chosen:
        by_name = {a.name: a for a in dataset.attributes}
        for name in chosen:
            if name not in by_name:
                raise UsageError(f"--qi {name}: dataset {dataset.name!r} has no such column; "
                                 f"its quasi-identifiers are: "
                                 f"{', '.join(a.name for a in candidates)}")
            if by_name[name].role not in ("qi", "set"):
                raise UsageError(f"--qi {name}: column {name!r} was loaded as "
                                 f"{by_name[name].role!r}, not as a quasi-identifier")
        candidates = [a for a in candidates if a.name in chosen]
    if not candidates:
        raise UsageError(f"dataset {dataset.name!r} has no quasi-identifier to anonymize")
    numeric = set(_names(params.get("numeric")))
    categorical = set(_names(params.get("categorical")))
    for option, names in (("--numeric", numeric), ("--categorical", categorical)):
        for name in names:
            if name not in {a.name for a in candidates if not a.is_set}:
                raise UsageError(f"{option} {name}: not a single-valued quasi-identifier of "
                                 f"this run")
    qis = tuple(QI(a, "set") if a.is_set else _single(backend, dataset, a, numeric, categorical)
                for a in candidates)
    return Plan(k, beta, epsilon, dataset.n_records, qis)
