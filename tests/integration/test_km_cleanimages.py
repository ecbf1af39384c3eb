"""The clean images kept between the parts of a pool (cleanimages.py): what a part leaves out
is exactly the images found clean under the same cut (brute force), and a sampled run with
them publishes what the run counting every image publishes, on every backend."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.km import sampled
from setanon_sql.models.km.cleanimages import CleanImages, without_vids
from tests.integration.test_km import random_case, run_km
from tests.oracle import km_oracle
from tests.support.hierarchies import random_hierarchy

Image = frozenset[int]


def _groups(db: Backend, name: str, images: dict[int, Image]) -> exp.Table:
    """groups(vid, node_id, n) holding ``images`` (n: a sample count, unused here)."""
    table = db.table(name)
    db.materialize(table, exp.select(*(exp.cast(exp.column(c), "BIGINT").as_(c)
                                       for c in ("vid", "node_id", "n"))).from_(
        exp.values([(vid, node, 1) for vid, image in images.items() for node in image],
                   alias="g", columns=["vid", "node_id", "n"])))
    return table


def _vids(db: Backend, table: exp.Table) -> set[int]:
    return {int(v) for (v,) in db.query(exp.select("vid").distinct().from_(table.copy()))}


@pytest.mark.on_spark(seeds=[1])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_part_counts_only_the_images_found_clean_under_its_cut(db: Backend,
                                                                 seed: int) -> None:
    # Parts of random images of 1..3 nodes out of 6 (an image of fewer nodes must not match a
    # longer one holding its nodes), a third of each part's new images violating, checked
    # under cut versions 4, 4, 4, 5, 5; the third part's pool fails (nothing added), the
    # fourth is under a new cut. The clean images of each part that goes on are added.
    rng = random.Random(seed)
    width = 3
    clean = CleanImages(db, lambda p: db.table(f"x_{p}"), width)
    kept: set[Image] = set()
    for number, (version, goes_on) in enumerate(
            [(4, True), (4, True), (4, False), (5, True), (5, True)], start=1):
        drawn = {frozenset(rng.sample(range(1, 7), rng.randint(1, width))) for _ in range(12)}
        images = dict(enumerate(sorted(drawn, key=sorted), start=1))
        groups = _groups(db, f"x_g{number}", images)
        if version != clean.version:
            kept = set()
        counted = clean.unknown(groups, version, db.table("x_unknown"))
        expected = {vid for vid, image in images.items() if image not in kept}
        assert _vids(db, counted) == expected
        violating = set(rng.sample(sorted(expected), len(expected) // 3))
        violations = _groups(db, f"x_v{number}", {vid: images[vid] for vid in violating})
        clean_groups = db.table("x_clean")
        db.materialize(clean_groups, without_vids(counted, violations))
        assert _vids(db, clean_groups) == expected - violating
        if goes_on:
            clean.add(clean_groups, version)
            kept |= {images[vid] for vid in expected - violating}
        rows = db.query(exp.select("*").from_(db.table("x_sclean"))) if kept else []
        assert sorted(rows) == sorted(tuple([*sorted(image), *[-1] * (width - len(image))])
                                      for image in kept)  # each image once
        for table in ("x_unknown", "x_clean"):
            db.drop_table(db.table(table))
    assert clean.remembered > 0
    clean.forget()
    assert all(name.startswith(("x_g", "x_v")) for name in db.table_names("x_"))


class _CountingAll(CleanImages):
    """Keeps nothing between parts: every image is counted, as before the kept images."""

    def unknown(self, groups: exp.Table, version: int, target: exp.Table) -> exp.Table:
        self.forget()
        return super().unknown(groups, version, target)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_run_keeping_clean_images_publishes_what_counting_all_publishes(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    # Small parts (200, 400, ...) so that a pool is checked in several parts under one cut;
    # the same seed, so the same samples: the runs differ in what they count only.
    for name, value in (("WHOLE_MAX", 200), ("FIRST_MIN", 100), ("FIRST_MAX", 200)):
        monkeypatch.setattr(sampled, name, value)
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.95
    params = {"k": str(k), "m": 3, "sigma": str(sigma), "certify": "samples"}
    dataset, kept_run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, **params)
    monkeypatch.setattr(sampled, "CleanImages", _CountingAll)
    all_id = api.anonymize(db, dataset, require_model("km"), params, seed=1)
    all_run = api.get_run(db, dataset, all_id)
    out_all, mapping_all = tmp_path / "all.dat", tmp_path / "all.txt"
    api.export_dataset(db, dataset, out_all, run=all_run, mapping=mapping_all)
    assert (out.read_text(), mapping_file.read_text()) \
        == (out_all.read_text(), mapping_all.read_text())
    # the same rounds, but for the figures of what was counted (the plan of fewer images)
    entries = [[{key: value for key, value in r.items()
                 if key not in ("remembered_images", "plan")}
                for r in run.figures["rounds"]] for run in (kept_run, all_run)]
    assert entries[0] == entries[1]
    remembered = [r["remembered_images"] for r in kept_run.figures["rounds"]
                  if r.get("certified_by") == "samples"]
    assert remembered and max(remembered) > 0
    assert all(r.get("remembered_images", 0) == 0 for r in all_run.figures["rounds"])
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    for ell in (1, 2, 3):
        assert km_oracle.violating_share(original, published, mapping, k, ell) <= 1 - sigma


def _images(db: Backend, groups: exp.Table) -> dict[int, Image]:
    images: dict[int, set[int]] = {}
    for vid, node in db.query(exp.select("vid", "node_id").from_(groups.copy())):
        images.setdefault(int(vid), set()).add(int(node))
    return {vid: frozenset(nodes) for vid, nodes in images.items()}


def _kept(db: Backend, checker: sampled._Checker) -> set[Image]:
    if checker.clean.version is None:
        return set()
    slots = [f"i{j}" for j in range(1, checker.ell + 1)]
    rows = db.query(exp.select(*slots).from_(checker.gen.table("sclean")))
    return {frozenset(int(n) for n in row if int(n) != -1) for row in rows}


def _rare_pairs_case(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    """30 records of items 1-6 and 60 rare pairs of items 7-40 (each with one of 1-6), every
    rare record twice: its pairs have support 2, below k = 3, and a proposal of one is a
    sample only from its first holder, so some parts' violating proposals are all rejected."""
    rng = random.Random(seed)
    lines = ["1 2 3 4 5 6"] * 30
    for _ in range(60):
        a, b = sorted(rng.sample(range(7, 41), 2))
        lines += [f"{a} {b} {rng.randint(1, 6)}"] * 2
    rng.shuffle(lines)
    data, hierarchy = tmp_path / f"rare{seed}.dat", tmp_path / f"rare{seed}.txt"
    data.write_text("\n".join(lines) + "\n")
    hierarchy.write_text(random_hierarchy([str(i) for i in range(1, 41)], rng))
    return data, hierarchy


def test_a_part_whose_violators_are_all_rejected_keeps_only_its_clean_images(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The rejection step may find that no violating proposal of a part is a sample: the pool
    # goes on. The images kept after that part must be those kept before plus the part's
    # counted images outside its violating groups (read here before and after), and the run
    # publishes what counting every image publishes. The path is a matter of chance (about
    # one case in ten of these takes it); case 1 takes it with today's sampler, on every
    # backend, and the test says so if that changes.
    for name, value in (("WHOLE_MAX", 200), ("FIRST_MIN", 100), ("FIRST_MAX", 200)):
        monkeypatch.setattr(sampled, name, value)
    checked: list[int] = []
    real_goes_on = sampled._Checker.goes_on

    def goes_on(checker: sampled._Checker) -> None:
        if not checker.violated:
            real_goes_on(checker)
            return
        counted = _images(db, checker.counted)
        violating = {int(v) for (v,) in db.query(exp.select("vid").from_(checker.violating))}
        before = _kept(db, checker) if checker.clean.version == checker.version else set()
        real_goes_on(checker)
        clean = {image for vid, image in counted.items() if vid not in violating}
        assert _kept(db, checker) == before | clean
        assert not _kept(db, checker) & {counted[vid] for vid in violating}
        checked.append(len(violating))

    monkeypatch.setattr(sampled._Checker, "goes_on", goes_on)
    data, hierarchy = _rare_pairs_case(tmp_path, 1)
    k, sigma = 3, 0.85
    params = {"k": str(k), "m": 2, "sigma": str(sigma), "certify": "samples"}
    dataset, _, out, mapping_file = run_km(db, data, hierarchy, tmp_path, **params)
    assert checked, "case 1 no longer takes the path: choose a case that does"
    monkeypatch.setattr(sampled, "CleanImages", _CountingAll)
    all_run = api.get_run(db, dataset, api.anonymize(db, dataset, require_model("km"), params,
                                                     seed=1))
    out_all, mapping_all = tmp_path / "all.dat", tmp_path / "all.txt"
    api.export_dataset(db, dataset, out_all, run=all_run, mapping=mapping_all)
    assert (out.read_text(), mapping_file.read_text()) \
        == (out_all.read_text(), mapping_all.read_text())
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    for ell in (1, 2):
        assert km_oracle.violating_share(original, published, mapping, k, ell) <= 1 - sigma
