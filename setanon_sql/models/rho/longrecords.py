"""``--trim-above L``: every qid size, checked through qids of at most L - 1 items.

Why this is enough (Jia et al. Sec. 2.1): a rule q -> e is unsafe only if conf(q -> e) =
sup(q + {e}) / sup(q) > ρ > 0, so some record holds q + {e}; that record holds the sensitive
item e. If no record of more than L items holds a sensitive item, that record has at most L
items and |q| <= L - 1. So a table in which every record holding a sensitive item has at most
L items, and which is safe for every qid of up to L - 1 items, is safe for every qid.

Why it is needed: an exact check of every qid enumerates the subsets of every record, and whole
files have records of 76-267 items. Those long records are nearly all unique, and a unique
record holding a sensitive item e is unsafe at any qid size on its own (q = the record without
e has support 1 and confidence 1), so the search would have to take their sensitive items out
anyway. Trimming does that first, in one pass: a record of more than L items keeps its
non-sensitive items and as many of its sensitive items as fit in L (at random: md5(seed:
record:item), byte-wise, the same on every backend), and the staged search (:mod:`.stages`)
then makes qids of up to L - 1 items safe. Suppression only removes items, so no record of
more than L items holds a sensitive item at the end. The run reports L, the records trimmed
and the occurrences removed; ``setanon verify`` re-derives the bound from the published table
alone (the longest published record holding a sensitive item), not from L.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.check import trimmed_histogram
from setanon_sql.models.rho.qids import col, placeholder
from setanon_sql.sqlrender import with_alias


def trim_query(backend: Backend, base: exp.Table, sens: exp.Table) -> exp.Select:
    """``base`` (record_id, item_id, part) with long records trimmed to ``:above`` items."""
    def window(func: exp.Expr, *partition: exp.Expr, order: list[exp.Ordered] | None = None
               ) -> exp.Window:
        return exp.Window(this=func, partition_by=list(partition),
                          order=exp.Order(expressions=order) if order else None)

    held = exp.Not(this=col("item_id", "s").is_(exp.null()))
    flag = exp.Case(ifs=[exp.If(this=held, true=exp.Literal.number(1))],
                    default=exp.Literal.number(0))
    text: exp.Expr = exp.cast(placeholder("seed"), "TEXT")
    for piece in (col("record_id", "b"), col("item_id", "b")):
        text = exp.DPipe(this=exp.DPipe(this=text, expression=exp.Literal.string(":")),
                         expression=exp.cast(piece, "TEXT"))
    hkey = backend.binary_sort_key(exp.func("md5", text))
    record = col("record_id", "b")
    inner = (exp.select(
        record, col("item_id", "b"), col("part", "b"), flag.as_("sens", quoted=True),
        window(exp.func("count", exp.Star()), record.copy()).as_("len", quoted=True),
        window(exp.func("count", col("item_id", "s")), record.copy()).as_("n_sens",
                                                                          quoted=True),
        window(exp.RowNumber(), record.copy(), flag.copy(),
               order=[exp.Ordered(this=hkey), exp.Ordered(this=col("item_id", "b"))])
        .as_("k", quoted=True))
        .from_(with_alias(base, "b"))
        .join(with_alias(sens, "s"), on=col("item_id", "s").eq(col("item_id", "b")),
              join_type="left"))
    above = placeholder("above")
    kept_sensitive = exp.LTE(this=exp.Add(this=exp.Sub(this=col("len"), expression=col("n_sens")),
                                          expression=col("k")),
                             expression=above.copy())
    return (exp.select(col("record_id"), col("item_id"), col("part"))
            .from_(inner.subquery("r"))
            .where(exp.or_(col("len") <= above, col("sens").eq(exp.Literal.number(0)),
                           kept_sensitive)))


def trim_long_records(backend: Backend, target: exp.Table, base: exp.Table, sens: exp.Table,
                      above: int, seed: int,
                      histogram: dict[tuple[int, int], int]) -> dict[str, int]:
    """Materialize ``target`` = ``base`` trimmed; the figures the run reports.

    ``histogram`` is the (length, sensitive items) histogram of ``base``'s records: the rows
    the trim must remove follow from it, and a different count from the SQL fails the run.
    """
    backend.materialize(target, trim_query(backend, base, sens), {"above": above, "seed": seed},
                        working=True)
    before = int(backend.scalar("rho_count_rows", tables={"t": base}))
    after = int(backend.scalar("rho_count_rows", tables={"t": target}))
    trimmed = trimmed_histogram(histogram, above)
    expected = (sum(length * n for (length, _), n in histogram.items())
                - sum(length * n for (length, _), n in trimmed.items()))
    if before - after != expected:
        raise AssertionError(f"trimming removed {before - after} occurrences; the record "
                             f"lengths say {expected}")
    records = sum(n for (length, n_sens), n in histogram.items()
                  if length > above and n_sens > 0)
    return {"above": above, "records_trimmed": records, "occurrences_trimmed": expected}
