"""Random item hierarchies for the oracle tests of the models that generalize along one."""

from __future__ import annotations

import random


def random_hierarchy(items: list[str], rng: random.Random) -> str:
    """ARX lines over ``items``: groups of 1-3 nodes per level (so depths differ), root '*'."""
    parent: dict[str, str] = {}
    level, current = 0, list(items)
    while len(current) > 3:
        level += 1
        rng.shuffle(current)
        grouped: list[str] = []
        while current:
            size = rng.choice((1, 2, 3))
            chunk, current = current[:size], current[size:]
            if size == 1:
                grouped += chunk
                continue
            label = f"L{level}_{len(grouped)}"
            parent.update(dict.fromkeys(chunk, label))
            grouped.append(label)
        current = grouped
    parent.update(dict.fromkeys(current, "*"))
    lines = []
    for item in items:
        chain, node = [item], item
        while node != "*":
            node = parent[node]
            chain.append(node)
        lines.append(";".join(chain))
    return "\n".join(lines) + "\n"
