"""Load an ARX-style hierarchy (``leaf;level1;...;root``) for one attribute of a dataset.

Validated in SQL before anything is stored: one root and one parent per node (so every node has
one depth), and every value of the data is a leaf. A hierarchy is named ``<dataset>:<column>``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import InputError, NotFoundError, UsageError
from setanon_sql.io.files import readable_file
from setanon_sql.names import staging_table


@dataclass(frozen=True)
class Hierarchy:
    hierarchy_id: int
    name: str
    dataset_id: int
    attr_no: int
    source: str | None
    n_leaves: int
    height: int


def hierarchy_name(dataset: Dataset, attribute: Attribute) -> str:
    return f"{dataset.name}:{attribute.name}"


def default_attribute(dataset: Dataset, column: str | None) -> Attribute:
    """``column`` of the dataset, or its only set-valued attribute when no column is named."""
    if column:
        return dataset.attribute(column)
    if len(dataset.set_attributes) == 1:
        return dataset.set_attributes[0]
    names = ", ".join(a.name for a in dataset.attributes if a.role in ("set", "qi"))
    raise UsageError(f"dataset {dataset.name!r} has several columns ({names}); say which one "
                     "the hierarchy is for with --column")


def _labels_query(backend: Backend, dataset: Dataset, attribute: Attribute) -> exp.Select:
    if attribute.is_set:
        return exp.select("label").from_(backend.table(dataset.dict_table(attribute)))
    value = exp.cast(exp.column(attribute.column), exp.DataType.build("TEXT"))
    return (exp.select(value.as_("label")).distinct()
            .from_(backend.table(dataset.records_table))
            .where(exp.column(attribute.column).is_(exp.null()).not_()))


def find_hierarchy(backend: Backend, name: str) -> Hierarchy | None:
    rows = backend.query("hierarchy_by_name", {"name": name},
                         backend.catalog_tables("hierarchies"))
    if not rows:
        return None
    hid, hname, dataset_id, attr_no, source, n_leaves, height = rows[0]
    return Hierarchy(int(hid), hname, int(dataset_id), int(attr_no), source, int(n_leaves),
                     int(height))


def get_hierarchy(backend: Backend, dataset: Dataset, attribute: Attribute) -> Hierarchy:
    name = hierarchy_name(dataset, attribute)
    found = find_hierarchy(backend, name)
    if found is None:
        raise NotFoundError(
            f"no hierarchy for column {attribute.name!r} of dataset {dataset.name!r}; load one "
            f"with 'setanon load hierarchy FILE --name {dataset.name} --column {attribute.name}'"
        )
    return found


def drop_hierarchy(backend: Backend, hierarchy_id: int) -> None:
    tables = backend.catalog_tables("hierarchies", "hierarchy_nodes")
    backend.run("hierarchy_nodes_delete", {"hierarchy_id": hierarchy_id}, tables)
    backend.run("hierarchy_delete", {"hierarchy_id": hierarchy_id}, tables)


def _fail_on_rows(rows: list[tuple[Any, ...]], path: str,
                  describe: Callable[[tuple[Any, ...]], str]) -> None:
    if rows:
        listed = "; ".join(describe(row) for row in rows)
        raise InputError(f"hierarchy file {path}: {listed}")


def load_hierarchy(
    backend: Backend,
    path: str | os.PathLike[str],
    dataset: Dataset,
    column: str | None = None,
    separator: str = ";",
    replace: bool = False,
) -> Hierarchy:
    """Validate and store the hierarchy in ``path`` for ``column`` of ``dataset``."""
    source = readable_file(path, "hierarchy file")
    attribute = default_attribute(dataset, column)
    name = hierarchy_name(dataset, attribute)
    catalog = backend.catalog_tables("hierarchies", "hierarchy_nodes")
    with backend.transaction():
        existing = find_hierarchy(backend, name)
        if existing is not None:
            if not replace:
                raise UsageError(f"column {attribute.name!r} of dataset {dataset.name!r} already "
                                 "has a hierarchy; pass --replace to load over it")
            drop_hierarchy(backend, existing.hierarchy_id)
        lines = backend.table(staging_table("lines"))
        edges = backend.table(staging_table("edges"))
        labels = backend.table(staging_table("labels"))
        backend.load_lines(source, lines)
        backend.run("hierarchy_edges", {"separator": separator},
                    tables={"edges": edges, "lines": lines})
        bound = {"edges": edges}
        empty = backend.scalar("hierarchy_first_empty_node", tables=bound)
        if empty is not None:
            raise InputError(f"hierarchy file {path} line {empty}: an empty node label")
        roots = [row[0] for row in backend.query("hierarchy_roots", tables=bound)]
        if len(roots) != 1:
            raise InputError(
                f"hierarchy file {path}: a hierarchy needs exactly one root (the last label "
                f"of every line); found {len(roots)}: {', '.join(map(repr, roots)) or 'none'}"
            )
        _fail_on_rows(
            backend.query("hierarchy_nodes_with_two_parents", tables=bound), str(path),
            lambda r: f"node {r[0]!r} has two parents ({r[1]!r} and {r[2]!r}), first on line "
                      f"{r[3]}",
        )
        backend.materialize(labels, _labels_query(backend, dataset, attribute))
        missing = backend.query("hierarchy_missing_labels",
                                tables={"edges": edges, "labels": labels})
        if missing:
            shown = ", ".join(repr(row[0]) for row in missing)
            raise InputError(
                f"hierarchy file {path} misses {missing[0][1]} value(s) of column "
                f"{attribute.name!r} of dataset {dataset.name!r}, first: {shown}; every value "
                "must be a leaf (the first label of a line)"
            )
        hierarchy_id = int(backend.scalar("hierarchy_next_id", tables=catalog))
        n_leaves, height = backend.query("hierarchy_shape", tables=bound)[0]
        backend.run("hierarchy_store", {"hierarchy_id": hierarchy_id},
                    tables={"edges": edges, "hierarchy_nodes": catalog["hierarchy_nodes"]})
        backend.run("hierarchy_insert",
                    {"hierarchy_id": hierarchy_id, "name": name, "dataset_id": dataset.dataset_id,
                     "attr_no": attribute.attr_no, "source": str(source),
                     "n_leaves": int(n_leaves), "height": int(height)},
                    tables=catalog)
        for table in (lines, edges, labels):
            backend.drop_table(table)
    return Hierarchy(hierarchy_id, name, dataset.dataset_id, attribute.attr_no, str(source),
                     int(n_leaves), int(height))
