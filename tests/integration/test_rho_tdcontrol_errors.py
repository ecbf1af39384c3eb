"""Bad input to ``--heuristic tdcontrol`` is refused with a message naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from tests.conftest import write

RHO = require_model("rho")


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n"), "b")


def test_no_hierarchy(db: Backend, baskets: api.Dataset) -> None:
    with pytest.raises(api.UsageError, match=r"--heuristic tdcontrol generalizes the "
                       r"non-sensitive items along an item hierarchy, and column .* has none: "
                       r"give --hierarchy FILE"):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive_fraction": 0.4,
                                         "heuristic": "tdcontrol"}, seed=1)
    assert db.table_names("r1_") == []


@pytest.mark.parametrize(("params", "message"), [
    ({"heuristic": "tdcontrol", "t_max": 5.0}, "--heuristic tdcontrol does not partition"),
    ({"heuristic": "mine", "hierarchy": "h.txt"}, "only --heuristic tdcontrol generalizes"),
])
def test_options_that_do_not_combine(db: Backend, baskets: api.Dataset, params: dict,
                                     message: str) -> None:
    with pytest.raises(api.UsageError, match=message):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive_fraction": 0.4, **params},
                      seed=1)
    assert db.table_names("r1_") == []


def test_hierarchy_missing_an_item(db: Backend, baskets: api.Dataset, tmp_path: Path) -> None:
    hierarchy = write(tmp_path / "h.txt", "1;a;*\n2;a;*\n")
    with pytest.raises(api.InputError, match=r"misses 1 value\(s\) of column .*first: '3'"):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive_fraction": 0.4,
                                         "heuristic": "tdcontrol",
                                         "hierarchy": str(hierarchy)}, seed=1)
