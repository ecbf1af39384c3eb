"""The kanon verifier's grouping by hashed item sets (issue 22) on both backends: its group sizes
equal a brute-force grouping of the published rows, and no hash collision, however many, can
make a non-k-anonymous output pass (the weak hashes below collide on purpose)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.io.keys import SetHash, item_set_hash
from setanon_sql.io.published import published
from setanon_sql.models.kanon import MODEL, verify_groups
from setanon_sql.models.kanon.plan import make_plan
from setanon_sql.names import qi_column, run_table
from tests.integration.test_kanon import claims_file


def _hash_of(h1: exp.Expr, n: exp.Expr) -> SetHash:
    def set_hash(items: exp.Table, alias: str) -> exp.Subquery:
        return (exp.select("record_id", h1.copy().as_("h1"), exp.convert(0).as_("h2"),
                           n.copy().as_("n")).from_(items.copy()).group_by("record_id")
                ).subquery(alias)
    return set_hash


ROWS = exp.func("count", exp.Star())
WEAK: dict[str, SetHash] = {
    "constant": _hash_of(exp.convert(0), exp.convert(0)),  # every set collides
    "size": _hash_of(exp.convert(0), ROWS),  # sets of one size collide
    "id_sum": _hash_of(exp.func("sum", exp.column("item_id")), ROWS),  # {1, 4} ~ {2, 3}
}


def _run(db: Backend, tmp_path: Path, seed: int, k: int) -> tuple[api.Dataset, api.Run]:
    source = claims_file(tmp_path / "claims.tsv", seed, 90)
    dataset = api.load_table(db, source, "claims", "id", ["dx", "rx"])
    params = {"k": k, "qi": ["sex", "job", "dx", "rx"], "suppress_budget": 0.05}
    run = api.get_run(db, dataset, api.anonymize(db, dataset, MODEL, params, seed=seed))
    assert run.verification == "passed"
    return dataset, run


def _brute_force(db: Backend, dataset: api.Dataset, run: api.Run) -> Counter[tuple[object, ...]]:
    """Published records per QI combination, sets compared whole, from the raw rows."""
    plan = make_plan(db, dataset, run.params)
    view = published(db, dataset, run)
    singles = [qi for qi in plan.qis if qi.kind != "set"]
    rows = db.query(exp.select("record_id", *(qi_column(qi.no) for qi in singles))
                    .from_(view.records))
    sets: dict[int, dict[int, list[int]]] = {}
    for qi in plan.qis:
        if qi.kind == "set":
            sets[qi.no] = {}
            for record_id, item_id in db.query(exp.select("record_id", "item_id")
                                               .from_(view.items[qi.no])):
                sets[qi.no].setdefault(int(record_id), []).append(int(item_id))
    return Counter((*row[1:], *(tuple(sorted(by_record.get(int(row[0]), [])))
                                for by_record in sets.values())) for row in rows)


def _sizes(db: Backend, dataset: api.Dataset, run: api.Run,
           set_hash: SetHash) -> verify_groups.GroupSizes:
    plan = make_plan(db, dataset, run.params)
    return verify_groups.group_sizes(db, published(db, dataset, run), plan.qis, plan.k, True,
                                     set_hash)


def _expected(groups: Counter[tuple[object, ...]], k: int) -> tuple[int, int, int]:
    return len(groups), min(groups.values()), sum(n for n in groups.values() if n < k)


def _break_one_class(db: Backend, dataset: api.Dataset, run: api.Run) -> None:
    """Withhold one more published item of some record (still a subset of the original, so
    every value still covers) such that the brute force finds a class below k."""
    table = db.table(run_table(run.run_id, f"items_{dataset.attribute('dx').attr_no}"))
    candidates = db.query(exp.select("record_id", "item_id").from_(table)
                          .order_by("record_id", "item_id"))
    for record_id, item_id in candidates:
        where = exp.and_(exp.column("record_id").eq(exp.convert(int(record_id))),
                         exp.column("item_id").eq(exp.convert(int(item_id))))
        db.run(exp.delete(table).where(where))
        if min(_brute_force(db, dataset, run).values()) < run.params["k"]:
            return
        db.run(exp.insert(exp.select(exp.convert(int(record_id)), exp.convert(int(item_id))),
                          table))
    pytest.fail("no single withheld item breaks a class; choose other data")


@pytest.mark.parametrize(("seed", "k"), [(1, 2), (2, 3), (3, 4)])
def test_group_sizes_equal_the_brute_force_whatever_the_hash(db: Backend, tmp_path: Path,
                                                             seed: int, k: int) -> None:
    dataset, run = _run(db, tmp_path, seed, k)
    expected = _expected(_brute_force(db, dataset, run), k)
    sizes = _sizes(db, dataset, run, item_set_hash)
    assert (sizes.groups, sizes.smallest, sizes.below_k) == expected
    assert sizes.method == "hashed sets, proved exact"
    for name, weak in WEAK.items():
        forced = _sizes(db, dataset, run, weak)
        assert (forced.groups, forced.smallest, forced.below_k) == expected, name
    # Every record's sets collide under the constant hash: the proof fails, text keys decide.
    assert _sizes(db, dataset, run, WEAK["constant"]).method == "sorted text keys of whole sets"


@pytest.mark.parametrize(("seed", "k"), [(4, 2), (5, 3)])
@pytest.mark.parametrize("weak", sorted(WEAK))
def test_a_hash_collision_cannot_pass_a_non_k_anonymous_output(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, k: int,
        weak: str) -> None:
    dataset, run = _run(db, tmp_path, seed, k)
    _break_one_class(db, dataset, run)
    expected = _expected(_brute_force(db, dataset, run), k)
    assert expected[2] > 0
    monkeypatch.setattr(verify_groups, "item_set_hash", WEAK[weak])
    check = api.verify(db, dataset, run)
    assert check.outcome == "failed", check.details
    found = check.details
    assert (found["qi_combinations"], found["smallest_group"],
            found["records_in_groups_below_k"]) == expected
    assert found["values_not_covering_original"] == {"sex": 0, "job": 0, "dx": 0, "rx": 0}


def test_a_repeated_published_item_fails_and_is_grouped_as_published(
        db: Backend, tmp_path: Path) -> None:
    dataset, run = _run(db, tmp_path, 6, 2)
    table = db.table(run_table(run.run_id, f"items_{dataset.attribute('dx').attr_no}"))
    record_id, item_id = db.query(exp.select("record_id", "item_id").from_(table)
                                  .order_by("record_id", "item_id").limit(1))[0]
    db.run(exp.insert(exp.select(exp.convert(int(record_id)), exp.convert(int(item_id))),
                      table))
    check = api.verify(db, dataset, run)
    assert check.outcome == "failed"
    assert check.details["repeated_item_rows"] == {"dx": 1, "rx": 0}
    assert check.details["grouping"] == "sorted text keys of whole sets"
    expected = _expected(_brute_force(db, dataset, run), 2)
    assert (check.details["qi_combinations"], check.details["smallest_group"],
            check.details["records_in_groups_below_k"]) == expected


def test_random_data_has_no_collision_of_the_real_hash(db: Backend, tmp_path: Path) -> None:
    """20,000 random sets of up to 8 of 40 items: equal hashes only for equal sets."""
    rng = random.Random(7)
    lines = ["id\tdx"] + [f"{i}\t" + " ".join(f"i{x}" for x in rng.sample(range(40),
                                                                         rng.randint(1, 8)))
                          for i in range(20_000)]
    source = tmp_path / "sets.tsv"
    source.write_text("\n".join(lines) + "\n")
    dataset = api.load_table(db, source, "sets", "id", ["dx"])
    items = db.table(dataset.items_table(dataset.attribute("dx")))
    hashed = item_set_hash(items, "h")
    distinct_hashes = db.scalar(exp.select(ROWS).from_(
        exp.select("h1", "h2", "n").distinct().from_(hashed).subquery("d")))
    distinct_sets = len({frozenset(line.split("\t")[1].split()) for line in lines[1:]})
    assert distinct_hashes == distinct_sets
