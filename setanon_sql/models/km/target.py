"""Which set-valued column a km run generalizes."""

from __future__ import annotations

from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import UsageError


def target_attribute(dataset: Dataset, column: str | None) -> Attribute:
    """``column`` if given (it must be set-valued), else the dataset's only set-valued column."""
    if column:
        attribute = dataset.attribute(column)
        if not attribute.is_set:
            raise UsageError(f"--column {column!r} of dataset {dataset.name!r} is not set-valued")
        return attribute
    if len(dataset.set_attributes) != 1:
        names = ", ".join(a.name for a in dataset.set_attributes) or "none"
        raise UsageError(f"dataset {dataset.name!r} has {len(dataset.set_attributes)} set-valued "
                         f"columns ({names}); --model km generalizes exactly one: name it with "
                         "--column")
    return dataset.set_attributes[0]
