"""The id-range hierarchy derived for Retail (bench/make_retail_hierarchy.py) is a valid tree.

Checked against what ``setanon load hierarchy`` needs: one root, one parent per node, every
item a leaf exactly once; and against the derivation's promise: fan-out at most 10, each node
labelled with the smallest and largest id below it.
"""

from __future__ import annotations

import importlib.util
import random
from collections import defaultdict
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "make_retail_hierarchy.py"
_spec = importlib.util.spec_from_file_location("make_retail_hierarchy", SCRIPT)
assert _spec is not None and _spec.loader is not None
hierarchy_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hierarchy_script)


def _tree(paths: list[list[str]]) -> tuple[dict[str, str | None], dict[str, set[str]]]:
    parent: dict[str, str | None] = {}
    children: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        for child, up in zip(path, [*path[1:], None], strict=True):
            assert parent.setdefault(child, up) == up, f"{child} has two parents"
            if up is not None:
                children[up].add(child)
    return parent, children


def _leaves(node: str, children: dict[str, set[str]]) -> list[int]:
    below = children.get(node)
    if not below:
        return [int(node)]
    return [leaf for child in below for leaf in _leaves(child, children)]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 9, 10, 11, 101, 1234])
def test_range_hierarchy_is_a_balanced_tree(seed: int, size: int) -> None:
    items = random.Random(seed).sample(range(5 * size), size)
    paths = hierarchy_script.range_hierarchy(items)
    parent, children = _tree(paths)
    assert sorted(int(path[0]) for path in paths) == sorted(items)
    assert [node for node, up in parent.items() if up is None] == ["*"]
    assert len({len(path) for path in paths}) == 1
    assert all(len(below) <= 10 for below in children.values())
    for node in children:
        leaves = _leaves(node, children)
        if node != "*":
            assert node == f"{min(leaves)},{max(leaves)}"
            # consecutive in id order: no item of the data lies inside the range but elsewhere
            assert sorted(leaves) == [i for i in sorted(items) if min(leaves) <= i <= max(leaves)]


def test_distinct_items_reads_fimi(tmp_path: Path) -> None:
    fimi = tmp_path / "t.dat"
    fimi.write_text("3 1 2\n\n10 2\n")
    assert hierarchy_script.distinct_items(fimi) == [1, 2, 3, 10]


def test_repeated_items_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct"):
        hierarchy_script.range_hierarchy([1, 1, 2])
