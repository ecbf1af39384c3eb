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
    """One figure: its key, the name shown, its value as text, and nested rows if any."""

    key: str
    name: str
    text: str
    table: list[dict[str, Any]] | None = None


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


def figure_rows(figures: dict[str, Any]) -> list[FigureRow]:
    """Every figure of a run, scalars first (in key order), then lists of records as tables."""
    scalars, tables = [], []
    for key in sorted(figures):
        value = figures[key]
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            tables.append(FigureRow(key, figure_name(key), f"{len(value)} rows", value))
        else:
            scalars.append(FigureRow(key, figure_name(key), format_value(key, value)))
    return scalars + tables


def numeric_figures(figures: dict[str, Any]) -> dict[str, float]:
    """The figures that are plain numbers (what a trade-off view can plot)."""
    return {key: float(value) for key, value in figures.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(float(value))}
