"""The adjacency graph (``--graph``) and item coordinates (``--coordinates``) of a km run.

Both are small text files read by the engine's bulk path into work tables and checked in SQL:
a malformed line or an item of the data the file does not name is an InputError naming the
file and line, raised by ``validate`` before the run is recorded. Edges to labels that are not
items of the data are left out (a part must be connected through items of the data).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError
from setanon_sql.io.files import readable_file

TAB = "\t"


def _fail_on_lines(rows: list[tuple[Any, ...]], path: str, expected: str) -> None:
    if rows:
        shown = ", ".join(str(row[0]) for row in rows)
        raise InputError(f"{path}: {rows[0][1]} line(s) are not '{expected}', first on line(s) "
                         f"{shown}")


def _fail_on_missing(rows: list[tuple[Any, ...]], path: str, what: str) -> None:
    if rows:
        shown = ", ".join(repr(row[0]) for row in rows)
        raise InputError(f"{path} misses {rows[0][1]} item(s) of the data, first: {shown}; "
                         f"give {what} for every item")


def load_graph(backend: Backend, path: str, dictionary: exp.Table,
               table: Callable[[str], exp.Table], edges: exp.Table) -> int:
    """Check ``path`` and create ``edges(a, b)`` between data items; returns the edge count."""
    source = readable_file(path, "--graph file")
    lines, glabels = table("glines"), table("glabels")
    try:
        backend.load_lines(source, lines)
        _fail_on_lines(backend.query("km_graph_bad_lines", {"tab": TAB}, {"lines": lines}),
                       path, "item<TAB>item")
        backend.materialize(glabels, "km_graph_labels", {"tab": TAB}, {"lines": lines})
        _fail_on_missing(backend.query("km_graph_missing", None,
                                       {"dict": dictionary, "glabels": glabels}),
                         f"--graph file {path}", "a line 'item<TAB>item' or 'item'")
        backend.materialize(edges, "km_graph_edges", {"tab": TAB},
                            {"lines": lines, "dict": dictionary})
        return int(backend.scalar(exp.select(exp.func("count", exp.Star())).from_(edges.copy())))
    finally:
        backend.drop_table(lines)
        backend.drop_table(glabels)


def load_coordinates(backend: Backend, path: str, dictionary: exp.Table,
                     table: Callable[[str], exp.Table], coord: exp.Table) -> None:
    """Check ``path`` and create ``coord(item_id, x, y)`` for every item of the data."""
    source = readable_file(path, "--coordinates file")
    lines, values = table("clines"), table("cvalues")
    try:
        backend.load_lines(source, lines)
        backend.materialize(values, "km_coord_values", {"tab": TAB}, {"lines": lines})
        _fail_on_lines(backend.query("km_coord_bad_lines", None, {"cvalues": values}), path,
                       "item<TAB>x<TAB>y")
        _fail_on_missing(backend.query("km_coord_missing", None,
                                       {"dict": dictionary, "cvalues": values}),
                         f"--coordinates file {path}", "a line 'item<TAB>x<TAB>y'")
        backend.materialize(coord, "km_coord_table", None, {"dict": dictionary, "cvalues": values})
    finally:
        backend.drop_table(lines)
        backend.drop_table(values)
