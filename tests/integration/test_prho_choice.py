"""Which item d of Q + {e} each unsafe rule gives up (prho_choose, eq. 7-8), on both backends.

Hand-made candidates whose answer follows from the definitions, not from the code. Rule 1 is a
unique Q = {1, 2} -> e = 3: N_s = 1 for every item (eq. 7). Item 3 was suppressed before
(its D' share fell) and items 1 and 2 were not (their shares rose), so F (eq. 8) ranks 1 and 2
above 3: 'paper' takes an item of Q; 'fewest' takes e, the smallest N_s with ties to e.
Rule 2 (Q = {1} -> e = 4, N_s(4) = 2 < N_s(1) = 3): items 1 and 4 have the same positive
numerator of F, so dividing by N_s makes 'paper' take e as well.
"""

from __future__ import annotations

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from tests.integration.test_rho_blocking import values_table

# rule_id, part, d, k, ise: k = N_s(d); ise = 1 for d = e
CAND = [(1, 0, 1, 1, 0), (1, 0, 2, 1, 0), (1, 0, 3, 1, 1),
        (2, 0, 1, 3, 0), (2, 0, 4, 2, 1)]
# part, item_id, n0 = supp_D, n = supp_D'
ISTAT = [(0, 1, 10, 10), (0, 2, 10, 10), (0, 3, 10, 5), (0, 4, 10, 10)]
RULES = [(1, 0), (2, 0)]


@pytest.mark.parametrize(("choice", "expected"), [("paper", {1: 1, 2: 4}),
                                                  ("fewest", {1: 3, 2: 4})])
def test_fewest_takes_e_where_paper_takes_an_item_of_q(db: Backend, choice: str,
                                                       expected: dict[int, int]) -> None:
    tables = {"cand": values_table(db, "t_cand", "rule_id, part, d, k, ise", CAND),
              "istat": values_table(db, "t_istat", "part, item_id, n0, n", ISTAT),
              "rules": values_table(db, "t_rules", "rule_id, part", RULES)}
    chosen = db.table("t_chosen")
    db.materialize(chosen, "prho_choose", {"choice": choice}, tables)
    rows = db.query(exp.select("rule_id", "d", "k").from_(chosen))
    assert {rule: d for rule, d, _ in rows} == expected
    assert {rule: k for rule, _, k in rows} == {1: 1, 2: 2}
