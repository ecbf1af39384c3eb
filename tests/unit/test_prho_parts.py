"""Pieces of --model prho that need no database: n_S, draw thresholds, rule rows, SQL rendering."""

from __future__ import annotations

import hashlib
import itertools
import math
from pathlib import Path

import pytest

from setanon_sql.models.prho.adversaries import rules_query
from setanon_sql.models.prho.constraint import threshold
from setanon_sql.models.prho.params import count_lines, sample_size
from setanon_sql.models.prho.sampler import next_tested, sweep_delta
from setanon_sql.models.prho.staged import (
    ONE_STAGE_MAX_ROWS,
    PER_RECORD_ROW_WEIGHT,
    one_stage_within_reach,
)
from setanon_sql.models.rho.check import CheckShape
from setanon_sql.sqlrender import qualified_table


@pytest.mark.parametrize(("eps", "n"), [(0.1, 116), (0.05, 600), (0.01, 23026)])
def test_sample_size_reproduces_the_paper(eps: float, n: int) -> None:
    """Sec. 5.3: |S| >= 116, 600 and 23,026 for ε = δ = 0.1, 0.05, 0.01."""
    assert sample_size(eps, eps) == n


def test_thresholds_order_like_the_integers_they_stand_for() -> None:
    assert threshold(0.0) == "00000000" and threshold(1.0) == "g"
    assert threshold(0.4) == format(round(0.4 * 2**32), "08x")
    digests = [hashlib.md5(str(i).encode()).hexdigest()[:8] for i in range(2000)]
    below = sum(d < threshold(0.25) for d in digests)
    assert below == sum(int(d, 16) < round(0.25 * 2**32) for d in digests)
    assert 400 < below < 600


def test_sweep_confidences_sum_to_delta() -> None:
    """--stop-rule bound: the errors allowed to the sweeps' tests of one l add up to delta."""
    parts = [sweep_delta(0.05, t) for t in range(1, 200_001)]
    assert parts[0] == pytest.approx(0.05 * 6 / math.pi ** 2)
    assert all(a > b for a, b in itertools.pairwise(parts))
    assert 0.04999 < sum(parts) < 0.05


def test_bound_rule_retests_the_repaired_and_the_near_sizes_then_every_size() -> None:
    """--stop-rule bound: after a repair, the sizes repaired and those whose last bound was at
    least epsilon / 2; after a sweep without repairs, every size (only that sweep may end)."""
    every = [1, 2, 3, 4, 5]
    bounds = {1: 0.003, 2: 0.051, 3: 0.12, 4: 0.025, 5: 0.0249}
    assert next_tested(every, bounds, [2, 3], 0.05) == [2, 3, 4]
    assert next_tested(every, bounds, [3], 0.05) == [2, 3, 4]
    assert next_tested(every, bounds, [], 0.05) == every
    assert next_tested(every, dict.fromkeys(every, 0.0), [5], 0.05) == [5]


def test_count_lines_matches_the_loader(tmp_path: Path) -> None:
    for text, n in [("", 0), ("1\n", 1), ("1\n\n2", 3), ("\n\n", 2)]:
        path = tmp_path / "e.dat"
        path.write_bytes(text.encode())
        assert count_lines(path) == n


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_sampled_rules_render_with_e_merged_into_q(dialect: str) -> None:
    sql = rules_query([(qualified_table("s", "unsafe"), qualified_table("s", "hits"), 2)],
                      3).sql(dialect=dialect)
    assert '"x4"' in sql and '"q3"' in sql and '"x5"' not in sql
    assert "UNION" not in sql and '3 AS "size"' in sql


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_sampled_rules_of_several_sizes_go_in_one_table(dialect: str) -> None:
    """--stop-rule bound repairs a sweep's sizes together: one rule table, numbered once."""
    sizes = [(qualified_table("s", f"unsafe{ell}"), qualified_table("s", f"hits{ell}"), ell)
             for ell in (1, 3)]
    sql = rules_query(sizes, 3).sql(dialect=dialect)
    assert sql.count("UNION ALL") == 1 and sql.count("ROW_NUMBER() OVER (ORDER BY") == 1
    assert '2 AS "size"' in sql and '4 AS "size"' in sql


def test_one_stage_only_where_its_enumeration_is_within_reach() -> None:
    """Short records: every qid size in one stage; a million 10-item records at --m 3 (the
    estimate refused the single pass there) go by stages."""
    shape = CheckShape(width=4, max_q=3, rows=0)
    assert one_stage_within_reach({(5, 2): 10_000, (3, 1): 50_000}, shape)
    assert not one_stage_within_reach({(10, 4): 1_000_000}, shape)
    # A 10-item record holding 4 items of S: 10 + 45 + 120 qids, and of its 210 sets of four
    # items the 195 that hold an item of S (the level above m keeps only those).
    per_record = 10 + 45 + 120 + 195
    records = ONE_STAGE_MAX_ROWS // per_record
    assert one_stage_within_reach({(10, 4): records}, shape)
    assert not one_stage_within_reach({(10, 4): records + 1}, shape)


def test_a_per_record_constraint_weighs_each_row_more() -> None:
    """E_u per record: every rule a count finds is also joined with the holders of its qid,
    so one stage is taken only up to a quarter of the rows (50k personalized Quest records
    went by one stage in 4.1x the time of the stages before)."""
    shape = CheckShape(width=4, max_q=3, rows=0)
    per_record = 10 + 45 + 120 + 210  # every item a possible consequent
    records = ONE_STAGE_MAX_ROWS // (PER_RECORD_ROW_WEIGHT * per_record)
    assert one_stage_within_reach({(10, 10): records}, shape, per_record=True)
    assert not one_stage_within_reach({(10, 10): records + 1}, shape, per_record=True)
    assert one_stage_within_reach({(10, 10): records + 1}, shape)
    # 50k records of 12 items (793 rows each; the 50k Quest records made 640 on average)
    assert not one_stage_within_reach({(12, 12): 50_000}, shape, per_record=True)
    assert one_stage_within_reach({(12, 12): 50_000}, shape)
