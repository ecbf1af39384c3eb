"""Brute-force personalized ρ-uncertainty checker (Nakagawa et al.), independent of setanon_sql.

Records are plain sets of labels (line n of a FIMI file = record n). The constraint is a list
E[n] of label sets, read from a file or generated from the documented spec (md5 draws). An
adversary (u, Q) knows Q ⊆ D_u of the original record; D' is safe for it iff supp_{D'}(Q) = 0 or
supp_{D'}(Q + {e}) <= ρ·supp_{D'}(Q) for every e ∈ E_u \\ Q (Def. 2). Everything is exact:
ρ is a Fraction and supports are counted record by record.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from itertools import combinations
from pathlib import Path

Records = list[frozenset[str]]
Member = Callable[[int, str], bool]


def read_fimi(path: Path) -> Records:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [frozenset(line.split()) for line in lines]


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _draw(seed: int, position: int, label: str, probability: float) -> bool:
    """Bernoulli(p): the first 8 hex digits of md5(seed:position:label) below round(p·2^32)."""
    return int(_md5(f"{seed}:{position}:{label}")[:8], 16) < round(probability * 2**32)


def common_set(labels: set[str], seed: int, fraction: float) -> set[str]:
    """S: the first round(f·|I|) labels by md5(seed:label), ties by label."""
    count = max(1, round(fraction * len(labels)))
    return set(sorted(labels, key=lambda label: (_md5(f"{seed}:{label}"), label))[:count])


def generated_constraint(records: Records, setting: str, seed: int, fraction: float,
                         noise: float = 0.01) -> list[set[str]]:
    """E[n] for the four settings of Sec. 6.1 (positions are 1-based line numbers)."""
    labels = set().union(*records)
    if setting == "fixed":
        common = common_set(labels, seed, fraction)
        return [set(common) for _ in records]
    if setting == "personalized":
        return [{x for x in labels if _draw(seed, n, x, fraction)}
                for n in range(1, len(records) + 1)]
    common = common_set(labels, seed, fraction)
    plus = [{x for x in labels if _draw(seed, n, x, 1 - noise if x in common else noise)}
            for n in range(1, len(records) + 1)]
    if setting == "personalized+":
        return plus
    union = set().union(*plus)
    return [set(union) for _ in records]


def support(records: Records, itemset: frozenset[str]) -> int:
    return sum(1 for record in records if itemset <= record)


def unsafe_adversary(original: Records, published: Records, constraint: list[set[str]],
                     u: int, q: frozenset[str], rho: Fraction) -> bool:
    """Whether D' = ``published`` is unsafe w.r.t. adversary (u, Q) (u is a 0-based index)."""
    sq = support(published, q)
    return sq > 0 and any(support(published, q | {e}) > rho * sq
                          for e in constraint[u] - q)


def unsafe_adversaries(original: Records, published: Records, constraint: list[set[str]],
                       rho: Fraction, m: int | None) -> list[tuple[int, frozenset[str]]]:
    """Every unsafe adversary (u, Q), Q ⊆ original D_u, 1 <= |Q| <= m (any size if None)."""
    found = []
    for u, record in enumerate(original):
        top = len(record) if m is None else min(m, len(record))
        for size in range(1, top + 1):
            for q in combinations(sorted(record), size):
                if unsafe_adversary(original, published, constraint, u, frozenset(q), rho):
                    found.append((u, frozenset(q)))
    return found


def unsafe_share(original: Records, published: Records, constraint: list[set[str]],
                 rho: Fraction, ell: int) -> float:
    """H_ℓ exactly under the paper's distribution: a record with >= ℓ items uniformly, then ℓ
    of its items uniformly."""
    eligible = [u for u, record in enumerate(original) if len(record) >= ell]
    if not eligible:
        return 0.0
    total = 0.0
    for u in eligible:
        subsets = list(combinations(sorted(original[u]), ell))
        bad = sum(unsafe_adversary(original, published, constraint, u, frozenset(q), rho)
                  for q in subsets)
        total += bad / len(subsets)
    return total / len(eligible)


def is_record_subset(original: Records, published: Records) -> bool:
    return len(original) == len(published) and all(
        p <= o for o, p in zip(original, published, strict=True))


def util_info(original: Records, published: Records) -> float:
    """eq. 5."""
    before = sum(len(r) for r in original)
    lost = sum(len(o) - len(p & o) for o, p in zip(original, published, strict=True))
    return lost / before if before else 0.0


def util_dist(original: Records, published: Records) -> float:
    """eq. 6: KL(D' || D) of the item shares over the input's items."""
    d = Counter(x for r in original for x in r)
    p = Counter(x for r in published for x in r if x in d)
    td, tp = sum(d.values()), sum(p.values())
    return sum((n / tp) * math.log((n / tp) / (d[x] / td)) for x, n in p.items() if n)


def association_rules(records: Records, minsup: Fraction, minconf: Fraction
                      ) -> set[tuple[frozenset[str], frozenset[str]]]:
    """Every rule A -> C (A, C disjoint, non-empty) with supp(A + C) >= minsup·n and
    supp(A + C) >= minconf·supp(A), by enumerating all subsets of every record."""
    counts: Counter[frozenset[str]] = Counter()
    for record in records:
        for size in range(1, len(record) + 1):
            counts.update(frozenset(c) for c in combinations(sorted(record), size))
    frequent = {z: n for z, n in counts.items() if n >= minsup * len(records)}
    rules = set()
    for z, n in frequent.items():
        for size in range(1, len(z)):
            for a in combinations(sorted(z), size):
                if n >= minconf * counts[frozenset(a)]:
                    rules.add((frozenset(a), z - frozenset(a)))
    return rules


def util_mining(original: Records, published: Records, minsup: Fraction,
                minconf: Fraction) -> float:
    """eq. 12: Jaccard distance of the two rule sets."""
    a = association_rules(original, minsup, minconf)
    b = association_rules(published, minsup, minconf)
    return 1 - len(a & b) / len(a | b) if a | b else 0.0


def member_function(records: Records, setting: str, seed: int, fraction: float,
                    noise: float = 0.01) -> Member:
    """``member(u, label)``: whether label ∈ E_u (u 0-based), drawn lazily: the benchmark's
    check of large data cannot list n·|I| pairs."""
    labels = set().union(*records)
    common = common_set(labels, seed, fraction) if setting != "personalized" else set()
    if setting == "fixed":
        return lambda u, label: label in common
    if setting == "personalized":
        return lambda u, label: _draw(seed, u + 1, label, fraction)

    def plus(u: int, label: str) -> bool:
        return _draw(seed, u + 1, label, 1 - noise if label in common else noise)

    if setting == "personalized+":
        return plus
    union = {label for label in labels
             if any(plus(u, label) for u in range(len(records)))}
    return lambda u, label: label in union


def count_unsafe_adversaries(original: Records, published: Records, member: Member, rho: Fraction,
                             m: int | None) -> int:
    """Unsafe adversaries (u, Q), |Q| <= m, for large data: supports of every subset of every
    published record are counted once, and each Q looks only at its one-item extensions."""
    counts: Counter[frozenset[str]] = Counter()
    for record in published:
        top = len(record) if m is None else min(len(record), m + 1)
        for size in range(1, top + 1):
            counts.update(frozenset(c) for c in combinations(sorted(record), size))
    extensions: dict[frozenset[str], list[tuple[str, int]]] = {}
    for itemset, sx in counts.items():
        if len(itemset) >= 2:
            for e in itemset:
                extensions.setdefault(itemset - {e}, []).append((e, sx))
    unsafe = 0
    for u, record in enumerate(original):
        top = len(record) if m is None else min(m, len(record))
        for size in range(1, top + 1):
            for q in combinations(sorted(record), size):
                key = frozenset(q)
                sq = counts.get(key, 0)
                if sq and any(sx > rho * sq and member(u, e)
                              for e, sx in extensions.get(key, ())):
                    unsafe += 1
    return unsafe


def sampled_unsafe_share(original: Records, published: Records, member: Member, rho: Fraction,
                         ell: int, n: int, seed: int) -> float:
    """Ĥ_ℓ of n adversaries drawn as the paper does (own RNG), supports by inverted index."""
    import random

    rng = random.Random(seed)
    index: dict[str, set[int]] = {}
    for v, record in enumerate(published):
        for label in record:
            index.setdefault(label, set()).add(v)
    eligible = [u for u, record in enumerate(original) if len(record) >= ell]
    bad = 0
    for _ in range(n):
        u = rng.choice(eligible)
        q = frozenset(rng.sample(sorted(original[u]), ell))
        cover = set.intersection(*(index.get(label, set()) for label in q))
        if not cover:
            continue
        ext = Counter(e for v in cover for e in published[v] - q)
        bad += any(sx > rho * len(cover) and member(u, e) for e, sx in ext.items())
    return bad / n
