"""The swap model's SQL renders for both engines, and its parameters are checked up front."""

from __future__ import annotations

import pytest
from sqlglot import exp

from setanon_sql.errors import UsageError
from setanon_sql.models.swap.metrics import _compare_query, _level_query
from setanon_sql.models.swap.params import PAPER_SUPPORTS, parse_params
from setanon_sql.sqlrender import parsed, qualified_table, render, statements

SWAP_STATEMENTS = sorted(name for name in statements() if name.startswith("swap_"))


def _bind_all(name: str) -> dict[str, exp.Table]:
    tree = parsed(name)
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    return {t.name: qualified_table("s", f"x_{t.name}") for t in tree.find_all(exp.Table)
            if t.name and t.name not in ctes}


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize("name", SWAP_STATEMENTS)
def test_every_swap_statement_renders(name: str, dialect: str) -> None:
    bound = _bind_all(name)
    text = render(name, dialect, bound)
    assert all(f'"x_{logical}"' in text for logical in bound)


def test_order_keys_are_byte_wise_on_both_engines() -> None:
    # md5 digests sort with COLLATE "C", so DuckDB and PostgreSQL draw the same random order.
    for name in ("swap_pool", "swap_categories_random", "swap_score_candidates",
                 "swap_window_candidates"):
        for dialect in ("duckdb", "postgres"):
            assert 'COLLATE "C"' in render(name, dialect, _bind_all(name))


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_frequent_itemset_queries_render(dialect: str) -> None:
    items, prev = qualified_table("s", "fi0"), qualified_table("s", "fi2")
    level = render(_level_query(items, prev, 3), dialect)
    assert level.count("JOIN") == 3
    compare = render(_compare_query(qualified_table("s", "a"), qualified_table("s", "b"), 2, 4),
                     dialect)
    assert "FULL OUTER JOIN" in compare.upper()


def test_defaults_follow_the_paper() -> None:
    params = parse_params({"random_categories": 50})
    assert (params.source, params.method, params.fi_supports) == (
        "random", "similarity", PAPER_SUPPORTS)


@pytest.mark.parametrize(("given", "message"), [
    ({"random_categories": 50, "fi_supports": "0"}, r"must lie in \(0, 1\]"),
    ({"random_categories": 50, "exact_limit": 0}, "--exact-limit must be at least 1"),
    ({"category_level": -1}, "--category-level must be 0"),
    ({"random_categories": 5, "method": "best"}, "--method must be"),
])
def test_bad_parameters_are_named(given: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_params(given)
