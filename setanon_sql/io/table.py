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
from setanon_sql.io.stage import column_lines, create_records_table, single_valued_attribute
from setanon_sql.names import staging_table


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
        record_columns: list[exp.Expr] = []
        duplicates: dict[str, int] = {}

        def where(pos: int) -> str:
            return f"table file {source} line {pos + 1}"

        for attr_no, (column, role) in enumerate(zip(header, roles, strict=True), start=1):
            if role == "set":
                lines = column_lines(backend, stage, attr_no)
                tokens = backend.table(staging_table("tokens"))
                params: dict[str, object]
                if item_separator == " ":
                    statement, params = "tokens_from_blank_separated", {"spmf": False}
                else:
                    statement, params = "tokens_from_separated", {"separator": item_separator}
                backend.run(statement, params, tables={"tokens": tokens, "lines": lines})
                duplicates[column] = int(backend.scalar("duplicate_tokens",
                                                        tables={"tokens": tokens}))
                attributes.append(build_item_attribute(backend, dataset_id, attr_no, column,
                                                       tokens))
                backend.drop_table(tokens)
                backend.drop_table(lines)
            else:
                attribute, value = single_valued_attribute(backend, stage, attr_no, column, role,
                                                           where)
                attributes.append(attribute)
                record_columns.append(value)
        create_records_table(backend, stage, dataset_id, record_columns)
        backend.drop_table(stage)
        options = {"delimiter": sep, "item_separator": item_separator, "id_column": id_column,
                   "duplicate_items": duplicates}
        return register_dataset(backend, dataset_id, name, "table", str(source), n_records,
                                options, attributes)


def split_columns(values: Sequence[str] | None) -> list[str]:
    """Accept repeated options and comma-separated lists alike (``--qi a,b --qi c``)."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in re.split(r",", value) if part.strip())
    return out
