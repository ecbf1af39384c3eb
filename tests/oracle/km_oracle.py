"""Brute-force checks of k^m-anonymity by global recoding along a hierarchy cut.

Plain Python over exported files (FIMI, ``item<TAB>label`` mapping, ARX hierarchy); it does not
import setanon_sql. Every check returns the list of problems it found (empty = passed).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from math import sqrt
from pathlib import Path


def read_fimi(path: Path) -> list[frozenset[str]]:
    """Records of a FIMI file, line n = record n (an empty line is an empty record)."""
    return [frozenset(line.split()) for line in path.read_text().split("\n")[:-1]]


def read_mapping(path: Path) -> dict[str, str]:
    return dict(line.split("\t") for line in path.read_text().splitlines())


def read_hierarchy(path: Path, separator: str = ";") -> dict[str, str | None]:
    """node -> parent (None for the root) of an ARX file; padding repeats count once."""
    parent: dict[str, str | None] = {}
    for line in path.read_text().splitlines():
        labels = [label.strip() for label in line.split(separator) if label.strip()]
        path_labels = [x for i, x in enumerate(labels) if i == 0 or x != labels[i - 1]]
        for child, up in zip(path_labels, [*path_labels[1:], None], strict=True):
            parent[child] = up
    return parent


def ancestors(node: str, parent: dict[str, str | None]) -> list[str]:
    """``node`` and every node above it, bottom up."""
    chain: list[str] = []
    current: str | None = node
    while current is not None:
        chain.append(current)
        current = parent[current]
    return chain


def leaves_below(parent: dict[str, str | None]) -> Counter[str]:
    """Number of leaves below (or at) every node."""
    children = {p for p in parent.values() if p is not None}
    counts: Counter[str] = Counter()
    for leaf in (n for n in parent if n not in children):
        counts.update(ancestors(leaf, parent))
    return counts


def km_violations(records: list[frozenset[str]], k: list[int], m: int) -> list[tuple]:
    """Every ℓ-itemset, ℓ <= m, with support in [1, k_ℓ), by counting all subsets of records."""
    found = []
    for ell in range(1, m + 1):
        support: Counter[tuple[str, ...]] = Counter()
        for record in records:
            support.update(combinations(sorted(record), ell))
        found += [(itemset, n) for itemset, n in support.items() if n < k[ell - 1]]
    return found


def cut_problems(mapping: dict[str, str], parent: dict[str, str | None]) -> list[str]:
    """The mapping must send every item to one of its ancestors-or-self, and no published
    label may lie above another (then the labels are part of one cut of the hierarchy)."""
    problems = [f"{item} -> {label}: not an ancestor" for item, label in mapping.items()
                if label not in ancestors(item, parent)]
    used = set(mapping.values())
    for label in used:
        above = set(ancestors(label, parent)[1:]) & used
        if above:
            problems.append(f"{label} lies below published {sorted(above)}")
    return problems


def generalization_problems(original: list[frozenset[str]], published: list[frozenset[str]],
                            mapping: dict[str, str]) -> list[int]:
    """Lines whose published record is not the image of the original record (global recoding)."""
    if len(original) != len(published):
        return [-1]
    return [n for n, (before, after) in enumerate(zip(original, published, strict=True), 1)
            if frozenset(mapping[i] for i in before) != after]


def ncp(original: list[frozenset[str]], mapping: dict[str, str],
        parent: dict[str, str | None]) -> float:
    """Average over original item occurrences of (leaves below the label - 1) / (|I| - 1)."""
    leaves = leaves_below(parent)
    total = max(leaves.values())
    occurrences = [item for record in original for item in record]
    if total <= 1 or not occurrences:
        return 0.0
    return sum(leaves[mapping[i]] - 1 for i in occurrences) / ((total - 1) * len(occurrences))


def itemset_supports(records: list[frozenset[str]], ell: int) -> Counter[tuple[str, ...]]:
    """Support of every ℓ-itemset that occurs (Omega^ℓ with supports)."""
    support: Counter[tuple[str, ...]] = Counter()
    for record in records:
        support.update(combinations(sorted(record), ell))
    return support


def violating_share(original: list[frozenset[str]], published: list[frozenset[str]],
                    mapping: dict[str, str], k: int, ell: int) -> float:
    """Pr[an ℓ-itemset drawn uniformly from Omega^ℓ of the ORIGINAL data is not k-anonymous
    after generalization] (Acs et al. Def. 1 with the uniform B_ℓ), computed exactly."""
    omega = itemset_supports(original, ell)
    if not omega:
        return 0.0
    bad = 0
    for itemset in omega:
        image = frozenset(mapping[i] for i in itemset)
        if sum(1 for record in published if image <= record) < k:
            bad += 1
    return bad / len(omega)


def unicity(records: list[frozenset[str]], ell: int) -> float:
    """Share of the ℓ-itemsets that occur in exactly one record (Sec. VI-B)."""
    omega = itemset_supports(records, ell)
    return sum(1 for n in omega.values() if n == 1) / len(omega) if omega else 0.0


def chi_square_uniform(counts: Counter[tuple[str, ...]],
                       omega: Counter[tuple[str, ...]]) -> tuple[float, float]:
    """(statistic, critical value at level 1e-4) of Pearson's test that ``counts`` are uniform
    draws from ``omega``; a draw outside omega makes the statistic infinite. The critical value
    is the Wilson-Hilferty approximation of the chi-square quantile (df = |omega| - 1)."""
    if set(counts) - set(omega):
        return float("inf"), 0.0
    total = sum(counts.values())
    expected = total / len(omega)
    statistic = sum((counts.get(x, 0) - expected) ** 2 / expected for x in omega)
    df = len(omega) - 1
    z = 3.719  # standard normal quantile of 1 - 1e-4
    critical = df * (1 - 2 / (9 * df) + z * sqrt(2 / (9 * df))) ** 3
    return statistic, critical


def read_graph(path: Path) -> dict[str, set[str]]:
    """Adjacency sets of a graph file ('a<TAB>b' or a lone 'a' per line)."""
    adjacent: dict[str, set[str]] = {}
    for line in path.read_text().splitlines():
        ends = [x.strip() for x in line.split("\t") if x.strip()]
        for x in ends:
            adjacent.setdefault(x, set())
        if len(ends) == 2:
            adjacent[ends[0]].add(ends[1])
            adjacent[ends[1]].add(ends[0])
    return adjacent


def parts_of(mapping: dict[str, str]) -> dict[str, set[str]]:
    """Published label -> the original items mapped to it."""
    parts: dict[str, set[str]] = {}
    for item, label in mapping.items():
        parts.setdefault(label, set()).add(item)
    return parts


def region_problems(mapping: dict[str, str], adjacent: dict[str, set[str]],
                    order: list[str]) -> list[str]:
    """Every part must be connected in the graph and labelled by its own item (one item) or
    'region:<its first item in ``order``>+<other items>'."""
    problems = []
    for label, part in parts_of(mapping).items():
        start = min(part, key=order.index)
        seen, todo = {start}, [start]
        while todo:
            for nxt in adjacent[todo.pop()] & part - seen:
                seen.add(nxt)
                todo.append(nxt)
        if seen != part:
            problems.append(f"{label}: not connected ({sorted(part - seen)} unreachable)")
        expected = start if len(part) == 1 else f"region:{start}+{len(part) - 1}"
        if label != expected:
            problems.append(f"{label}: expected label {expected}")
    return problems


def region_errors(original: list[frozenset[str]], mapping: dict[str, str],
                  xy: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """(NCP with parts as nodes, average distance to the part's mean point), per occurrence."""
    parts = parts_of(mapping)
    centre = {label: (sum(xy[i][0] for i in part) / len(part),
                      sum(xy[i][1] for i in part) / len(part)) for label, part in parts.items()}
    occurrences = [item for record in original for item in record]
    n_items = len(mapping)
    size = sum(len(parts[mapping[i]]) - 1 for i in occurrences)
    dist = sum(sqrt((xy[i][0] - centre[mapping[i]][0]) ** 2
                    + (xy[i][1] - centre[mapping[i]][1]) ** 2) for i in occurrences)
    return size / ((n_items - 1) * len(occurrences)), dist / len(occurrences)


def largest_record_uniqueness(records: list[frozenset[str]], ell: int) -> float:
    """R*_ℓ of Theorem 3: the share of the ℓ-subsets of the largest record (the first one of the
    largest size) that occur in no other record."""
    largest = max(records, key=len)
    support = itemset_supports(records, ell)
    subsets = list(combinations(sorted(largest), ell))
    return sum(1 for s in subsets if support[s] == 1) / len(subsets)
