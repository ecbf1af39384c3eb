"""Enumerating the records' distinct node sets (models/km/shapes.py) against enumerating the
records: the violating images, their bounds, and verify's per-size figures must be the same
rows, on every backend, for several cuts; and the sets are used only where they save rows.

The record enumeration is itself checked against the brute-force oracle in
test_km_exactcheck.py, so equality here carries that check over.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.km import shapes as shapes_module
from setanon_sql.models.km.exactcheck import share_bounds
from setanon_sql.models.km.itemsets import (
    enumeration_rows,
    image_violations,
    violating_image_rows,
)
from setanon_sql.models.km.shapes import distinct_sets_bound, drop_shapes, record_shapes
from tests.integration.test_km import random_case
from tests.integration.test_km_exactcheck import _cut


def _counts(db: Backend, tmp_path: Path, seed: int, nodes: int) -> tuple[exp.Table, exp.Table]:
    """(items, counts): a random case's items and <R, D> under a cut into ``nodes`` nodes."""
    data, _ = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, f"sh{seed}")
    attribute = dataset.set_attributes[0]
    items = db.table(dataset.items_table(attribute))
    cut, counts = db.table(f"shcut{seed}"), db.table(f"shcounts{seed}")
    _cut(db, db.table(dataset.dict_table(attribute)), cut, 2 * seed + 1, seed, nodes)
    db.materialize(counts, "km_generalized_counts", None, {"items": items, "cut": cut})
    db.drop_table(cut)
    return items, counts


def _rows(db: Backend, query: exp.Select, params: dict[str, int]) -> list[tuple[object, ...]]:
    return sorted((tuple(round(float(v), 6) if isinstance(v, float) else v for v in row)
                   for row in db.query(query, params)), key=repr)


@pytest.fixture
def always_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the sets whatever they save (the random cases are small)."""
    monkeypatch.setattr(shapes_module, "SHAPE_ROW_SHARE", 1.0)
    monkeypatch.setattr(shapes_module, "SHAPE_SURE_REPEATS", 0.0)


@pytest.mark.usefixtures("always_shapes")
@pytest.mark.parametrize(("seed", "nodes", "ell", "k"),
                         [(1, 4, 3, 3), (2, 6, 2, 4), (3, 4, 3, 6), (5, 5, 3, 2)])
@pytest.mark.on_spark(seeds=[2])
def test_violating_images_by_node_sets_are_those_by_records(
        db: Backend, tmp_path: Path, seed: int, nodes: int, ell: int, k: int) -> None:
    _, counts = _counts(db, tmp_path, seed, nodes)
    shapes = record_shapes(db, counts, ell, lambda p: db.table(f"t_{p}"))
    assert shapes is not None
    distinct = db.query(exp.select(exp.func("count", exp.Star())).from_(
        exp.select("shape_id").distinct().from_(shapes.members.copy()).subquery("d")))[0][0]
    records = db.query(exp.select(exp.func("count", exp.Star())).from_(
        exp.select("record_id").distinct().from_(counts.copy()).subquery("r")))[0][0]
    assert distinct < records, "the case should repeat some node sets"
    by_records = _rows(db, violating_image_rows(counts, ell), {"k": k})
    by_shapes = _rows(db, violating_image_rows(counts, ell, shapes=shapes), {"k": k})
    assert by_records, "the case should have violating images"
    assert by_shapes == by_records
    ks = {f"k{e}": k + e for e in range(1, ell + 1)}  # a k per ℓ, as verify's
    for size in range(1, ell + 1):
        ells = list(range(size, ell + 1))
        params = {f"k{e}": ks[f"k{e}"] for e in ells}
        assert (_rows(db, image_violations(counts, size, ells, shapes), params)
                == _rows(db, image_violations(counts, size, ells), params))
    drop_shapes(db, shapes)
    assert not db.table_names("t_")
    db.drop_table(counts)


@pytest.mark.usefixtures("always_shapes")
@pytest.mark.parametrize(("seed", "nodes"), [(1, 5), (4, 4), (6, 7)])
def test_share_bounds_by_node_sets_are_those_by_records(db: Backend, tmp_path: Path,
                                                        seed: int, nodes: int) -> None:
    items, counts = _counts(db, tmp_path, seed, nodes)
    ks = {1: 2, 2: 4, 3: 3, 4: 5}
    scratch = db.table("t_omega")
    plain = share_bounds(db, counts, items, ks, scratch)
    by_sets = share_bounds(db, counts, items, ks, scratch,
                           shape_table=lambda p: db.table(f"t_{p}"))
    assert any(found.images for found in plain.values())
    for ell in ks:
        assert (by_sets[ell].rows, by_sets[ell].images) == (plain[ell].rows, plain[ell].images)
        assert by_sets[ell].share == pytest.approx(plain[ell].share, rel=1e-12)
    assert not db.table_names("t_")
    db.drop_table(counts)


def test_node_sets_are_not_used_where_they_save_too_few_rows(db: Backend,
                                                             tmp_path: Path) -> None:
    """Under the identity-like cut of 40 nodes, nearly every record is its own set."""
    _, fine = _counts(db, tmp_path, 7, 40)
    assert record_shapes(db, fine, 3, lambda p: db.table(f"t_{p}")) is None
    assert not db.table_names("t_")
    _, coarse = _counts(db, tmp_path, 8, 2)  # at most 3 sets of 1-2 nodes
    found = record_shapes(db, coarse, 3, lambda p: db.table(f"t_{p}"))
    assert found is not None
    # the bound that decides before building is one: at least the sets' own rows
    lengths = db.query("km_group_record_lengths", None, {"gr": coarse})
    set_rows = enumeration_rows(db.query("km_group_record_lengths", None,
                                         {"gr": found.shapes}), 3)
    assert set_rows <= distinct_sets_bound(lengths, 2, 3) < enumeration_rows(lengths, 3)
    drop_shapes(db, found)
    for table in (fine, coarse):
        db.drop_table(table)


@pytest.mark.on_spark
def test_node_sets_are_built_where_the_bound_is_loose(db: Backend) -> None:
    """The bound before building is an upper bound on the sets' rows: above SHAPE_ROW_SHARE of
    the records' rows it proves nothing, and the sets are built and counted all the same.
    35 records of 3 nodes among 6: C(6, 3) = 20 possible sets, so the bound is 20 of 35
    records' rows (0.57); there are 2 sets (30 + 5 records), 0.06 of the rows. Until 1
    December a bound above one half skipped the sets (at 100,000 CDR-like users, 3x the
    certificate's time)."""
    counts = db.table("t_loose")
    rows = [(record, node, 1) for record in range(1, 36)
            for node in ((1, 2, 3) if record <= 30 else (4, 5, 6))]
    db.materialize(counts, exp.select(
        exp.cast(exp.column("r"), "BIGINT").as_("record_id"),
        exp.cast(exp.column("n"), "BIGINT").as_("node_id"),
        exp.cast(exp.column("c"), "BIGINT").as_("c")).from_(exp.values(
            [tuple(exp.Literal.number(v) for v in row) for row in rows], alias="v",
            columns=["r", "n", "c"])))
    lengths = [(3, 35)]
    bound, by_records = distinct_sets_bound(lengths, 6, 3), enumeration_rows(lengths, 3)
    assert shapes_module.SHAPE_ROW_SHARE * by_records < bound <= (
        1 - shapes_module.SHAPE_SURE_REPEATS) * by_records
    found = record_shapes(db, counts, 3, lambda p: db.table(f"t_{p}"))
    assert found is not None
    assert enumeration_rows(db.query("km_group_record_lengths", None,
                                     {"gr": found.shapes}), 3) == 2 * 7
    drop_shapes(db, found)
    db.drop_table(counts)
    assert not db.table_names("t_")
