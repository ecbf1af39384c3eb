"""Which rules one round sanitizes together (blocked_rules_query), on both backends.

A rule B waits when a rule of higher rank would suppress an item of X_B from a record of
C(X_B): only then could doing both at once suppress more than taking them one after the other.
Hand-made rules whose answer follows from that definition, not from the code.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.suppression import admitted_picks_query, blocked_rules_query

# rule_id, rnk, d, x1, x2, x3 (X = q + {e}; 0 pads)
CHOSEN = [(1, 1, 10, 10, 20, 30),   # picks 10 from record 100 (also holds record 200)
          (2, 2, 40, 10, 40, 50),   # shares record 100 and holds 10: waits for rule 1
          (3, 3, 60, 20, 60, 0),    # shares record 100, but rule 1 takes 10, not 20 or 60
          (4, 4, 10, 10, 70, 0),    # record 200 is rule 1's, but rule 1 picks 10 only from 100
          (5, 5, 80, 40, 80, 0)]    # rule 2 would take 40 from 100: waits, though 2 waits too
MEMBERS = [(1, 1, 100), (1, 1, 200), (2, 2, 100), (3, 3, 100), (4, 4, 200), (5, 5, 100)]
PICKS = [(100, 10, 1, 1), (100, 40, 2, 2), (100, 60, 3, 3), (200, 10, 4, 4), (100, 80, 5, 5)]


def values_table(db: Backend, name: str, columns: str, rows: list[tuple[int, ...]]) -> exp.Table:
    """A work table holding ``rows``, built as a VALUES expression (no text pasted)."""
    values = exp.values([tuple(exp.Literal.number(v) for v in row) for row in rows], alias="v",
                        columns=columns.split(", "))
    table = db.table(name)
    db.materialize(table, exp.select("*").from_(values))
    return table


def test_a_rule_waits_only_where_a_higher_pick_takes_one_of_its_items(db: Backend) -> None:
    chosen = values_table(db, "t_chosen", "rule_id, rnk, d, x1, x2, x3", CHOSEN)
    members = values_table(db, "t_members", "rule_id, rnk, record_id", MEMBERS)
    picks = values_table(db, "t_picks", "record_id, item_id, rule_id, rnk", PICKS)
    blocked = db.table("t_blocked")
    db.materialize(blocked, blocked_rules_query(chosen, members, picks, 3))
    assert sorted(r for (r,) in db.query(exp.select("rule_id").from_(blocked))) == [2, 5]
    dels = sorted(db.query(admitted_picks_query(picks, blocked)))
    assert dels == [(100, 10), (100, 60), (200, 10)]
