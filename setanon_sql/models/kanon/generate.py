"""Synthetic claims generated inside the DBMS, shaped like the NEC paper's data (§4.1.1).

``generate_claims(backend, "claims", 1_000_000, seed=1)`` creates a table dataset through the
normal catalog: claim_id (id), birth_year, sex, month (yyyymm), beds, claim_type, start_day
(single-valued QIs) and diagnoses and drugs (set-valued QIs with skewed item frequencies that
co-occur through a shared condition profile). Every value is a pure function of (seed,
claim_id, column) through the non-linear hash of :mod:`setanon_sql.synth.mixing`, computed in
SQL, so columns are independent where they should be, the same seed gives the same data on
DuckDB and PostgreSQL, and nothing passes through Python.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset, register_dataset
from setanon_sql.names import qi_column
from setanon_sql.synth.mixing import below
from setanon_sql.synth.store import (
    check_generator_args,
    distinct_count,
    record_slices,
    series_table,
    start_generated_dataset,
    store_items,
)

BIGINT = exp.DataType.build("BIGINT")
# (attr_no, name, universe, most items per record, skew exponent)
# Diagnoses: 1-37 per claim, mean about 13, as in the MIMIC-III demo extract (mean 13.65, max
# 37 diagnoses per admission, ../shared/data/mimic3-demo).
SETS = ((8, "diagnoses", 2000, 37, 3.0), (9, "drugs", 1500, 10, 2.5))
KEY_STRIDE = 64  # item key = 64 i + j: distinct for every draw j <= 37 of every record i
CLAIM_TYPES = ("inpatient", "outpatient", "dental", "pharmacy")


def _num(value: int | float) -> exp.Expr:
    return exp.Literal.number(value)


def _below(key: exp.Expr, seed: int, salt: int, n: int, skew: float = 1.0) -> exp.Expr:
    """An integer in [0, n) from the non-linear hash of (seed, key, salt), skewed to 0 for
    skew > 1 (see :mod:`setanon_sql.synth.mixing`: each salt an independent column)."""
    return below(key, seed, salt, n, skew)


def _records_query(n: int, seed: int) -> exp.Select:
    i = exp.column("i", table="g")
    types = exp.Case(ifs=[exp.If(this=_below(i, seed, 6, 100) < _num(bound),
                                 true=exp.Literal.string(label))
                          for bound, label in zip((55, 85, 95), CLAIM_TYPES, strict=False)],
                     default=exp.Literal.string(CLAIM_TYPES[-1]))
    sex = exp.Case(ifs=[exp.If(this=_below(i, seed, 3, 100) < _num(51),
                               true=exp.Literal.string("F"))], default=exp.Literal.string("M"))
    # Ages skew young (u^1.4 of 96 years, counted back from 2015): a population pyramid.
    return exp.select(
        i.as_("record_id"), i.as_("position"), i.as_(qi_column(1)),
        (_num(2015) - _below(i, seed, 2, 96, 1.4)).as_(qi_column(2)),
        sex.as_(qi_column(3)),
        (_num(201301) + _below(i, seed, 4, 12)).as_(qi_column(4)),
        _below(i, seed, 5, 1000, 3.0).as_(qi_column(5)),
        types.as_(qi_column(6)),
        (_num(1) + _below(i, seed, 7, 365)).as_(qi_column(7)),
    ).from_(series_table(n, "g", "i"))


# Co-occurrence: a record draws a condition profile (skewed over PROFILES), and its items come
# from that profile's region of the universe, Zipf-like within it; diagnoses and drugs share the
# profile, so they co-occur as conditions and their treatments do.
PROFILES, REGION = 60, 0.1


def _items_query(first: int, last: int, seed: int, salt: int, universe: int, most: int,
                 skew: float, profiles: int | None) -> exp.Select:
    """The items of records ``first`` to ``last`` (each record's draws depend on its id only,
    so any slicing gives the same rows)."""
    i, j = exp.column("i", table="g"), exp.column("j", table="s")
    length = _num(1) + _below(i, seed, salt, most, 2.0)
    key = i * _num(KEY_STRIDE) + j
    if profiles is None:
        drawn = _below(key, seed, salt + 1, universe, skew)
    else:
        region = max(1, int(universe * REGION))
        profile = _below(i, seed, 50, profiles, 2.0)  # the same salt for every set column
        start = exp.paren(profile * _num(max(1, universe // profiles)))
        drawn = exp.func("mod", start + _below(key, seed, salt + 1, region, skew),
                         _num(universe))
    item = exp.cast(_num(1) + drawn, exp.DataType.build("INT"))
    per_record = exp.func("generate_series", exp.cast(_num(1), BIGINT), exp.cast(length, BIGINT))
    lateral = exp.Lateral(this=per_record, view=False, alias=exp.TableAlias(
        this=exp.to_identifier("s"), columns=[exp.to_identifier("j")]))
    inner = (exp.select(i.as_("record_id"), item.as_("item_id"))
             .from_(series_table(last, "g", "i", first))
             .join(lateral, join_type="cross"))
    return (exp.select("record_id", "item_id").distinct().from_(inner.subquery("x"))
            .order_by("item_id", "record_id"))


def generate_items(backend: Backend, dataset_id: int, attr_no: int, records: int, seed: int,
                   universe: int, most: int, skew: float, profiles: int | None = None) -> int:
    """Items and dictionary of one set-valued attribute (labels are the item ids as text);
    returns the number of distinct items."""
    return store_items(backend, dataset_id, attr_no, (
        _items_query(first, last, seed, 100 * attr_no, universe, most, skew, profiles)
        for first, last in record_slices(records)))


def generate_claims(backend: Backend, name: str, records: int, seed: int = 1,
                    replace: bool = False) -> Dataset:
    """Create dataset ``name`` of ``records`` synthetic claims in one transaction."""
    check_generator_args(name, records, seed)
    with backend.transaction():
        dataset_id, table = start_generated_dataset(backend, name, replace,
                                                    _records_query(records, seed))
        names = ("claim_id", "birth_year", "sex", "month", "beds", "claim_type", "start_day")
        attributes = [
            Attribute(no, column, "id" if no == 1 else "qi",
                      "text" if column in ("sex", "claim_type") else "integer",
                      distinct_count(backend, table, qi_column(no)))
            for no, column in enumerate(names, start=1)]
        for attr_no, column, universe, most, skew in SETS:
            n_items = generate_items(backend, dataset_id, attr_no, records, seed, universe,
                                     most, skew, PROFILES)
            attributes.append(Attribute(attr_no, column, "set", "items", n_items))
        options = {"delimiter": "\t", "item_separator": " ", "id_column": "claim_id",
                   "generator": "claims", "seed": seed}
        return register_dataset(backend, dataset_id, name, "table", None, records, options,
                                attributes)
