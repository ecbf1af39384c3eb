"""The unsafe rules kept up to date by a round's delta, instead of recomputed by a self-join.

conf(q -> e) = sup(q + {e}) / sup(q) changes only if sup(q + {e}) or sup(q) changed, i.e. if X =
q + {e} or q is one of the itemsets of the round's delta. So the new set of unsafe rules is the
old one without the rules whose X or q changed, plus the rules, unsafe now, whose X or q changed
(see :func:`kept_rules_query`: a few scans of the support table with a small hash table, where
the full recomputation joined it with itself).
Renumbered by (part, e, X) like :func:`.qids.unsafe_rules_query`, the table is the one a full
recomputation gives, ids included, except ``xrec``: it is kept only for a rule whose X has not
lost a record since the supports were counted in full (NULL otherwise).
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.models.rho.qids import col, numbered_rules, placeholder, rules_for_position, xs
from setanon_sql.sqlrender import union_all, with_alias


def rule_columns(width: int) -> list[str]:
    """The columns of a rule besides rule_id (see :func:`.qids.unsafe_rules_query`)."""
    return ["part", *(f"q{p}" for p in range(1, width)), "e", *xs(width), "size", "sx", "sq",
            "w", "xrec"]


def changed_query(supx: exp.Table, delta: exp.Table, width: int) -> exp.Select:
    """The support rows (after the update) of the itemsets in ``delta``: one scan of supx."""
    on = exp.and_(col("part", "d").eq(col("part", "c")),
                  *(col(x, "d").eq(col(x, "c")) for x in xs(width)))
    return (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("c", quoted=True)))
            .from_(with_alias(supx, "c")).join(with_alias(delta, "d"), on=on))


def _in_delta(delta: exp.Table, columns: list[str], width: int) -> exp.Exists:
    """EXISTS a delta row equal to the rule's itemset ``columns`` (padded with 0)."""
    padded = [*columns, *([None] * (width - len(columns)))]
    match = [col("part", "d").eq(col("part", "r"))]
    match += [col(x, "d").eq(col(c, "r") if c else exp.Literal.number(0))
              for x, c in zip(xs(width), padded, strict=True)]
    return exp.Exists(this=exp.select(exp.Literal.number(1)).from_(with_alias(delta, "d"))
                      .where(exp.and_(*match)))


def _changed_qid_parts(supx: exp.Table, changed: exp.Table, sens: exp.Table, win: exp.Table,
                       width: int, max_q: int) -> list[exp.Select]:
    return [rules_for_position(supx, sens, win, width, j, max_q,
                               y_source=with_alias(changed, "y"), counted=False)
            for j in range(1, width + 1)]


def changed_qid_rules_query(supx: exp.Table, changed: exp.Table, sens: exp.Table,
                            win: exp.Table, width: int, max_q: int) -> exp.Query:
    """The rules, unsafe now, whose q is one of the round's changed itemsets (kind (3) of
    :func:`kept_rules_query`): one scan of the support table per position of e."""
    return union_all(_changed_qid_parts(supx, changed, sens, win, width, max_q))


def kept_rules_query(rules: exp.Table, supx: exp.Table, delta: exp.Table, changed: exp.Table,
                     sens: exp.Table, win: exp.Table, width: int, max_q: int,
                     fresh: exp.Query | None = None) -> exp.Select:
    """The unsafe rules after the round whose supports are in ``delta``; needs :num, :den.

    ``changed`` holds the support rows of the delta's itemsets (:func:`changed_query`). Three
    kinds of rule: (1) X and q unchanged: kept as they are; (2) X changed, q not: sup(q + {e})
    fell and sup(q) did not, so the confidence fell and only a rule that was unsafe can still
    be: the old rules, with sx lowered by the delta, re-tested; (3) q changed: anything may
    happen, so these are found afresh by one scan of the support table per position of e,
    joined with the changed qids. An earlier version also found (2) afresh, by scanning the
    support table once more per position, and read the changed rows by a join with the
    support table in every part of the query: 4·width scans a round where this takes width + 1.
    ``fresh``: the rules of kind (3) as the caller wants them (a subset of
    :func:`changed_qid_rules_query`, e.g. only the rules someone can use); by default all.
    """
    names = rule_columns(width)
    q_cols = [f"q{p}" for p in range(1, width)]
    untouched = (exp.select(*(col(c, "r") for c in names)).from_(with_alias(rules, "r"))
                 .where(exp.and_(exp.not_(_in_delta(delta, xs(width), width)),
                                 exp.not_(_in_delta(delta, q_cols, width)))))
    on_x = exp.and_(col("part", "d").eq(col("part", "r")),
                    *(col(x, "d").eq(col(x, "r")) for x in xs(width)))
    lowered = col("sx", "r") - col("dn", "d")
    # X lost records: the one left need not be its first record any more (xrec, see
    # :func:`.qids.rules_for_position`); an untouched rule's X has the records it had.
    changed_x = {"sx": lowered.as_("sx", quoted=True),
                 "xrec": exp.cast(exp.null(), "BIGINT").as_("xrec", quoted=True)}
    retested = (exp.select(*(changed_x[c] if c in changed_x else col(c, "r") for c in names))
                .from_(with_alias(rules, "r")).join(with_alias(delta, "d"), on=on_x)
                .where(exp.and_(exp.not_(_in_delta(delta, q_cols, width)),
                                (placeholder("den") * lowered.copy())
                                > (placeholder("num") * col("sq", "r")))))
    parts: list[exp.Query] = [untouched, retested]
    if fresh is None:
        parts += _changed_qid_parts(supx, changed, sens, win, width, max_q)
    else:
        parts.append(exp.select(*(col(c) for c in names)).from_(fresh.subquery("f")))
    both = union_all(parts)
    return numbered_rules(exp.select(*(col(c) for c in names)).from_(both.subquery("n")),
                          width)
