"""A record's item set as one comparable value, for grouping records by their whole set: a
sorted string (exact, wide) or hashes of fixed width (compact, to be proved exact by the user)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from setanon_sql.synth.mixing import mix

TEXT = exp.DataType.build("TEXT")


def item_set_key(items: exp.Table, alias: str, column: str = "v") -> exp.Subquery:
    """``(record_id, <column>)`` aliased ``alias``: each record's item ids, sorted, joined by
    commas (records without items have no row)."""
    item = exp.column("item_id")
    joined = exp.GroupConcat(this=exp.Order(this=exp.cast(item, TEXT),
                                            expressions=[exp.Ordered(this=item)]),
                             separator=exp.Literal.string(","))
    return (exp.select("record_id", joined.as_(column)).from_(items.copy())
            .group_by("record_id")).subquery(alias)


SetHash = Callable[[exp.Table, str], exp.Subquery]

# Two independent salts of the mixing hash: a record's set is keyed by two sums of 32-bit
# hashes and its size, about 70 bits, so distinct sets of the same size seldom share a key.
_SALTS = (0x5E7A, 0x5E7B)
_KEY_RANGE = 1 << 32  # mix() takes keys in [0, 2^36); item ids are reduced into range first


def item_set_hash(items: exp.Table, alias: str) -> exp.Subquery:
    """``(record_id, h1, h2, n)`` aliased ``alias``: fixed-width numbers for each record's item
    set (records without items have no row).

    ``h1``, ``h2`` are sums over the items of two independent mixing hashes and ``n`` the number
    of rows. A sum does not depend on the order of the rows, so no sort or string is built (the
    text key of :func:`item_set_key` buffers every item of every record); equal sets always get
    equal numbers. Unequal sets may collide: whoever groups by these numbers must prove the
    grouping exact (see ``setanon_sql.models.kanon.verify_groups``).
    """
    key = exp.func("mod", exp.column("item_id"), exp.Literal.number(_KEY_RANGE))
    sums = [exp.func("sum", mix(key.copy(), 0, salt)).as_(f"h{no}")
            for no, salt in enumerate(_SALTS, start=1)]
    return (exp.select("record_id", *sums, exp.func("count", exp.Star()).as_("n"))
            .from_(items.copy()).group_by("record_id")).subquery(alias)
