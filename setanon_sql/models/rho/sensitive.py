"""The sensitive item types: named in a file, or a random share of the item types.

Jia et al. Sec. 4 designate 40% of the item types as sensitive at random; ``--sensitive-fraction``
does the same, drawn in SQL by md5(seed:item_id) so the same seed picks the same items on every
backend. The result is the run table ``sensitive(item_id)``, which verify reads back.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError, UsageError
from setanon_sql.models.rho.qids import col, placeholder
from setanon_sql.names import staging_table

log = logging.getLogger(__name__)


def check_sensitive_source(file: str | None, fraction: float | None) -> None:
    """Exactly one source, a readable file or a fraction in (0, 1]."""
    if (file is None) == (fraction is None):
        raise UsageError("give the sensitive items with --sensitive FILE (one item per line) "
                         "or draw them with --sensitive-fraction F (e.g. 0.4), not both")
    if file is not None and not Path(file).is_file():
        raise InputError(f"--sensitive {file!r}: no such file; give a file with one sensitive "
                         "item label per line")
    if fraction is not None and not 0 < fraction <= 1:
        raise UsageError(f"--sensitive-fraction {fraction!r} must be in (0, 1] (0.4 = 40% of "
                         "the item types, as in Jia et al.)")


def draw_query(backend: Backend, dictionary: exp.Table, count: int) -> exp.Select:
    """``count`` item types in the order of md5(seed:item_id) (byte-wise), ties by id."""
    key = exp.func("md5", exp.DPipe(
        this=exp.DPipe(this=exp.cast(placeholder("seed"), "TEXT"),
                       expression=exp.Literal.string(":")),
        expression=exp.cast(col("item_id"), "TEXT")))
    return (exp.select(col("item_id")).from_(dictionary.copy())
            .order_by(exp.Ordered(this=backend.binary_sort_key(key)),
                      exp.Ordered(this=col("item_id")))
            .limit(exp.convert(count)))


def build_sensitive(backend: Backend, target: exp.Table, items: exp.Table,
                    dictionary: exp.Table, file: str | None, fraction: float | None,
                    seed: int) -> dict[str, object]:
    """Create ``target(item_id)``; returns figures (count, unknown labels of the file)."""
    figures: dict[str, object] = {}
    if fraction is not None:
        n_types = int(backend.scalar("rho_count_items", tables={"dict": dictionary}))
        count = round(fraction * n_types)
        if count == 0:
            raise UsageError(f"--sensitive-fraction {fraction} of {n_types} item types is no "
                             "item at all: nothing to protect; give a larger fraction")
        backend.materialize(target, draw_query(backend, dictionary, count), {"seed": seed})
        figures["sensitive_fraction"] = fraction
    else:
        assert file is not None
        lines = backend.table(staging_table("rholines"))
        try:
            backend.load_lines(Path(file), lines)
            unknown = backend.query("rho_unknown_sensitive_labels",
                                    tables={"lines": lines, "dict": dictionary})
            if unknown:
                labels = [label for label, _ in unknown]
                figures["unknown_sensitive"] = {"count": int(unknown[0][1]), "first": labels}
                log.warning("--sensitive %s: %d label(s) are not items of the data and are "
                            "ignored: %s%s", file, unknown[0][1], ", ".join(labels),
                            " ..." if unknown[0][1] > len(labels) else "")
            backend.materialize(target, "rho_sensitive_from_lines", None,
                                {"lines": lines, "dict": dictionary})
        finally:
            backend.drop_table(lines)
    present = int(backend.scalar("rho_sensitive_in_data", tables={"sens": target, "items": items}))
    if present == 0:
        source = f"--sensitive {file}" if file else "--sensitive-fraction"
        raise UsageError(f"{source} gives no sensitive item that occurs in the data: every "
                         "rule is safe and there is nothing to do")
    figures["sensitive_items"] = present
    return figures
