"""The report's plots: matplotlib figures from aggregates, returned as inline SVG text.

Only aggregates reach this module (see :mod:`setanon_sql.report.data`). Figures are built with
matplotlib's object API (no pyplot, no global state) and saved as SVG with text kept as text,
no timestamp and a fixed id salt, so the same data gives the same bytes.
"""

from __future__ import annotations

import functools
import io
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import matplotlib
from matplotlib import ticker
from matplotlib.figure import Figure

BEFORE = "#4c72b0"  # colour-blind safe pair (seaborn "deep" blue / orange)
AFTER = "#dd8452"
REMOVED = "#c44e52"
ADDED = "#55a868"
_WIDTH = 6.4
_NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


class _PlainLog(ticker.LogFormatter):
    """Plain numbers on log axes ("400", not "4 x 10^2"). Which ticks get a label is left to
    matplotlib's log formatter (minor ticks are labelled when the axis spans little): its
    public ``__call__`` answers "" for a tick it leaves bare, and we only reword the others."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        if not super().__call__(x, pos):
            return ""
        return f"{x:,.0f}" if x >= 1 else f"{x:g}"


def _plain_log(axis: Any) -> None:
    axis.set_major_formatter(_PlainLog(labelOnlyBase=False))
    axis.set_minor_formatter(_PlainLog(labelOnlyBase=False))


# Every figure is drawn with matplotlib's defaults, whatever the user's matplotlibrc says, in
# DejaVu Sans (shipped with matplotlib; it has the ρ, ε, σ, δ, ℓ, ≤ and … the labels use), so
# no glyph is missing and the same data gives the same bytes on every machine.
_FONT = "DejaVu Sans"

_F = TypeVar("_F", bound=Callable[..., str])


def _styled(draw: _F) -> _F:
    """Run a plotting function under matplotlib's default style, in :data:`_FONT`."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        with matplotlib.rc_context():
            matplotlib.rcdefaults()
            matplotlib.rcParams["font.family"] = "sans-serif"
            matplotlib.rcParams["font.sans-serif"] = [_FONT]
            return draw(*args, **kwargs)

    return cast(_F, wrapper)


def to_svg(figure: Figure, salt: str) -> str:
    """The figure as an ``<svg>`` element to inline in HTML (no XML prolog, no date)."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"setanon-{salt}"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata=_NO_METADATA)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _figure(height: float = 3.4) -> tuple[Figure, Any]:
    # No layout engine: the tight bounding box at save time suffices for one panel, at half
    # the cost of a constrained layout.
    figure = Figure(figsize=(_WIDTH, height))
    axes = figure.add_subplot()
    axes.grid(True, which="major", color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    return figure, axes


@_styled
def support_curves(before: Sequence[Sequence[int]], after: Sequence[Sequence[int]] | None) -> str:
    """Item support by rank, before and after, on log-log axes."""
    figure, axes = _figure()
    for points, label, colour in ((before, "as loaded", BEFORE), (after, "published", AFTER)):
        if points:
            axes.plot([p[0] for p in points], [p[1] for p in points], drawstyle="steps-post",
                      color=colour, label=label, linewidth=1.6)
    axes.set_xscale("log")
    axes.set_yscale("log")
    _plain_log(axes.xaxis)
    _plain_log(axes.yaxis)
    axes.set_xlabel("item rank (most frequent first)")
    axes.set_ylabel("support (records)")
    axes.legend(frameon=False)
    return to_svg(figure, "support")


@_styled
def record_lengths(before: Sequence[Sequence[int]], after: Sequence[Sequence[int]] | None) -> str:
    """Records by number of items, before and after (log count axis)."""
    figure, axes = _figure()
    series = [(before, "as loaded", BEFORE)]
    if after is not None:
        series.append((after, "published", AFTER))
    for points, label, colour in series:
        axes.plot([p[0] for p in points], [p[1] for p in points], drawstyle="steps-mid",
                  color=colour, label=label, linewidth=1.6)
    axes.set_yscale("log")
    _plain_log(axes.yaxis)
    axes.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes.set_xlabel("record length (items)")
    axes.set_ylabel("records")
    axes.legend(frameon=False)
    return to_svg(figure, "lengths")


@_styled
def item_changes(top: Sequence[dict[str, Any]]) -> str:
    """Occurrences removed from and added to records, for the labels changed most."""
    rows = list(reversed(top))
    figure, axes = _figure(height=max(2.4, 0.28 * len(rows) + 1.2))
    positions = range(len(rows))
    axes.barh(positions, [-r["removed"] for r in rows], color=REMOVED,
              label="removed from records (suppressed, generalized or swapped away)")
    axes.barh(positions, [r["added"] for r in rows], color=ADDED,
              label="added to records (generalized label or swapped in)")
    axes.set_yticks(list(positions), [_short(r["label"]) for r in rows])
    axes.axvline(0, color="#333333", linewidth=0.8)
    axes.set_xlabel("item occurrences (removed to the left, added to the right)")
    axes.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{abs(v):,.0f}"))
    axes.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize="small")
    with warnings.catch_warnings():
        # The labels are the user's data, in any script. The SVG keeps them as text, which the
        # browser draws with its own fonts; matplotlib only measures them for the layout, so a
        # glyph DejaVu Sans lacks (CJK, say) is no defect of the page.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font",
                                category=UserWarning)
        return to_svg(figure, "changes")


def _short(label: str, limit: int = 28) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


@_styled
def class_sizes(sizes: Sequence[Sequence[int]], k: float | None) -> str:
    """Equivalence classes by size; the model's k as a dashed line when known."""
    figure, axes = _figure()
    axes.bar([s[0] for s in sizes], [s[1] for s in sizes], color=AFTER, width=0.8)
    if k is not None:
        axes.axvline(k - 0.5, color="#333333", linestyle="--", linewidth=1, label=f"k = {k:g}")
        axes.legend(frameon=False)
    axes.set_yscale("log")
    _plain_log(axes.yaxis)
    axes.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes.set_xlabel("class size (records)")
    axes.set_ylabel("classes")
    return to_svg(figure, "classes")


@_styled
def record_classes(before: Sequence[Sequence[int]], after: Sequence[Sequence[int]] | None,
                   k: float | None) -> str:
    """Share of records in classes of identical records of size <= s, before and after."""
    figure, axes = _figure()
    series = [(before, "as loaded", BEFORE)]
    if after is not None:
        series.append((after, "published", AFTER))
    for sizes, label, colour in series:
        total = sum(size * n for size, n in sizes) or 1
        xs, ys, running = [], [], 0
        for size, n in sizes:
            running += size * n
            xs.append(size)
            ys.append(100 * running / total)
        axes.plot(xs, ys, drawstyle="steps-post", marker=".", color=colour, label=label)
    if k is not None:
        axes.axvline(k - 0.5, color="#333333", linestyle="--", linewidth=1, label=f"k = {k:g}")
    axes.set_xscale("log")
    _plain_log(axes.xaxis)
    axes.set_ylim(0, 102)
    axes.set_xlabel("class size s (records identical in every published QI and set)")
    axes.set_ylabel("% of records in classes of size ≤ s")
    axes.legend(frameon=False)
    return to_svg(figure, "records")


@_styled
def unicity(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]] | None) -> str:
    """Share of unique ℓ-itemsets and of records holding one, for ℓ = 1, 2, before and after."""
    figure = Figure(figsize=(_WIDTH, 3.2), layout="constrained")
    panels = figure.subplots(1, 2, sharey=True)
    versions = [("as loaded", before, BEFORE)]
    if after is not None:
        versions.append(("published", after, AFTER))
    width = 0.8 / len(versions)
    for axes, key, title in ((panels[0], "unique_share", "distinct ℓ-itemsets of support 1"),
                             (panels[1], "records_at_risk_share", "records holding one")):
        for offset, (label, rows, colour) in enumerate(versions):
            xs = [row["ell"] + (offset - (len(versions) - 1) / 2) * width for row in rows]
            ys = [100 * row[key] for row in rows]
            axes.bar(xs, ys, width=width, color=colour, label=label)
        axes.set_xticks([1, 2], ["ℓ = 1", "ℓ = 2"])
        axes.set_title(title, fontsize="medium")
        axes.grid(True, axis="y", color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
    panels[0].set_ylabel("percent")
    panels[1].legend(frameon=False)
    return to_svg(figure, "unicity")


@_styled
def tradeoff(series: dict[str, list[tuple[float, float]]], x_label: str, y_label: str,
             percent: bool, categories: Sequence[str] | None, salt: str) -> str:
    """One utility figure against the privacy parameter, one line per model (and fixed params).

    ``categories`` replaces numeric x ticks when the runs differ in a non-numeric way.
    """
    figure, axes = _figure(height=3.0)
    for (label, points), marker in zip(sorted(series.items()), "osD^v<>ph*", strict=False):
        points = sorted(points)
        axes.plot([p[0] for p in points], [100 * p[1] if percent else p[1] for p in points],
                  marker=marker, label=label, linewidth=1.6)
    xs = sorted({p[0] for points in series.values() for p in points})
    if categories is not None:
        axes.set_xticks(range(len(categories)), list(categories))
    else:
        if xs and xs[0] > 0 and xs[-1] / xs[0] >= 8:  # k = 2, 5, 10, 20 reads best on log x
            axes.set_xscale("log")
            axes.xaxis.set_minor_locator(ticker.NullLocator())
        axes.set_xticks(xs, [f"{x:g}" for x in xs])
    axes.set_title(y_label, fontsize="medium")
    axes.set_xlabel(x_label)
    if percent:
        top = max((100 * p[1] for points in series.values() for p in points), default=0)
        axes.set_ylabel("percent")
        axes.set_ylim(0, max(top * 1.1, 1))
    if len(series) > 1:
        axes.legend(frameon=False, fontsize="small")
    return to_svg(figure, salt)
