"""The CDR-like generator (setanon_sql/synth/cdr.py): the shape of Acs et al.'s Table II,
Voronoi adjacency and locality, checked on 20,000 users from the written files."""

from __future__ import annotations

import math
import random
from collections import deque
from pathlib import Path

import pytest

from setanon_sql.synth.cdr import write_cdr


@pytest.fixture(scope="module")
def cdr(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return write_cdr(tmp_path_factory.mktemp("cdr"), 20_000, seed=3)


def _read(shape: dict[str, object]) -> tuple[list[list[str]], dict[str, set[str]],
                                             dict[str, tuple[float, float]]]:
    records = [line.split() for line in Path(str(shape["data"])).read_text().splitlines()]
    graph: dict[str, set[str]] = {}
    for line in Path(str(shape["graph"])).read_text().splitlines():
        a, b = line.split("\t")
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set()).add(a)
    coords = {}
    for line in Path(str(shape["coordinates"])).read_text().splitlines():
        t, x, y = line.split("\t")
        coords[t] = (float(x), float(y))
    return records, graph, coords


def test_set_sizes_and_popularity_look_like_table_ii(cdr: dict[str, object]) -> None:
    records, _, _ = _read(cdr)
    sizes = [len(r) for r in records]
    mean = sum(sizes) / len(sizes)
    sd = math.sqrt(sum((s - mean) ** 2 for s in sizes) / len(sizes))
    assert len(records) == 20_000 and min(sizes) == 1
    assert 9 <= mean <= 14 and sd > 10 and max(sizes) > 80  # Table II: 11.42, 17.23, 422
    assert all(len(set(r)) == len(r) for r in records)  # sets: no tower twice
    counts: dict[str, int] = {}
    for record in records:
        for tower in record:
            counts[tower] = counts.get(tower, 0) + 1
    per = sorted(counts.values(), reverse=True)
    top = sum(per[:len(per) // 10]) / sum(per)
    spread = math.sqrt(sum((n - sum(per) / len(per)) ** 2 for n in per) / len(per))
    assert top > 0.25  # skewed popularity
    assert 0.7 <= spread / (sum(per) / len(per)) <= 2.0  # paper: 50,911 / 38,817 = 1.31
    assert len({tuple(r) for r in records}) > 0.8 * len(records)  # many distinct sets


def test_graph_is_a_connected_planar_voronoi_adjacency(cdr: dict[str, object]) -> None:
    _, graph, coords = _read(cdr)
    n = len(coords)
    edges = sum(len(v) for v in graph.values()) // 2
    assert n == 1303 and set(graph) == set(coords)
    assert n - 1 <= edges <= 3 * n - 6  # planar (Delaunay) and at least a tree
    seen, queue = {"1"}, deque(["1"])
    while queue:
        for nxt in graph[queue.popleft()] - seen:
            seen.add(nxt)
            queue.append(nxt)
    assert len(seen) == n  # connected: merging adjacent parts can reach one region
    # A property of Voronoi adjacency checked by brute force: every tower's nearest tower
    # is a Voronoi neighbour (their midpoint is closer to them than to any other tower).
    for t, (x, y) in coords.items():
        nearest = min((u for u in coords if u != t),
                      key=lambda u: (coords[u][0] - x) ** 2 + (coords[u][1] - y) ** 2)
        assert nearest in graph[t]


def test_users_visit_nearby_towers(cdr: dict[str, object]) -> None:
    records, _, coords = _read(cdr)
    rng = random.Random(1)

    def dist(a: str, b: str) -> float:
        return math.dist(coords[a], coords[b])

    within = [dist(*rng.sample(r, 2)) for r in records if len(r) >= 2][:5000]
    towers = list(coords)
    across = [dist(*rng.sample(towers, 2)) for _ in range(5000)]
    assert sum(within) / len(within) < 0.6 * sum(across) / len(across)


def test_same_seed_same_files(tmp_path: Path) -> None:
    one, two = write_cdr(tmp_path / "a", 500, seed=9), write_cdr(tmp_path / "b", 500, seed=9)
    for name in ("data", "graph", "coordinates"):
        assert Path(str(one[name])).read_text() == Path(str(two[name])).read_text()
