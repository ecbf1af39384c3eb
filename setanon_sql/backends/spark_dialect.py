"""The Spark SQL dialect setanon renders to: sqlglot's Spark dialect with PostgreSQL's meanings.

Where sqlglot's PostgreSQL -> Spark translation keeps a construct whose meaning differs (or that
Spark lacks), this dialect writes Spark's equivalent:

- ``regexp_split_to_array`` and ``string_to_array`` are Spark's ``split`` (a Java regular
  expression); a literal separator is quoted with ``\\Q...\\E`` (a separator holding ``\\E``
  itself would end the quoting early: not a realistic item separator).
- an array index of unknown type (``parts[g.i]``) stays 1-based in sqlglot's tree (only
  literal indexes are shifted): it becomes ``element_at``, which counts from 1 as PostgreSQL.
- ``FROM generate_series(a, b) AS g(i)`` becomes a subquery over ``explode(sequence(a, b))``.
- ``IF(c, x)`` without an else gets ``NULL`` (Spark's IF takes three arguments).
- ``COLLATE "C"`` (byte order) is Spark's default collation: dropped.
- ``ORDER BY <aggregate>`` of a grouped query orders by the projection's position.
- ``regexp_replace``'s group references ``\\1`` become Java's ``$1``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.spark import Spark

DIALECT = "setanonspark"
_SPARK_REGEXP_REPLACE = Spark.Generator.TRANSFORMS[exp.RegexpReplace]
_SPARK_SELECT = Spark.Generator.TRANSFORMS[exp.Select]
_SPARK_IF = Spark.Generator.TRANSFORMS[exp.If]
_GROUP = re.compile(r"\\(\d)")


def _split(generator: Any, text: exp.Expr, regex: exp.Expr) -> str:
    return str(generator.func("SPLIT", text, regex))


def _regexp_replace(generator: Any, expression: exp.RegexpReplace) -> str:
    replacement = expression.args.get("replacement")
    if isinstance(replacement, exp.Literal) and replacement.is_string:
        java = _GROUP.sub(lambda m: "$" + m.group(1), replacement.this.replace("$", "\\$"))
        expression = expression.copy()
        expression.set("replacement", exp.Literal.string(java))
    return str(_SPARK_REGEXP_REPLACE(generator, expression))


def _if(generator: Any, expression: exp.If) -> str:
    """A two-argument IF (no ELSE: NULL, as in a CASE) gets Spark's required third argument."""
    if expression.args.get("false") is None:
        expression = expression.copy()
        expression.set("false", exp.null())
    return str(_SPARK_IF(generator, expression))


def _values(series: exp.Expr) -> exp.Expr:
    """The array of generate_series(a, b[, step]) as PostgreSQL means it.

    Spark's ``SEQUENCE(a, b)`` counts down when a > b, where generate_series is empty: without
    a step, the values are kept only within [a, b] (all of them when a <= b, none otherwise).
    """
    start, end, step = series.args["start"], series.args["end"], series.args.get("step")
    sequence = exp.GenerateSeries(start=start.copy(), end=end.copy(), step=step)
    if step is not None:
        return sequence
    value = exp.to_identifier("setanon_v")
    inside = exp.Between(this=exp.column(value), low=start.copy(), high=end.copy())
    return exp.func("filter", sequence, exp.Lambda(this=inside, expressions=[value]))


def _series_table(node: exp.Expr) -> exp.Expr:
    """``FROM generate_series(a, b) AS g(i)`` (not LATERAL): sqlglot writes an invalid
    ``EXPLODE(SEQUENCE(a, b), _u(g))``; a subquery ``(SELECT EXPLODE(SEQUENCE(a, b)) AS i) AS g``
    has the same rows. A series built as an expression (``exp.func("generate_series", ...)``,
    the generators' way) is a plain GenerateSeries where parsing gives the exploding one: in
    FROM and in LATERAL it is the table of its values all the same. Either way the values are
    those of PostgreSQL (:func:`_values`)."""
    series_types = (exp.GenerateSeries, exp.ExplodingGenerateSeries)
    if isinstance(node, exp.Lateral) and type(node.this) in series_types:
        node = node.copy()
        node.set("this", exp.Explode(this=_values(node.this)))
        return node
    if not isinstance(node, exp.Table) or type(node.this) not in series_types:
        return node
    alias = node.args.get("alias")
    columns = alias.columns if alias is not None else []
    name = columns[0].name if columns else "generate_series"
    rows = exp.select(exp.alias_(exp.Explode(this=_values(node.this)), name)).subquery(
        alias.name if alias is not None else "g")
    return rows


def _select(generator: Any, expression: exp.Select) -> str:
    """Spark cannot resolve ``ORDER BY min(pos)`` of a grouped query with HAVING when the
    aggregate is a projection: order by the projection's position instead (same meaning)."""
    expression = expression.transform(_series_table)  # type: ignore[assignment]
    order = expression.args.get("order")
    if expression.args.get("group") and order is not None:
        projections = [p.unalias() if isinstance(p, exp.Alias) else p
                       for p in expression.expressions]
        expression = expression.copy()
        for ordered in expression.args["order"].expressions:
            key = ordered.this
            if isinstance(key, exp.AggFunc) and key in projections:
                ordered.set("this", exp.Literal.number(projections.index(key) + 1))
    return str(_SPARK_SELECT(generator, expression))


class SetanonSpark(Spark):
    """Registered with sqlglot as ``setanonspark`` (the lower-cased class name)."""

    class Generator(Spark.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Any]] = {
            **Spark.Generator.TRANSFORMS, exp.RegexpReplace: _regexp_replace, exp.Select: _select,
            exp.If: _if}

        def stringtoarray_sql(self, expression: exp.StringToArray) -> str:
            quoted = exp.Concat(expressions=[exp.Literal.string("\\Q"),
                                             expression.expression.copy(),
                                             exp.Literal.string("\\E")])
            return _split(self, expression.this, quoted)

        def bracket_sql(self, expression: exp.Bracket) -> str:
            if (len(expression.expressions) == 1
                    and not isinstance(expression.expressions[0], exp.Literal)
                    and not expression.args.get("json_access")):
                index = exp.cast(expression.expressions[0].copy(), "INT")
                return str(self.func("ELEMENT_AT", expression.this, index))
            return str(super().bracket_sql(expression))

        def collate_sql(self, expression: exp.Collate) -> str:
            # PostgreSQL's "C" collation is byte order: Spark's default (UTF8_BINARY).
            if expression.expression.name.upper() in ("C", "POSIX"):
                return str(self.sql(expression, "this"))
            return str(super().collate_sql(expression))

        def anonymous_sql(self, expression: exp.Anonymous) -> str:
            if expression.name.lower() == "regexp_split_to_array":
                text, regex = expression.expressions
                return _split(self, text, regex)
            return str(super().anonymous_sql(expression))
