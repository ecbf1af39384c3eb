"""Pieces of --model rho that need no database: N_s bounds, Cost(T), ρ as a fraction."""

from __future__ import annotations

from fractions import Fraction
from math import ceil

import pytest

from setanon_sql.errors import UsageError
from setanon_sql.models.rho.dnc import cost
from setanon_sql.models.rho.params import parse_params
from setanon_sql.models.rho.qids import subset_rows
from setanon_sql.models.rho.suppression import rho_fraction


def test_rho_is_an_exact_fraction() -> None:
    assert rho_fraction(0.7) == Fraction(7, 10)
    assert rho_fraction("0.3") == Fraction(3, 10)


@pytest.mark.parametrize(("sx", "sq"), [(1, 1), (5, 6), (9, 10), (30, 31), (7, 8)])
def test_suppression_numbers_of_def_1_make_the_rule_safe_and_are_least(sx: int, sq: int) -> None:
    rho = Fraction(7, 10)
    k_e = ceil(sx - rho * sq)
    k_q = ceil((sx - rho * sq) / (1 - rho))
    assert sx - k_e <= rho * sq and not sx - (k_e - 1) <= rho * sq
    assert sx - k_q <= rho * (sq - k_q) and not sx - (k_q - 1) <= rho * (sq - k_q + 1)
    assert k_e <= k_q <= sx


def test_cost_of_eq_6() -> None:
    assert cost(100, 200, 50) == pytest.approx(100 * 4 / 50)
    assert cost(0, 0, 0) == 0.0


def test_subset_rows_counts_itemsets_per_record() -> None:
    assert subset_rows({3: 2, 1: 1}, 3) == 2 * 7 + 1
    assert subset_rows({3: 2}, 2) == 2 * 6


def test_default_heuristic_and_buffer() -> None:
    chosen = parse_params({"rho": 0.7, "sensitive_fraction": 0.4})
    assert (chosen.heuristic, chosen.b_max, chosen.m, chosen.rho) == (
        "mine", 10**6, None, Fraction(7, 10))
    with pytest.raises(UsageError, match="--t-max"):
        parse_params({"rho": 0.7, "sensitive_fraction": 0.4, "t_max": -1})


def test_estimated_seconds_grow_with_rows_and_refuse_the_unbounded_full_data() -> None:
    from setanon_sql.models.rho.check import MAX_SECONDS, estimated_seconds

    bms2_m2 = estimated_seconds(subset_rows({161: 1, 4: 77_511}, 3), 161, 3)
    assert estimated_seconds(10**6, 5, 3) < bms2_m2 < MAX_SECONDS
    assert estimated_seconds(subset_rows({161: 1}, 161), 161, 161) > MAX_SECONDS
