"""Transactions in the style of IBM Quest (Agrawal & Srikant, VLDB 1994, §2.4.3), made by SQL.

Quest's model of a shop: customers buy *potentially frequent itemsets* (patterns) together.

1. L patterns over N items. A pattern's size is Poisson with mean I (at least 1). Quest: "some
   fraction of items in subsequent itemsets are chosen from the previous itemset", the rest at
   random; here each position j of pattern p holds, with probability ``CORRELATION`` (0.5,
   Quest's correlation level) and when pattern p - 1 has a position j, the item pattern p - 1
   holds there, else a fresh item drawn from the N. Each pattern has a weight,
   exponential with mean 1 (Quest's popularity: the probability of picking it is its weight
   over the sum), and a corruption level c ~ Normal(0.5, 0.1), clipped to [0, 0.95].
2. D transactions. A transaction's length is Poisson with mean T (at least 1). It is filled with
   patterns picked by weight; from each picked pattern Quest drops items "as long as a
   uniformly distributed random number is less than c": here a geometric number of them (a
   cyclic run of the pattern's positions starting at a random one), so a pattern appears whole
   or partly. Items repeated across its patterns count once; the transaction keeps its first
   ``length`` distinct items in the order drawn (Quest's "too large: keep it for the next
   transaction half the time" is replaced by that cut). The last pattern drawn for a
   transaction is not corrupted, so that none is left empty (Quest draws again instead).

Departures from Quest. Fresh items are drawn skewed (``ITEM_SKEW``: item r with weight about
r^-1/3; Quest draws them uniformly), so that item frequencies are as skewed as in real baskets
(a few items in many transactions, a long tail). To stay a few set-based SQL statements at 100M
records: the cut in 2; the share of a pattern taken from the previous one is Bernoulli per
position (Quest: one exponential fraction per pattern, the same mean); picking by weight goes
through a table of ``buckets(params)`` equal slices of [0, 1), each the pattern whose
cumulative-weight interval holds the slice's middle (so a pattern's probability is its weight
rounded to 1/buckets, and a pattern lighter than half a slice is never picked). Everything is a
pure function of (seed, key, column) through :mod:`setanon_sql.synth.mixing`, the same on every
engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset, register_dataset
from setanon_sql.errors import UsageError
from setanon_sql.names import staging_table
from setanon_sql.synth.mixing import below, uniform
from setanon_sql.synth.store import (
    check_generator_args,
    record_slices,
    series_table,
    start_generated_dataset,
    store_items,
)

BIGINT = exp.DataType.build("BIGINT")
DOUBLE = exp.DataType.build("DOUBLE")
CORRELATION = 0.5
CORRUPTION_MEAN, CORRUPTION_SD, CORRUPTION_MAX = 0.5, 0.1, 0.95
MAX_PATTERNS = 100_000
# Patterns drawn per transaction: length / (I - 1) and EXTRA_DRAWS more, for the draws that
# corruption empties or that repeat items already drawn (3: mean length within 1% of T).
EXTRA_DRAWS = 3
ITEM_SKEW = 1.5  # a fresh pattern item is 1 + floor(N u^1.5): item r has weight ~ r^-1/3
KEY_STRIDE = 64  # keys 64 x + y: y (a draw or a position) stays below 64
# Salts: one per random column (mixing.py: each salt an independent column).
SALT_PATTERN_SIZE, SALT_INHERIT, SALT_PATTERN_ITEM = 11, 12, 13
SALT_CORRUPT_U, SALT_CORRUPT_V, SALT_WEIGHT = 14, 15, 16
SALT_LENGTH, SALT_PICK, SALT_DROP, SALT_START = 21, 22, 23, 24


@dataclass(frozen=True)
class QuestParams:
    """Quest's parameters: D records, T mean length, I mean pattern size, L patterns, N items."""

    records: int
    avg_length: float = 10.0
    avg_pattern: float = 4.0
    patterns: int = 2000
    items: int = 1000

    def name(self) -> str:
        """Quest's own naming, e.g. T10I4D1M."""
        def short(n: float) -> str:
            return f"{n:g}"

        d = self.records
        size = (f"{d // 1_000_000}M" if d % 1_000_000 == 0 else
                f"{d // 1000}K" if d % 1000 == 0 else str(d))
        return f"T{short(self.avg_length)}I{short(self.avg_pattern)}D{size}"


def _num(value: int | float) -> exp.Expr:
    return exp.Literal.number(value)


def poisson_quantile(lam: float, u: exp.Expr) -> tuple[exp.Expr, int]:
    """Poisson(lam) by inversion: a CASE over the cumulative probabilities up to 1 - 1e-12,
    and the largest value it can give. ``u`` is a uniform in [0, 1): pass a column, not the
    hash itself, which every branch would compute again."""
    cases, k, p = [], 0, math.exp(-lam)
    cumulative = p
    while cumulative < 1.0 - 1e-12 and k < 10_000:
        cases.append(exp.If(this=u.copy() < _num(cumulative), true=_num(k)))
        k += 1
        p *= lam / k
        cumulative += p
    return exp.Case(ifs=cases, default=_num(k)), k


def check_quest(params: QuestParams) -> None:
    """Refuse parameters the keys (64 x + y) or Quest's own sense do not admit."""
    if not 1 <= params.avg_length <= 40:
        raise UsageError(f"--avg-length (T) must be between 1 and 40, got {params.avg_length:g}")
    if not 1 <= params.avg_pattern <= 20:
        raise UsageError(f"--avg-pattern (I) must be between 1 and 20, got "
                         f"{params.avg_pattern:g}")
    if not 1 <= params.patterns <= MAX_PATTERNS:
        raise UsageError(f"--patterns (L) must be between 1 and {MAX_PATTERNS:,}, got "
                         f"{params.patterns}")
    if not 2 <= params.items <= 10_000_000:
        raise UsageError(f"--items (N) must be between 2 and 10,000,000, got {params.items}")
    if _most_draws(params) >= KEY_STRIDE:
        raise UsageError(f"--avg-length {params.avg_length:g} with --avg-pattern "
                         f"{params.avg_pattern:g} needs more than {KEY_STRIDE - 1} pattern draws "
                         "per transaction: raise --avg-pattern or lower --avg-length")


def _longest(params: QuestParams) -> int:
    return max(1, poisson_quantile(params.avg_length, _num(0))[1])


def _per_draw(params: QuestParams) -> float:
    """Items a drawn pattern gives on average, after corruption (at least one)."""
    return max(1.0, params.avg_pattern - 1.0)


def _most_draws(params: QuestParams) -> int:
    return math.ceil(_longest(params) / _per_draw(params)) + EXTRA_DRAWS


def buckets(params: QuestParams) -> int:
    """Slices of [0, 1) in the table patterns are picked through: 64 per pattern (at least
    2^16, at most 2^23), so a pattern's probability is off by at most 1/64 of the mean."""
    return min(max(1 << 16, 64 * params.patterns), 1 << 23)


def _fenced(query: exp.Select, alias: str) -> exp.Subquery:
    """``query`` as a subquery PostgreSQL does not pull up (OFFSET 0): pulled up, a hash
    column would be computed again in every branch of a CASE that reads it."""
    return query.offset(0).subquery(alias)


def _patterns_query(params: QuestParams, seed: int) -> exp.Select:
    """pattern, size (Poisson(I), 1..63), corruption level c and weight (exponential, mean 1)."""
    g = exp.column("p", table="g")
    drawn = exp.select(g.as_("p"), uniform(g, seed, SALT_PATTERN_SIZE).as_("u")).from_(
        series_table(params.patterns, "g", "p"))
    p = exp.column("p", table="h")
    size, _ = poisson_quantile(params.avg_pattern, exp.column("u", table="h"))
    size = exp.func("least", exp.func("greatest", size, _num(1)), _num(KEY_STRIDE - 1))
    # Box-Muller: a standard normal from two uniforms (1 - u keeps ln away from 0).
    normal = exp.Mul(
        this=exp.func("sqrt", _num(-2.0) * exp.func(
            "ln", _num(1.0) - uniform(p, seed, SALT_CORRUPT_U))),
        expression=exp.func("cos", _num(2 * math.pi) * uniform(p, seed, SALT_CORRUPT_V)))
    corruption = exp.func("least", exp.func("greatest", _num(CORRUPTION_MEAN) + _num(
        CORRUPTION_SD) * normal, _num(0.0)), _num(CORRUPTION_MAX))
    weight = -exp.func("ln", _num(1.0) - uniform(p, seed, SALT_WEIGHT))
    return exp.select(p.as_("pattern"), exp.cast(size, BIGINT).as_("size"),
                      exp.cast(corruption, DOUBLE).as_("corruption"),
                      exp.cast(weight, DOUBLE).as_("weight")).from_(_fenced(drawn, "h"))


def _buckets_query(params: QuestParams, patterns: exp.Table) -> exp.Select:
    """bucket (0 .. buckets - 1), pattern: slice b of [0, 1) goes to the pattern whose
    cumulative-weight interval [lo, hi) holds its middle (b + 0.5) / buckets."""
    n = buckets(params)
    pattern, weight = exp.column("pattern", table="pt"), exp.column("weight", table="pt")
    running = exp.Window(this=exp.func("sum", weight.copy()), order=exp.Order(
        expressions=[exp.Ordered(this=pattern.copy())]), spec=exp.WindowSpec(
        kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW"))
    total = exp.Window(this=exp.func("sum", weight.copy()))
    lo = exp.Div(this=exp.paren(running - weight), expression=total)
    hi = exp.Div(this=running.copy(), expression=total.copy())
    bounds = exp.select(pattern.as_("pattern"), lo.as_("lo"), hi.as_("hi")).from_(
        exp.alias_(patterns.copy(), "pt", table=True))

    def first_slice(at: str) -> exp.Expr:
        # the first b with (b + 0.5) / n >= at
        return exp.func("greatest", exp.cast(exp.func("ceil", exp.column(at, table="c") * _num(n)
                                                      - _num(0.5)), BIGINT), _num(0))

    per_pattern = exp.Lateral(
        this=exp.func("generate_series", first_slice("lo"), exp.func(
            "least", first_slice("hi") - _num(1), _num(n - 1))),
        view=False, alias=exp.TableAlias(this=exp.to_identifier("s"),
                                         columns=[exp.to_identifier("b")]))
    return (exp.select(exp.column("b", table="s").as_("bucket"),
                       exp.column("pattern", table="c").as_("pattern"))
            .from_(_fenced(bounds, "c")).join(per_pattern, join_type="cross"))


def _pattern_items_query(params: QuestParams, seed: int, patterns: exp.Table) -> exp.Select:
    """pattern, position (1..size), item. Position j of pattern p is *chained* to p - 1 with
    probability CORRELATION when p - 1 has a position j; its item is then that of p - 1 there,
    i.e. the fresh item of the first pattern of the chain (the latest unchained p' <= p)."""
    p, j = exp.column("pattern", table="pt"), exp.column("j", table="s")
    previous = exp.Window(this=exp.func("lag", exp.column("size")), order=exp.Order(
        expressions=[exp.Ordered(this=exp.column("pattern"))]))
    sized = exp.select(exp.column("pattern"), exp.column("size"),
                       exp.func("coalesce", previous, _num(0)).as_("previous_size")).from_(
        exp.alias_(patterns.copy(), "q", table=True))
    per_pattern = exp.Lateral(
        this=exp.func("generate_series", exp.cast(_num(1), BIGINT),
                      exp.column("size", table="pt")),
        view=False, alias=exp.TableAlias(this=exp.to_identifier("s"),
                                         columns=[exp.to_identifier("j")]))
    chained = exp.and_(j <= exp.column("previous_size", table="pt"),
                       uniform(p * _num(KEY_STRIDE) + j, seed, SALT_INHERIT)
                       < _num(CORRELATION))
    flags = (exp.select(p.as_("pattern"), j.as_("position"), chained.as_("chained"))
             .from_(_fenced(sized, "pt")).join(per_pattern, join_type="cross"))
    v_pattern, v_position = exp.column("pattern", table="v"), exp.column("position", table="v")
    chain_start = exp.Window(
        this=exp.func("max", exp.Case(ifs=[exp.If(this=exp.column("chained", table="v"),
                                                  true=exp.null())], default=v_pattern)),
        partition_by=[v_position.copy()],
        order=exp.Order(expressions=[exp.Ordered(this=v_pattern.copy())]),
        spec=exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING",
                            end="CURRENT ROW"))
    sources = exp.select(v_pattern.as_("pattern"), v_position.as_("position"),
                         chain_start.as_("source")).from_(_fenced(flags, "v"))
    # The hash repeats its argument many times over: hash a column, never an expression.
    key = exp.column("source", table="w") * _num(KEY_STRIDE) + exp.column("position", table="w")
    item = _num(1) + below(key, seed, SALT_PATTERN_ITEM, params.items, ITEM_SKEW)
    return exp.select(exp.column("pattern", table="w"), exp.column("position", table="w"),
                      exp.cast(item, BIGINT).as_("item")).from_(_fenced(sources, "w"))


def _transactions_query(params: QuestParams, seed: int) -> exp.Select:
    """i, length (Poisson(T), at least 1)."""
    g = exp.column("i", table="g")
    length, _ = poisson_quantile(params.avg_length, exp.column("u", table="h"))
    drawn_length = exp.select(g.as_("i"), uniform(g, seed, SALT_LENGTH).as_("u")).from_(
        series_table(params.records, "g", "i"))
    return exp.select(exp.column("i", table="h").as_("i"),
                      exp.cast(exp.func("greatest", length, _num(1)), BIGINT).as_("length")
                      ).from_(_fenced(drawn_length, "h"))


def _items_query(params: QuestParams, seed: int, transactions: exp.Table, patterns: exp.Table,
                 pattern_buckets: exp.Table, pattern_items: exp.Table,
                 first: int = 1, last: int | None = None) -> exp.Select:
    """record_id, item_id of transactions ``first`` to ``last`` (default: every transaction;
    see the module docstring, step 2). A transaction's draws depend on its id only, so any
    slicing gives the same rows."""
    d = exp.column("d", table="s")
    draws = exp.cast(exp.func("ceil", exp.Div(
        this=exp.cast(exp.column("length", table="t"), DOUBLE),
        expression=_num(_per_draw(params)))) + _num(EXTRA_DRAWS), BIGINT)
    per_record = exp.Lateral(
        this=exp.func("generate_series", exp.cast(_num(1), BIGINT), draws),
        view=False, alias=exp.TableAlias(this=exp.to_identifier("s"),
                                         columns=[exp.to_identifier("d")]))
    ti, key = exp.column("i", table="t"), exp.column("i", table="t") * _num(KEY_STRIDE) + d
    picks = (exp.select(ti.as_("i"), exp.column("length", table="t").as_("length"),
                        d.as_("d"), draws.copy().as_("draws"),
                        below(key, seed, SALT_PICK, buckets(params)).as_("bucket"),
                        uniform(key, seed, SALT_DROP).as_("u_drop"),
                        uniform(key, seed, SALT_START).as_("u_start"))
             .from_(exp.alias_(transactions.copy(), "t", table=True))
             .join(per_record, join_type="cross"))
    last = params.records if last is None else last
    if (first, last) != (1, params.records):
        picks = picks.where(exp.Between(this=ti.copy(), low=_num(first), high=_num(last)))
    pattern_col = exp.column("pattern", table="pb")
    u_drop, u_start = (exp.column(c, table="k") for c in ("u_drop", "u_start"))
    size, corruption = exp.column("size", table="pt"), exp.column("corruption", table="pt")
    # Geometric number of dropped items: P(dropped >= n) = c^n (Quest's repeated coin).
    dropped = exp.Case(
        ifs=[exp.If(this=corruption <= _num(0.0), true=_num(0))],
        default=exp.func("floor", exp.Div(this=exp.func("ln", _num(1.0) - u_drop),
                                          expression=exp.func("ln", corruption))))
    start = exp.cast(exp.func("floor", u_start * exp.cast(size, DOUBLE)), BIGINT)
    position = exp.column("position", table="pi")
    # The last draw is taken whole: no transaction is left empty.
    kept = exp.or_(exp.column("d", table="k").eq(exp.column("draws", table="k")),
                   exp.func("mod", position - _num(1) - start + size * _num(2), size) >= dropped)
    drawn = (exp.select(exp.column("i", table="k").as_("record_id"),
                        exp.column("length", table="k").as_("length"),
                        exp.column("item", table="pi").as_("item_id"),
                        (exp.column("d", table="k") * _num(KEY_STRIDE) + position).as_("pos"))
             .from_(_fenced(picks, "k"))
             .join(exp.alias_(pattern_buckets.copy(), "pb", table=True),
                   on=exp.column("bucket", table="pb").eq(exp.column("bucket", table="k")))
             .join(exp.alias_(patterns.copy(), "pt", table=True),
                   on=exp.column("pattern", table="pt").eq(pattern_col))
             .join(exp.alias_(pattern_items.copy(), "pi", table=True),
                   on=exp.column("pattern", table="pi").eq(pattern_col))
             .where(kept))
    first_seen = (exp.select("record_id", "item_id", exp.func("max", exp.column("length"))
                             .as_("length"), exp.func("min", exp.column("pos")).as_("pos"))
                  .from_(drawn.subquery("x")).group_by("record_id", "item_id"))
    rank = exp.Window(this=exp.RowNumber(), partition_by=[exp.column("record_id")],
                      order=exp.Order(expressions=[exp.Ordered(this=exp.column("pos"))]))
    ranked = exp.select("record_id", "item_id", "length", rank.as_("r")).from_(
        first_seen.subquery("f"))
    return (exp.select("record_id", exp.cast(exp.column("item_id"), exp.DataType.build("INT"))
                       .as_("item_id"))
            .from_(ranked.subquery("q")).where(exp.column("r") <= exp.column("length"))
            .order_by("item_id", "record_id"))


def generate_quest(backend: Backend, name: str, params: QuestParams, seed: int = 1,
                   replace: bool = False) -> Dataset:
    """Create transactions dataset ``name`` (Quest's T, I, D, L, N) in one transaction."""
    check_generator_args(name, params.records, seed)
    check_quest(params)
    with backend.transaction():
        dataset_id, _ = start_generated_dataset(
            backend, name, replace, exp.select(exp.column("i").as_("record_id"),
                                               exp.column("i").as_("position"))
            .from_(series_table(params.records, "g", "i")))
        scratch = {purpose: backend.table(staging_table(f"quest_{purpose}"))
                   for purpose in ("transactions", "patterns", "buckets", "pattern_items")}
        backend.materialize(scratch["transactions"], _transactions_query(params, seed))
        backend.materialize(scratch["patterns"], _patterns_query(params, seed))
        backend.materialize(scratch["buckets"], _buckets_query(params, scratch["patterns"]))
        backend.materialize(scratch["pattern_items"],
                            _pattern_items_query(params, seed, scratch["patterns"]))
        n_distinct = store_items(backend, dataset_id, 1, (_items_query(
            params, seed, scratch["transactions"], scratch["patterns"], scratch["buckets"],
            scratch["pattern_items"], first, last)
            for first, last in record_slices(params.records)))
        for table in scratch.values():
            backend.drop_table(table)
        options = {"generator": "quest", "seed": seed, "quest": params.name(),
                   "avg_length": params.avg_length, "avg_pattern": params.avg_pattern,
                   "patterns": params.patterns, "items": params.items}
        return register_dataset(backend, dataset_id, name, "transactions", None,
                                params.records, options,
                                [Attribute(1, "items", "set", "items", n_distinct)])
