"""The parameters of a swap run: click options and their validation, before any SQL runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from setanon_sql.errors import UsageError
from setanon_sql.io.files import readable_file

PAPER_SUPPORTS = (0.002, 0.003, 0.004, 0.005)
METHODS = ("similarity", "random", "suppress")

OPTIONS = (
    click.Option(["--column"], default=None,
                 help="set-valued column to swap (default: the dataset's only one)"),
    click.Option(["--categories", "categories"], default=None,
                 help="file of lines 'item<TAB>category' (item labels as loaded)"),
    click.Option(["--random-categories", "random_categories"], type=int, default=None,
                 help="N equal-sized random categories (the paper's artificial categorization)"),
    click.Option(["--category-level", "category_level"], type=int, default=None,
                 help="categories are the ancestors at this depth (root 0) of the column's "
                      "loaded hierarchy"),
    click.Option(["--uncategorized"], type=click.Choice(["error", "own"]), default="error",
                 show_default=True,
                 help="items the category file misses: stop, or put them in their own "
                      "category '(uncategorized)'"),
    click.Option(["--method"], type=click.Choice(METHODS),
                 default="similarity", show_default=True,
                 help="similarity: PartSwap/full swapping of the paper; random: RandSwap; "
                      "suppress: delete the tendency items (a tendency-targeted PartSupp)"),
    click.Option(["--exact-limit", "exact_limit"], type=int, default=2000, show_default=True,
                 help="pool size from which on all candidate pairs are ranked by Jaccard "
                      "similarity (greedy minimum-Jaccard matching)"),
    click.Option(["--max-items-per-record", "max_items_per_record"], type=int, default=None,
                 help="leave records longer than N items out of swapping and the figures (they "
                      "are published unchanged and counted); needed when one record is too "
                      "long for the work limit"),
    click.Option(["--max-rounds", "max_rounds"], type=int, default=100, show_default=True,
                 help="rounds of randomized pairing before the run gives up on a pool"),
    click.Option(["--fi-supports", "fi_supports"], default=",".join(map(str, PAPER_SUPPORTS)),
                 show_default=True, help="relative supports for the frequent-itemset figures"),
    click.Option(["--fi-max-size", "fi_max_size"], type=int, default=3, show_default=True,
                 help="largest frequent itemset size counted in the figures"),
    click.Option(["--metrics/--no-metrics", "metrics"], default=True, show_default=True,
                 help="compute frequent-itemset similarity and Diss after swapping"),
)

UNCATEGORIZED = "(uncategorized)"


@dataclass(frozen=True)
class SwapParams:
    """Validated parameters; ``source`` is 'file', 'random' or 'level'."""

    column: str | None
    source: str
    categories: str | None
    random_categories: int | None
    category_level: int | None
    uncategorized: str
    method: str
    exact_limit: int
    max_rounds: int
    fi_supports: tuple[float, ...]
    fi_max_size: int
    metrics: bool
    max_items_per_record: int | None = None


def _supports(text: Any) -> tuple[float, ...]:
    values = text if isinstance(text, (list, tuple)) else str(text).split(",")
    try:
        supports = tuple(sorted({float(v) for v in values if str(v).strip()}))
    except ValueError:
        raise UsageError(f"--fi-supports {text!r} must be numbers separated by commas, "
                         "e.g. 0.002,0.005") from None
    if not supports or not all(0 < s <= 1 for s in supports):
        raise UsageError(f"--fi-supports {text!r}: every support must lie in (0, 1]")
    return supports


def parse_params(params: dict[str, Any]) -> SwapParams:
    """Check the parameters a user gave (CLI or API) and fill in the defaults."""
    given = [name for name in ("categories", "random_categories", "category_level")
             if params.get(name) is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --categories FILE, --random-categories N or "
                         f"--category-level L (got {len(given)})")
    source = {"categories": "file", "random_categories": "random",
              "category_level": "level"}[given[0]]
    if source == "file":
        readable_file(params["categories"], "category file (--categories)")
    if source == "random" and int(params["random_categories"]) < 2:
        raise UsageError("--random-categories must be at least 2: one category hides nothing")
    if source == "level" and int(params["category_level"]) < 0:
        raise UsageError("--category-level must be 0 (the root) or deeper")
    defaults = {o.name: o.default for o in OPTIONS}
    merged = {**defaults, **{k: v for k, v in params.items() if v is not None}}
    if merged["uncategorized"] not in ("error", "own"):
        raise UsageError("--uncategorized must be 'error' or 'own'")
    if merged["method"] not in METHODS:
        raise UsageError(f"--method must be one of {', '.join(METHODS)}")
    cap = merged.get("max_items_per_record")
    if cap is not None and int(cap) < 1:
        raise UsageError("--max-items-per-record must be at least 1")
    for name in ("exact_limit", "max_rounds", "fi_max_size"):
        if int(merged[name]) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    return SwapParams(
        column=merged["column"], source=source, categories=params.get("categories"),
        random_categories=params.get("random_categories"),
        category_level=params.get("category_level"), uncategorized=merged["uncategorized"],
        method=merged["method"], exact_limit=int(merged["exact_limit"]),
        max_rounds=int(merged["max_rounds"]), fi_supports=_supports(merged["fi_supports"]),
        fi_max_size=int(merged["fi_max_size"]), metrics=bool(merged["metrics"]),
        max_items_per_record=None if cap is None else int(cap),
    )
