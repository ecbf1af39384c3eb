"""SuppressControl's greedy (TDControl step 2, :mod:`.tdcontrol`) in SQL: a weighted set cover of
the unsafe rules by sensitive item types, a few statements per round.

For antecedent sizes 1, 2, ... m in turn, the one-at-a-time greedy suppresses (globally) the
sensitive type in the most unsafe rules of that size per occurrence it costs (ties: the smaller
item id) and drops every rule holding it, until no rule of that size is left. Suppressing a type
deletes exactly the itemsets holding it and changes no other support, so no rule becomes
unsafe and the rules to cover are known from one count.

The greedy needs of a rule only its size and its sensitive types, so the rules are kept as
signatures: (lvl, s1..s_width, w), the rule's size |q|, its X = q + {e} with every
non-sensitive label replaced by 0, and w the number of rules with that signature (on the first
5,000 records of BMS-WebView-2 at ``--m 2``, 113,318 rules have 48,937 signatures). A round
reads them row by row: each signature's best-ranked type is the least of one lookup per
column in the small table of ranked types, where a table of (rule, type) rows had to be
grouped by rule (about 1.1M rules of whole BMS-WebView-2 in every round, 250 rounds per
SuppressControl).

A round picks every type that the one-at-a-time greedy is sure to pick before any type that
shares a rule with it (:func:`pick_query`), so the picks and the order of their effects are the
greedy's; a test compares them with the greedy written in plain Python.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import as_double, col, placeholder
from setanon_sql.sqlrender import identifier, with_alias

# Above every rank: the rank of an empty signature column.
NO_RANK = 2**62


def signature_columns(width: int) -> list[str]:
    return [f"s{j}" for j in range(1, width + 1)]


def signatures_query(rules: exp.Table, sens: exp.Table, width: int) -> exp.Select:
    """(lvl, s1..s_width, w) from the unsafe rules (x1..x_width, size): per rule, |q| and the
    sensitive members of X (0 elsewhere); w counts the rules of each signature."""
    sensitive = exp.select(col("item_id")).from_(sens.copy())
    lvl = (col("size") - exp.Literal.number(1)).as_("lvl", quoted=True)
    members = [exp.Case(ifs=[exp.If(this=col(f"x{j}").isin(query=sensitive.copy()),
                                    true=col(f"x{j}"))],
                        default=exp.Literal.number(0)).as_(s, quoted=True)
               for j, s in enumerate(signature_columns(width), start=1)]
    per_rule = exp.select(lvl, *members).from_(rules.copy())
    keys = [col("lvl"), *(col(s) for s in signature_columns(width))]
    return (exp.select(*keys, exp.func("count", exp.Star()).as_("w", quoted=True))
            .from_(per_rule.subquery("r")).group_by(*(k.copy() for k in keys)))


def _per_type(source: exp.Table, width: int, carried: str, of_size: bool) -> exp.Union:
    """(s, ``carried``): one row per non-empty column s_j of every signature of ``source``
    (only those of size :lvl if ``of_size``). Signatures have at least 2 columns: X = q + {e}."""
    def column(s: str) -> exp.Select:
        filled = col(s).neq(exp.Literal.number(0))
        return (exp.select(col(s).as_("s", quoted=True), col(carried)).from_(source.copy())
                .where(exp.and_(col("lvl").eq(placeholder("lvl")), filled) if of_size
                       else filled))

    return exp.union(*(column(s) for s in signature_columns(width)), distinct=False)


def _cte(name: str, alias: str | None = None) -> exp.Table:
    """A reference to the common table expression ``name`` (quoted, as every identifier)."""
    table = exp.Table(this=identifier(name))
    return with_alias(table, alias) if alias else table


def pick_query(sig: exp.Table, occ: exp.Table, width: int) -> exp.Select:
    """(item_id): the types one round of the greedy at size :lvl suppresses.

    Rank the types by their scores now (rules of size :lvl holding the type per occurrence of
    it; ties: the smaller item id). A type's score only falls, and only by the rules that a
    pick of a type sharing a rule with it deletes. Picked together:

    * each type that comes first in every rule it is in (heads them all): the greedy picks it
      before any of its neighbours, whatever it picks elsewhere, and the rules of two such
      types are disjoint;
    * the first types a1..aJ of the ranking, as long as each aj, left with the rules it heads
      (those no better-ranked type deletes), still comes before a(j+1) as a(j+1) scores now
      (every type after aj scores at most that): the greedy picks a1, ..., aJ first. A type
      heading all its rules shares none with a better-ranked one, so no pick of the ranking
      changes its score.

    An earlier version picked only the first types of the ranking that shared no rule with a
    better-ranked one; nearly every type does, and SuppressControl took about 150 rounds (80
    with both rules above; first 5,000 records of BMS-WebView-2, ``--m 2``).
    """
    columns = signature_columns(width)
    score = (exp.select(col("s", "t"), exp.func("sum", col("w", "t")).as_("nr", quoted=True),
                        exp.func("min", col("n", "o")).as_("n", quoted=True))
             .from_(_per_type(sig, width, "w", of_size=True).subquery("t"))
             .join(with_alias(occ, "o"), on=col("item_id", "o").eq(col("s", "t")))
             .group_by(col("s", "t")))
    ratio = exp.Div(this=as_double(col("nr")), expression=col("n"))
    rank = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[
        exp.Ordered(this=ratio.copy(), desc=True), exp.Ordered(this=col("s"))]))
    ranked = exp.select(col("s"), col("n"), ratio.as_("score", quoted=True),
                        exp.cast(rank, "BIGINT").as_("rk", quoted=True)).from_(_cte("score"))
    head = exp.Least(this=exp.func("coalesce", col("rk", "r1"), exp.Literal.number(NO_RANK)),
                     expressions=[exp.func("coalesce", col("rk", f"r{j}"),
                                           exp.Literal.number(NO_RANK))
                                  for j in range(2, width + 1)])
    headed = (exp.select(*(col(s, "g") for s in columns), col("w", "g"),
                         head.as_("head", quoted=True))
              .from_(with_alias(sig, "g")).where(col("lvl", "g").eq(placeholder("lvl"))))
    for j, s in enumerate(columns, start=1):
        headed = headed.join(_cte("ranked", f"r{j}"), join_type="left",
                             on=col("s", f"r{j}").eq(col(s, "g")))
    own = (exp.select(col("head").as_("rk", quoted=True),
                      exp.func("sum", col("w")).as_("nr", quoted=True))
           .from_(_cte("headed")).group_by(col("head")))
    tops = (exp.select(col("s"), exp.func("min", col("head")).as_("top", quoted=True))
            .from_(_per_type(_cte("headed"), width, "head", of_size=False).subquery("h"))
            .group_by(col("s")))
    own_ratio = exp.Div(this=as_double(col("nr", "o")), expression=col("n", "a"))
    stays_ahead = exp.or_(own_ratio > col("score", "b"),
                          exp.and_(own_ratio.copy().eq(col("score", "b")),
                                   col("s", "a") < col("s", "b")))
    fails = (exp.select(exp.func("min", col("rk", "a")).as_("rk", quoted=True))
             .from_(_cte("ranked", "a"))
             .join(_cte("own", "o"), join_type="left", on=col("rk", "o").eq(col("rk", "a")))
             .join(_cte("ranked", "b"), join_type="left",
                   on=col("rk", "b").eq(col("rk", "a") + exp.Literal.number(1)))
             .where(exp.or_(col("nr", "o").is_(exp.null()),
                            exp.and_(exp.not_(col("rk", "b").is_(exp.null())),
                                     exp.not_(exp.paren(stays_ahead))))))
    first_fail = exp.func("coalesce", exp.select(col("rk")).from_(_cte("fails")).subquery(),
                          col("rk", "r") + exp.Literal.number(1))
    return (exp.select(col("s", "r").as_("item_id", quoted=True))
            .from_(_cte("ranked", "r"))
            .join(_cte("tops", "t"), on=col("s", "t").eq(col("s", "r")))
            .where(exp.or_(col("top", "t").eq(col("rk", "r")), col("rk", "r") < first_fail))
            .with_(identifier("score"), as_=score).with_(identifier("ranked"), as_=ranked)
            .with_(identifier("headed"), as_=headed).with_(identifier("own"), as_=own)
            .with_(identifier("tops"), as_=tops).with_(identifier("fails"), as_=fails))


def _holds_none(sig: exp.Table, types: exp.Table, width: int) -> exp.Expr:
    """The signature (aliased g) holds none of the types in ``types`` (item_id)."""

    def holds(s: str) -> exp.Exists:
        return exp.Exists(this=exp.select(exp.Literal.number(1)).from_(with_alias(types, "p"))
                          .where(col("item_id", "p").eq(col(s, "g"))))

    return exp.and_(*(exp.not_(holds(s)) for s in signature_columns(width)))


def level_query(sig: exp.Table, picks: exp.Table, width: int) -> exp.Select:
    """The signatures of size :lvl holding none of the types in ``picks``."""
    return (exp.select(exp.Column(this=exp.Star(), table=identifier("g")))
            .from_(with_alias(sig, "g"))
            .where(exp.and_(col("lvl", "g").eq(placeholder("lvl")),
                            _holds_none(sig, picks, width))))


def rules_left_query(sig: exp.Table, supp: exp.Table, width: int) -> exp.Select:
    """How many unsafe rules hold no suppressed type: none once SuppressControl is done."""
    return (exp.select(exp.func("coalesce", exp.func("sum", col("w", "g")),
                                exp.Literal.number(0)))
            .from_(with_alias(sig, "g")).where(_holds_none(sig, supp, width)))


def suppress_greedy(backend: Backend, fresh: Callable[[str], exp.Table], supp: exp.Table,
                    sig: exp.Table, occ: exp.Table, width: int, max_q: int
                    ) -> tuple[exp.Table, int]:
    """The greedy over the signatures ``sig`` (:func:`signatures_query`, read, not changed):
    the suppressed types, added to ``supp`` (item_id; replaced by a new table named by
    ``fresh``, and dropped), and the rounds taken.

    Each size works on its own signatures: a round reads and rewrites only those (on 5,000
    records of BMS-WebView-2 at ``--m 2``, 98% of the unsafe rules have 2-item qids, and each
    round of size 1 rewrote them all); the larger ones lose those holding a suppressed type
    when their size's turn comes.
    """
    rounds = 0
    picks = fresh("picks")
    # Two level tables, used in turn, so each round's statements are built once per call
    # (building the pick query took about 9 ms, a sixth of a round on BMS-WebView-2).
    levels = (fresh("level"), fresh("level"))
    pick = {t.name: pick_query(t, occ, width) for t in levels}
    rest = {t.name: level_query(t, picks, width) for t in levels}
    for lvl in range(1, max_q + 1):
        at = {"lvl": lvl}
        level, following = levels
        backend.materialize(level, level_query(sig, supp, width), at)
        while True:
            backend.materialize(picks, pick[level.name].copy(), at)
            if not backend.scalar(exp.select(exp.func("count", exp.Star()))
                                  .from_(picks.copy())):
                backend.drop_table(picks)
                break
            rounds += 1
            new_supp = fresh("supp")
            backend.materialize(new_supp, exp.union(
                exp.select(col("item_id")).from_(supp.copy()),
                exp.select(col("item_id")).from_(picks.copy()), distinct=True))
            backend.materialize(following, rest[level.name].copy(), at)
            for old in (supp, level, picks):
                backend.drop_table(old)
            supp, level, following = new_supp, following, level
        backend.drop_table(level)
    return supp, rounds
