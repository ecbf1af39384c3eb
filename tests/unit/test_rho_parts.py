"""Pieces of --model rho: N_s bounds (the SQL expression, in DuckDB in memory), Cost(T), ρ as a
fraction."""

from __future__ import annotations

from fractions import Fraction

import pytest
from sqlglot import exp

from setanon_sql.api import open_database
from setanon_sql.errors import UsageError
from setanon_sql.models.rho.dnc import cost
from setanon_sql.models.rho.params import parse_params
from setanon_sql.models.rho.qids import placeholder, subset_rows
from setanon_sql.models.rho.suppression import rho_fraction, suppression_number


def test_rho_is_an_exact_fraction() -> None:
    assert rho_fraction(0.7) == Fraction(7, 10)
    assert rho_fraction("0.3") == Fraction(3, 10)


@pytest.mark.parametrize("rho", [Fraction(7, 10), Fraction(1, 2), Fraction(1, 3)])
@pytest.mark.parametrize(("sx", "sq"), [(1, 1), (5, 6), (9, 10), (30, 31), (7, 8), (3, 10),
                                        (40, 45), (12, 12)])
def test_suppression_numbers_are_the_least_that_make_the_rule_safe(sx: int, sq: int,
                                                                   rho: Fraction) -> None:
    """The package's N_s (Def. 1), evaluated in SQL, against the least k found by trying every
    k in exact fractions: suppressing k occurrences of e leaves (sx - k) / sq; of an item of q,
    (sx - k) / (sq - k) (a rule whose q vanishes is safe)."""
    db = open_database("duckdb:///:memory:")
    try:
        rule = exp.select(exp.Literal.number(sx).as_("sx"),
                          exp.Literal.number(sq).as_("sq")).subquery("r")
        bound = {"num": rho.numerator, "den": rho.denominator}
        of_e = db.scalar(exp.select(suppression_number(placeholder("den"))).from_(rule), bound)
        of_q = db.scalar(exp.select(suppression_number(placeholder("den") - placeholder("num")))
                         .from_(rule.copy()), bound)
    finally:
        db.close()
    least_e = next(k for k in range(sx + 1) if Fraction(sx - k, sq) <= rho)
    least_q = next(k for k in range(sx + 1) if k == sq or Fraction(sx - k, sq - k) <= rho)
    assert (max(int(of_e), 0), max(int(of_q), 0)) == (least_e, least_q)


def test_cost_of_eq_6() -> None:
    assert cost(100, 200, 50) == pytest.approx(100 * 4 / 50)
    assert cost(0, 0, 0) == 0.0


def test_subset_rows_counts_itemsets_per_record() -> None:
    assert subset_rows({3: 2, 1: 1}, 3) == 2 * 7 + 1
    assert subset_rows({3: 2}, 2) == 2 * 6


def test_default_heuristic_and_buffer() -> None:
    chosen = parse_params({"rho": 0.7, "sensitive_fraction": 0.4})
    assert (chosen.heuristic, chosen.b_max, chosen.m, chosen.rho) == (
        "mine", None, None, Fraction(7, 10))
    with pytest.raises(UsageError, match="--t-max"):
        parse_params({"rho": 0.7, "sensitive_fraction": 0.4, "t_max": -1})


def test_estimated_seconds_grow_with_rows_and_refuse_the_unbounded_full_data() -> None:
    from setanon_sql.models.rho.check import MAX_SECONDS, estimated_seconds

    bms2_m2 = estimated_seconds(subset_rows({161: 1, 4: 77_511}, 3), 161, 3)
    assert estimated_seconds(10**6, 5, 3) < bms2_m2 < MAX_SECONDS
    assert estimated_seconds(subset_rows({161: 1}, 161), 161, 161) > MAX_SECONDS


def test_pruned_rows_count_the_top_level_only_with_a_sensitive_item() -> None:
    from setanon_sql.models.rho.check import pruned_rows

    # a 5-item record with 2 sensitive items, qids up to 2: all 1- and 2-itemsets (5 + 10), and
    # the 3-itemsets holding a sensitive item: C(5,3) - C(3,3) = 9.
    assert pruned_rows({(5, 2): 1}, 3, 2) == 5 + 10 + 9
    assert pruned_rows({(5, 0): 3}, 3, 2) == 3 * 15
    assert pruned_rows({(2, 1): 4}, 3, 2) == 4 * 3  # shorter than the width: every subset
