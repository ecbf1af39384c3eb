"""Derive an item hierarchy for Retail, which ships without one.

Retail (Brijs et al. 1999) has 16,470 integer items and no product taxonomy. Like the shared
BMS-WebView-2 hierarchy (range-based, He & Naughton / Terrovitis et al. style, internal nodes
labelled ``lo,hi``), this builds a *balanced hierarchy by item-id ranges with fan-out 10*: the
distinct items of the data, in numeric order, are grouped at most ten at a time (groups of a
level as equal as possible); those groups likewise; and so on until at most ten nodes are
left, which hang under the root ``*``.

Why ranges of ids and not frequency bands: Retail numbers its items roughly in order of first
appearance, so low ids are the frequent ones (the first decile of ids holds 52% of the item
occurrences). Id ranges therefore put items of similar frequency together as a side effect, and
keep the two benchmark datasets built the same way, so their NCP figures are comparable.
Frequency bands (the other usual choice) would need a frequency order that changes with the
data, and would make NCP depend on how rare an item is twice over.

Output: ARX-style lines ``leaf;level1;...;*`` (what ``setanon load hierarchy`` reads), one per
distinct item of the FIMI input, all of the same length.

Usage (from the repository root)::

    python bench/make_retail_hierarchy.py ../shared/data/retail/retail.dat \\
        -o /tmp/kmbench/hierarchy_retail.txt
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

FAN_OUT = 10


def distinct_items(path: Path) -> list[int]:
    """The distinct items of a FIMI file, in numeric order."""
    items: set[int] = set()
    with path.open() as lines:
        for line in lines:
            items.update(int(token) for token in line.split())
    return sorted(items)


def range_hierarchy(items: list[int], fan_out: int = FAN_OUT) -> list[list[str]]:
    """One path ``[leaf, level1, ..., '*']`` per item of a balanced id-range hierarchy.

    A node covers at most ``fan_out`` consecutive children, the groups of a level as equal in
    size as possible (so no node has a single child and a node never repeats its child's
    range); its label is ``lo,hi``, the smallest and largest item id below it (so labels are
    unique and say which items they stand for).
    """
    if fan_out < 2:
        raise ValueError(f"fan_out {fan_out}: give at least 2")
    if len(set(items)) != len(items):
        raise ValueError("items must be distinct")
    ordered = sorted(items)
    paths = [[str(item)] for item in ordered]
    # Each level: (lo, hi, indices of the leaves below) per node, grouped fan_out at a time.
    level = [(item, item, [n]) for n, item in enumerate(ordered)]
    while len(level) > fan_out:
        groups = -(-len(level) // fan_out)
        bounds = [len(level) * g // groups for g in range(groups + 1)]
        grouped = [level[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        level = [(group[0][0], group[-1][1], [n for node in group for n in node[2]])
                 for group in grouped]
        for lo, hi, leaves in level:
            for n in leaves:
                paths[n].append(f"{lo},{hi}")
    for path in paths:
        path.append("*")
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fimi", type=Path, help="the transactions (FIMI format)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--fan-out", type=int, default=FAN_OUT)
    args = parser.parse_args()
    paths = range_hierarchy(distinct_items(args.fimi), args.fan_out)
    args.output.write_text("".join(";".join(path) + "\n" for path in paths))
    print(f"{len(paths)} leaves, {len(paths[0]) - 1} levels above them -> {args.output}")


if __name__ == "__main__":
    main()
