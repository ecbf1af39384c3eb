"""Controller-side view of the catalog: datasets, attributes and runs as small dataclasses.

The catalog tables live in the database (``migrations/0001_catalog.sql``); these functions read
and write them through named statements and raise :class:`NotFoundError` with the known names
when a lookup fails.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import NotFoundError, UsageError
from setanon_sql.names import dict_table, items_table, qi_column, records_table

_DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


@dataclass(frozen=True)
class Attribute:
    """One input column: an id, a single-valued quasi-identifier, a set-valued one, or other."""

    attr_no: int
    name: str
    role: str  # 'id' | 'qi' | 'set' | 'other'
    value_type: str  # 'integer' | 'text' | 'items'
    n_distinct: int

    @property
    def is_set(self) -> bool:
        return self.role == "set"

    @property
    def column(self) -> str:
        """Column name in the records table (single-valued attributes only)."""
        return qi_column(self.attr_no)


@dataclass(frozen=True)
class Dataset:
    """A loaded or attached dataset and where its normalized tables are."""

    dataset_id: int
    name: str
    kind: str
    source: str | None
    n_records: int
    options: dict[str, Any] = field(default_factory=dict)
    attributes: tuple[Attribute, ...] = ()

    @property
    def set_attributes(self) -> tuple[Attribute, ...]:
        return tuple(a for a in self.attributes if a.is_set)

    @property
    def single_attributes(self) -> tuple[Attribute, ...]:
        return tuple(a for a in self.attributes if not a.is_set)

    def set_attribute(self, column: str | None, needs_one: str) -> Attribute:
        """``column`` if given (it must be set-valued), else the only set-valued column.

        ``needs_one`` names what works on one column (``"--model km"``, ``"a FIMI export"``)
        for the error when the dataset has several and none is named.
        """
        if column:
            attribute = self.attribute(column)
            if not attribute.is_set:
                raise UsageError(f"--column {column!r} of dataset {self.name!r} is not "
                                 "set-valued")
            return attribute
        if len(self.set_attributes) != 1:
            names = ", ".join(a.name for a in self.set_attributes) or "none"
            raise UsageError(f"dataset {self.name!r} has {len(self.set_attributes)} set-valued "
                             f"columns ({names}); {needs_one} works on exactly one: name it "
                             "with --column")
        return self.set_attributes[0]

    def attribute(self, name: str) -> Attribute:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        known = ", ".join(a.name for a in self.attributes)
        raise NotFoundError(f"dataset {self.name!r} has no column {name!r} (it has: {known})")

    @property
    def records_table(self) -> str:
        return records_table(self.dataset_id)

    def items_table(self, attribute: Attribute) -> str:
        return items_table(self.dataset_id, attribute.attr_no)

    def dict_table(self, attribute: Attribute) -> str:
        return dict_table(self.dataset_id, attribute.attr_no)


def check_dataset_name(name: str) -> str:
    """Dataset names are short and printable; they never become identifiers."""
    if not _DATASET_NAME.match(name or ""):
        raise UsageError(
            f"--name {name!r} is not a valid dataset name: use letters, digits, '_', '-' or '.', "
            "starting with a letter or digit (at most 100 characters)"
        )
    return name


def _tables(backend: Backend, *names: str) -> dict[str, exp.Table]:
    return backend.catalog_tables(*names)


def dataset_names(backend: Backend) -> list[str]:
    return [row[1] for row in backend.query("dataset_list", tables=_tables(backend, "datasets"))]


def find_dataset(backend: Backend, name: str) -> Dataset | None:
    """The dataset called ``name``, or None."""
    row = backend.query("dataset_by_name", {"name": name}, _tables(backend, "datasets"))
    if not row:
        return None
    dataset_id, name, kind, source, n_records, options = row[0]
    attributes = tuple(
        Attribute(int(no), attr_name, role, value_type, int(n_distinct))
        for no, attr_name, role, value_type, n_distinct in backend.query(
            "attributes_of_dataset", {"dataset_id": dataset_id}, _tables(backend, "attributes")
        )
    )
    return Dataset(int(dataset_id), name, kind, source, int(n_records), json.loads(options),
                   attributes)


def get_dataset(backend: Backend, name: str) -> Dataset:
    """The dataset called ``name``; a NotFoundError lists the datasets that exist."""
    dataset = find_dataset(backend, name)
    if dataset is None:
        known = ", ".join(dataset_names(backend)) or "none yet"
        raise NotFoundError(
            f"no dataset named {name!r} in {backend.describe()} (schema {backend.schema!r}); "
            f"datasets: {known}. Load one with 'setanon load transactions FILE --name NAME'"
        )
    return dataset


def register_dataset(
    backend: Backend,
    dataset_id: int,
    name: str,
    kind: str,
    source: str | None,
    n_records: int,
    options: dict[str, Any],
    attributes: list[Attribute],
) -> Dataset:
    """Insert the catalog rows of a dataset whose tables were just created."""
    backend.run(
        "dataset_insert",
        {"dataset_id": dataset_id, "name": name, "kind": kind, "source": source,
         "n_records": n_records, "options": json.dumps(options, sort_keys=True)},
        _tables(backend, "datasets"),
    )
    for attribute in attributes:
        backend.run(
            "attribute_insert",
            {"dataset_id": dataset_id, "attr_no": attribute.attr_no, "name": attribute.name,
             "role": attribute.role, "value_type": attribute.value_type,
             "n_distinct": attribute.n_distinct},
            _tables(backend, "attributes"),
        )
    return Dataset(dataset_id, name, kind, source, n_records, options, tuple(attributes))


def next_dataset_id(backend: Backend) -> int:
    return int(backend.scalar("dataset_next_id", tables=_tables(backend, "datasets")))


@dataclass(frozen=True)
class Run:
    """One anonymization run as recorded in the catalog."""

    run_id: int
    dataset_id: int
    model: str
    params: dict[str, Any]
    seed: int | None
    backend: str
    status: str
    package_version: str
    seconds: float | None
    figures: dict[str, Any]
    message: str | None
    phase: str | None = None
    verification: str | None = None
    verification_detail: dict[str, Any] | None = None


def get_run(backend: Backend, dataset: Dataset, run: int | str) -> Run:
    """Run ``run`` (an id or 'latest') of ``dataset``; NotFoundError if there is none.

    'latest' is the dataset's most recent run whatever its status: after a failed run it is that
    failed run (which the gate then refuses to publish), never an older run of another model.
    """
    tables = _tables(backend, "runs")
    if run == "latest":
        run_id = backend.scalar("run_latest_of_dataset", {"dataset_id": dataset.dataset_id},
                                tables)
        if run_id is None:
            raise NotFoundError(
                f"dataset {dataset.name!r} has no run; anonymize it first with "
                f"'setanon anonymize {dataset.name} --model MODEL'"
            )
    else:
        try:
            run_id = int(run)
        except ValueError:
            raise UsageError(f"--run {run!r} is neither a run id nor 'latest'") from None
    rows = backend.query("run_by_id", {"run_id": run_id}, tables)
    if not rows or int(rows[0][1]) != dataset.dataset_id:
        raise NotFoundError(
            f"no run {run_id} of dataset {dataset.name!r}; 'setanon runs' lists the runs"
        )
    (run_id, dataset_id, model, params, seed, backend_name, status, version, seconds, figures,
     message, phase, verification, verification_detail) = rows[0]
    return Run(int(run_id), int(dataset_id), model, json.loads(params), seed, backend_name,
               status, version, seconds, json.loads(figures) if figures else {}, message,
               phase, verification, json.loads(verification_detail) if verification_detail
               else None)
