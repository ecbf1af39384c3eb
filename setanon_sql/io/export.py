"""Export a dataset, as loaded or as published by a run, to FIMI, CSV or TSV.

The DBMS writes the file (DuckDB's COPY TO, PostgreSQL's COPY TO STDOUT streamed to disk); the
controller only builds the query. FIMI output aligns line by line with the input: line n is
record n, an emptied or deleted record is an empty line.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import UsageError
from setanon_sql.io.files import atomic_output, writable_target
from setanon_sql.io.published import Published, loaded, publishable
from setanon_sql.names import qi_column
from setanon_sql.sqlrender import bind_tables, parsed, with_alias

EXPORT_FORMATS = ("fimi", "csv", "tsv")
_FIMI_TAKES = "a FIMI export (unlike --format tsv)"


def _fimi_query(backend: Backend, view: Published, attr_no: int) -> exp.Select:
    # Rows come from the dataset's own records table, so a record a run deleted stays an empty
    # line and the output aligns with the input.
    tables = {"records": backend.table(view.dataset.records_table), "published": view.records,
              "items": view.items[attr_no], "dict": view.dicts[attr_no]}
    query = bind_tables(parsed("export_fimi_lines"), tables)
    assert isinstance(query, exp.Select)
    return query


def _set_cells(view: Published, attr_no: int, separator: str) -> exp.Select:
    """(record_id, v): the record's published items of one attribute, joined by ``separator``."""
    label = exp.column("label", table="d")
    item_id = exp.column("item_id", table="i")
    joined = exp.GroupConcat(
        this=exp.Order(this=label, expressions=[exp.Ordered(this=item_id)]),
        separator=exp.Literal.string(separator),
    )
    return (
        exp.select(exp.column("record_id", table="i"), joined.as_("v"))
        .from_(with_alias(view.items[attr_no], "i"))
        .join(with_alias(view.dicts[attr_no], "d"),
              on=exp.column("item_id", table="d").eq(item_id))
        .group_by(exp.column("record_id", table="i"))
    )


def _table_query(view: Published, dataset: Dataset) -> tuple[exp.Select, list[str]]:
    """The input's columns in input order, one row per published record, in input order.

    Transaction datasets have no named columns: they export as ``position, items``.
    """
    separator = dataset.options.get("item_separator", " ")
    query = exp.select().from_(with_alias(view.records, "r"))
    header: list[str] = []
    for attribute in dataset.attributes:
        if attribute.is_set:
            alias = f"s{attribute.attr_no}"
            query = query.join(
                _set_cells(view, attribute.attr_no, separator).subquery(alias),
                join_type="left",
                on=exp.column("record_id", table=alias).eq(exp.column("record_id", table="r")),
            )
            value: exp.Expr = exp.column("v", table=alias)
        else:
            value = exp.column(qi_column(attribute.attr_no), table="r")
        query = query.select(value.as_(qi_column(attribute.attr_no)))
        header.append(attribute.name)
    if dataset.kind == "transactions":
        query.set("expressions", [exp.column("position", table="r"),
                                  *query.expressions])
        header = ["position", "items"]
    return query.order_by(exp.column("position", table="r")), header



def export_dataset(
    backend: Backend,
    dataset: Dataset,
    path: str | os.PathLike[str],
    fmt: str = "fimi",
    run: Run | None = None,
    column: str | None = None,
    mapping: str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``dataset`` (as published by ``run``, or as loaded) to ``path``.

    A run's output is written only when the run finished and passed verification (see
    :mod:`setanon_sql.gate`); otherwise NotPublishableError and no file. Files are written under
    a temporary name and renamed when complete, so a failure leaves nothing at ``path``.
    """
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    target = writable_target(path)
    view = loaded(backend, dataset) if run is None else publishable(backend, dataset, run)
    mapping_target = writable_target(mapping, "mapping file") if mapping is not None else None
    if mapping_target is not None:
        _mapping_attribute(view, dataset, column)
    with atomic_output(target) as partial:
        if fmt == "fimi":
            attribute = dataset.set_attribute(column, _FIMI_TAKES)
            backend.copy_to_file(_fimi_query(backend, view, attribute.attr_no), partial, "\t",
                                 None, quoted=False)
        else:
            query, header = _table_query(view, dataset)
            backend.copy_to_file(query, partial, "\t" if fmt == "tsv" else ",", header,
                                 quoted=fmt == "csv")
        if mapping_target is not None:
            with atomic_output(mapping_target) as partial_mapping:
                _export_mapping(backend, view, dataset, column, partial_mapping)
    return target


def _mapping_attribute(view: Published, dataset: Dataset, column: str | None) -> int:
    """The attribute whose generalization --mapping writes; refused before anything is written."""
    attribute = dataset.set_attribute(column, _FIMI_TAKES)
    if view.run is None or attribute.attr_no not in view.maps:
        what = f"run {view.run.run_id}" if view.run else "the data as loaded"
        raise UsageError(f"--mapping: {what} generalizes no item of column "
                         f"{attribute.name!r}; there is no mapping to write")
    return attribute.attr_no


def _export_mapping(backend: Backend, view: Published, dataset: Dataset, column: str | None,
                    target: Path) -> None:
    attr_no = _mapping_attribute(view, dataset, column)
    attribute = next(a for a in dataset.set_attributes if a.attr_no == attr_no)
    query = bind_tables(parsed("export_mapping"), {"map": view.maps[attr_no],
                                                   "dict": backend.table(
                                                       dataset.dict_table(attribute))})
    assert isinstance(query, exp.Select)
    backend.copy_to_file(query, target, "\t", None, quoted=False)
