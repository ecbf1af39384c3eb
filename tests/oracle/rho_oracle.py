"""Brute-force ρ-uncertainty checker (Jia et al. Sec. 2.1), independent of setanon_sql.

Records are plain sets of item labels. Every non-empty subset of every record is a qid (up to
``m`` items when bounded); the table is safe iff sup(q + {e}) <= ρ·sup(q) for every qid q and
every sensitive item e not in q. Exact: ρ is a Fraction and supports are counted record by
record.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from pathlib import Path


def read_fimi(path: Path) -> list[frozenset[str]]:
    """Line n of a FIMI file is record n (an empty line is an empty record)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [frozenset(line.split()) for line in lines]


def qids(records: list[frozenset[str]], m: int | None) -> set[frozenset[str]]:
    """Every non-empty itemset of at most m items drawn from a record."""
    found: set[frozenset[str]] = set()
    for record in records:
        top = len(record) if m is None else min(m, len(record))
        for size in range(1, top + 1):
            found.update(frozenset(c) for c in combinations(sorted(record), size))
    return found


def support(records: list[frozenset[str]], itemset: frozenset[str]) -> int:
    return sum(1 for record in records if itemset <= record)


def unsafe_rules(records: list[frozenset[str]], sensitive: set[str], rho: Fraction,
                 m: int | None = None) -> list[tuple[frozenset[str], str, int, int]]:
    """(q, e, sup(q + e), sup(q)) of every rule with confidence above ρ."""
    found = []
    for q in qids(records, m):
        sq = support(records, q)
        for e in sensitive - q:
            sx = support(records, q | {e})
            if sx > rho * sq:
                found.append((q, e, sx, sq))
    return found


def is_record_subset(original: list[frozenset[str]], published: list[frozenset[str]]) -> bool:
    """Same number of records, and each published record is a subset of its original."""
    return len(original) == len(published) and all(
        p <= o for o, p in zip(original, published, strict=True))


def suppressed(original: list[frozenset[str]], published: list[frozenset[str]]) -> int:
    """Occurrences deleted."""
    return sum(len(o) - len(p) for o, p in zip(original, published, strict=True))
