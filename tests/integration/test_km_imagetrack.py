"""Violating images kept across merges (models/km/imagetrack.py) against a full enumeration.

A real hierarchy search is steered by its own violating images, merge round after merge round,
as :mod:`.enumsteer` does. After every round (and after two rounds at once, as the sampled
search tries the certificate only between pools) the tracker's images, which enumerate only
the records a merge touched, must be the rows a full enumeration of the current cut gives, for
both bounds; and :class:`.exactcheck.ExactCheck` must decide what the full check
(:func:`.exactcheck.share_bound`, itself checked against the brute-force oracle in
test_km_exactcheck.py) decides, with the same count and bound. Every backend, several seeds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.km.exactcheck import ExactCheck, share_bound
from setanon_sql.models.km.generalization import Generalization
from setanon_sql.models.km.imagetrack import ImageTracker
from setanon_sql.models.km.itemsets import violating_image_rows
from setanon_sql.models.km.shapes import record_lengths
from setanon_sql.runs import RunContext
from tests.integration.test_km import random_case


def _search(db: Backend, tmp_path: Path, seed: int) -> Generalization:
    data, hierarchy_file = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, f"it{seed}")
    hierarchy = api.load_hierarchy(db, hierarchy_file, dataset)
    attribute = dataset.set_attributes[0]
    context = RunContext(db, dataset, run_id=900_000 + seed, seed=seed)
    gen = Generalization(db, context, db.table(dataset.items_table(attribute)),
                         db.table(dataset.dict_table(attribute)), hierarchy.hierarchy_id)
    gen.prepare()
    return gen


def _image_rows(db: Backend, table: exp.Table, ell: int) -> list[tuple[object, ...]]:
    columns = ["size", *(f"n{j}" for j in range(1, ell + 1)), "x"]
    return sorted(((*row[:-1], round(float(row[-1]), 6))
                   for row in db.query(exp.select(*columns).from_(table.copy()))),
                  key=repr)


def _full_rows(gen: Generalization, ell: int, k: int) -> list[tuple[object, ...]]:
    """The violating image rows of a full enumeration of the current cut."""
    b, counts, full = gen.backend, gen.table("tcounts"), gen.table("tfull")
    b.materialize(counts, "km_generalized_counts", None, {"items": gen.items, "cut": gen.cut})
    b.materialize(full, violating_image_rows(counts, ell), {"k": k})
    rows = _image_rows(b, full, ell)
    b.drop_table(counts)
    b.drop_table(full)
    return rows


@pytest.mark.parametrize(("seed", "ell", "k"), [(1, 2, 3), (2, 3, 2), (3, 3, 4), (5, 2, 5)])
@pytest.mark.on_spark(seeds=[2])
def test_kept_images_are_those_of_a_full_enumeration_after_every_merge(
        db: Backend, tmp_path: Path, seed: int, ell: int, k: int) -> None:
    gen = _search(db, tmp_path, seed)
    steering = ImageTracker(gen, ell, k, prefix="s")
    lagging = ImageTracker(gen, ell, k, prefix="l")  # advanced every other round
    counts = gen.table("tstart")
    gen.backend.materialize(counts, "km_generalized_counts", None,
                            {"items": gen.items, "cut": gen.cut})
    images = steering.start(counts)
    lagging.start(counts)
    gen.backend.drop_table(counts)
    compared = 0
    for round_no in range(1, 9):
        if not steering.tally()[0]:
            break
        assert gen.merge_images(images, ell, "ncp", 0.1)
        images = steering.advance()
        full = _full_rows(gen, ell, k)
        assert _image_rows(gen.backend, images, ell) == full
        if round_no % 2 == 0:
            assert _image_rows(gen.backend, lagging.advance(), ell) == full
        compared += 1
    assert compared >= 2, "the case should take merges"
    steering.drop()
    lagging.drop()
    assert not gen.backend.table_names(gen.table("s").name)
    gen.drop_work_tables()


@pytest.mark.parametrize(("seed", "ell", "k"), [(1, 2, 3), (3, 3, 4), (6, 3, 3)])
@pytest.mark.on_spark(seeds=[3])
def test_the_certificate_kept_across_merges_decides_as_the_full_check(
        db: Backend, tmp_path: Path, seed: int, ell: int, k: int) -> None:
    gen = _search(db, tmp_path, seed)
    exact = ExactCheck(gen, ell, k, sigma=0.9)
    steering = ImageTracker(gen, ell, k, prefix="s")
    counts, scratch = gen.table("tcounts"), gen.table("tomega")
    gen.backend.materialize(counts, "km_generalized_counts", None,
                            {"items": gen.items, "cut": gen.cut})
    images = steering.start(counts)
    gen.backend.drop_table(counts)
    decisions = []
    for _ in range(8):
        gen.backend.materialize(counts, "km_generalized_counts", None,
                                {"items": gen.items, "cut": gen.cut})
        full = share_bound(gen.backend, counts, gen.items, ell, k, scratch)
        lengths = record_lengths(gen.backend, counts)
        gen.backend.drop_table(counts)
        certified = exact.certifies(lengths)
        assert exact.last["violating_images"] == full.images
        assert exact.last["share_bound"] == pytest.approx(full.share, rel=1e-9, abs=1e-12)
        assert certified == (full.share <= exact.epsilon)
        decisions.append(certified)
        if not steering.tally()[0]:
            break
        assert gen.merge_images(images, ell, "ncp", 0.1)
        images = steering.advance()
    assert False in decisions and decisions[-1], "the case should go from failing to certified"
    assert exact.tries == len(decisions)
    exact.drop()
    steering.drop()
    gen.drop_work_tables()
