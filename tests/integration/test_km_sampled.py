"""--model km with σ < 1: the sampler, the sampled search and the unicity estimate, checked by
the brute-force oracle (exact shares over every itemset) on both backends."""

from __future__ import annotations

import functools
import hashlib
import math
from collections import Counter
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.km import sampler as sampler_module
from setanon_sql.models.km.groupsupport import itemset_support
from setanon_sql.models.km.risk import estimate_unicity
from setanon_sql.models.km.sampler import Sampler
from setanon_sql.models.km.verify import run_tables
from tests.integration.test_km import random_case, run_km
from tests.oracle import km_oracle


def test_samples_are_uniform_over_the_itemsets_that_occur(db: Backend, tmp_path: Path) -> None:
    data, _ = random_case(tmp_path, 11)
    dataset = api.load_transactions(db, data, "s")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    dictionary = db.table(dataset.dict_table(dataset.set_attributes[0]))
    labels = dict(db.query(exp.select("item_id", "label").from_(dictionary)))
    omega = km_oracle.itemset_supports(km_oracle.read_fimi(data), 2)
    sampler = Sampler(db, items, lambda p: db.table(f"x_{p}"), seed=5, stream=1)
    target = db.table("x_target")
    drawn = sampler.draw(2, 40 * len(omega), target)
    rows = db.query(exp.select("sid", "item_id", "supp").from_(target))
    by_sample: dict[int, list[str]] = {}
    for sid, item_id, supp in rows:
        by_sample.setdefault(sid, []).append(labels[item_id])
        itemset = tuple(sorted(by_sample[sid]))
        if len(itemset) == 2:
            assert omega[itemset] == supp  # the support carried along is the true one
    counts = Counter(tuple(sorted(v)) for v in by_sample.values())
    assert len(by_sample) == drawn >= 40 * len(omega)
    assert set(counts) == set(omega)  # only itemsets that occur, and all of them
    expected = drawn / len(omega)
    assert max(abs(n - expected) for n in counts.values()) < 5 * math.sqrt(expected)


def _records_by_id(db: Backend, items: exp.Table) -> dict[int, frozenset[int]]:
    records: dict[int, set[int]] = {}
    for record, item in db.query(exp.select("record_id", "item_id").from_(items)):
        records.setdefault(int(record), set()).add(int(item))
    return {record: frozenset(held) for record, held in records.items()}


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_first_holder_samples_are_uniform_over_the_itemsets_that_occur(
        db: Backend, tmp_path: Path, seed: int) -> None:
    """The search's rule (a proposal is kept when its record is the itemset's first holder,
    longest records first): every itemset of Omega^ℓ about equally often, and no other."""
    data, _ = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, "s")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    dictionary = db.table(dataset.dict_table(dataset.set_attributes[0]))
    labels = dict(db.query(exp.select("item_id", "label").from_(dictionary)))
    for ell in (2, 3):
        omega = km_oracle.itemset_supports(km_oracle.read_fimi(data), ell)
        sampler = Sampler(db, items, lambda p: db.table(f"x_{p}"), seed=seed, stream=1,
                          first_holder=True)
        target = db.table("x_target")
        drawn = sampler.draw(ell, 40 * len(omega), target)
        by_sample: dict[int, list[str]] = {}
        for sid, item_id, supp in db.query(exp.select("sid", "item_id", "supp").from_(target)):
            assert supp is None  # the rule counts no support
            by_sample.setdefault(sid, []).append(labels[item_id])
        counts = Counter(tuple(sorted(v, key=int)) for v in by_sample.values())
        assert len(by_sample) == drawn >= 40 * len(omega)
        assert set(counts) == {tuple(sorted(c, key=int)) for c in omega}
        expected = drawn / len(omega)
        assert max(abs(n - expected) for n in counts.values()) < 5 * math.sqrt(expected)
        sampler.release()
        db.drop_table(target)
    assert db.table_names("x_") == []


@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("plan", ["postings", "enumerate"])
@pytest.mark.on_spark(seeds=[11])
def test_first_holder_rule_keeps_exactly_the_proposals_of_first_holders(
        db: Backend, tmp_path: Path, seed: int, plan: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """propose() / keep() / accept_among() / accept_kept() under the first-holder rule: the
    proposing records are ranked longest first (ties: the smaller id), and a proposal is
    accepted exactly when no record ranked before its own holds its itemset, brute force
    over the loaded records. With each support plan: in the postings plan, proposals of one
    itemset from records of one tier share their prefixes, and so the largest bound."""
    monkeypatch.setattr(sampler_module, "itemset_support",
                        functools.partial(itemset_support, plan=plan))
    data, _ = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, "s")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    records = _records_by_id(db, items)
    ell = 2
    ranked = sorted((r for r, held in records.items() if len(held) >= ell),
                    key=lambda r: (-len(records[r]), r))
    rank = {record: i + 1 for i, record in enumerate(ranked)}
    sampler = Sampler(db, items, lambda p: db.table(f"x_{p}"), seed=seed, stream=3,
                      first_holder=True)
    target = db.table("x_target")
    sampler.draw(ell, 10, target)
    db.drop_table(target)

    def proposals() -> dict[int, tuple[int, frozenset[int]]]:
        """pid -> (proposing record, itemset), read before keep() drops the round."""
        record_of = {int(pid): int(record) for pid, record, rnk in db.query(
            exp.select("pid", "record_id", "rnk").from_(db.table("x_props")))
            if rank[int(record)] == int(rnk)}
        by_pid: dict[int, set[int]] = {}
        for pid, item_id in db.query(exp.select("sid", "item_id").from_(target)):
            by_pid.setdefault(int(pid), set()).add(int(item_id))
        db.drop_table(target)
        assert set(record_of) == set(by_pid)  # every proposal's rank is its record's
        return {pid: (record_of[pid], frozenset(held)) for pid, held in by_pid.items()}

    def accepted(chosen: dict[int, tuple[int, frozenset[int]]]) -> set[int]:
        return {pid for pid, (record, itemset) in chosen.items()
                if itemset <= records[record]
                and not any(itemset <= records[r] for r in ranked[:rank[record] - 1])}

    first = sampler.propose(ell, 150, target)
    drawn = proposals()
    chosen = dict(list(drawn.items())[::2])
    db.materialize(db.table("x_chosen"), exp.select(
        exp.cast(exp.column("sid"), "BIGINT").as_("sid")).from_(
        exp.values([(pid,) for pid in chosen], alias="c", columns=["sid"])))
    kept_table = db.table("x_kept")
    assert sampler.accept_among(db.table("x_chosen"), kept_table) == len(accepted(chosen))
    assert {int(sid) for (sid,) in db.query(exp.select("sid").distinct().from_(kept_table))} \
        == accepted(chosen)
    for table in ("x_chosen", "x_kept"):
        db.drop_table(db.table(table))
    sampler.keep()
    second = sampler.propose(ell, 150, target)
    drawn.update(proposals())
    sampler.keep()
    assert sampler.kept() == first + second == len(drawn)
    expected = len(accepted(drawn))
    assert 0 < expected < len(drawn), "the case should reject some proposals"
    assert sampler.accept_kept() == expected
    sampler.release()
    assert db.table_names("x_") == []


@pytest.mark.parametrize("seed", [11, 12])
def test_proposals_then_rejection_keep_each_with_probability_one_over_its_support(
        db: Backend, tmp_path: Path, seed: int) -> None:
    # propose() / keep() / accept_kept(), the path of a pool whose parts are checked before
    # any support in D is counted: the proposals are itemsets that occur, drawn in proportion
    # to their support; the parts of a pool are one round, numbered on; accept_kept() keeps
    # exactly those whose uniform number u (md5, recomputed here) has u * supp(C) < 1, supp
    # counted here from the file; accept_among() applies the same test to some proposals.
    data, _ = random_case(tmp_path, seed)
    dataset = api.load_transactions(db, data, "s")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    dictionary = db.table(dataset.dict_table(dataset.set_attributes[0]))
    labels = dict(db.query(exp.select("item_id", "label").from_(dictionary)))
    omega = km_oracle.itemset_supports(km_oracle.read_fimi(data), 2)
    sampler = Sampler(db, items, lambda p: db.table(f"x_{p}"), seed=seed, stream=3)
    target = db.table("x_target")
    with pytest.raises(RuntimeError, match="draw"):
        sampler.propose(2, 10, target)  # the size's acceptance sizes a part: a draw first
    sampler.draw(2, 10, target)
    db.drop_table(target)
    drawn_accepted, drawn_proposed = sampler.measured[2]

    def proposals() -> dict[int, tuple[str, ...]]:
        by_pid: dict[int, list[str]] = {}
        for pid, item_id, supp in db.query(exp.select("sid", "item_id", "supp").from_(target)):
            assert supp is None  # not counted before accept_kept()
            by_pid.setdefault(pid, []).append(labels[item_id])
        db.drop_table(target)
        return {pid: tuple(sorted(labels_)) for pid, labels_ in by_pid.items()}

    first = sampler.propose(2, 40 * len(omega), target)
    round_no = 3 * 1_000_000 + sampler.rounds
    itemsets = proposals()
    assert sorted(itemsets) == list(range(1, first + 1)) and first >= 20 * len(omega)
    assert set(itemsets.values()) <= set(omega)
    z = sum(omega.values())
    counts = Counter(itemsets.values())
    for itemset, supp in omega.items():
        expected = first * supp / z
        assert abs(counts[itemset] - expected) < 5 * math.sqrt(expected) + 1, itemset

    def accepted(pids: list[int]) -> set[int]:
        return {pid for pid in pids if int(hashlib.md5(
            f"accept|{seed}|2|{round_no}|{pid}".encode()).hexdigest()[:8], 16) / 2**32
            * omega[itemsets[pid]] < 1}

    chosen = sorted(itemsets)[::3]  # as a part's violating proposals
    db.materialize(db.table("x_chosen"), exp.select(
        exp.cast(exp.column("sid"), "BIGINT").as_("sid")).from_(
        exp.values([(pid,) for pid in chosen], alias="c", columns=["sid"])))
    kept_table = db.table("x_kept")
    assert sampler.accept_among(db.table("x_chosen"), kept_table) == len(accepted(chosen))
    kept_rows: dict[int, list[str]] = {}
    for sid, item_id, supp in db.query(exp.select("sid", "item_id", "supp").from_(kept_table)):
        kept_rows.setdefault(sid, []).append(labels[item_id])
        assert len(kept_rows[sid]) < 2 or supp == omega[tuple(sorted(kept_rows[sid]))]
    assert sorted(tuple(sorted(v)) for v in kept_rows.values()) == sorted(
        itemsets[pid] for pid in accepted(chosen))
    for table in ("x_chosen", "x_kept"):
        db.drop_table(db.table(table))
    sampler.keep()  # the part outlives accept_among; kept, not counted
    second = sampler.propose(2, 5 * len(omega), target)
    assert sampler.rounds == round_no - 3 * 1_000_000  # the same round, numbered on
    more = proposals()
    assert sorted(more) == list(range(first + 1, first + second + 1))
    itemsets.update(more)
    sampler.keep()
    assert sampler.kept() == first + second
    expected_kept = len(accepted(sorted(itemsets)))
    assert sampler.accept_kept() == expected_kept  # one count for both parts
    assert sampler.acceptance[2] == pytest.approx(  # pooled with the draw's rounds
        (drawn_accepted + expected_kept) / (drawn_proposed + first + second))
    assert sampler.kept() == 0
    sampler.propose(2, 10, target)
    assert sampler.rounds == round_no - 3 * 1_000_000 + 1  # a new round after the count
    sampler.discard()  # a failed pool: its tables go without a support count
    sampler.release()
    assert db.table_names("x_") == ["x_target"]


@pytest.mark.parametrize("seed", [1, 2])
def test_sampled_km_meets_sigma_exactly_measured(db: Backend, tmp_path: Path, seed: int) -> None:
    data, hierarchy = random_case(tmp_path, seed)
    k, sigma = 3, 0.85
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k=str(k), m=2,
                                             sigma=str(sigma), trials=1 + seed % 2,
                                             exact_upto=seed % 2)
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    parent = km_oracle.read_hierarchy(hierarchy)
    for ell in (1, 2):
        share = km_oracle.violating_share(original, published, mapping, k, ell)
        assert share <= 1 - sigma, (ell, share)
    if seed % 2:
        assert km_oracle.km_violations(published, [k], 1) == []
    assert km_oracle.cut_problems(mapping, parent) == []
    assert km_oracle.generalization_problems(original, published, mapping) == []
    assert run.figures["ncp"] == pytest.approx(km_oracle.ncp(original, mapping, parent))
    assert api.verify(db, dataset, run).ok


def test_sampled_run_is_reproducible(db: Backend, tmp_path: Path) -> None:
    data, hierarchy = random_case(tmp_path, 5)
    params = {"k": "3", "m": 2, "sigma": "0.8"}
    dataset, _, out1, map1 = run_km(db, data, hierarchy, tmp_path, **params)
    again = api.anonymize(db, dataset, require_model("km"), params, seed=1)
    out2, map2 = tmp_path / "again.dat", tmp_path / "again.txt"
    api.export_dataset(db, dataset, out2, run=api.get_run(db, dataset, again), mapping=map2)
    assert (out1.read_text(), map1.read_text()) == (out2.read_text(), map2.read_text())


def test_unicity_estimate_is_within_its_bound(db: Backend, tmp_path: Path) -> None:
    data, _ = random_case(tmp_path, 4)
    dataset = api.load_transactions(db, data, "u")
    estimates = estimate_unicity(db, dataset, 3, seed=2, epsilon=0.05, delta=0.001)
    records = km_oracle.read_fimi(data)
    for estimate in estimates:
        truth = km_oracle.unicity(records, estimate["size"])
        assert abs(estimate["unique_share"] - truth) <= 0.05, (estimate, truth)
    assert [t for t in db.table_names("tmp_")] == []


def test_verification_in_parts_matches_the_exact_share(db: Backend, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # verify draws its samples in parts (risk.VERIFY_PART); the counts of the parts must add
    # up to a fair estimate of the exact violating share of the published data.
    from setanon_sql.io.published import published
    from setanon_sql.models.km import risk

    data, hierarchy = random_case(tmp_path, 6)
    k = 3  # a run exact for k = 2, m = 1, checked for pairs at k = 3: violations to find
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k="2", m=1)
    share = km_oracle.violating_share(km_oracle.read_fimi(data), km_oracle.read_fimi(out),
                                      km_oracle.read_mapping(mapping_file), k, 2)
    tables = run_tables(db, dataset, dataset.set_attributes[0], published(db, dataset, run))
    monkeypatch.setattr(risk, "VERIFY_PART", 700)
    bad, drawn = risk.sampled_violations(db, dataset, tables, tables["items"], 2, k, 3000, 7)
    assert drawn == 3000
    spread = 4 * math.sqrt(share * (1 - share) / drawn) + 0.01
    assert share > 0.05  # the case has violations to find
    assert abs(bad / drawn - share) <= spread, (bad, drawn, share)
    assert [t for t in db.table_names("tmp_")] == []


@pytest.mark.parametrize("seed", [6, 8])
def test_verification_by_looks_stops_at_the_first_that_decides(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    # verify looks at its samples after fixed counts (verify.sample_looks) and stops at the
    # first look whose bounds decide. Against the oracle's exact violating share: a limit far
    # below it fails, and one far above passes, at the first look, having drawn only its
    # samples; at the share itself no look can decide, so every sample is drawn.
    from setanon_sql.io.published import published
    from setanon_sql.models.km import risk
    from setanon_sql.models.km.verify import SequentialCheck

    data, hierarchy = random_case(tmp_path, seed)
    k, ell = 3, 2  # a run exact for k = 2, m = 1, checked for pairs at k = 3
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k="2", m=1)
    share = km_oracle.violating_share(km_oracle.read_fimi(data), km_oracle.read_fimi(out),
                                      km_oracle.read_mapping(mapping_file), k, ell)
    assert share > 0.05  # violations to find
    tables = run_tables(db, dataset, dataset.set_attributes[0], published(db, dataset, run))
    monkeypatch.setattr(risk, "VERIFY_PART", 150)  # looks fall within and between parts
    looks = [200, 400, 3000]
    for limit, outcome, at in ((share / 4, "failed", 200), (min(0.99, 4 * share), "passed", 200),
                               (share, "inconclusive", 3000)):
        check = SequentialCheck(limit, looks)
        bad, drawn = risk.sampled_violations(db, dataset, tables, tables["items"], ell, k,
                                             looks[-1], 7, looks[:-1], check.settled)
        assert check.decisions[-1].outcome == outcome, (limit, check.decisions)
        assert drawn == at and len(check.decisions) == looks.index(at) + 1
        assert (check.decisions[-1].x, check.decisions[-1].n) == (bad, drawn)
    assert [t for t in db.table_names("tmp_")] == []


@pytest.mark.parametrize("seed", [9, 12])
def test_verify_of_a_sampled_run_decides_at_an_early_look(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    # With looks after 100, 200, 400 and 800 of γ(0.95) = 1,457 samples, a run certified at
    # σ = 0.95 passes verify before drawing them all, and the oracle agrees with it.
    from setanon_sql.models.km import exactcheck, verify

    data, hierarchy = random_case(tmp_path, seed)
    sigma = 0.95
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path, k="3", m=2,
                                             sigma=str(sigma), certify="samples")
    monkeypatch.setattr(verify, "FIRST_LOOK", 100)
    monkeypatch.setattr(verify, "LOOK_GROWTH", 2)
    monkeypatch.setattr(exactcheck, "SAMPLE_ROWS", (0,))  # sample every size, never enumerate
    verdict = api.verify(db, dataset, run)
    assert verdict.ok
    for ell in (1, 2):
        said = str(verdict.details[f"size {ell}"])
        assert said.startswith("sampled") and "decided at look" in said, said
        assert "look 5 of 5" not in said, said  # decided before drawing all γ samples
    original, published_rows = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    for ell in (1, 2):
        assert km_oracle.violating_share(original, published_rows, mapping, 3, ell) <= 1 - sigma
