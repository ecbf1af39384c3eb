"""Enumerating the records' itemsets level by level (models/km/levels.py) against the chain of
joins of one statement per size: the levels' rows, each size's violating images and their
bounds (from the whole level, or from its rows of itemsets below k stored first), verify's
per-size figures and the tracker's images must be the same, on every backend, for several
cuts; no level is left behind; and the chain still serves where a level would be too wide.

The chain is itself checked against the brute-force oracle in test_km_exactcheck.py, so
equality here carries that check over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km import levelkeys
from setanon_sql.models.km import levels as levels_module
from setanon_sql.models.km import shapes as shapes_module
from setanon_sql.models.km.enumsteer import steer_by_enumeration
from setanon_sql.models.km.exactcheck import ExactCheck, share_bound, share_bounds
from setanon_sql.models.km.imagetrack import ImageTracker
from setanon_sql.models.km.itemsets import (
    enumeration_rows,
    image_violations,
    itemset_occurrences,
    loosest_k,
    violating_image_part,
    violating_image_rows,
)
from setanon_sql.models.km.levelkeys import KeyPacking
from setanon_sql.models.km.levels import (
    Level,
    for_each_level,
    level_rows,
    levels_pay,
    rows_below_of,
)
from setanon_sql.models.km.shapes import record_lengths
from tests.integration.test_km_imagetrack import _search
from tests.integration.test_km_shapes import _counts, _rows

CASES = [(1, 4, 3, 3), (2, 6, 2, 4), (3, 4, 3, 6), (5, 5, 3, 2), (2, 9, 4, 4)]


@pytest.mark.parametrize(("seed", "nodes", "ell", "k"), CASES)
@pytest.mark.on_spark(seeds=[2])
def test_each_level_gives_the_chains_rows_and_images(db: Backend, tmp_path: Path, seed: int,
                                                     nodes: int, ell: int, k: int) -> None:
    _check_levels(db, tmp_path, seed, nodes, ell, k)


@pytest.mark.parametrize(("seed", "nodes", "ell", "k"), CASES[3:])
@pytest.mark.parametrize("key_max", [8, 80])
def test_levels_whose_itemsets_span_several_keys_give_the_chains_rows_and_images(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, nodes: int,
        ell: int, k: int, key_max: int) -> None:
    """Keys as narrow as ``key_max`` allows (levelkeys.py): 1 to 3 digits a key where a BIGINT
    holds 14 or more at these node counts, so an itemset spans several keys and a level
    starts new ones."""
    monkeypatch.setattr(levelkeys, "BIGINT_MAX", key_max)
    _check_levels(db, tmp_path, seed, nodes, ell, k)


def test_a_key_holds_as_many_digits_as_a_bigint_allows() -> None:
    assert KeyPacking.for_nodes(19) == KeyPacking(19, 14)  # 19^14 < 2^63 <= 19^15
    assert KeyPacking.for_nodes(1303) == KeyPacking(1303, 6)
    assert KeyPacking.for_nodes(1) == KeyPacking.for_nodes(2) == KeyPacking(2, 63)
    assert KeyPacking(19, 14).keys(14) == ["k1"]
    assert KeyPacking(19, 14).keys(15) == ["k1", "k2"]
    for nodes in (2, 3, 19, 1303, 2**20, 2**31):
        packing = KeyPacking.for_nodes(nodes)
        assert packing.base ** packing.width - 1 <= 2**63 - 1 < packing.base ** (
            packing.width + 1) - 1


def _check_levels(db: Backend, tmp_path: Path, seed: int, nodes: int, ell: int,
                  k: int) -> None:
    _, counts = _counts(db, tmp_path, seed, nodes)
    lengths = record_lengths(db, counts)
    ks = {f"k{e}": k + e for e in range(1, ell + 1)}  # a k per ℓ, as verify's
    seen: list[int] = []
    found = 0

    def visit(level: Level) -> None:
        nonlocal found
        size = level.size
        seen.append(size)
        names = [exp.column(c, quoted=True) for c in
                 ("record_id", *(f"n{j}" for j in range(1, size + 1)))]
        # every itemset is below a bound past the records: its keys decode to all the rows
        with rows_below_of(db, level, exp.Placeholder(this="all"), {"all": 10**9},
                           db.table("t_rare"), db.table("t_below")) as every:
            level_rows_ = _rows(db, exp.select(*names).from_(every.copy()), {})
        assert level_rows_ == _rows(db, itemset_occurrences(counts, size), {})
        assert len(level_rows_) == level_rows(lengths, size)
        by_chain_part = _rows(db, violating_image_part(counts, size, ell), {"k": k})
        with rows_below_of(db, level, exp.Placeholder(this="k"), {"k": k},
                           db.table("t_rare"), db.table("t_below")) as below:
            assert not db.table_names("t_rare")
            assert by_chain_part == _rows(
                db, violating_image_part(counts, size, ell, level=below), {"k": k})
        found += len(by_chain_part)
        ells = list(range(size, ell + 1))
        params = {f"k{e}": ks[f"k{e}"] for e in ells}
        by_chain = _rows(db, image_violations(counts, size, ells), params)
        with rows_below_of(db, level, loosest_k(ells), params, db.table("t_rare"),
                           db.table("t_below")) as below:
            assert _rows(db, image_violations(counts, size, ells, level=below),
                         params) == by_chain

    for_each_level(db, counts, lengths, ell, lambda purpose: db.table(f"t_{purpose}"), visit)
    assert seen == list(range(1, ell + 1))
    assert found, "the case should have violating images"
    assert not db.table_names("t_")
    db.drop_table(counts)


@pytest.mark.parametrize(("seed", "nodes", "ell", "k"), CASES[:3])
def test_a_level_and_its_rows_below_k_are_dropped_when_a_visit_fails(
        db: Backend, tmp_path: Path, seed: int, nodes: int, ell: int, k: int) -> None:
    _, counts = _counts(db, tmp_path, seed, nodes)

    def visit(level: Level) -> None:
        if level.size == 2:  # while the level's rows below k are stored
            with rows_below_of(db, level, exp.Placeholder(this="k"), {"k": k},
                               db.table("t_rare"), db.table("t_below")):
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        for_each_level(db, counts, record_lengths(db, counts), ell,
                       lambda purpose: db.table(f"t_{purpose}"), visit)
    assert not db.table_names("t_")
    db.drop_table(counts)


@pytest.fixture
def no_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never the records' distinct node sets: the records themselves are enumerated."""
    monkeypatch.setattr(shapes_module, "SHAPE_SURE_REPEATS", 1.0)


@pytest.fixture
def levels_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Levels wherever they fit, whether or not the chain would join more rows than they
    hold (the small cases here seldom reach LEVEL_GAIN)."""
    monkeypatch.setattr(levels_module, "LEVEL_GAIN", 0.0)


def test_levels_pay_where_the_chain_joins_lower_levels_again() -> None:
    """levels_pay against the chain's joined rows counted by brute force: the statement for s
    nodes enumerates every itemset of 1..s nodes of each record again."""
    def chain_rows(lengths: list[tuple[int, int]], deepest: int) -> int:
        return sum(level_rows(lengths, j) for s in range(1, deepest + 1)
                   for j in range(1, s + 1))

    cases = [([(8, 10)], 7), ([(8, 10)], 3), ([(10, 5), (3, 7)], 5), ([(30, 2), (2, 40)], 4),
             ([(4, 1)], 3), ([(11, 100)], 11)]
    for lengths, deepest in cases:
        held = sum(level_rows(lengths, j) for j in range(1, deepest + 1))
        assert levels_pay(lengths, deepest) == (
            chain_rows(lengths, deepest) >= levels_module.LEVEL_GAIN * held)
    # records far longer than the depth (Retail's, at the item level: mean 10.3 items) hold most
    # rows in the top level, and the chain joins about 1.15 times them: not worth the levels
    assert not levels_pay([(10, 80_000), (40, 2_000)], 3)
    # regions a record holds about as many as the depth (the CDR-like cuts at ℓ = 7): they pay
    assert levels_pay([(8, 100_000)], 7)
    assert not levels_pay([(8, 100_000_000)], 7)  # but not where a level is too wide


@pytest.mark.usefixtures("no_shapes")
@pytest.mark.parametrize("way", ["levels", "too wide", "not paying"])
@pytest.mark.parametrize(("seed", "ell", "k"), [(1, 3, 3), (2, 4, 2), (3, 3, 4)])
def test_the_tracker_and_verify_find_the_chains_images_either_way(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str,
        seed: int, ell: int, k: int) -> None:
    gen = _search(db, tmp_path, seed)
    counts = gen.table("tcounts")
    db.materialize(counts, "km_generalized_counts", None, {"items": gen.items, "cut": gen.cut})
    lengths = record_lengths(db, counts)
    by_levels = way == "levels"
    monkeypatch.setattr(levels_module, "LEVEL_GAIN", 0.0 if by_levels else 1e9)
    if way == "too wide":  # every level too wide: the chain
        monkeypatch.setattr(levels_module, "LEVEL_ROWS_MAX", 0)
    assert levels_pay(lengths, ell) == by_levels
    tracker = ImageTracker(gen, ell, k, prefix="lv")
    images = tracker.start(counts, lengths)
    assert (_rows(db, exp.select("*").from_(images.copy()), {})
            == _rows(db, violating_image_rows(counts, ell), {"k": k}))
    tracker.drop()
    ks = {e: k + e for e in range(1, ell + 1)}
    scratch = db.table("t_omega")
    together = share_bounds(db, counts, gen.items, ks, scratch,
                            shape_table=lambda p: db.table(f"t_{p}"), lengths=lengths)
    assert any(found.images for found in together.values())
    for e, k_e in ks.items():
        alone = share_bound(db, counts, gen.items, e, k_e, scratch)
        assert (together[e].rows, together[e].images) == (alone.rows, alone.images)
        assert together[e].share == pytest.approx(alone.share, rel=1e-12)
    assert not db.table_names("t_")
    for purpose in ("lvpart", "keptrare"):
        assert not db.table_names(gen.table(purpose).name)
    kept = db.table_names(gen.table("kept").name)  # the search keeps the rows below k
    assert bool(kept) == by_levels
    gen.drop_work_tables()
    assert not db.table_names(gen.table("kept").name)
    db.drop_table(counts)


@pytest.mark.usefixtures("no_shapes", "levels_always")
@pytest.mark.parametrize(("seed", "k"), [(1, 3), (2, 2), (3, 4)])
@pytest.mark.on_spark(seeds=[2])
def test_kept_levels_are_built_once_per_cut_and_k_and_give_the_chains_images(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
        k: int) -> None:
    gen = _search(db, tmp_path, seed)
    built: list[int] = []
    build = levels_module._build_level

    def counted(backend: Backend, chain: Any, size: int, *rest: Any) -> None:
        built.append(size)
        build(backend, chain, size, *rest)

    monkeypatch.setattr(levels_module, "_build_level", counted)

    def images_of(ell: int, k_: int, prefix: str) -> list[int]:
        """Start a tracker of ``ell`` on the current cut, compare its images with the chain's
        and say which levels it built."""
        built.clear()
        counts = gen.table("tcounts")
        db.materialize(counts, "km_generalized_counts", None,
                       {"items": gen.items, "cut": gen.cut})
        tracker = ImageTracker(gen, ell, k_, prefix=prefix)
        images = tracker.start(counts)
        assert (_rows(db, exp.select("*").from_(images.copy()), {})
                == _rows(db, violating_image_rows(counts, ell), {"k": k_}))
        tracker.drop()
        db.drop_table(counts)
        return list(built)

    assert images_of(2, k, "a") == [1, 2]
    assert images_of(4, k, "b") == [3, 4]  # from the deepest level kept
    assert images_of(3, k, "c") == []
    assert images_of(3, k + 1, "d") == [1, 2, 3]  # another k: every level again
    before = gen.version
    tracker = ImageTracker(gen, 3, k, prefix="e")
    counts = gen.table("tcounts")
    db.materialize(counts, "km_generalized_counts", None, {"items": gen.items, "cut": gen.cut})
    images = tracker.start(counts)
    assert tracker.tally()[0], "the case should have violating images"
    assert gen.merge_images(images, 3, "ncp", 0.5)
    tracker.drop()
    db.drop_table(counts)
    assert gen.version > before
    assert images_of(3, k, "f") == [1, 2, 3]  # another cut: every level again
    # where new levels would not pay, those kept for the cut are still read and grown
    monkeypatch.setattr(levels_module, "LEVEL_GAIN", 1e9)
    assert images_of(4, k, "g") == [4]
    assert images_of(4, k + 1, "h") == []  # another k, nothing kept: the chain
    gen.drop_work_tables()
    assert not db.table_names(gen.table("kept").name)


@pytest.mark.usefixtures("no_shapes")
def test_kept_levels_are_all_dropped_when_building_one_fails(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _search(db, tmp_path, 2)
    counts = gen.table("tcounts")
    db.materialize(counts, "km_generalized_counts", None, {"items": gen.items, "cut": gen.cut})
    lengths = record_lengths(db, counts)
    gen.kept_levels.each((gen.version, 2), counts, lengths, 2, lambda size, rows: None)
    assert db.table_names(gen.table("keptbelow2").name)
    store = levels_module._store_rows_below

    def interrupted(backend: Backend, level: Level, *rest: Any) -> None:
        if level.size == 4:  # after its level is built, while its rows below k are
            raise KeyboardInterrupt
        store(backend, level, *rest)

    monkeypatch.setattr(levels_module, "_store_rows_below", interrupted)
    with pytest.raises(KeyboardInterrupt):
        gen.kept_levels.each((gen.version, 2), counts, lengths, 4, lambda size, rows: None)
    assert not db.table_names(gen.table("kept").name)
    assert gen.kept_levels.key is None and not gen.kept_levels.rows
    seen: list[int] = []
    monkeypatch.setattr(levels_module, "_store_rows_below", store)
    gen.kept_levels.each((gen.version, 2), counts, lengths, 3,
                         lambda size, rows: seen.append(size))
    assert seen == [1, 2, 3]
    gen.drop_work_tables()
    db.drop_table(counts)


@pytest.mark.usefixtures("no_shapes", "levels_always")
# k = 1: no itemset is below k, so the first round certifies (the others merge)
@pytest.mark.parametrize(("seed", "k"), [(1, 3), (2, 2), (3, 4), (4, 1)])
def test_a_start_is_priced_by_the_levels_it_builds_and_steering_by_it_first(
        db: Backend, tmp_path: Path, seed: int, k: int) -> None:
    gen = _search(db, tmp_path, seed)
    counts = gen.table("tcounts")
    db.materialize(counts, "km_generalized_counts", None, {"items": gen.items, "cut": gen.cut})
    lengths = record_lengths(db, counts)
    full = enumeration_rows(lengths, 4)
    assert ImageTracker(gen, 4, k, prefix="p").start_rows(lengths) == full
    shallow = ImageTracker(gen, 2, k, prefix="a")
    shallow.start(counts, lengths)
    shallow.drop()
    db.drop_table(counts)
    missing = level_rows(lengths, 3) + level_rows(lengths, 4)
    assert 0 < missing < full
    assert ImageTracker(gen, 4, k + 1, prefix="p").start_rows(lengths) == full  # another k
    # Steering with a budget the first round's levels fit and a full enumeration does not: one
    # round, by enumeration; the samples go on from its cut unless it certified.
    exact = ExactCheck(gen, 4, k, sigma=0.99)
    version = gen.version
    steered = steer_by_enumeration(exact, "ncp", 0.5, missing)
    assert exact.tries == 1 and exact.first_rows == full
    if steered is None:
        assert len(exact.steered) == 1 and exact.steered[0]["merges"]
        assert gen.version > version
    else:
        assert steered[-1]["certified_by"] == "exact"
    assert ImageTracker(gen, 4, k, prefix="p").start_rows(lengths) == (
        full if gen.version > version else 0)
    exact.drop()
    gen.drop_work_tables()
    assert not db.table_names(gen.table("kept").name)
