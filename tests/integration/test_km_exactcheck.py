"""The enumeration certificate of a sampled size (models/km/exactcheck.py) against the
brute-force oracle: its violating images and its bound on the violating ℓ-itemsets of D are
recomputed from every itemset of the original data, on both backends and several cuts; a
size certified this way meets σ by the oracle's exact share."""

from __future__ import annotations

import math
import random
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.io.published import published
from setanon_sql.models import require_model
from setanon_sql.models.km.exactcheck import share_bound, share_bounds
from setanon_sql.models.km.itemsets import (
    MAX_COMPOSITIONS,
    MAX_EXACT_TERMS_SIZE,
    compositions,
    exact_cover_count,
    image_violations,
)
from setanon_sql.models.km.samplesize import gamma_bound
from setanon_sql.models.km.verify import run_tables
from tests.integration.test_km import random_case, run_km
from tests.oracle import km_oracle


def _cut(db: Backend, dictionary: exp.Table, target: exp.Table, a: int, b: int, n: int) -> None:
    """A cut that sends item id i to node (a·i + b) mod n: any partition will do here."""
    node = exp.Mod(this=exp.paren(exp.Add(
        this=exp.Mul(this=exp.column("item_id"), expression=exp.Placeholder(this="a")),
        expression=exp.Placeholder(this="b"))), expression=exp.Placeholder(this="n"))
    db.materialize(target, exp.select("item_id", exp.cast(node, "BIGINT").as_("node_id"))
                   .from_(dictionary.copy()), {"a": a, "b": b, "n": n})


@pytest.mark.parametrize(("seed", "ell", "k", "nodes"),
                         [(1, 2, 3, 10), (2, 3, 2, 6), (3, 3, 4, 12), (4, 2, 5, 14),
                          (6, 4, 3, 7), (8, 3, 3, 1)])
def test_violating_images_and_their_bound_match_the_oracle(db: Backend, tmp_path: Path,
                                                            seed: int, ell: int, k: int,
                                                            nodes: int) -> None:
    data, _ = random_case(tmp_path, seed)
    _images_match_the_oracle(db, data, seed, ell, k, nodes)


@pytest.mark.parametrize(("seed", "ell", "k", "nodes"), [(11, 8, 8, 12), (12, 9, 8, 12)])
def test_the_bound_counts_images_of_more_than_six_nodes(db: Backend, tmp_path: Path,
                                                        seed: int, ell: int, k: int,
                                                        nodes: int) -> None:
    # Long records, so that images of 7 and more nodes below ℓ violate: their itemsets are
    # counted by compositions (C(cover, ℓ) bounded them until stop 84, far above the count).
    rng = random.Random(seed)
    lines = [" ".join(map(str, sorted(rng.sample(range(1, 17), rng.randint(6, 13)))))
             for _ in range(rng.randint(18, 26))]
    data = tmp_path / f"long{seed}.dat"
    data.write_text("\n".join(lines) + "\n")
    sizes = _images_match_the_oracle(db, data, seed, ell, k, nodes)
    assert max(sizes) > MAX_EXACT_TERMS_SIZE  # the composition count was exercised


def _images_match_the_oracle(db: Backend, data: Path, seed: int, ell: int, k: int,
                             nodes: int) -> set[int]:
    """The violating images of ℓ-itemsets under a cut of ``data`` into ``nodes`` nodes, and
    their bound, against a brute force over Ω^ℓ; returns the sizes of the violating images."""
    dataset = api.load_transactions(db, data, f"x{seed}")
    attribute = dataset.set_attributes[0]
    items, dictionary = (db.table(dataset.items_table(attribute)),
                         db.table(dataset.dict_table(attribute)))
    cut, counts = db.table(f"xcut{seed}"), db.table(f"xcounts{seed}")
    _cut(db, dictionary, cut, 2 * seed + 1, seed, nodes)
    db.materialize(counts, "km_generalized_counts", None, {"items": items, "cut": cut})
    images, bound = 0, 0.0
    for size in range(1, ell + 1):
        found, itemsets = db.query(image_violations(counts, size, [ell]), {f"k{ell}": k})[0]
        images, bound = images + int(found), bound + float(itemsets or 0)

    mapping = dict(db.query(exp.select("d.label", "c.node_id").from_(dictionary.copy().as_("d"))
                            .join(cut.copy().as_("c"), on="c.item_id = d.item_id")))
    original = km_oracle.read_fimi(data)
    generalized = [frozenset(mapping[i] for i in record) for record in original]
    omega = km_oracle.itemset_supports(original, ell)
    support: Counter[frozenset[int]] = Counter()
    bad_images, bad_occurrences = set(), 0
    for itemset, supp in omega.items():
        image = frozenset(mapping[i] for i in itemset)
        if image not in support:
            support[image] = sum(1 for record in generalized if image <= record)
        if support[image] < k:
            bad_images.add(image)
            bad_occurrences += supp  # the bound counts each bad itemset once per holder
    assert images == len(bad_images)
    assert bound == pytest.approx(bad_occurrences)
    assert images > 0 or all(support[i] >= k for i in support)  # zero images: nothing below k
    for table in (cut, counts):
        db.drop_table(table)
    return {len(image) for image in bad_images}


@pytest.mark.parametrize(("seed", "nodes"), [(1, 8), (4, 5), (6, 12)])
def test_one_enumeration_per_itemset_size_serves_every_size_alike(
        db: Backend, tmp_path: Path, seed: int, nodes: int) -> None:
    # verify bounds several sizes on one cut, enumerating each itemset size once for all of
    # them; each size's bound must be the one it gets alone (which the oracle test checks).
    data, _ = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, f"s{seed}")
    attribute = dataset.set_attributes[0]
    items = db.table(dataset.items_table(attribute))
    cut, counts, scratch = (db.table(f"s{name}{seed}") for name in ("cut", "counts", "omega"))
    _cut(db, db.table(dataset.dict_table(attribute)), cut, 2 * seed + 1, seed, nodes)
    db.materialize(counts, "km_generalized_counts", None, {"items": items, "cut": cut})
    ks = {1: 2, 2: 4, 3: 3, 4: 5}
    together = share_bounds(db, counts, items, ks, scratch)
    alone = {ell: share_bound(db, counts, items, ell, k, scratch) for ell, k in ks.items()}
    assert sum(found.images for found in alone.values()) > 0  # something to agree on
    for ell in ks:
        assert (together[ell].rows, together[ell].images) == (alone[ell].rows,
                                                               alone[ell].images)
        assert together[ell].share == pytest.approx(alone[ell].share)
    for table in (cut, counts):
        db.drop_table(table)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sizes_certified_by_enumeration_meet_sigma(db: Backend, tmp_path: Path,
                                                   seed: int) -> None:
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.85
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=3,
                                             sigma=str(sigma), certify="auto")
    figures = run.figures
    # Small data: enumerating is always cheaper than γ = 421 samples, so every size is
    # certified by it, each at most once per cut version.
    assert figures["pools_certified_exactly"] == 3
    assert figures["pools_certified_by_samples"] == 0
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    epsilon = gamma_bound(sigma)[1]
    for ell in (1, 2, 3):
        share = km_oracle.violating_share(original, published, mapping, k, ell)
        assert share <= epsilon, (ell, share)  # the certificate's own threshold, not only 1 - σ
    assert km_oracle.generalization_problems(original, published, mapping) == []
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize("seed", [1, 2])
def test_certified_sizes_with_every_enumeration_joined_left_deep(
        db: Backend, tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The certificate, steering, Ω's floor and verify enumerate left-deep from the engine's
    ``left_deep_from`` nodes (``itemsets.enumeration_joins``); made to at every size, the sizes
    still meet σ."""
    monkeypatch.setattr(db, "left_deep_from", 1)
    test_sizes_certified_by_enumeration_meet_sigma(db, tmp_path, seed)


@pytest.mark.parametrize("seed", [7, 8, 9])
@pytest.mark.on_spark(seeds=[7])
def test_certify_samples_never_enumerates(db: Backend, tmp_path: Path, seed: int) -> None:
    # Every size decided by pools of proposals checked before the rejection step (sampled.py)
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.85
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=2,
                                             sigma=str(sigma), certify="samples")
    assert run.figures["pools_certified_exactly"] == 0
    assert run.figures["exact_checks"] == 0
    assert run.figures["pools_certified_by_samples"] == 2
    steered = [entry for entry in run.figures["rounds"] if "violating_samples" in entry]
    assert run.figures["pools_failed_by_samples"] >= 1  # the path of a failing part is taken
    assert len(steered) >= run.figures["pools_failed_by_samples"]
    assert all(entry["proposals"] >= entry["violating_samples"] for entry in steered)
    certified = [entry for entry in run.figures["rounds"] if "certified_by" in entry]
    assert sum(entry["proposed_parts"] for entry in certified) >= 1  # pools after a failed one
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    for ell in (1, 2):
        assert km_oracle.violating_share(original, published, mapping, k, ell) <= 1 - sigma
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize("seed", [7, 8])
def test_check_by_record_slices_gives_the_same_run(db: Backend, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   seed: int) -> None:
    # The staged check (groupsupport.record_slices) forced on a small file: the same cut and
    # export as one count over <R, D>, and verify's sampled check likewise.
    from setanon_sql.models.km import risk, sampled

    data, hierarchy = random_case(tmp_path, seed)
    params = {"k": "3", "m": 2, "sigma": "0.85", "certify": "samples"}
    dataset, _, out, mapping_file = run_km(db, data, hierarchy, tmp_path, **params)
    monkeypatch.setattr(sampled, "SLICE_FROM_RECORDS", 0)
    monkeypatch.setattr(risk, "SLICE_FROM_RECORDS", 0)
    again = api.get_run(db, dataset, api.anonymize(db, dataset, require_model("km"), params,
                                                    seed=1))
    out2, map2 = tmp_path / "sliced.dat", tmp_path / "sliced.txt"
    api.export_dataset(db, dataset, out2, run=again, mapping=map2)
    assert (out.read_text(), mapping_file.read_text()) == (out2.read_text(), map2.read_text())
    plans = [str(entry["plan"]) for entry in again.figures["rounds"] if "plan" in entry]
    assert any("+" in plan for plan in plans), plans  # some check counted a later slice
    tables = run_tables(db, dataset, dataset.set_attributes[0], published(db, dataset, again))
    original, published_rows = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    ell, drawn = 2, 1500
    k = next(k for k in range(4, 200)  # a k above the run's: violations to find
             if km_oracle.violating_share(original, published_rows, mapping, k, ell) > 0.1)
    share = km_oracle.violating_share(original, published_rows, mapping, k, ell)
    sliced = risk.sampled_violations(db, dataset, tables, tables["items"], ell, k, drawn, 3)
    monkeypatch.setattr(risk, "SLICE_FROM_RECORDS", 10**9)
    assert risk.sampled_violations(db, dataset, tables, tables["items"], ell, k, drawn,
                                   3) == sliced
    spread = 4 * math.sqrt(share * (1 - share) / drawn) + 0.01
    assert abs(sliced[0] / drawn - share) <= spread, (sliced, share)
    assert [t for t in db.table_names("tmp_")] == []


def test_verify_bounds_the_share_from_above_by_enumeration(db: Backend, tmp_path: Path) -> None:
    # A run exact for k = 2, m = 1, checked for pairs at k = 3 (violations to find): verify's
    # enumeration bound must lie at or above the oracle's exact violating share.
    from setanon_sql.io.published import published
    from setanon_sql.models.km.verify import enumerated_shares

    data, hierarchy = random_case(tmp_path, 6)
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k="2", m=1)
    share = km_oracle.violating_share(km_oracle.read_fimi(data), km_oracle.read_fimi(out),
                                      km_oracle.read_mapping(mapping_file), 3, 2)
    tables = run_tables(db, dataset, dataset.set_attributes[0], published(db, dataset, run))
    bound = enumerated_shares(db, tables, {2: (3, 10**6)}).get(2)
    assert bound is not None and bound.images > 0
    assert share > 0.05
    assert share <= bound.share <= 1.0
    assert enumerated_shares(db, tables, {2: (3, 0)}) == {}  # dearer than 0 samples: not run
    assert [t for t in db.table_names("tmp_")] == []


def test_verify_of_a_sampled_run_enumerates_where_cheaper(db: Backend, tmp_path: Path) -> None:
    data, hierarchy = random_case(tmp_path, 9)
    dataset, run, _, _ = run_km(db, data, hierarchy, tmp_path, k="3", m=2, sigma="0.85",
                                certify="samples")
    verdict = api.verify(db, dataset, run)
    assert verdict.ok
    assert all(str(verdict.details[f"size {ell}"]).startswith("enumerated") for ell in (1, 2))


def test_verify_prices_a_sample_by_its_size(db: Backend, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A size is enumerated while its rows cost no more than its samples at the size's price
    # (exactcheck.sample_price); priced at nothing, the same run's sizes are sampled instead,
    # and both ways pass.
    from setanon_sql.models.km import exactcheck

    data, hierarchy = random_case(tmp_path, 9)
    dataset, run, _, _ = run_km(db, data, hierarchy, tmp_path, k="3", m=2, sigma="0.85",
                                certify="samples")
    monkeypatch.setattr(exactcheck, "SAMPLE_ROWS", (10**6, 0))
    verdict = api.verify(db, dataset, run)
    assert verdict.ok
    assert str(verdict.details["size 1"]).startswith("enumerated")
    assert str(verdict.details["size 2"]).startswith("sampled")
    monkeypatch.setattr(exactcheck, "SAMPLE_ROWS", (0,))
    verdict = api.verify(db, dataset, run)
    assert verdict.ok
    assert all(str(verdict.details[f"size {ell}"]).startswith("sampled") for ell in (1, 2))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=9),
       ell=st.integers(min_value=1, max_value=11))
def test_cover_count_is_the_number_of_subsets_touching_every_node(db: Backend,
                                                                   counts: list[int],
                                                                   ell: int) -> None:
    # The per-holder term of the bound: ℓ-subsets of the items (c_i under node i) that hold
    # an item under every node; exact by inclusion-exclusion (up to MAX_EXACT_TERMS_SIZE
    # nodes) or by compositions (up to MAX_COMPOSITIONS of them), an upper bound past both.
    items = [node for node, c in enumerate(counts) for _ in range(c)]
    assume(len(items) <= 18)  # the brute force below stays small
    brute = sum(1 for chosen in combinations(range(len(items)), ell)
                if {items[i] for i in chosen} == set(range(len(counts))))
    value = float(db.scalar(exp.select(exact_cover_count(
        [exp.Literal.number(c) for c in counts], ell))))
    size = len(counts)
    if size <= MAX_EXACT_TERMS_SIZE or math.comb(ell - 1, size - 1) <= MAX_COMPOSITIONS:
        assert value == pytest.approx(brute)
    else:
        assert value >= brute


def test_compositions_are_every_split_into_positive_parts() -> None:
    # Σ over them of Π C(c_i, a_i) is the count above; each split once, C(total - 1, parts - 1).
    for total in range(1, 9):
        for parts in range(1, 10):
            found = list(compositions(total, parts))
            assert len(found) == len(set(found)) == (math.comb(total - 1, parts - 1)
                                                    if parts <= total else 0)
            assert all(len(a) == parts and min(a) >= 1 and sum(a) == total for a in found)
