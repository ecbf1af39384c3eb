"""Both plans of the sampled check (postings, enumeration) against a brute-force support count.

Random generalized records and random itemsets of 1..ℓ nodes (some held by no record); the
violating groups are computed in plain Python from the definition (support = records holding
every node) and must equal each plan's output, on both backends, for several seeds.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.groupsupport import (
    EXTEND_STEPS,
    extends_by_records,
    group_violations,
    itemset_support,
    record_slices,
)
from setanon_sql.models.km.itemsets import prefix_level
from tests.integration.test_rho_blocking import values_table


def _random_case(seed: int, ell: int) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """g(record_id, node_id) and groups(vid, node_id, n)."""
    rng = random.Random(seed)
    nodes = list(range(1, 9))
    g = []
    for record in range(1, 41):
        held = rng.sample(nodes, rng.randint(1, 7))
        g.extend((record, node) for node in held)
    groups, seen = [], set()
    for vid in range(1, 61):
        itemset = frozenset(rng.sample(nodes, rng.randint(1, ell)))
        if itemset in seen:
            continue
        seen.add(itemset)
        n = rng.randint(1, 3)
        groups.extend((vid, node, n) for node in sorted(itemset))
    return g, groups


def _brute_force(g: list[tuple[int, int]], groups: list[tuple[int, int, int]],
                 k: int) -> set[tuple[int, int, int]]:
    records: dict[int, set[int]] = {}
    for record, node in g:
        records.setdefault(record, set()).add(node)
    itemsets: dict[int, set[int]] = {}
    for vid, node, _ in groups:
        itemsets.setdefault(vid, set()).add(node)
    low = {vid for vid, nodes in itemsets.items()
           if sum(nodes <= held for held in records.values()) < k}
    return {row for row in groups if row[0] in low}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("plan", ["postings", "enumerate", "auto"])
def test_plans_agree_with_brute_force(db: Backend, seed: int, plan: str) -> None:
    ell, k = 4, 6
    g_rows, group_rows = _random_case(seed, ell)
    g = values_table(db, "t_g", "record_id, node_id", g_rows)
    groups = values_table(db, "t_groups", "vid, node_id, n", group_rows)
    target = db.table("t_viol")
    used = group_violations(db, groups, g, k, target, lambda purpose: db.table(f"t_{purpose}"),
                            plan)
    assert used in ("postings", "enumerate")
    if plan != "auto":
        assert used == plan
    got = {tuple(int(v) for v in row)
           for row in db.query(exp.select("vid", "node_id", "n").from_(target))}
    expected = _brute_force(g_rows, group_rows, k)
    assert expected, "the case should have violating groups"
    assert got == expected
    for purpose in ("grec", "glens", "gsupp"):
        assert not db.table_names(f"t_{purpose}")


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("step", EXTEND_STEPS)
def test_postings_extended_either_way_agree_with_brute_force(db: Backend, seed: int,
                                                             step: str) -> None:
    """The postings plan with each level extended by prefixes, by records, or the cheaper."""
    g_rows, group_rows = _random_case(seed, 5)
    g = values_table(db, "t_g", "record_id, node_id", g_rows)
    groups = values_table(db, "t_groups", "vid, node_id, n", group_rows)
    target = db.table("t_viol")
    assert group_violations(db, groups, g, 4, target, lambda purpose: db.table(f"t_{purpose}"),
                            "postings", step) == "postings"
    assert _rows(db, target, "vid, node_id, n") == _brute_force(g_rows, group_rows, 4)
    for purpose in ("gheld", "gheld2", "gpre"):
        assert not db.table_names(f"t_{purpose}")


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("plan", "step"), [("postings", "prefixes"), ("postings", "records"),
                                            ("postings", "auto"), ("enumerate", "auto"),
                                            ("auto", "auto")])
@pytest.mark.on_spark(seeds=[1])
def test_first_holders_below_bounds_agree_with_brute_force(db: Backend, seed: int, plan: str,
                                                           step: str) -> None:
    """With bounds (the sampler's first-holder rule): each itemset's smallest holder below
    its bound, or no row where none is; bounds from 1 to past the last record, so that some
    prefixes of one tier hold itemsets of different bounds."""
    g_rows, group_rows = _random_case(seed, 5)
    rng = random.Random(seed + 100)
    vids = sorted({vid for vid, _, _ in group_rows})
    bound_rows = [(vid, rng.choice([1, 2, rng.randint(1, 45), 41, 45])) for vid in vids]
    g = values_table(db, "t_g", "record_id, node_id", g_rows)
    groups = values_table(db, "t_groups", "vid, node_id, n", group_rows)
    bounds = values_table(db, "t_bounds", "vid, bound", bound_rows)
    target = db.table("t_holders")
    used = itemset_support(db, groups, g, target, lambda purpose: db.table(f"t_{purpose}"),
                           plan, step, bounds)
    assert plan == "auto" or used == plan
    records: dict[int, set[int]] = {}
    for record, node in g_rows:
        records.setdefault(record, set()).add(node)
    itemsets: dict[int, set[int]] = {}
    for vid, node, _ in group_rows:
        itemsets.setdefault(vid, set()).add(node)
    expected = set()
    for vid, bound in bound_rows:
        holders = [r for r, held in records.items() if r < bound and itemsets[vid] <= held]
        if holders:
            expected.add((vid, min(holders)))
    assert expected and len(expected) < len(vids), "the case should have both kinds"
    assert _rows(db, target, "vid, holder") == expected
    for purpose in ("gheld", "gheld2", "gpre", "gids", "gbrows", "grows", "grec", "glens"):
        assert not db.table_names(f"t_{purpose}")


@pytest.mark.parametrize("seed", [1, 2])
def test_postings_levels_are_short_lived_where_the_search_runs_them(
        db: Backend, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside ``working_tables`` (km's search and verify) the postings plan's held levels are
    short-lived tables (on DuckDB temporary ones): the supports are the same and no level is
    left behind, in setanon's schema or elsewhere."""
    g_rows, group_rows = _random_case(seed, 5)
    g = values_table(db, "t_g", "record_id, node_id", g_rows)
    groups = values_table(db, "t_groups", "vid, node_id, n", group_rows)
    stored = []
    original = db.short_lived_storage

    @contextmanager
    def recorded(target: exp.Table, largest_bytes: int
                 ) -> Iterator[tuple[exp.Table, list[exp.Expr]]]:
        with original(target, largest_bytes) as place:
            stored.append(target.name)
            yield place

    monkeypatch.setattr(db, "short_lived_storage", recorded)
    target = db.table("t_viol")
    with db.working_tables():
        assert group_violations(db, groups, g, 4, target,
                                lambda purpose: db.table(f"t_{purpose}"), "postings") == "postings"
    assert _rows(db, target, "vid, node_id, n") == _brute_force(g_rows, group_rows, 4)
    assert {"t_gheld", "t_gheld2"} & set(stored)
    for purpose in ("gheld", "gheld2", "gpre"):
        assert not db.table_names(f"t_{purpose}")
    assert not db._stored_elsewhere


def test_a_prefix_with_many_extensions_is_extended_by_records(db: Backend) -> None:
    """Node 1 begins 30 itemsets {1, x}; records hold node 1 and two others: by records (two
    rows a held record) rather than by prefixes (30 a held record). One extension a prefix:
    by prefixes, without counting the records' nodes."""
    records = values_table(db, "t_g", "record_id, node_id",
                           [(r, n) for r in range(1, 41) for n in (1, 2 + r % 30, 3 + r % 29)])
    held = values_table(db, "t_held", "record_id, pid", [(r, 1) for r in range(1, 41)])
    many = values_table(db, "t_ids", "vid, size, r1, r2, p1, p2",
                        [(x, 2, 1, x, 1, x) for x in range(2, 32)])
    level, lengths = db.table("t_level"), db.table("t_lengths")
    db.materialize(lengths, exp.select("record_id", exp.func("count", exp.Star()).as_("len"))
                   .from_(records.copy()).group_by("record_id"))
    db.materialize(level, prefix_level(many, 2))
    assert extends_by_records(db, held, level, lengths, "auto")
    assert not extends_by_records(db, held, level, lengths, "prefixes")
    one = values_table(db, "t_ids1", "vid, size, r1, r2, p1, p2", [(1, 2, 1, 5, 1, 1)])
    db.drop_table(level)
    db.materialize(level, prefix_level(one, 2))
    assert not extends_by_records(db, held, level, lengths, "auto")
    assert extends_by_records(db, held, level, lengths, "records")


def _rows(db: Backend, table: exp.Table, columns: str) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in row)
            for row in db.query(exp.select(*columns.split(", ")).from_(table))}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("k", [2, 6])
@pytest.mark.parametrize("plan", ["postings", "enumerate", "auto"])
def test_staged_count_over_slices_agrees_with_brute_force(db: Backend, seed: int, k: int,
                                                          plan: str) -> None:
    """The check by slices of records (groups that reach k early are not counted again)."""
    g_rows, group_rows = _random_case(seed, 4)
    g = values_table(db, "t_g", "record_id, node_id", g_rows)
    groups = values_table(db, "t_groups", "vid, node_id, n", group_rows)
    slices = record_slices(db, g, lambda i: db.table(f"t_slice{i}"))
    parts = [_rows(db, table, "record_id, node_id") for table in slices]
    assert set().union(*parts) == set(g_rows)
    assert sum(len(part) for part in parts) == len(g_rows)
    assert all(part for part in parts), "each slice should hold records in this case"
    target = db.table("t_viol")
    used = group_violations(db, groups, slices, k, target,
                            lambda purpose: db.table(f"t_{purpose}"), plan)
    assert 1 <= len(used.split("+")) <= len(slices)
    assert _rows(db, target, "vid, node_id, n") == _brute_force(g_rows, group_rows, k)
    for purpose in ("gsupp", "gtotal", "gadded", "gundec1", "gundec2", "grec", "glens", "gids",
                    "gheld", "gheld2", "gpre", "gcount4"):
        assert not db.table_names(f"t_{purpose}")


def test_staged_count_stops_once_every_group_holds_k(db: Backend) -> None:
    """Every group held by two records of the first slice: one slice counted, no violation."""
    g_rows = [(r, n) for r in (16, 32) for n in (1, 2, 3)] + [(5, 1), (7, 9)]
    g = values_table(db, "t_g", "record_id, node_id", g_rows)
    groups = values_table(db, "t_groups", "vid, node_id, n",
                          [(1, 1, 1), (1, 2, 1), (2, 3, 2)])
    slices = record_slices(db, g, lambda i: db.table(f"t_slice{i}"))
    target = db.table("t_viol")
    used = group_violations(db, groups, slices, 2, target,
                            lambda purpose: db.table(f"t_{purpose}"))
    assert "+" not in used
    assert not _rows(db, target, "vid, node_id, n")


def test_auto_enumerates_short_records_and_reads_postings_of_rare_nodes(db: Backend) -> None:
    """Short records under common nodes: enumeration; a long record of rare nodes: postings."""
    common = [(r, n) for r in range(1, 201) for n in (1, 2)]
    groups = values_table(db, "t_groups", "vid, node_id, n", [(1, 1, 1), (1, 2, 1)])
    target = db.table("t_viol")
    work = lambda purpose: db.table(f"t_{purpose}")  # noqa: E731
    assert group_violations(db, groups, values_table(db, "t_g1", "record_id, node_id", common),
                            5, target, work) == "enumerate"
    db.drop_table(target)
    rare = [(1, n) for n in range(1, 31)] + [(r, 1) for r in range(2, 4)]
    groups2 = values_table(db, "t_groups2", "vid, node_id, n",
                           [(v, n, 1) for v in range(1, 30) for n in (v, v + 1)])
    assert group_violations(db, groups2, values_table(db, "t_g2", "record_id, node_id", rare),
                            5, target, work) == "postings"


@pytest.mark.on_spark
def test_hex_prefix_value_is_the_same_number_everywhere(db: Backend) -> None:
    """The samplers' random numbers: the first 8 hex digits of md5, as Python reads them
    (md5 'a' begins with a 0 digit, 'w15' with f: the top bit of the 32 set)."""
    words = ["a", "subset|1|3|7|42|9", "", "ffff", "km", "w15"]
    expressions = [db.hex_prefix_value(exp.MD5(this=exp.Literal.string(w))) for w in words]
    got = db.query(exp.select(*expressions))[0]
    assert [int(v) for v in got] == [int(hashlib.md5(w.encode()).hexdigest()[:8], 16)
                                     for w in words]
