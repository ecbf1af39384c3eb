"""The SQL layer: statement files, table binding, and snapshots of what each dialect receives.

Snapshots live in tests/unit/snapshots/<statement>.<dialect>.sql; after an intended change,
regenerate them with ``SETANON_UPDATE_SNAPSHOTS=1 python -m pytest tests/unit``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import sqlrender
from setanon_sql.backends.duckdb import DuckDBBackend
from setanon_sql.io.items import build_dictionary_query
from setanon_sql.sqlrender import bind_tables, parse_statement_file, qualified_table, render

SNAPSHOTS = Path(__file__).parent / "snapshots"
DIALECTS = ["duckdb", "postgres"]
MAIN_STATEMENTS = [
    "tokens_from_blank_separated", "items_from_tokens", "export_fimi_lines", "hierarchy_edges",
    "item_attribute_summary",
    # models: the statements each pass over the data is made of
    "kanon_set_rank", "kanon_set_picks", "kanon_set_decide", "kanon_numeric_moves",
    "rho_windows", "rho_apply",
    "km_merge_costs", "km_mcmc_score", "km_mcmc_walk", "km_graph_pair_costs",
    "km_graph_components", "prho_choose", "swap_tendency", "swap_score_candidates",
    "swap_greedy_accept", "tdc_candidates",
    # the report's aggregates and the in-place plan
    "report_item_support_curve", "report_unicity", "report_item_changes", "inplace_pair_plan",
]


def logical_tables(name: str) -> dict[str, exp.Table]:
    """Bind every logical table of a statement to a same-named table of schema setanon."""
    tree = sqlrender.parsed(name)
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    names = {t.name for t in tree.find_all(exp.Table) if not t.args.get("db") and t.name}
    return {n: qualified_table("setanon", n) for n in sorted(names - ctes)}


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.sql"
    if os.environ.get("SETANON_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text + "\n")
    assert path.exists(), f"no snapshot {path}; run with SETANON_UPDATE_SNAPSHOTS=1"
    assert text + "\n" == path.read_text()


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("statement", MAIN_STATEMENTS)
def test_main_statement_snapshots(statement: str, dialect: str) -> None:
    check_snapshot(f"{statement}.{dialect}", render(statement, dialect, logical_tables(statement)))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_dictionary_query_snapshot(dialect: str) -> None:
    # Text dictionaries sort byte-wise: PostgreSQL gets COLLATE "C", DuckDB sorts bytes already.
    from setanon_sql.backends.postgres import PostgresBackend

    backend_class = {"duckdb": DuckDBBackend, "postgres": PostgresBackend}[dialect]
    fake = backend_class.__new__(backend_class)
    tokens = qualified_table("setanon", "tok")
    for numeric in (True, False):
        query = build_dictionary_query(fake, tokens, numeric)
        check_snapshot(f"dictionary_{'numeric' if numeric else 'text'}.{dialect}",
                       render(query, dialect))


def test_every_statement_parses_and_renders_for_every_dialect() -> None:
    for name in sqlrender.statements():
        bound = logical_tables(name)
        for dialect in DIALECTS:
            text = render(name, dialect, bound)
            assert all(f'"setanon"."{table}"' in text for table in bound)


def test_unbound_table_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="'items' of the statement is not bound"):
        render("export_fimi_lines", "duckdb", {"records": qualified_table("s", "r"),
                                               "published": qualified_table("s", "p")})


def test_bound_tables_are_quoted_and_aliased() -> None:
    tree = bind_tables(sqlrender.parsed("count_rows"), {"t": qualified_table("my schema", 'x"y')})
    assert tree.sql("postgres") == 'SELECT COUNT(*) FROM "my schema"."x""y" AS "t"'


def test_statement_file_needs_names(tmp_path: Path) -> None:
    path = tmp_path / "bad.sql"
    path.write_text("SELECT 1")
    with pytest.raises(ValueError, match=r"no '-- name: \.\.\.' line"):
        parse_statement_file(path)


def test_placeholders_are_bound_not_pasted() -> None:
    text = render("dataset_by_name", "postgres", {"datasets": qualified_table("s", "datasets")})
    assert "%(name)s" in text
    assert "$name" in render("dataset_by_name", "duckdb",
                             {"datasets": qualified_table("s", "datasets")})
