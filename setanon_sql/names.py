"""The one place that names setanon's tables.

Data tables are named by number (``d7_items_9``), never by a user-supplied name, so no user input
reaches an identifier and every name fits PostgreSQL's 63-character limit.
"""

from __future__ import annotations

import re
import uuid

_PURPOSE = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def _check(purpose: str) -> str:
    if not _PURPOSE.match(purpose):
        raise ValueError(f"table purpose {purpose!r} must be a short lower-case word")
    return purpose


def dataset_table(dataset_id: int, purpose: str) -> str:
    """A table that belongs to a dataset (records, items_<attr>, dict_<attr>)."""
    return f"d{int(dataset_id)}_{_check(purpose)}"


def records_table(dataset_id: int) -> str:
    """One row per record: record_id, position in the input, single-valued columns c<attr_no>."""
    return dataset_table(dataset_id, "records")


def items_table(dataset_id: int, attr_no: int) -> str:
    """Record-item rows (record_id, item_id) of one set-valued attribute."""
    return dataset_table(dataset_id, f"items_{int(attr_no)}")


def dict_table(dataset_id: int, attr_no: int) -> str:
    """Item dictionary (item_id, label) of one set-valued attribute."""
    return dataset_table(dataset_id, f"dict_{int(attr_no)}")


def run_table(run_id: int, purpose: str) -> str:
    """A table a run produces (its published data, intermediate state)."""
    return f"r{int(run_id)}_{_check(purpose)}"


def hierarchy_table(hierarchy_id: int) -> str:
    """Reserved: hierarchies share the catalog table hierarchy_nodes, keyed by hierarchy_id."""
    return f"h{int(hierarchy_id)}_nodes"


def staging_table(purpose: str) -> str:
    """A scratch table for one load or step; dropped before its transaction commits."""
    return f"tmp_{uuid.uuid4().hex[:12]}_{_check(purpose)}"


def qi_column(attr_no: int) -> str:
    """Column of the records table holding single-valued attribute ``attr_no``."""
    return f"c{int(attr_no)}"
