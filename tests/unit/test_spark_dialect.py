"""The Spark backend without Spark: its URLs and the dialect translations it relies on."""

from __future__ import annotations

import pytest

from setanon_sql import sqlrender
from setanon_sql.backends import connect
from setanon_sql.backends.spark_dialect import DIALECT
from setanon_sql.errors import ConnectionFailedError, UsageError


def render(sql: str) -> str:
    import sqlglot

    return sqlrender.to_sql(sqlglot.parse_one(sql, read=sqlrender.CANONICAL_DIALECT), DIALECT)


def test_spark_url_needs_a_warehouse_and_a_local_master() -> None:
    with pytest.raises(UsageError, match=r"names no warehouse directory: add \?warehouse=DIR"):
        connect("spark://local[2]")
    with pytest.raises(UsageError, match="master must be local, local\\[N\\] or local\\[\\*\\]"):
        connect("spark://yarn?warehouse=/tmp/w")
    with pytest.raises(UsageError, match="setting 'warehuse' is not known: use warehouse=DIR"):
        connect("spark://local[2]?warehuse=/tmp/w")


def test_spark_connect_url_errors_are_clear_and_hide_the_token() -> None:
    from setanon_sql.backends.spark_connect import shown_connect_url

    with pytest.raises(UsageError, match=r"Spark Connect URL 'sc://' cannot be parsed: write "
                                         r"sc://HOST:PORT"):
        connect("sc://")
    with pytest.raises(ConnectionFailedError,
                       match=r"cannot reach the Spark Connect server "
                             r"sc://127.0.0.1:1/;token=\*\*\* .*: start it"):
        connect("sc://127.0.0.1:1/;token=secret")
    assert shown_connect_url("sc://h:1/;use_ssl=true;token=s") == "sc://h:1/;use_ssl=true;token=***"


def test_array_index_of_unknown_type_counts_from_one() -> None:
    # PostgreSQL's parts[g.i] is 1-based; Spark's [] is 0-based, element_at 1-based.
    assert render("SELECT parts[g.i], parts[1] FROM t") == (
        "SELECT ELEMENT_AT(parts, CAST(g.i AS INT)), parts[0] FROM t")


def test_split_functions_become_spark_split() -> None:
    assert render(r"SELECT regexp_split_to_array(line, '[ \t]+') FROM t") == (
        "SELECT SPLIT(line, '[ \\\\t]+') FROM t")
    assert render("SELECT string_to_array(line, :sep) FROM t") == (
        "SELECT SPLIT(line, CONCAT('\\\\Q', :sep, '\\\\E')) FROM t")


def test_regexp_replace_groups_use_java_syntax() -> None:
    assert render(r"SELECT regexp_replace(l, '(a)(b)', '\2-\1$') FROM t") == (
        "SELECT REGEXP_REPLACE(l, '(a)(b)', '$2-$1\\\\$') FROM t")


def test_order_by_aggregate_of_grouped_query_uses_its_position() -> None:
    assert render("SELECT node, min(pos) FROM e GROUP BY node HAVING count(*) > 1 "
                  "ORDER BY min(pos) LIMIT 5") == (
        "SELECT node, MIN(pos) FROM e GROUP BY node HAVING COUNT(*) > 1 "
        "ORDER BY 2 NULLS LAST LIMIT 5")


def test_generate_series_in_from_is_a_subquery_and_lateral_stays() -> None:
    assert render("SELECT g.pid FROM x CROSS JOIN generate_series(1, :n) AS g(pid) "
                  "CROSS JOIN LATERAL generate_series(1, x.a) AS h(i)") == (
        "SELECT g.pid FROM x CROSS JOIN (SELECT EXPLODE(FILTER(SEQUENCE(1, :n), setanon_v -> "
        "setanon_v BETWEEN 1 AND :n)) AS pid) AS g CROSS JOIN LATERAL EXPLODE(FILTER("
        "SEQUENCE(1, x.a), setanon_v -> setanon_v BETWEEN 1 AND x.a)) AS h(i)")


def test_a_series_built_as_an_expression_is_a_table_too() -> None:
    # Spark's SEQUENCE(1, 0) is [1, 0]; generate_series(1, 0) is empty: the filter keeps [a, b].
    from sqlglot import exp

    series = exp.func("generate_series", exp.Literal.number(1), exp.column("n", table="x"))
    lateral = exp.Lateral(this=series, view=False, alias=exp.TableAlias(
        this=exp.to_identifier("s"), columns=[exp.to_identifier("j")]))
    query = exp.select("s.j").from_("x").join(lateral, join_type="cross")
    assert sqlrender.to_sql(query, DIALECT) == (
        "SELECT s.j FROM x CROSS JOIN LATERAL EXPLODE(FILTER(SEQUENCE(1, x.n), setanon_v -> "
        "setanon_v BETWEEN 1 AND x.n)) AS s(j)")


def test_byte_order_collation_is_spark_default() -> None:
    assert render('SELECT x FROM t ORDER BY x COLLATE "C"') == (
        "SELECT x FROM t ORDER BY x NULLS LAST")


def test_if_without_else_gets_null() -> None:
    from sqlglot import exp

    tree = exp.select(exp.func("max", exp.If(this=exp.column("a").eq(1), true=exp.column("b"))))
    assert sqlrender.to_sql(tree, DIALECT) == "SELECT MAX(IF(a = 1, b, NULL))"
