"""Rounds of growing qid size and the pruned top level, on both backends.

The stages (qid sizes 1, 2, ..., m) and the level above the largest qid, which keeps only the
itemsets holding a sensitive item, must still give an output that the brute-force oracle finds
safe for every qid of up to m items; the pruned level must hold exactly the itemsets with a
sensitive item, with their supports counted by hand in plain Python.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import UsageError
from setanon_sql.models import require_model
from setanon_sql.models.rho import check, incremental, qids, suppressor
from setanon_sql.models.rho.qids import build_supports, col
from tests.conftest import write
from tests.integration.test_rho import published, random_baskets
from tests.integration.test_rho_blocking import values_table
from tests.oracle import rho_oracle as oracle

RHO = require_model("rho")


def sensitive_labels(db: Backend, dataset: api.Dataset, run: api.Run) -> set[str]:
    return {str(label) for (label,) in db.execute(
        f"SELECT d.label FROM {db.render(db.table(f'r{run.run_id}_sensitive'))} s JOIN "
        f"{db.render(db.table(dataset.dict_table(dataset.set_attributes[0])))} d "
        "ON d.item_id = s.item_id", fetch=True)}


@pytest.mark.parametrize("heuristic", ["mine", "dist"])
@pytest.mark.parametrize("seed", [21, 22, 23])
def test_staged_run_is_safe_for_every_qid_of_up_to_3_items(db: Backend, tmp_path: Path,
                                                           heuristic: str, seed: int) -> None:
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", random_baskets(rng, 40, 9, 7))
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, RHO, {"rho": 0.6, "sensitive_fraction": 0.4, "m": 3,
                                     "heuristic": heuristic}, seed=seed)
    run = api.get_run(db, dataset, "latest")
    sensitive = sensitive_labels(db, dataset, run)
    original, output = oracle.read_fimi(source), published(db, dataset, run, tmp_path)
    assert oracle.unsafe_rules(original, sensitive, Fraction("0.6"), m=3), "already safe"
    assert oracle.unsafe_rules(output, sensitive, Fraction("0.6"), m=3) == []
    assert oracle.is_record_subset(original, output)
    assert [s["qid_size"] for s in run.figures["stages"]] == [1, 2, 3]
    assert sum(s["suppressed"] for s in run.figures["stages"]) == run.figures["suppressed"]
    assert run.figures["support_mismatches"] == 0
    # only the last stage ends with a recount from scratch (the next stage's count is one)
    assert {e["stage"] for e in run.figures["history"] if e.get("recount")} == {3}
    result = api.verify(db, dataset, run)
    assert result.ok and "up to 3 items" in result.covered


def test_supports_rebuilt_or_updated_give_the_same_output(db: Backend, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every delta subtracted in place, or every one by rebuilding the table: one output."""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(24), 40, 9, 7))
    dataset = api.load_transactions(db, source, "d")
    outputs, rebuilds = [], []
    for share in (0, 10**9):  # delta * share < support rows: always, never
        monkeypatch.setattr(suppressor, "REBUILD_SHARE", share)
        api.anonymize(db, dataset, RHO, {"rho": 0.6, "sensitive_fraction": 0.4, "m": 3},
                      seed=24)
        run = api.get_run(db, dataset, "latest")
        assert run.figures["support_mismatches"] == 0
        outputs.append(published(db, dataset, run, tmp_path))
        rebuilds.append([s["support_rebuilds"] for s in run.figures["stages"]])
    assert outputs[0] == outputs[1]
    assert sum(rebuilds[0]) == 0 and all(n > 0 for n in rebuilds[1]), rebuilds


def counted_supports(db: Backend, path: Path, text: str, sensitive: set[str], width: int = 3
                     ) -> tuple[list[frozenset[str]], list[exp.Table], exp.Table, exp.Table,
                                dict[int, str]]:
    """Load ``text`` and count its supports of up to ``width`` items, the top level pruned to
    itemsets with an item of ``sensitive`` (qids of up to ``width`` - 1 items), from the table
    ``t_cur`` (part, record_id, item_id): the records read by the oracle, the levels, the
    support table, the sensitive item ids' table and each item id's label."""
    records = oracle.read_fimi(write(path, text))
    dataset = api.load_transactions(db, path, "d")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    words = db.table(dataset.dict_table(dataset.set_attributes[0]))
    sens = db.table("t_sens")
    db.materialize(sens, exp.select(col("item_id")).from_(words.copy()).where(
        col("label").isin(*(exp.Literal.string(s) for s in sensitive))))
    cur = db.table("t_cur")
    db.materialize(cur, exp.select(col("record_id"), col("item_id"),
                                   exp.Literal.number(0).as_("part", quoted=True))
                   .from_(items.copy()))
    levels, supx = build_supports(db, lambda purpose: db.table(f"t_{purpose}"), cur, width, sens,
                                  width - 1)
    label = {int(item): str(name) for item, name in
             db.query(exp.select(col("item_id"), col("label")).from_(words.copy()))}
    return records, levels, supx, sens, label


def test_level_above_the_largest_qid_keeps_only_itemsets_with_a_sensitive_item(
        db: Backend, tmp_path: Path) -> None:
    rng = random.Random(5)
    sensitive = {"2", "5"}
    records, levels, supx, _, label = counted_supports(
        db, tmp_path / "in.dat", random_baskets(rng, 25, 8, 6), sensitive)
    got = {tuple(sorted(str(label[x]) for x in row[:-1] if x)): row[-1] for row in db.query(
        exp.select(col("x1"), col("x2"), col("x3"), col("n")).from_(supx.copy()))}
    want: Counter[tuple[str, ...]] = Counter()
    for record in records:
        for size in (1, 2, 3):
            for itemset in combinations(sorted(record), size):
                if size < 3 or sensitive & set(itemset):
                    want[itemset] += 1
    assert got == dict(want)
    assert len(levels) == 3


@pytest.mark.parametrize("seed", [31, 32])
def test_every_item_sensitive_leaves_the_levels_unpruned_and_the_output_safe(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """With S every item (as personalized ρ^m's possible consequents), the stages build the
    levels without the S test (:func:`.qids.every_item_sensitive`) and the brute-force oracle
    finds the output safe; with 40% sensitive the levels are pruned as before."""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(seed), 40, 9, 7))
    dataset = api.load_transactions(db, source, "d")
    pruned: list[bool] = []
    real_run = suppressor.Suppressor.run

    def spy(self: suppressor.Suppressor, *args: object, **kwargs: object) -> object:
        pruned.append(self.prune_levels)
        return real_run(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(suppressor.Suppressor, "run", spy)
    for fraction, want in ((1.0, False), (0.4, True)):
        pruned.clear()
        api.anonymize(db, dataset, RHO, {"rho": 0.6, "sensitive_fraction": fraction, "m": 3},
                      seed=seed)
        run = api.get_run(db, dataset, "latest")
        assert pruned == [want] * 3
        sensitive = sensitive_labels(db, dataset, run)
        original, output = oracle.read_fimi(source), published(db, dataset, run, tmp_path)
        assert oracle.unsafe_rules(original, sensitive, Fraction("0.6"), m=3), "already safe"
        assert oracle.unsafe_rules(output, sensitive, Fraction("0.6"), m=3) == []
        assert oracle.is_record_subset(original, output)
        assert run.figures["support_mismatches"] == 0
        assert api.verify(db, dataset, run).ok


def test_a_stage_out_of_reach_is_refused_with_the_m_that_fits(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "in.dat", "1 2 3 4\n1 2 3\n"), "d")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    sens = db.table("t_sens")
    db.materialize(sens, exp.select(exp.Literal.number(4).as_("item_id", quoted=True)))
    monkeypatch.setattr(check, "MAX_SECONDS", 0.0)
    with pytest.raises(UsageError, match=r"the stage for qids of 3 items would enumerate about "
                                         r"\d+ .*--m 2 instead of --m 3"):
        check.check_stage(db, items, sens, 4, 3, 3)


def test_original_qids_counted_and_refused_out_of_reach(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A personalized verify joins the input's qids of up to |Q| items: their rows are the
    subsets of each record, C(4,1) + C(4,2) + C(3,1) + C(3,2) = 16 here."""
    dataset = api.load_transactions(db, write(tmp_path / "in.dat", "1 2 3 4\n1 2 3\n"), "d")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    assert check.check_original_levels(db, items, 2) == 4 + 6 + 3 + 3
    monkeypatch.setattr(check, "MAX_SECONDS", 0.0)
    with pytest.raises(UsageError, match=r"qids of up to 2 items are about 16 .*up to 4 items"
                                         r".*smaller --m"):
        check.check_original_levels(db, items, 2)


def test_a_first_stage_out_of_reach_suggests_shorter_records(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "in.dat", "1 2 3\n1 2\n"), "d")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    sens = db.table("t_sens")
    db.materialize(sens, exp.select(exp.Literal.number(2).as_("item_id", quoted=True)))
    monkeypatch.setattr(check, "MAX_SECONDS", 0.0)
    with pytest.raises(UsageError, match=r"qids of 1 items would .*use the records with at "
                                         r"most 5 items"):
        check.check_stage(db, items, sens, 2, 1, 1)


@pytest.mark.parametrize("seed", [61, 62, 63])
def test_rows_lost_and_left_are_the_itemsets_enumerated_by_hand(db: Backend,
                                                                 seed: int) -> None:
    """The histogram of (length, items lost) read by SQL gives, through ``shrink_rows``, the
    (record, itemset) rows of up to ``width`` items that the records lose and keep, as
    enumerated here one record at a time."""
    rng = random.Random(seed)
    records = {r: sorted(rng.sample(range(1, 13), rng.randint(1, 11))) for r in range(1, 41)}
    dels = {(r, i) for r, items in records.items() if rng.random() < 0.6
            for i in items if rng.random() < 0.4}
    cur = values_table(db, "t_cur", "record_id, item_id",
                       [(r, i) for r, items in records.items() for i in items])
    gone = values_table(db, "t_dels", "record_id, item_id", sorted(dels))
    histogram = [(int(a), int(b), int(c)) for a, b, c in
                 db.query(incremental.shrink_histogram_query(cur, gone))]
    assert sum(c for _, _, c in histogram) == len(records)
    for width in (2, 3, 4):
        lost = left = 0
        for r, items in records.items():
            for k in range(1, width + 1):
                for itemset in combinations(items, k):
                    if any((r, i) in dels for i in itemset):
                        lost += 1
                    else:
                        left += 1
        assert incremental.shrink_rows(histogram, width) == (lost, left)
        assert incremental.recount_pays(histogram, width) == (lost > left)


@pytest.mark.parametrize(("seed", "heuristic", "m"), [(71, "mine", 3), (72, "dist", 3),
                                                      (73, "mine", 2)])
def test_counted_from_scratch_or_kept_up_to_date_give_the_same_output(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, heuristic: str,
        seed: int, m: int) -> None:
    """After every round the next table is counted from scratch, or never is (its supports
    and rules kept up to date by the delta): the rules and their ids are the same
    (:mod:`..rho.rulekeep`), so the output is, round by round, and safe by brute force."""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(seed), 40, 12, 8))
    dataset = api.load_transactions(db, source, "d")
    monkeypatch.setattr(suppressor, "RECOUNT_PROBE_SHARE", 10**9)  # probe every round
    outputs, histories = [], []
    for always in (True, False):
        monkeypatch.setattr(suppressor, "recount_pays", lambda *_, a=always: a)
        api.anonymize(db, dataset, RHO, {"rho": 0.6, "sensitive_fraction": 0.4, "m": m,
                                         "heuristic": heuristic}, seed=seed)
        run = api.get_run(db, dataset, "latest")
        rounds = [e for e in run.figures["history"] if e.get("suppressed")]
        assert rounds and all(e["recounted"] == always for e in rounds)
        outputs.append(published(db, dataset, run, tmp_path))
        histories.append([(e["suppressed"], e["settle_steps"]) for e in rounds])
        assert run.figures["support_mismatches"] == 0
    assert outputs[0] == outputs[1]
    assert histories[0] == histories[1]
    sensitive = sensitive_labels(db, dataset, run)
    assert oracle.unsafe_rules(outputs[0], sensitive, Fraction("0.6"), m=m) == []
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize(("seed", "heuristic", "m"), [(31, "mine", 2), (32, "dist", 3),
                                                      (33, "mine", 3), (34, "dist", 2)])
def test_rules_of_one_holder_collapsed_or_ranked_in_full_give_the_same_output(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, heuristic: str,
        seed: int, m: int) -> None:
    """The rules held by one record that choose the same item, collapsed to one per (record,
    item) or ranked in full: one output, every round (``collapsed_rules``). The settling bound
    is lowered so that these small rounds collapse; a round that collapses is not settled, as
    a round ranked in full holding back that many rules is not either. (On Spark, the
    collapse's SQL is checked against its definition in ``test_rho_choice``.)"""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(seed), 40, 30, 9))
    dataset = api.load_transactions(db, source, "d")
    monkeypatch.setattr(suppressor, "SETTLE_MAX_BLOCKED", 3)
    outputs, histories = [], []
    for collapse in (True, False):
        monkeypatch.setattr(suppressor, "COLLAPSE_ONE_HOLDER_RULES", collapse)
        api.anonymize(db, dataset, RHO, {"rho": 0.6, "sensitive_fraction": 0.4, "m": m,
                                         "heuristic": heuristic}, seed=seed)
        run = api.get_run(db, dataset, "latest")
        outputs.append(published(db, dataset, run, tmp_path))
        histories.append([(e.get("suppressed"), e.get("settle_steps"))
                          for e in run.figures["history"]])
        collapsed = [e.get("rules_collapsed", 0) for e in run.figures["history"]]
        assert (max(collapsed) > 3) == collapse, collapsed
        assert run.figures["support_mismatches"] == 0
    assert outputs[0] == outputs[1]
    assert histories[0] == histories[1]
    sensitive = sensitive_labels(db, dataset, run)
    assert oracle.unsafe_rules(outputs[0], sensitive, Fraction("0.6"), m=m) == []


@pytest.mark.parametrize(("seed", "heuristic"), [(41, "mine"), (42, "dist")])
def test_members_by_pairs_or_by_the_rarest_item_give_the_same_output(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, heuristic: str,
        seed: int) -> None:
    """C(X) read from the pairs of the last full count (``member_pair_query``) or from the
    records of X's rarest item: one output, every round, and safe by brute force. The level
    sizes are overridden after each count so that every round with width >= 3 takes the
    route under test (on data this small the rarest item's records are the cheaper read)."""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(seed), 40, 30, 9))
    dataset = api.load_transactions(db, source, "d")
    counted = suppressor.Suppressor._recount
    pair_calls: list[int] = []
    member_pair_query = suppressor.member_pair_query

    def recount(self: suppressor.Suppressor, cur: exp.Table) -> exp.Table:
        supx = counted(self, cur)
        self.level_rows, self.pair_rows = 10**12, min(self.pair_rows, 1)
        return supx

    def counting_pair_query(*args: object, **kwargs: object) -> exp.Select:
        pair_calls.append(1)
        return member_pair_query(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(suppressor.Suppressor, "_recount", recount)
    monkeypatch.setattr(suppressor, "member_pair_query", counting_pair_query)
    outputs, histories = [], []
    for by_pairs in (True, False):
        monkeypatch.setattr(suppressor, "MEMBER_PAIR_ROUTE", by_pairs)
        pair_calls.clear()
        api.anonymize(db, dataset, RHO, {"rho": 0.6, "sensitive_fraction": 0.4, "m": 3,
                                         "heuristic": heuristic}, seed=seed)
        run = api.get_run(db, dataset, "latest")
        outputs.append(published(db, dataset, run, tmp_path))
        histories.append([e.get("suppressed") for e in run.figures["history"]])
        assert bool(pair_calls) == by_pairs
        assert run.figures["support_mismatches"] == 0
    assert outputs[0] == outputs[1]
    assert histories[0] == histories[1]
    sensitive = sensitive_labels(db, dataset, run)
    assert oracle.unsafe_rules(outputs[0], sensitive, Fraction("0.6"), m=3) == []


@pytest.mark.parametrize(("seed", "rho"), [(51, "0.3"), (52, "0.5"), (53, "0.7")])
def test_unsafe_rules_split_by_x_holders_are_every_unsafe_rule(
        db: Backend, tmp_path: Path, seed: int, rho: str) -> None:
    """The count's rules, joined apart for X held by one record and by more (``split``, the
    engine's choice: ``Backend.split_rules_by_holders``), are the oracle's unsafe rules and the
    one join's; ρ < 1/2 has one-holder X that are unsafe with sup(q) = 2."""
    rng = random.Random(seed)
    sensitive = {"1", "3", "4", "7"}
    records, _, supx, sens, label = counted_supports(  # sparse: many X held by one record
        db, tmp_path / "in.dat", random_baskets(rng, 30, 12, 5), sensitive)
    fraction = Fraction(rho)
    bound = {"num": fraction.numerator, "den": fraction.denominator}
    got: dict[bool, list[tuple[frozenset[str], str, int, int]]] = {}
    for split in (True, False):
        rows = db.query(exp.select(col("q1"), col("q2"), col("e"), col("sx"), col("sq")).from_(
            qids.unnumbered_rules_query(supx, sens, None, 3, 2, split).subquery("r")), bound)
        got[split] = [(frozenset(str(label[x]) for x in (q1, q2) if x), str(label[e]),
                       int(sx), int(sq)) for q1, q2, e, sx, sq in rows]
    want = oracle.unsafe_rules(records, sensitive, fraction, m=2)
    assert want, "no unsafe rule"
    assert len(got[True]) == len(set(got[True])) == len(want)
    assert set(got[True]) == set(want) == set(got[False])
    if fraction < Fraction(1, 2):
        assert any(sx == 1 and sq == 2 for _, _, sx, sq in want)


@pytest.mark.parametrize("width", [3, 4])
@pytest.mark.parametrize(("seed", "rho"), [(61, "0.3"), (62, "0.5"), (63, "0.7"), (64, "0.9")])
def test_rules_of_qids_held_by_one_record_made_from_its_items_are_the_joins_rules(
        db: Backend, tmp_path: Path, seed: int, rho: str, width: int) -> None:
    """A count's unsafe rules with the rules of qids held by one record made from that
    record's items (``qids.one_holder_rules_query``) are, row for row and column for column
    (X, supports, qid buffer, X's holder), the rules of the joins of X with q alone, with and
    without the split by X's holders, with qid buffers of a few qids each; and the oracle's."""
    rng = random.Random(seed)
    sensitive = {"1", "3", "4", "7", "9"}
    records, _, supx, sens, label = counted_supports(  # sparse: many qids held by one record
        db, tmp_path / "in.dat", random_baskets(rng, 30, 16, 7), sensitive, width)
    fraction = Fraction(rho)
    bound = {"num": fraction.numerator, "den": fraction.denominator}
    win = db.table("t_win")
    db.materialize(win, "rho_windows", {"m": width - 1, "b_max": 7}, {"supx": supx})
    holders = qids.OneHolder(db.table("t_cur"), fraction)
    columns = ["part", *(f"q{p}" for p in range(1, width)), "e", *qids.xs(width), "size", "sx",
               "sq", "w", "xrec"]
    got: dict[tuple[bool, bool], Counter[tuple[int, ...]]] = {}
    for split in (True, False):
        for made in (False, True):
            query = qids.unnumbered_rules_query(supx, sens, win, width, width - 1, split,
                                                holders if made else None)
            got[(split, made)] = Counter(tuple(int(v) for v in row) for row in db.query(
                exp.select(*(col(c) for c in columns)).from_(query.subquery("r")), bound))
    assert len(set(map(frozenset, got.values()))) == 1 and len(
        {sum(rules.values()) for rules in got.values()}) == 1, "different rules"
    rules = got[(True, True)]
    assert max(rules.values()) == 1
    wanted = oracle.unsafe_rules(records, sensitive, fraction, m=width - 1)
    assert {(frozenset(label[x] for x in row[1:width] if x), label[row[width]], row[-4],
             row[-3]) for row in rules} == set(wanted)
    assert sum(1 for row in rules if row[-3] == 1) > 10, "few qids held by one record"
    assert len({row[-2] for row in rules}) > 1, "one qid buffer"
    if fraction < Fraction(1, 2):
        assert any(row[-4] == 1 and row[-3] == 2 for row in rules)


def temporary_tables(db: Backend, backend_name: str) -> int:
    """How many temporary tables the connection holds (DuckDB keeps the suppressor's rounds'
    tables there, :meth:`.DuckDBBackend.short_lived_storage`; the other engines none)."""
    if backend_name != "duckdb":
        return 0
    return int(db.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary",
                          fetch=True)[0][0])


def test_a_rounds_choice_is_stored_by_its_rules_and_the_counts_tables_by_the_stage(
        db: Backend, backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a stage's tables too big for memory, a round's choice of occurrences (scores,
    ranks, members, picks, dels) is still sized by its rules: on DuckDB in memory, while the
    levels, supports and rules stay in the file; either way the output is the same."""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(82), 40, 9, 7))
    dataset = api.load_transactions(db, source, "d")
    params = {"rho": 0.6, "sensitive_fraction": 0.4, "m": 3}
    api.anonymize(db, dataset, RHO, params, seed=82)
    expected = published(db, dataset, api.get_run(db, dataset, "latest"), tmp_path)
    placed: dict[str, set[bool]] = {}
    storage = type(db).short_lived_storage

    @contextmanager
    def spied(self: Backend, target: exp.Table, largest_bytes: int
              ) -> Iterator[tuple[exp.Table, list[exp.Expr]]]:
        with storage(self, target, largest_bytes) as (stored, properties):
            purpose = target.name.split("_", 1)[1].rstrip("0123456789")
            placed.setdefault(purpose, set()).add(stored.catalog == "temp")
            yield stored, properties

    monkeypatch.setattr(type(db), "short_lived_storage", spied)
    monkeypatch.setattr(suppressor.Suppressor, "_stage_bytes", lambda self, rows: 10**15)
    api.anonymize(db, dataset, RHO, params, seed=82)
    assert published(db, dataset, api.get_run(db, dataset, "latest"), tmp_path) == expected
    rounds, counts = ("scores", "chosen", "found", "picks", "dels"), ("lvl", "supx", "rules")
    in_memory = backend_name == "duckdb"
    assert {p: placed[p] for p in rounds} == {p: {in_memory} for p in rounds}
    assert {p: placed[p] for p in counts} == {p: {False} for p in counts}


@pytest.mark.parametrize("model", ["rho", "prho"])
def test_the_rounds_tables_are_gone_after_a_run_and_after_an_interrupted_one(
        db: Backend, backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        model: str) -> None:
    """A finished run leaves only what it publishes, in setanon's schema; a run stopped in
    its second round (Ctrl-C) leaves none of its tables, wherever the engine kept them."""
    source = write(tmp_path / "in.dat", random_baskets(random.Random(81), 40, 9, 7))
    dataset = api.load_transactions(db, source, "d")
    params = ({"rho": 0.6, "sensitive_fraction": 0.4, "m": 3} if model == "rho"
              else {"rho": 0.5, "setting": "personalized", "sensitive_fraction": 0.4, "m": 2})
    api.anonymize(db, dataset, require_model(model), params, seed=81)
    run = api.get_run(db, dataset, "latest")
    assert temporary_tables(db, backend_name) == 0
    kept = {"rho": ["items_1", "sensitive"], "prho": ["common", "cons", "items_1"]}[model]
    assert db.table_names(f"r{run.run_id}_") == [f"r{run.run_id}_{name}" for name in kept]

    sanitize = suppressor.Suppressor._sanitize
    calls = []

    def stopped_in_round_two(self: suppressor.Suppressor, *args: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            assert temporary_tables(db, backend_name) or backend_name != "duckdb"
            raise KeyboardInterrupt
        return sanitize(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(suppressor.Suppressor, "_sanitize", stopped_in_round_two)
    with pytest.raises(KeyboardInterrupt):
        api.anonymize(db, dataset, require_model(model), params, seed=82)
    stopped = api.get_run(db, dataset, "latest")
    assert stopped.status == "interrupted" and len(calls) == 2
    assert db.table_names(f"r{stopped.run_id}_") == []
    assert temporary_tables(db, backend_name) == 0
