"""Loading hierarchies: padding, ragged depth, and every structural error named."""

from __future__ import annotations

from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError
from tests.conftest import write


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n3\n4 1\n"), "b")


def nodes(db: Backend, hierarchy_id: int) -> dict[str, tuple]:
    rows = db.query("hierarchy_nodes_of", {"hierarchy_id": hierarchy_id},
                    db.catalog_tables("hierarchy_nodes"))
    return {node: (parent, depth, n_leaves) for node, parent, depth, n_leaves in rows}


def test_padded_ragged_hierarchy(db: Backend, tmp_path: Path, baskets: api.Dataset) -> None:
    text = "1;1-2;1-2;*\n2;1-2;1-2;*\n3;3-4;*\n4;3-4;*\n\n5;*\n"
    hierarchy = api.load_hierarchy(db, write(tmp_path / "h.txt", text), baskets)
    assert (hierarchy.n_leaves, hierarchy.height) == (5, 2)
    assert nodes(db, hierarchy.hierarchy_id) == {
        "*": (None, 0, 5), "1-2": ("*", 1, 2), "3-4": ("*", 1, 2),
        "1": ("1-2", 2, 1), "2": ("1-2", 2, 1), "3": ("3-4", 2, 1), "4": ("3-4", 2, 1),
        "5": ("*", 1, 1),
    }


@pytest.mark.parametrize(("text", "message"), [
    ("1;a;*\n2;a;*\n3;*\n", r"misses 1 value\(s\) .* first: '4'"),
    ("1;a;*\n2;a;ROOT\n3;*\n4;*\n", r"exactly one root .* found 2"),
    ("1;a;*\n2;b;*\n1;b;*\n3;*\n4;*\n", r"node '1' has two parents \('a' and 'b'\)"),
    ("1;a;*\n2;a;b;*\n3;*\n4;*\n", r"node 'a' has two parents \('\*' and 'b'\)"),
    ("1;;*\n2;*\n3;*\n4;*\n", r"line 1: an empty node label"),
])
def test_structural_errors(db: Backend, tmp_path: Path, baskets: api.Dataset, text: str,
                          message: str) -> None:
    with pytest.raises(InputError, match=message):
        api.load_hierarchy(db, write(tmp_path / "h.txt", text), baskets)
    assert db.table_names("tmp_") == []


def test_hierarchy_for_single_valued_column(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "a.tsv", "id\tsex\tcodes\n1\tF\tx\n2\tM\ty\n")
    dataset = api.load_table(db, source, "a", "id", ["codes"])
    hierarchy = api.load_hierarchy(db, write(tmp_path / "h.txt", "F;*\nM;*\n"), dataset, "sex")
    assert hierarchy.name == "a:sex"
    with pytest.raises(api.UsageError, match="already has a hierarchy"):
        api.load_hierarchy(db, write(tmp_path / "h.txt", "F;*\nM;*\n"), dataset, "sex")


def test_shared_hierarchies_load(db: Backend, shared_data: Path) -> None:
    dataset = api.load_transactions(db, shared_data / "bms-webview-2" / "BMS2.dat", "bms2")
    hierarchy = api.load_hierarchy(db, shared_data / "bms-webview-2" / "hierarchy_BMS2.txt",
                                   dataset)
    assert hierarchy.n_leaves == 3340
