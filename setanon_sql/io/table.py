"""Load CSV/TSV complex data: an id column, single-valued quasi-identifiers, set-valued columns.

The file is staged by the engine's bulk path as text columns; SQL then checks ids, infers each
single-valued column's type (integer or text), builds the records table and splits every
set-valued column into an item dictionary and record-item rows.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import (
    Attribute,
    Dataset,
    check_dataset_name,
    next_dataset_id,
    register_dataset,
)
from setanon_sql.errors import InputError, UsageError
from setanon_sql.io.files import readable_file
from setanon_sql.io.items import build_item_attribute
from setanon_sql.io.replace import drop_existing
from setanon_sql.names import qi_column, records_table, staging_table


def _delimiter_for(path: Path, header_line: str, delimiter: str | None) -> str:
    if delimiter:
        return "\t" if delimiter in ("\\t", "tab", "TAB") else delimiter
    if path.suffix.lower() in (".tsv", ".tab") or "\t" in header_line:
        return "\t"
    return ","


def read_header(path: Path, delimiter: str | None) -> tuple[list[str], str]:
    """Column names of the file's first line and the delimiter in use."""
    with path.open("r", encoding="utf-8", newline="") as f:
        first = f.readline()
    if not first.strip():
        raise InputError(f"table file {path} is empty or starts with a blank line; the first "
                         "line must name the columns")
    sep = _delimiter_for(path, first, delimiter)
    header = next(csv.reader([first.rstrip("\r\n")], delimiter=sep,
                             quoting=csv.QUOTE_MINIMAL if sep == "," else csv.QUOTE_NONE))
    header = [name.strip() for name in header]
    seen: set[str] = set()
    for name in header:
        if not name:
            raise InputError(f"table file {path}: the header has an empty column name")
        if name in seen:
            raise InputError(f"table file {path}: column {name!r} appears twice in the header")
        seen.add(name)
    return header, sep


def _require(path: Path, header: list[str], names: Sequence[str], option: str) -> None:
    for name in names:
        if name not in header:
            raise InputError(
                f"table file {path} has no column {name!r} (given by {option}); its columns "
                f"are: {', '.join(header)}"
            )


def plan_roles(
    path: Path,
    header: list[str],
    id_column: str,
    set_columns: Sequence[str],
    qi: Sequence[str] | None,
    ignore: Sequence[str],
) -> list[str]:
    """The role of each column: 'id', 'set', 'qi' or 'other' (kept, but not a quasi-identifier)."""
    _require(path, header, [id_column], "--id")
    if not set_columns:
        raise UsageError("name at least one set-valued column with --set-column")
    _require(path, header, set_columns, "--set-column")
    _require(path, header, list(qi or []), "--qi")
    _require(path, header, ignore, "--ignore")
    clash = ({id_column} | set(ignore)) & set(set_columns)
    if clash:
        raise UsageError(f"column {sorted(clash)[0]!r} cannot be both a set-valued column and "
                         "the id or ignored")
    roles = []
    for name in header:
        if name == id_column:
            roles.append("id")
        elif name in set_columns:
            roles.append("set")
        elif name in ignore or (qi is not None and name not in qi):
            roles.append("other")
        else:
            roles.append("qi")
    return roles


def _column_lines(backend: Backend, stage: exp.Table, column_no: int) -> exp.Table:
    """A narrow (pos, line) copy of one staged column, so named statements can check it."""
    lines = backend.table(staging_table("lines"))
    query = exp.select("pos", exp.column(f"c{column_no}").as_("line")).from_(stage.copy())
    backend.run(exp.Create(this=lines.copy(), kind="TABLE", expression=query))
    return lines


def _check_ids(backend: Backend, path: Path, lines: exp.Table, id_column: str) -> None:
    empty = backend.scalar("first_empty_value", tables={"lines": lines})
    if empty is not None:
        raise InputError(f"table file {path} line {int(empty) + 1}: the id column "
                         f"{id_column!r} is empty; every record needs an id")
    duplicate = backend.query("first_duplicate_value", tables={"lines": lines})
    if duplicate:
        value, first, last, count = duplicate[0]
        raise InputError(
            f"table file {path}: id {value!r} of column {id_column!r} appears {count} times "
            f"(lines {int(first) + 1} and {int(last) + 1}); record ids must be unique"
        )


def load_table(
    backend: Backend,
    path: str | os.PathLike[str],
    name: str,
    id_column: str,
    set_columns: Sequence[str],
    item_separator: str = " ",
    qi: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    delimiter: str | None = None,
    replace: bool = False,
) -> Dataset:
    """Load a CSV/TSV file of complex data as dataset ``name`` in one transaction."""
    check_dataset_name(name)
    if item_separator == "":
        raise UsageError("--item-separator must not be empty")
    source = readable_file(path, "table file")
    header, sep = read_header(source, delimiter)
    roles = plan_roles(source, header, id_column, list(set_columns), qi, list(ignore))
    with backend.transaction():
        drop_existing(backend, name, replace)
        dataset_id = next_dataset_id(backend)
        stage = backend.table(staging_table("stage"))
        n_records = backend.load_delimited(source, stage, len(header), sep, quoted=sep != "\t")
        if n_records == 0:
            raise InputError(f"table file {source} has a header but no records")
        attributes: list[Attribute] = []
        record_columns: list[exp.Expression] = [exp.column("pos").as_("record_id"),
                                                exp.column("pos").as_("position")]
        for attr_no, (column, role) in enumerate(zip(header, roles, strict=True), start=1):
            lines = _column_lines(backend, stage, attr_no)
            if role == "set":
                tokens = backend.table(staging_table("tokens"))
                if item_separator == " ":
                    statement, params = "tokens_from_blank_separated", {"spmf": False}
                else:
                    statement, params = "tokens_from_separated", {"separator": item_separator}
                backend.run(statement, params, tables={"tokens": tokens, "lines": lines})
                attributes.append(build_item_attribute(backend, dataset_id, attr_no, column,
                                                       tokens))
                backend.drop_table(tokens)
            else:
                if role == "id":
                    _check_ids(backend, source, lines, column)
                integer = bool(backend.scalar("column_is_integer", tables={"lines": lines}))
                value = exp.column(f"c{attr_no}")
                if integer:
                    value = exp.cast(value, exp.DataType.build("BIGINT"))
                record_columns.append(value.as_(qi_column(attr_no)))
                n_distinct = int(backend.scalar("count_distinct_values",
                                                tables={"lines": lines}))
                attributes.append(Attribute(attr_no, column, role,
                                            "integer" if integer else "text", n_distinct))
            backend.drop_table(lines)
        records = backend.table(records_table(dataset_id))
        backend.run(exp.Create(
            this=records, kind="TABLE",
            expression=exp.select(*record_columns).from_(stage.copy()).order_by("pos"),
        ))
        backend.create_access_index(records, ["record_id"])
        backend.drop_table(stage)
        options = {"delimiter": sep, "item_separator": item_separator, "id_column": id_column}
        return register_dataset(backend, dataset_id, name, "table", str(source), n_records,
                                options, attributes)


def split_columns(values: Sequence[str] | None) -> list[str]:
    """Accept repeated options and comma-separated lists alike (``--qi a,b --qi c``)."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in re.split(r",", value) if part.strip())
    return out
