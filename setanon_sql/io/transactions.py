"""Load transaction files (FIMI, SPMF, or blank-separated text labels) into the DBMS.

The file is streamed in by the engine's bulk path (DuckDB reads the file itself; PostgreSQL
receives it through COPY) and split into items by SQL: no Python loop over records. Line n of
the file is record n; an empty line is an empty record.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, check_dataset_name, next_dataset_id, register_dataset
from setanon_sql.errors import InputError, UsageError
from setanon_sql.io.files import readable_file
from setanon_sql.io.items import build_item_attribute
from setanon_sql.io.replace import drop_existing
from setanon_sql.names import records_table, staging_table

FORMATS = ("auto", "fimi", "spmf", "labels")
_INTEGER_TOKENS = re.compile(r"^[ \t]*(-?[0-9]+([ \t]+-?[0-9]+)*)?[ \t]*$")


def detect_format(path: Path) -> str:
    """'spmf' if the first non-blank line ends with -2, 'fimi' if its items are integers."""
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            stripped = line.strip()
            if not stripped:
                continue
            if re.search(r"(^|[ \t])-2$", stripped):
                return "spmf"
            return "fimi" if _INTEGER_TOKENS.match(stripped) else "labels"
    return "fimi"


def load_transactions(
    backend: Backend,
    path: str | os.PathLike[str],
    name: str,
    fmt: str = "auto",
    replace: bool = False,
) -> Dataset:
    """Load a transaction file as dataset ``name`` in one transaction; returns the dataset."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    check_dataset_name(name)
    source = readable_file(path, "transaction file")
    if fmt == "auto":
        fmt = detect_format(source)
    with backend.transaction():
        drop_existing(backend, name, replace)
        dataset_id = next_dataset_id(backend)
        lines = backend.table(staging_table("lines"))
        tokens = backend.table(staging_table("tokens"))
        n_records = backend.load_lines(source, lines)
        if n_records == 0:
            raise InputError(f"transaction file {path} is empty: there are no records to load")
        if fmt == "spmf":
            bad = backend.scalar("first_bad_spmf_line", tables={"lines": lines})
            if bad is not None:
                raise InputError(
                    f"{path} line {bad}: an SPMF line must end with -2; use --format fimi for "
                    "plain blank-separated files"
                )
        backend.run("tokens_from_blank_separated", {"spmf": fmt == "spmf"},
                    tables={"tokens": tokens, "lines": lines})
        if fmt in ("fimi", "spmf"):
            bad_token = backend.query("first_non_integer_token", tables={"tokens": tokens})
            if bad_token:
                line, label = bad_token[0]
                raise InputError(
                    f"{path} line {line}: item {label!r} is not an integer, as {fmt.upper()} "
                    "items are; use --format labels for text items"
                )
        duplicates = int(backend.scalar("duplicate_tokens", tables={"tokens": tokens}))
        attribute = build_item_attribute(backend, dataset_id, 1, "items", tokens)
        if attribute.n_distinct == 0:
            raise InputError(f"transaction file {path} has only blank lines ({n_records}): "
                             "there are no items to load")
        records = backend.table(records_table(dataset_id))
        backend.run("records_from_lines", tables={"records": records, "lines": lines})
        backend.create_access_index(records, ["record_id"])
        backend.analyze(records)
        backend.drop_table(lines)
        backend.drop_table(tokens)
        return register_dataset(
            backend, dataset_id, name, "transactions", str(source), n_records,
            {"format": fmt, "duplicate_items": {"items": duplicates}}, [attribute],
        )
