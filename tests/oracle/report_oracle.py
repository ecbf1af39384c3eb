"""Brute-force oracle of the report's figures: plain Python over exported TSV records.

It uses no setanon code: the report's aggregates (computed in the DBMS) are checked against it.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any


def read_tsv(path: Path) -> dict[str, set[str]]:
    """{record id: set of labels} of an exported TSV (id, sex, codes)."""
    return {record: items for record, (_, items) in read_rows(path).items()}


def read_rows(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """{record id: (sex, set of labels)} of an exported TSV (id, sex, codes)."""
    rows = [row.split("\t") for row in path.read_text(encoding="utf-8").splitlines()[1:]]
    return {row[0]: (row[1], frozenset(row[2].split())) for row in rows}


def oracle_record_classes(rows: dict[str, tuple[str, frozenset[str]]]) -> list[tuple[int, int]]:
    """(class size, classes) over records equal in the QI and the set."""
    return sorted(Counter(Counter(rows.values()).values()).items())


def oracle_version(records: dict[str, set[str]]) -> dict[str, Any]:
    support = Counter(label for items in records.values() for label in items)
    curve = sorted(support.values(), reverse=True)
    unicity = []
    for ell in (1, 2):
        holders: dict[tuple[str, ...], list[str]] = {}
        for record, items in records.items():
            for itemset in combinations(sorted(items), ell):
                holders.setdefault(itemset, []).append(record)
        unique = [r[0] for r in holders.values() if len(r) == 1]
        unicity.append({"ell": ell, "itemsets": len(holders), "unique_itemsets": len(unique),
                        "records_at_risk": len(set(unique))})
    return {"records": len(records), "item_occurrences": sum(support.values()),
            "distinct_items": len(support), "curve": curve,
            "lengths": sorted(Counter(len(items) for items in records.values()).items()),
            "unicity": unicity}


def oracle_changes(before: dict[str, set[str]], after: dict[str, set[str]]) -> dict[str, dict]:
    counts: dict[str, Counter] = {}
    for record in before.keys() | after.keys():
        had, has = before.get(record, set()), after.get(record, set())
        for label in had | has:
            c = counts.setdefault(label, Counter())
            c["before"] += label in had
            c["kept"] += label in had and label in has
            c["removed"] += label in had and label not in has
            c["added"] += label in has and label not in had
    return counts
