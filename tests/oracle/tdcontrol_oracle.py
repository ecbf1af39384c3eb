"""Brute-force checker of a generalization + global suppression publication (TDControl of Cao
et al.), independent of setanon_sql.

A publication is valid iff the non-sensitive labels it uses form a cut of the hierarchy over
the non-sensitive items of the data (each such item has exactly one ancestor-or-self among
them), every published record's non-sensitive part is exactly the cut of its original
non-sensitive items, and its sensitive part is its original sensitive items minus the types
suppressed globally (a sensitive type is kept in every record that has it or in none).
"""

from __future__ import annotations

import itertools
from pathlib import Path


def read_hierarchy(path: Path) -> dict[str, str]:
    """child -> parent of an ARX-style file (``leaf;level1;...;root``, repeats ignored)."""
    parent: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        chain = [part.strip() for part in line.split(";") if part.strip()]
        for child, up in itertools.pairwise(chain):
            if child != up:
                parent[child] = up
    return parent


def ancestors_or_self(label: str, parent: dict[str, str]) -> list[str]:
    chain = [label]
    while chain[-1] in parent:
        chain.append(parent[chain[-1]])
    return chain


def generalization_faults(original: list[frozenset[str]], published: list[frozenset[str]],
                          parent: dict[str, str], sensitive: set[str]) -> list[str]:
    """Every way ``published`` fails to be a cut generalization plus global suppression."""
    if len(original) != len(published):
        return [f"{len(published)} published records for {len(original)} original ones"]
    faults: list[str] = []
    labels = {label for record in published for label in record if label not in sensitive}
    cut: dict[str, str] = {}
    for item in {i for record in original for i in record if i not in sensitive}:
        found = [a for a in ancestors_or_self(item, parent) if a in labels]
        if len(found) != 1:
            faults.append(f"item {item} has {len(found)} published ancestors: {found}")
        else:
            cut[item] = found[0]
    kept: dict[str, set[bool]] = {}
    for n, (o, p) in enumerate(zip(original, published, strict=True)):
        expected = {cut.get(i) for i in o if i not in sensitive}
        if {label for label in p if label not in sensitive} != expected:
            faults.append(f"record {n}: non-sensitive {sorted(p - sensitive)} is not the cut "
                          f"of {sorted(o - sensitive)}")
        if not (p & sensitive) <= (o & sensitive):
            faults.append(f"record {n}: sensitive items {sorted(p & sensitive)} not in input")
        for e in o & sensitive:
            kept.setdefault(e, set()).add(e in p)
    faults += [f"sensitive {e} kept in some records only" for e, seen in kept.items()
               if len(seen) > 1]
    return faults


def suppressed_types(original: list[frozenset[str]], published: list[frozenset[str]],
                     sensitive: set[str]) -> set[str]:
    """Sensitive types of the input that no published record keeps."""
    before = {e for record in original for e in record & sensitive}
    return before - {e for record in published for e in record & sensitive}
