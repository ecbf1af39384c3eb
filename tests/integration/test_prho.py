"""SUPPRESSOR (personalized ρ^m-uncertainty) checked by a brute-force oracle on both backends."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.prho import relevance
from setanon_sql.models.prho import rules as prho_rules
from setanon_sql.models.prho import staged as prho_staged
from setanon_sql.models.rho import suppressor
from setanon_sql.models.rho.qids import col
from tests.conftest import write
from tests.oracle import prho_oracle as oracle

PRHO = require_model("prho")


def random_baskets(rng: random.Random, n_records: int, n_items: int, longest: int) -> str:
    lines = [" ".join(str(i) for i in sorted(rng.sample(range(1, n_items + 1),
                                                        rng.randint(0, longest))))
             for _ in range(n_records)]
    return "\n".join(lines) + "\n"


def run_prho(db: Backend, dataset: api.Dataset, seed: int, **params: Any) -> api.Run:
    api.anonymize(db, dataset, PRHO, params, seed=seed)
    return api.get_run(db, dataset, "latest")


def published(db: Backend, dataset: api.Dataset, run: api.Run,
              tmp_path: Path) -> oracle.Records:
    out = api.export_dataset(db, dataset, tmp_path / f"out{run.run_id}.dat", run=run)
    return oracle.read_fimi(out)


def random_constraint(rng: random.Random, original: oracle.Records, setting: str, seed: int,
                      items: int, most: int, tmp_path: Path
                      ) -> tuple[list[set[str]], dict[str, Any]]:
    """E for ``setting`` and the run parameters that give it: a constraint file of up to
    ``most`` of the items 1..``items`` per record, or a generator's (40%, noise 0.05)."""
    if setting == "file":
        constraint = [set(map(str, rng.sample(range(1, items + 1), rng.randint(0, most))))
                      for _ in original]
        write(tmp_path / "e.dat", "".join(" ".join(sorted(e)) + "\n" for e in constraint))
        return constraint, {"constraint": str(tmp_path / "e.dat")}
    return (oracle.generated_constraint(original, setting, seed, 0.4, 0.05),
            {"setting": setting, "sensitive_fraction": 0.4, "noise": 0.05})


@pytest.mark.on_spark(seeds=[1], connect=True)
@pytest.mark.parametrize(("seed", "choice"), [(1, "paper"), (2, "paper"), (3, "fewest"),
                                              (8, "fewest"), (9, "fewest")])
def test_file_constraint_every_adversary_is_safe(db: Backend, tmp_path: Path, seed: int,
                                                 choice: str) -> None:
    """Each record protects its own random items (some it does not have); m = all."""
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 24, 7, 4))
    original = oracle.read_fimi(source)
    constraint = [set(map(str, rng.sample(range(1, 8), rng.randint(0, 3)))) for _ in original]
    write(tmp_path / "e.dat", "".join(" ".join(sorted(e)) + "\n" for e in constraint))
    rho = Fraction(rng.choice(["0.3", "0.5"]))
    dataset = api.load_transactions(db, source, "d")
    run = run_prho(db, dataset, seed, rho=float(rho), constraint=str(tmp_path / "e.dat"),
                   choice=choice)
    output = published(db, dataset, run, tmp_path)
    assert oracle.unsafe_adversaries(original, original, constraint, rho, None), "already safe"
    assert oracle.unsafe_adversaries(original, output, constraint, rho, None) == []
    assert oracle.is_record_subset(original, output)
    assert run.figures["suppressed"] == sum(len(o) - len(p) for o, p in zip(original, output,
                                                                           strict=True)) > 0
    assert run.figures["util_info"] == pytest.approx(oracle.util_info(original, output))
    assert run.figures["util_dist"] == pytest.approx(oracle.util_dist(original, output))
    assert api.verify(db, dataset, run).ok
    if choice == "fewest":  # N_s(e) <= N_s(q) (eq. 7): only consequents are ever taken out
        protected = set().union(*constraint)
        assert all(o - p <= protected for o, p in zip(original, output, strict=True))


@pytest.mark.parametrize(("setting", "seed"), [("fixed", 4), ("personalized", 5),
                                               ("fixed+", 6), ("personalized+", 7)])
def test_generated_settings_bounded_m(db: Backend, tmp_path: Path, setting: str,
                                      seed: int) -> None:
    """The generators reproduce the documented md5 draws; every adversary of <= 2 items safe."""
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 30, 9, 5))
    original = oracle.read_fimi(source)
    fraction, noise = 0.3, 0.1
    constraint = oracle.generated_constraint(original, setting, seed, fraction, noise)
    dataset = api.load_transactions(db, source, "d")
    run = run_prho(db, dataset, seed, rho=0.5, setting=setting, sensitive_fraction=fraction,
                   noise=noise, m=2)
    output = published(db, dataset, run, tmp_path)
    if setting in ("fixed", "fixed+"):
        assert run.figures["common_sensitive_types"] == len(constraint[0])
    assert oracle.unsafe_adversaries(original, original, constraint, Fraction(1, 2), 2)
    assert oracle.unsafe_adversaries(original, output, constraint, Fraction(1, 2), 2) == []
    assert oracle.is_record_subset(original, output)
    result = api.verify(db, dataset, run)
    assert result.ok and "up to 2 items" in result.covered


def test_same_seed_same_output_and_verify_catches_the_input(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "in.dat", random_baskets(random.Random(8), 30, 7, 4))
    dataset = api.load_transactions(db, source, "d")
    runs = [run_prho(db, dataset, 9, rho=0.5, setting="personalized", sensitive_fraction=0.4)
            for _ in range(2)]
    assert published(db, dataset, runs[0], tmp_path) == published(db, dataset, runs[1], tmp_path)
    items = db.render(db.table(dataset.items_table(dataset.set_attributes[0])))
    table = db.render(db.table(f"r{runs[1].run_id}_items_1"))
    db.execute(f"DELETE FROM {table}")
    db.execute(f"INSERT INTO {table} SELECT record_id, item_id FROM {items}")
    result = api.verify(db, dataset, runs[1])
    assert not result.ok and result.details["unsafe_rules"] > 0


@pytest.mark.parametrize("choice", ["paper", "fewest"])
def test_fewest_takes_the_sensitive_item_out(db: Backend, tmp_path: Path, choice: str) -> None:
    # Record 1 is the only holder of {1, 2, 3} and protects 3: every Q of it makes Q -> 3 reach
    # conf 1, and N_s = 1 for each of 1, 2 and 3 (eq. 7). 'fewest' takes 3 out (one suppression
    # answers all of them); 'paper' (eq. 8) scores the items by their D' shares and may take
    # items of Q instead. Both outputs must be safe; only 'fewest' must keep 1 and 2.
    source = write(tmp_path / "in.dat", "1 2 3\n1 4\n2 4\n4 5\n")
    write(tmp_path / "e.dat", "3\n\n\n\n")
    original = oracle.read_fimi(source)
    constraint = [{"3"}, set(), set(), set()]
    dataset = api.load_transactions(db, source, "d")
    run = run_prho(db, dataset, 1, rho=0.5, constraint=str(tmp_path / "e.dat"), choice=choice)
    output = published(db, dataset, run, tmp_path)
    assert oracle.unsafe_adversaries(original, output, constraint, Fraction(1, 2), None) == []
    if choice == "fewest":
        assert output == [frozenset({"1", "2"}), *original[1:]]


@pytest.mark.parametrize(("seed", "m"), [(1, None), (4, 2), (11, 3)])
def test_records_of_a_rule_from_the_levels_or_by_its_items_give_the_same_output(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
        m: int | None) -> None:
    """C(Q + {e}) is read from the level tables when that reads fewer rows, else found from the
    records of the rule's rarest item (``rules.level_members_pay``): the same records, so the
    same output, and every adversary safe."""
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 30, 8, 5))
    original = oracle.read_fimi(source)
    outputs = []
    for levels in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(prho_rules, "level_members_pay", lambda *_, answer=levels: answer)
            dataset = api.load_transactions(db, source, f"d{int(levels)}")
            # 'fewest' keeps the single pass (rules.suppress); 'paper' runs by the rho
            # model's suppressor, which has its own test of the same choice.
            params: dict[str, Any] = {"rho": 0.5, "setting": "personalized",
                                      "sensitive_fraction": 0.4, "choice": "fewest"}
            run = run_prho(db, dataset, seed, **(params if m is None else {**params, "m": m}))
            outputs.append(published(db, dataset, run, tmp_path))
            assert api.verify(db, dataset, run).ok
    assert outputs[0] == outputs[1]
    constraint = oracle.generated_constraint(original, "personalized", seed, 0.4, 0.01)
    assert oracle.unsafe_adversaries(original, original, constraint, Fraction(1, 2), m)
    assert oracle.unsafe_adversaries(original, outputs[0], constraint, Fraction(1, 2), m) == []


@pytest.mark.on_spark(seeds=[2, 22])
@pytest.mark.parametrize(("setting", "seed", "m", "one_stage"),
                         [("fixed", 1, None, True), ("fixed", 2, 2, False),
                          ("fixed", 3, 3, True), ("fixed", 14, 3, False),
                          ("fixed+", 12, None, False), ("fixed+", 13, 2, True),
                          ("personalized", 21, None, True), ("personalized", 22, 2, False),
                          ("personalized+", 23, 3, False), ("personalized+", 24, None, True),
                          ("file", 25, None, False), ("file", 26, 2, True)])
def test_suppressor_runs_by_the_rho_suppressor(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, seed: int,
        m: int | None, one_stage: bool) -> None:
    """SUPPRESSOR goes through the rho model's suppressor, in one stage (small data: its
    enumeration is within reach) or, forced here, one stage per qid size. With E_u the same
    for everyone every unsafe rule with e in S is sanitized; with E_u per record (generated,
    or a file) only those some original record holding Q protects e from (prho.relevance).
    Either way the brute force finds no unsafe adversary of up to m items, and verify agrees."""
    if not one_stage:
        monkeypatch.setattr(prho_staged, "one_stage_within_reach", lambda *_: False)
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 36, 9, 5))
    original = oracle.read_fimi(source)
    constraint, given = random_constraint(rng, original, setting, seed, 9, 4, tmp_path)
    params: dict[str, Any] = {"rho": 0.5, **given}
    dataset = api.load_transactions(db, source, "d")
    run = run_prho(db, dataset, seed, **(params if m is None else {**params, "m": m}))
    output = published(db, dataset, run, tmp_path)
    assert oracle.unsafe_adversaries(original, original, constraint, Fraction(1, 2), m)
    assert oracle.unsafe_adversaries(original, output, constraint, Fraction(1, 2), m) == []
    assert oracle.is_record_subset(original, output)
    stages = run.figures["stages"]
    largest = run.figures["largest_qid_checked"]
    assert [s["qid_size"] for s in stages] == ([largest] if one_stage else
                                               list(range(1, largest + 1)))
    assert run.figures["support_mismatches"] == 0
    assert run.figures["suppressed"] == sum(s["suppressed"] for s in stages) > 0
    assert api.verify(db, dataset, run).ok


@pytest.mark.on_spark(seeds=[31])
@pytest.mark.parametrize(("setting", "seed"), [("personalized", 31), ("personalized", 32),
                                             ("personalized+", 33), ("file", 34)])
def test_own_holder_first_keeps_the_rules_the_holders_keep(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str,
        seed: int) -> None:
    """A rule of one known holder is kept when its own record protects e, else by another
    original holder of Q (``Relevance.keep`` with ``own``): at every count of a staged run the
    rules kept are those the holders alone keep (``own`` None), the case of a one-holder rule
    kept by another holder occurs, and the output is safe by brute force."""
    monkeypatch.setattr(prho_staged, "one_stage_within_reach", lambda *_: False)
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 30, 14, 6))
    original = oracle.read_fimi(source)
    constraint, given = random_constraint(rng, original, setting, seed, 14, 7, tmp_path)
    params: dict[str, Any] = {"rho": 0.5, "m": 3, **given}
    keep = relevance.Relevance.keep
    seen = Counter[str]()

    def compared(self: relevance.Relevance, found: exp.Table, width: int,
                 counted: bool = False) -> exp.Select:
        assert self.own is not None
        names = ["part", *(f"q{p}" for p in range(1, width)), "e", "sx", "xrec"]
        kept: dict[bool, Counter[tuple[Any, ...]]] = {}
        for own in (self.own, None):
            query = keep(dataclasses.replace(self, own=own), found, width, counted)
            kept[own is not None] = Counter(db.query(
                exp.select(*(col(n, "k") for n in names)).from_(query.subquery("k")),
                self.params()))
        assert kept[True] == kept[False]
        own_rows = set(db.query(exp.select(col("record_id"), col("item_id"))
                                .from_(self.own.copy())))
        for *_, e, sx, xrec in kept[True]:
            if sx == 1 and xrec is not None:
                seen["own" if (xrec, e) in own_rows else "other holder"] += 1
        return keep(self, found, width, counted)

    monkeypatch.setattr(relevance.Relevance, "keep", compared)
    dataset = api.load_transactions(db, source, "d")
    run = run_prho(db, dataset, seed, **params)
    assert seen["own"] and seen["other holder"], seen
    output = published(db, dataset, run, tmp_path)
    assert oracle.unsafe_adversaries(original, output, constraint, Fraction(1, 2), 3) == []
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize(("setting", "seed"), [("personalized", 35), ("personalized+", 36)])
def test_counted_from_scratch_or_kept_up_to_date_give_the_same_output(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str,
        seed: int) -> None:
    """Staged SUPPRESSOR under a per-record constraint, with a count from scratch after every
    round (rules found from the counted supports and filtered with their own holder first) or
    never (kept rules and the rules found afresh, filtered by the holders): one output, round
    by round, safe by brute force."""
    monkeypatch.setattr(prho_staged, "one_stage_within_reach", lambda *_: False)
    monkeypatch.setattr(suppressor, "RECOUNT_PROBE_SHARE", 10**9)  # probe every round
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 30, 14, 7))
    original = oracle.read_fimi(source)
    constraint, given = random_constraint(rng, original, setting, seed, 14, 7, tmp_path)
    dataset = api.load_transactions(db, source, "d")
    outputs, histories = [], []
    for always in (True, False):
        monkeypatch.setattr(suppressor, "recount_pays", lambda *_, a=always: a)
        run = run_prho(db, dataset, seed, rho=0.5, m=3, **given)
        rounds = [e for e in run.figures["history"] if e.get("suppressed")]
        assert rounds and all(e["recounted"] == always for e in rounds)
        outputs.append(published(db, dataset, run, tmp_path))
        histories.append([(e["suppressed"], e["settle_steps"]) for e in rounds])
    assert outputs[0] == outputs[1]
    assert histories[0] == histories[1]
    assert oracle.unsafe_adversaries(original, outputs[0], constraint, Fraction(1, 2), 3) == []
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize("one_stage", [True, False])
def test_a_rule_nobody_can_use_is_left_alone(db: Backend, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             one_stage: bool) -> None:
    """{1, 2} -> 3 has confidence 1, and {1} -> 3, {2} -> 3 have 1/2 > 0.4, but the one record
    protecting 3 holds neither 1 nor 2 (Def. 2: no adversary (u, Q) with 3 ∈ E_u can use
    them), and every rule its own items {4, 5} give has confidence 0: nothing is suppressed."""
    if not one_stage:
        monkeypatch.setattr(prho_staged, "one_stage_within_reach", lambda *_: False)
    source = write(tmp_path / "in.dat", "1 2 3\n1 4\n2 4\n4 5\n")
    write(tmp_path / "e.dat", "\n\n\n3\n")
    original = oracle.read_fimi(source)
    constraint: list[set[str]] = [set(), set(), set(), {"3"}]
    assert oracle.unsafe_adversaries(original, original, constraint, Fraction(2, 5), None) == []
    dataset = api.load_transactions(db, source, "d")
    run = run_prho(db, dataset, 1, rho=0.4, constraint=str(tmp_path / "e.dat"))
    assert published(db, dataset, run, tmp_path) == original
    assert run.figures["suppressed"] == 0
    assert api.verify(db, dataset, run).ok
    write(tmp_path / "e2.dat", "3\n\n\n\n")  # now record 1 protects 3: {1, 2} -> 3 must go
    again = api.load_transactions(db, source, "d2")
    run = run_prho(db, again, 1, rho=0.4, constraint=str(tmp_path / "e2.dat"))
    output = published(db, again, run, tmp_path)
    assert output != original
    assert oracle.unsafe_adversaries(original, output, [{"3"}, set(), set(), set()],
                                     Fraction(2, 5), None) == []


@pytest.mark.parametrize(("seed", "m"), [(4, None), (5, 2), (6, 3)])
def test_fixed_setting_is_the_rho_model_with_h_dist(db: Backend, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, seed: int,
                                                    m: int | None) -> None:
    """With S given to the rho model as its sensitive items, ``--heuristic dist`` (eq. 5 of
    Jia et al., which is F of eq. 8) gives the very same output as prho's fixed setting when
    both go by stages of growing qid size (prho takes one stage where that is within reach)."""
    monkeypatch.setattr(prho_staged, "one_stage_within_reach", lambda *_: False)
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 40, 9, 5))
    original = oracle.read_fimi(source)
    common = oracle.generated_constraint(original, "fixed", seed, 0.4, 0.01)[0]
    write(tmp_path / "s.txt", "".join(f"{label}\n" for label in sorted(common)))
    bound = {} if m is None else {"m": m}
    outputs = []
    for model, params in ((PRHO, {"rho": 0.5, "setting": "fixed", "sensitive_fraction": 0.4}),
                          (require_model("rho"), {"rho": 0.5, "heuristic": "dist",
                                                  "sensitive": str(tmp_path / "s.txt")})):
        dataset = api.load_transactions(db, source, f"d{model.name}")
        api.anonymize(db, dataset, model, {**params, **bound}, seed=seed)
        outputs.append(published(db, dataset, api.get_run(db, dataset, "latest"), tmp_path))
    assert oracle.unsafe_adversaries(original, original, [common] * len(original),
                                     Fraction(1, 2), m)
    assert outputs[0] == outputs[1]
