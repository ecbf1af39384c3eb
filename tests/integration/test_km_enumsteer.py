"""Steering a sampled size by enumeration (models/km/enumsteer.py) and the lower bound on |Ω^ℓ|
its certificate divides by (models/km/exactcheck.py), against the brute-force oracle on small
random data, on every backend."""

from __future__ import annotations

import random
from collections import Counter
from math import comb
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.km import exactcheck, sampled
from setanon_sql.models.km.itemsets import (
    choose_image_merges,
    image_nodes,
    untouched_image_rows,
    violating_image_rows,
)
from setanon_sql.models.km.samplesize import gamma_bound
from tests.integration.test_km import random_case, run_km
from tests.integration.test_km_exactcheck import _cut
from tests.oracle import km_oracle
from tests.support.hierarchies import random_hierarchy


def _items(db: Backend, data: Path, name: str) -> tuple[exp.Table, exp.Table]:
    dataset = api.load_transactions(db, data, name)
    attribute = dataset.set_attributes[0]
    return (db.table(dataset.items_table(attribute)), db.table(dataset.dict_table(attribute)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_omega_floor_is_exact_when_cheap_and_a_lower_bound_otherwise(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    data, _ = random_case(tmp_path, seed)
    items, _ = _items(db, data, f"w{seed}")
    original = km_oracle.read_fimi(data)
    longest = max(len(record) for record in original)
    for ell in (1, 2, 3, 4):
        omega = len(km_oracle.itemset_supports(original, ell))
        assert exactcheck.omega_floor(db, items, ell, db.table("omegax")) == omega
    # Past OMEGA_ROWS: the Bonferroni bound over the longest records, never above |Ω^ℓ|.
    monkeypatch.setattr(exactcheck, "OMEGA_ROWS", 0)
    for records in (1, 3, 200):
        monkeypatch.setattr(exactcheck, "OMEGA_RECORDS", records)
        for ell in (1, 2, 3):
            omega = len(km_oracle.itemset_supports(original, ell))
            floor = exactcheck.omega_floor(db, items, ell, db.table("omegax"))
            assert comb(longest, ell) <= floor <= omega, (records, ell)
    assert [t for t in db.table_names("omegax")] == []


def test_bonferroni_bound_counts_shared_subsets_once(db: Backend, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Two identical records and one disjoint: |Ω^2| = 3 + 1 = 4, and the bound is exact here
    # (no three records share a pair).
    data = tmp_path / "b.dat"
    data.write_text("1 2 3\n1 2 3\n4 5\n")
    items, _ = _items(db, data, "b")
    monkeypatch.setattr(exactcheck, "OMEGA_ROWS", 0)
    assert exactcheck.omega_floor(db, items, 2, db.table("omegab")) == 4


@pytest.mark.parametrize(("seed", "ell", "k", "nodes"),
                         [(1, 2, 3, 10), (2, 3, 2, 6), (3, 3, 4, 12), (6, 4, 3, 7)])
def test_violating_image_rows_match_the_oracle(db: Backend, tmp_path: Path, seed: int,
                                               ell: int, k: int, nodes: int) -> None:
    data, _ = random_case(tmp_path, seed)
    items, dictionary = _items(db, data, f"v{seed}")
    cut, counts, found = db.table(f"vcut{seed}"), db.table(f"vcnt{seed}"), db.table(f"vn{seed}")
    _cut(db, dictionary, cut, 2 * seed + 1, seed, nodes)
    db.materialize(counts, "km_generalized_counts", None, {"items": items, "cut": cut})
    db.materialize(found, violating_image_rows(counts, ell), {"k": k})
    columns = ["size", *(f"n{j}" for j in range(1, ell + 1)), "x"]
    rows = db.query(exp.select(*columns).from_(found.copy()))
    images = [frozenset(int(n) for n in row[1:-1] if n is not None) for row in rows]
    assert [len(image) for image in images] == [int(row[0]) for row in rows]
    bound = sum(float(row[-1]) for row in rows)
    # One node per row for the merge step of other searches: the same images, one vid each.
    per_vid: dict[int, set[int]] = {}
    for vid, node in db.query(image_nodes(found, ell)):
        per_vid.setdefault(int(vid), set()).add(int(node))
    assert sorted(sorted(v) for v in per_vid.values()) == sorted(sorted(i) for i in images)

    mapping = dict(db.query(exp.select("d.label", "c.node_id").from_(dictionary.copy().as_("d"))
                            .join(cut.copy().as_("c"), on="c.item_id = d.item_id")))
    original = km_oracle.read_fimi(data)
    generalized = [frozenset(mapping[i] for i in record) for record in original]
    support: Counter[frozenset[int]] = Counter()
    bad: set[frozenset[int]] = set()
    occurrences = 0
    for itemset, supp in km_oracle.itemset_supports(original, ell).items():
        image = frozenset(mapping[i] for i in itemset)
        if image not in support:
            support[image] = sum(1 for record in generalized if image <= record)
        if support[image] < k:
            bad.add(image)
            occurrences += supp
    assert set(images) == bad
    assert len(images) == len(bad)  # one row per image: count(*) counts them
    assert bound >= occurrences - 1e-9  # an upper bound on the violating itemsets of D
    for table in (cut, counts, found):
        db.drop_table(table)


@pytest.mark.on_spark(seeds=[3])
@pytest.mark.parametrize(("seed", "ell", "k", "nodes"),
                         [(1, 2, 3, 10), (2, 3, 2, 9), (3, 3, 4, 12), (6, 4, 3, 8)])
def test_images_after_merges_are_those_a_full_enumeration_finds(
        db: Backend, tmp_path: Path, seed: int, ell: int, k: int, nodes: int) -> None:
    # enumsteer keeps the images of unchanged nodes and enumerates only the itemsets with a
    # changed node, in the records holding one: the union must be a full enumeration's rows.
    # Two merges: nodes 0 and 1 into a new node, node 3 into node 2 (which keeps its id).
    data, _ = random_case(tmp_path, seed)
    items, dictionary = _items(db, data, f"i{seed}")
    before, after = db.table(f"icut{seed}"), db.table(f"inext{seed}")
    _cut(db, dictionary, before, 2 * seed + 1, seed, nodes)
    node = exp.column("node_id")
    db.materialize(after, exp.select("item_id", exp.Case(ifs=[
        exp.If(this=node.isin(0, 1), true=exp.Literal.number(1000)),
        exp.If(this=node.eq(3), true=exp.Literal.number(2))], default=node).as_("node_id"))
        .from_(before.copy()))
    old, new = db.table(f"icnt{seed}"), db.table(f"icnt2{seed}")
    old_images, changed, touched = (db.table(f"i{p}{seed}") for p in ("img", "chg", "tch"))
    kept, full = db.table(f"ikept{seed}"), db.table(f"ifull{seed}")
    db.materialize(old, "km_generalized_counts", None, {"items": items, "cut": before})
    db.materialize(new, "km_generalized_counts", None, {"items": items, "cut": after})
    db.materialize(old_images, violating_image_rows(old, ell), {"k": k})
    db.materialize(changed, "km_changed_nodes", None, {"cut": after, "prevcut": before})
    members: list[dict[int, set[int]]] = [{}, {}]
    for cut, held in zip((before, after), members, strict=True):
        for item, node_id in db.query(exp.select("item_id", "node_id").from_(cut.copy())):
            held.setdefault(int(node_id), set()).add(int(item))
    assert sorted(int(n) for (n,) in db.query(exp.select("node_id").from_(changed.copy()))) == [
        n for n in sorted(set(members[0]) | set(members[1]))
        if members[0].get(n) != members[1].get(n)]
    db.materialize(touched, "km_touched_counts", None,
                   {"items": items, "cut": after, "changed": changed})
    db.materialize(kept, exp.union(untouched_image_rows(old_images, changed, ell),
                                   violating_image_rows(touched, ell, touching="fresh"),
                                   distinct=False), {"k": k})
    db.materialize(full, violating_image_rows(new, ell), {"k": k})
    columns = ["size", *(f"n{j}" for j in range(1, ell + 1)), "x"]

    def rows(table: exp.Table) -> list[tuple[object, ...]]:
        return sorted((*row[:-1], round(float(row[-1]), 6))
                      for row in db.query(exp.select(*columns).from_(table.copy())))

    assert rows(full)  # something to compare
    assert rows(kept) == rows(full)
    for table in (before, after, old, new, old_images, changed, touched, kept, full):
        db.drop_table(table)


@pytest.mark.on_spark(seeds=[2])
@pytest.mark.parametrize(("seed", "nodes"), [(1, 10), (2, 6), (3, 12), (5, 4)])
def test_generalized_since_an_earlier_cut_is_the_whole_recount(db: Backend, tmp_path: Path,
                                                               seed: int, nodes: int) -> None:
    # The sampled check keeps <R, D> of the rows of unchanged nodes and finds only the changed
    # nodes' rows again (km_generalized_update): its rows must be, one for one, the records'
    # items mapped by the new cut with duplicates merged, as the file and the cut say. Merges
    # as in the test above, plus a node split in two, which merges never make but the update
    # must not care about.
    data, _ = random_case(tmp_path, seed)
    items, dictionary = _items(db, data, f"u{seed}")
    before, after = db.table(f"ucut{seed}"), db.table(f"unext{seed}")
    _cut(db, dictionary, before, 2 * seed + 1, seed, nodes)
    node, item = exp.column("node_id"), exp.column("item_id")
    db.materialize(after, exp.select("item_id", exp.Case(ifs=[
        exp.If(this=node.isin(0, 1), true=exp.Literal.number(1000)),
        exp.If(this=node.eq(3), true=exp.Literal.number(2)),
        exp.If(this=exp.and_(node.eq(4), exp.Mod(this=item, expression=exp.Literal.number(2))
                             .eq(0)), true=exp.Literal.number(2000))],
        default=node).as_("node_id")).from_(before.copy()))
    old, changed, updated = (db.table(f"u{p}{seed}") for p in ("old", "chg", "upd"))
    db.materialize(old, "km_generalized", None, {"items": items, "cut": before})
    db.materialize(changed, "km_changed_nodes", None, {"cut": after, "prevcut": before})
    db.materialize(updated, "km_generalized_update", None,
                   {"prev": old, "items": items, "cut": after, "changed": changed})
    label_of = {int(i): label for i, label in
                db.query(exp.select("item_id", "label").from_(dictionary.copy()))}
    node_of = {label_of[int(i)]: int(n) for i, n in
               db.query(exp.select("item_id", "node_id").from_(after.copy()))}
    expected = sorted({(r, node_of[label]) for r, line in enumerate(
        data.read_text().splitlines(), start=1) for label in line.split()})
    rows = db.query(exp.select("record_id", "node_id").from_(updated.copy()))
    assert len(rows) == len(set(rows))  # no row twice
    assert sorted((int(r), int(n)) for r, n in rows) == expected
    for table in (before, after, old, changed, updated):
        db.drop_table(table)


@pytest.mark.on_spark(seeds=[1])
@pytest.mark.parametrize("seed", [1, 2, 4])
def test_sizes_steered_by_enumeration_meet_epsilon(db: Backend, tmp_path: Path,
                                                   seed: int) -> None:
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.9
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=3,
                                             sigma=str(sigma))
    figures = run.figures
    # Small data: one enumeration always costs less than the first pool, so no sample is drawn
    # and every size ends on the certificate.
    assert figures["sample_proposals"] == 0
    assert figures["pools_certified_exactly"] == 3
    certifying = [r for r in figures["rounds"] if "certified_by" in r]
    assert [r["steered_by"] for r in certifying] == ["enumeration"] * 3
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    epsilon = gamma_bound(sigma)[1]
    for ell in (1, 2, 3):
        assert km_oracle.violating_share(original, published, mapping, k, ell) <= epsilon
    assert km_oracle.cut_problems(mapping, km_oracle.read_hierarchy(hierarchy)) == []
    assert km_oracle.generalization_problems(original, published, mapping) == []
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize("seed", [1, 3])
def test_too_dear_to_enumerate_the_samples_steer(db: Backend, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 seed: int) -> None:
    # A sample priced at 0 rows: enumeration never steers, the sampled path of Alg. 2 does.
    monkeypatch.setattr(exactcheck, "SAMPLE_ROWS", (0,))
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.85
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=2,
                                             sigma=str(sigma))
    assert run.figures["sample_proposals"] > 0
    assert not any(r.get("steered_by") == "enumeration" for r in run.figures["rounds"])
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    for ell in (1, 2):
        assert km_oracle.violating_share(original, published, mapping, k, ell) <= 1 - sigma
    assert api.verify(db, dataset, run).ok


def _pilot_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """One pass dearer than the first pool at every size, yet within FAILING_POOLS of it: each
    size draws a pilot part first. No certificate is tried before it (a sample priced at a
    billionth of a row: only an empty enumeration costs less than the samples)."""
    monkeypatch.setattr(exactcheck, "SAMPLE_ROWS", (1e-9,))
    monkeypatch.setattr(sampled, "FAILING_POOLS", 10**15)


@pytest.mark.on_spark(seeds=[1])
@pytest.mark.parametrize("seed", [1, 2, 4])
def test_a_violating_pilot_hands_its_size_to_enumeration(db: Backend, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          seed: int) -> None:
    _pilot_every_size(monkeypatch)
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.95  # γ = 1,457: the pilot is a part of 1,000
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=3,
                                             sigma=str(sigma))
    certifying = [r for r in run.figures["rounds"] if "certified_by" in r]
    assert [r["size"] for r in certifying] == [1, 2, 3]
    handed = [r for r in certifying if "pilot_samples" in r]
    assert handed  # size 1 of random data with k = 3 has rare items: its pilot violates
    for entry in handed:
        assert entry["pilot_samples"] == 1000 and entry["pilot_violating_samples"] > 0
        assert (entry["certified_by"], entry["steered_by"]) == ("exact", "enumeration")
    for entry in certifying:
        if "pilot_samples" not in entry:  # a clean pilot: the pool went on and passed
            assert entry["certified_by"] == "samples"
            assert entry["clean_samples"] >= entry["gamma"]
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    epsilon = gamma_bound(sigma)[1]
    for entry in certifying:
        share = km_oracle.violating_share(original, published, mapping, k, entry["size"])
        assert share <= (epsilon if entry["certified_by"] == "exact" else 1 - sigma)
    assert km_oracle.generalization_problems(original, published, mapping) == []
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize("seed", [1, 2])
def test_a_clean_pilot_is_the_first_part_of_its_pool(db: Backend, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     seed: int) -> None:
    # Every record the same four items: no itemset is below k, so every pilot is clean and
    # counts toward γ; the rest of γ follows in proposed parts. Size 1 draws items directly,
    # exactly as many as asked: a pilot of 1,000, then 457. Above it a proposed part holds
    # about the samples asked for (a binomial count: one more part is as likely as not).
    _pilot_every_size(monkeypatch)
    rng = random.Random(seed)
    universe = [str(i) for i in range(1, 7)]
    data = tmp_path / f"same{seed}.dat"
    data.write_text("1 2 3 4\n" * rng.randint(20, 30))
    hierarchy = tmp_path / f"hs{seed}.txt"
    hierarchy.write_text(random_hierarchy(universe, rng))
    sigma = 0.95  # γ = 1,457: a pilot of 1,000, then 457
    dataset, run, out, _ = run_km(db, data, hierarchy, tmp_path, k="3", m=3,
                                  sigma=str(sigma))
    certifying = [r for r in run.figures["rounds"] if "certified_by" in r]
    assert [(r["size"], r["certified_by"], r["failed_pools"]) for r in certifying] \
        == [(ell, "samples", 0) for ell in (1, 2, 3)]
    assert (certifying[0]["parts"], certifying[0]["clean_samples"]) == (2, 1457)
    for entry in certifying[1:]:  # the pilot drawn whole, every later part proposed
        assert entry["parts"] >= 2 and entry["proposed_parts"] == entry["parts"] - 1
    assert all(r["clean_samples"] >= r["gamma"] == 1457 for r in certifying)
    assert run.figures["ncp"] == 0
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    assert sorted(map(sorted, published)) == sorted(map(sorted, original))
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize(("seed", "ell"), [(1, 1), (2, 2), (3, 3), (4, 5)])
def test_choosing_from_image_rows_chooses_as_km_choose_merges(db: Backend, seed: int,
                                                              ell: int) -> None:
    # Random parents (some nodes have none, as the root), costs with ties, images of sizes
    # 1..ℓ: the merges chosen from the rows are those km_choose_merges chooses from one node
    # per row, for every batch share.
    rng = random.Random(seed)
    hnode, costs, images = (db.table(f"ch{name}{seed}") for name in ("h", "c", "i"))
    parents = {node: rng.choice([None, *range(40, 50)]) for node in range(1, 31)}
    db.materialize(hnode, exp.select(
        exp.column("node_id"), exp.cast(exp.column("parent_id"), "BIGINT").as_("parent_id"))
        .from_(exp.Values(expressions=[exp.tuple_(node, parent if parent is not None
                                                  else exp.Null())
                                       for node, parent in parents.items()],
                          alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[
                              exp.to_identifier("node_id"), exp.to_identifier("parent_id")]))))
    db.materialize(costs, exp.select("node_id", "cost").from_(exp.Values(
        expressions=[exp.tuple_(node, rng.randint(0, 3)) for node in range(40, 50)],
        alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[
            exp.to_identifier("node_id"), exp.to_identifier("cost")]))))
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < 25:
        chosen.add(tuple(sorted(rng.sample(range(1, 31), rng.randint(1, ell)))))
    names = ["size", *(f"n{j}" for j in range(1, ell + 1))]
    db.materialize(images, exp.select(*(exp.cast(exp.column(n), "BIGINT").as_(n)
                                        for n in names))
                   .from_(exp.Values(expressions=[
                       exp.tuple_(len(image), *image, *([exp.Null()] * (ell - len(image))))
                       for image in sorted(chosen)],
                       alias=exp.TableAlias(this=exp.to_identifier("t"),
                                            columns=[exp.to_identifier(n) for n in names]))))
    vnodes = db.table(f"chv{seed}")
    db.materialize(vnodes, image_nodes(images, ell))
    for batch in (0.01, 0.3, 1.0):
        expected = db.query("km_choose_merges", {"batch": batch},
                            {"vnodes": vnodes, "hnode": hnode, "costs": costs})
        found = db.query(choose_image_merges(images, hnode, costs, ell), {"batch": batch})
        assert sorted(found) == sorted(expected), batch
        assert expected
    for table in (hnode, costs, images, vnodes):
        db.drop_table(table)
