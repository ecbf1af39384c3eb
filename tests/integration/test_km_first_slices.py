"""The exact sizes' first round in slices of the first node (``models/km/firstslices.py``).

Slicing must change how many statements count the itemsets, never what they count: each
itemset's rows per first node against a brute-force count, the sliced violations against one
statement and against the oracle's, and a whole run with slicing forced against one without,
on every backend, several seeds.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations, pairwise
from math import comb
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.km import firstslices
from setanon_sql.models.km.firstslices import (
    first_node_rows,
    first_node_slices,
    materialize_violating_itemsets,
    slices_of,
    violation_total,
)
from tests.integration.test_km import random_case
from tests.integration.test_km_graph import grid_case
from tests.oracle import km_oracle


def _records(seed: int) -> dict[int, list[int]]:
    """Records of skewed nodes: a few long ones among many short."""
    rng = random.Random(seed)
    nodes = list(range(3, 3 + rng.randint(8, 14)))
    weights = [1.0 / (rank + 1) for rank in range(len(nodes))]
    return {record: sorted(set(rng.choices(nodes, weights, k=rng.choice([1, 2, 3, 4, 7, 9]))))
            for record in range(1, rng.randint(30, 60))}


def _table(db: Backend, records: dict[int, list[int]]) -> exp.Table:
    """(record_id, node_id) of ``records``."""
    table = db.table("t_fs_nodes")
    rows = [(record, node) for record, nodes in records.items() for node in nodes]
    db.materialize(table, exp.select(
        exp.cast(exp.column("r"), "BIGINT").as_("record_id"),
        exp.cast(exp.column("n"), "INT").as_("node_id")).from_(exp.values(
            [tuple(exp.Literal.number(v) for v in row) for row in rows], alias="v",
            columns=["r", "n"])))
    return table


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("ell", [2, 3, 4])
@pytest.mark.on_spark(seeds=[1])
def test_rows_by_first_node_are_the_itemsets_starting_there(db: Backend, seed: int,
                                                            ell: int) -> None:
    records = _records(seed)
    table = _table(db, records)
    expected: Counter[int] = Counter()
    for nodes in records.values():
        for itemset in combinations(nodes, ell):
            expected[itemset[0]] += 1
    found = {int(node): round(float(rows)) for node, rows in db.query(first_node_rows(table, ell))}
    assert {node: rows for node, rows in found.items() if rows} == dict(expected)
    total = sum(comb(len(nodes), ell) for nodes in records.values())
    assert sum(found.values()) == total
    assert first_node_slices(db, table, ell, max_rows=total) is None
    ranges = first_node_slices(db, table, ell, max_rows=max(1, total // 4))
    assert ranges is not None and len(ranges) >= 2
    db.drop_table(table)


def test_slices_cover_the_nodes_in_order_within_the_limit() -> None:
    rng = random.Random(7)
    for _ in range(200):
        rows = [(node, float(rng.choice([0, 1, 5, 20, 80]))) for node in
                sorted(rng.sample(range(1, 400), rng.randint(1, 30)))]
        limit = rng.choice([1, 10, 50, 200])
        ranges = slices_of(rows, limit)
        nodes = [node for node, _ in rows]
        assert ranges[0][0] == nodes[0] and ranges[-1][1] == nodes[-1]
        for (_, high), (low, _) in pairwise(ranges):
            assert high < low and nodes[nodes.index(high) + 1] == low  # adjacent, no gap
        for low, high in ranges:
            inside = [count for node, count in rows if low <= node <= high]
            assert sum(inside) <= limit or len(inside) == 1
        # greedy: a slice ends only where the next node would not fit
        for (start, high), (low, _) in pairwise(ranges):
            held = sum(count for node, count in rows if start <= node <= high)
            assert held + dict(rows)[low] > limit


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.on_spark(seeds=[2])
def test_sliced_violations_are_one_statement_s_and_the_oracle_s(db: Backend,
                                                                seed: int) -> None:
    records = _records(seed)
    table = _table(db, records)
    k, ell = 3, 3
    support = Counter(itemset for nodes in records.values()
                      for itemset in combinations(nodes, ell))
    oracle = sorted((*itemset, count) for itemset, count in support.items() if count < k)
    columns = ["vid", *(f"n{j}" for j in range(1, ell + 1)), "support"]
    made = []
    for max_rows, target in ((None, "t_fs_one"), (3, "t_fs_sliced")):
        out = db.table(target)
        slices = materialize_violating_itemsets(db, out, table, ell, k,
                                                lambda p: db.table(f"t_fs_{p}"), max_rows)
        assert (slices == 1) == (max_rows is None)
        made.append(sorted(tuple(int(v) for v in row)
                           for row in db.query(exp.select(*columns).from_(out))))
        db.drop_table(out)
    assert made[0] == made[1]
    assert [row[1:] for row in made[0]] == oracle
    assert (violation_total(db, table, ell, k, "node_id")  # the verifier's exact check
            == violation_total(db, table, ell, k, "node_id", max_rows=3) == len(oracle))
    assert [row[0] for row in sorted(made[0], key=lambda r: r[1:])] == list(
        range(1, len(oracle) + 1))  # vids in itemset order
    db.drop_table(table)
    assert not db.table_names("t_fs_")


@pytest.mark.parametrize(("seed", "constraint"), [(1, "hierarchy"), (2, "hierarchy"),
                                                  (3, "graph")])
@pytest.mark.on_spark(seeds=[1])
def test_a_run_with_every_first_round_sliced_publishes_the_same(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
        constraint: str) -> None:
    outputs = []
    for limit in (firstslices.SLICE_ROWS, 1):
        monkeypatch.setattr(firstslices, "SLICE_ROWS", limit)
        params: dict[str, Any] = {"k": "3", "m": 3, "batch": 0.6}
        name = f"s{seed}_{limit}"
        if constraint == "graph":
            data, graph, coords = grid_case(tmp_path, seed)
            params.update(graph=str(graph), coordinates=str(coords), error="geo")
            dataset = api.load_transactions(db, data, name)
        else:
            data, hierarchy = random_case(tmp_path, seed)
            dataset = api.load_transactions(db, data, name)
            api.load_hierarchy(db, hierarchy, dataset)
        run = api.get_run(db, dataset, api.anonymize(db, dataset, require_model("km"),
                                                     params, seed=1))
        out = tmp_path / f"out_{limit}.dat"
        api.export_dataset(db, dataset, out, run=run)
        rounds = run.figures["rounds"]
        firsts = [rounds[0], *(now for before, now in pairwise(rounds)
                               if now["size"] != before["size"])]
        later = [entry for entry in rounds if all(entry is not f for f in firsts)]
        outputs.append((out.read_text(), [
            {key: value for key, value in entry.items() if key != "slices"}
            for entry in rounds], max(entry.get("slices", 1) for entry in firsts)))
        assert not any("slices" in entry for entry in later)  # a later round: one statement
        assert km_oracle.km_violations(km_oracle.read_fimi(out), [3, 3, 3], 3) == []
        assert api.verify(db, dataset, run).ok
    (one, rounds_one, first_one), (sliced_out, rounds_sliced, first_sliced) = outputs
    assert first_one == 1
    assert first_sliced > 1, "the forced limit sliced no first round"
    assert sliced_out == one and rounds_sliced == rounds_one
