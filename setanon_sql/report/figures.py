"""A run's own figures (``run.figures``) as labelled, formatted values.

Models put whatever figures they compute in a JSON dict; the report shows every one of them, so
it grows with the models without changes. Keys it knows (NCP, suppressed items, disclosed share,
labels, classes, KL, Jaccard, Diss, ...) get a readable name; shares print as percentages.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

# Known keys, or key fragments, and the name a steward reads. Order matters: first match wins.
_KNOWN: tuple[tuple[str, str], ...] = (
    ("ncp", "NCP (normalized certainty penalty)"),
    ("generalized_share", "share of item occurrences generalized"),
    ("suppressed_share", "share of item occurrences suppressed"),
    ("suppressed_items", "items suppressed"),
    ("suppressed", "suppressed"),
    ("disclosed_share", "share of items disclosed"),
    ("published_labels", "published labels"),
    ("labels", "labels"),
    ("classes", "equivalence classes"),
    ("kl", "KL divergence"),
    ("jaccard", "Jaccard similarity"),
    ("diss", "Diss (dissimilarity)"),
    ("swapped", "items swapped"),
    ("item_occurrences", "item occurrences"),
    ("hierarchy_leaves", "leaves of the hierarchy"),
    ("hierarchy", "hierarchy"),
    ("rounds", "rounds of the search"),
)
_SHARE_WORDS = ("share", "ratio", "fraction", "rate")


@dataclass(frozen=True)
class FigureRow:
    """One figure: its key, the name shown, its value as text, and a table if it is one."""

    key: str
    name: str
    text: str
    header: list[str] | None = None
    rows: list[list[str]] | None = None

    @property
    def is_table(self) -> bool:
        return self.rows is not None


def figure_name(key: str) -> str:
    """The readable name of a figure key (the key itself, spaced, when unknown)."""
    lowered = key.lower()
    for fragment, name in _KNOWN:
        if lowered == fragment:
            return name
    for fragment, name in _KNOWN:
        if fragment in lowered.split("_") or (len(fragment) > 3 and fragment in lowered):
            return f"{name} ({key})"
    return key.replace("_", " ")


def is_share(key: str) -> bool:
    """Whether a figure is a share in [0, 1] that reads best as a percentage."""
    return any(word in key.lower().split("_") for word in _SHARE_WORDS)


def format_value(key: str, value: Any) -> str:
    """A scalar figure as text: percentages for shares, thousands separators for counts."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if is_share(key) and 0 <= value <= 1:
            return f"{100 * value:.2f} %"
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:.4g}"
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _inline(key: str, value: Any) -> str | None:
    """Short containers on one line: 'a: 1, b: 2' or '1, 2, 3'; None when they are tables."""
    if isinstance(value, dict) and all(_scalar(v) for v in value.values()):
        return ", ".join(f"{k}: {format_value(key, v)}" for k, v in sorted(value.items()))
    if isinstance(value, list) and all(_scalar(v) for v in value):
        return ", ".join(format_value(key, v) for v in value) or "none"
    return None


def _table(key: str, value: Any) -> tuple[list[str], list[list[str]]] | None:
    """Lists of records, lists of rows and dicts of dicts as (header, rows) of text."""
    def cell(column: str, v: Any) -> str:
        return _inline(column, v) or format_value(column, v)

    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        header = sorted({k for entry in value for k in entry})
        return header, [[cell(k, entry.get(k)) for k in header] for entry in value]
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        width = max(len(v) for v in value)
        return [str(i + 1) for i in range(width)], [[cell(key, c) for c in v] for v in value]
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        header = sorted({k for inner in value.values() for k in inner})
        return ["", *header], [[k, *(cell(c, inner.get(c)) for c in header)]
                               for k, inner in sorted(value.items())]
    return None


def figure_rows(figures: dict[str, Any]) -> list[FigureRow]:
    """Every figure of a run: scalars and short containers first (in key order), then tables."""
    scalars, tables = [], []
    for key in sorted(figures):
        value, name = figures[key], figure_name(key)
        inline, table = _inline(key, value), _table(key, value)
        if _scalar(value) or inline is not None:
            scalars.append(FigureRow(key, name, inline or format_value(key, value)))
        elif table is not None:
            tables.append(FigureRow(key, name, f"{len(table[1])} rows", *table))
        else:
            scalars.append(FigureRow(key, name, format_value(key, value)))
    return scalars + tables


def numeric_figures(figures: dict[str, Any]) -> dict[str, float]:
    """The figures that are plain numbers (what a trade-off view can plot)."""
    return {key: float(value) for key, value in figures.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(float(value))}
