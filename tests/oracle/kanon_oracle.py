"""Brute-force checker of k-anonymity for complex data (NEC Def. 1), in plain Python.

Reads the original and the published (exported) CSV/TSV files and an ARX-style hierarchy file
itself; imports nothing of setanon_sql. A published record must: be an input record, share its
whole QI combination (single values and the item set of every set-valued QI) with >= k - 1
other published records, and carry values that cover its original ones (an interval
``[lo-hi]`` containing the number or the number itself; for categories the value, '*', or an
ancestor in the hierarchy; a subset of the original item set). At most floor(epsilon |T|)
records may be missing; non-QI columns are unchanged. Published intervals are tight: the
records carrying ``[lo-hi]`` in a column hold lo and hi among their original values, so no
interval is wider than its class's min-max.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from pathlib import Path

_INTERVAL = re.compile(r"^\[(-?\d+)-(-?\d+)\]$")


def read_table(path: Path, delimiter: str = "\t") -> tuple[list[str], list[list[str]]]:
    """Header and rows of a delimited file (TSV: no quoting)."""
    with path.open(encoding="utf-8", newline="") as handle:
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
        rows = list(csv.reader(handle, delimiter=delimiter, quoting=quoting))
    return rows[0], rows[1:]


def read_hierarchy(path: Path, separator: str = ";") -> dict[str, set[str]]:
    """Every leaf's set of ancestors-or-self, from ``leaf;parent;...;root`` lines."""
    ancestors: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = [p.strip() for p in line.split(separator) if p.strip()]
        if parts:
            ancestors.setdefault(parts[0], set()).update(parts)
    return ancestors


def _covers_number(published: str, original: str) -> bool:
    if published == original:
        return True
    match = _INTERVAL.match(published)
    return bool(match) and int(match.group(1)) <= int(original) <= int(match.group(2))


def _covers_category(published: str, original: str,
                     hierarchy: dict[str, set[str]] | None) -> bool:
    if published in ("*", original):
        return True
    if hierarchy is None:
        return False
    if original == "":
        return published in {a for anc in hierarchy.values() for a in anc
                             if all(a in s for s in hierarchy.values())}
    return published in hierarchy.get(original, set())


def _loose_intervals(out_rows: list[list[str]], by_id: dict[str, list[str]],
                     col: dict[str, int], id_column: str, qis: dict[str, str]) -> list[str]:
    """Published intervals wider than the original values of the records that carry them."""
    problems = []
    for name, kind in qis.items():
        if kind != "numeric":
            continue
        values: dict[str, list[int]] = {}
        for row in out_rows:
            source = by_id.get(row[col[id_column]])
            if source is not None and _INTERVAL.match(row[col[name]]) and source[col[name]]:
                values.setdefault(row[col[name]], []).append(int(source[col[name]]))
        for label, members in values.items():
            match = _INTERVAL.match(label)
            assert match is not None
            if (int(match.group(1)), int(match.group(2))) != (min(members), max(members)):
                problems.append(f"{name} {label} is wider than its records' values "
                                f"[{min(members)}-{max(members)}]")
    return problems


def check(
    original: Path,
    anonymized: Path,
    id_column: str,
    qis: dict[str, str],
    k: int,
    epsilon: float,
    hierarchies: dict[str, dict[str, set[str]]] | None = None,
    item_separator: str = " ",
) -> list[str]:
    """Violations of the guarantee (empty when the published file is k-anonymous and sound).

    ``qis`` maps each QI column to 'numeric', 'category' or 'set'.
    """
    hierarchies = hierarchies or {}
    header, rows = read_table(original)
    out_header, out_rows = read_table(anonymized)
    problems: list[str] = []
    if out_header != header:
        return [f"header {out_header} differs from the input's {header}"]
    col = {name: i for i, name in enumerate(header)}
    by_id = {row[col[id_column]]: row for row in rows}
    budget = math.floor(epsilon * len(rows) + 1e-9)
    if len(rows) - len(out_rows) > budget:
        problems.append(f"{len(rows) - len(out_rows)} records deleted, budget {budget}")
    seen: set[str] = set()
    keys: list[tuple] = []
    for row in out_rows:
        rid = row[col[id_column]]
        if rid not in by_id or rid in seen:
            problems.append(f"record {rid!r} is unknown or repeated")
            continue
        seen.add(rid)
        source = by_id[rid]
        key = []
        for name, i in col.items():
            value, before = row[i], source[i]
            kind = qis.get(name)
            if kind is None:
                if value != before:
                    problems.append(f"record {rid}: non-QI column {name} changed")
                continue
            if kind == "set":
                items = frozenset(value.split(item_separator)) - {""}
                if not items <= set(before.split(item_separator)):
                    problems.append(f"record {rid}: {name} {sorted(items)} not in the original")
                key.append(items)
            elif kind == "numeric":
                if not _covers_number(value, before):
                    problems.append(f"record {rid}: {name} {value!r} does not cover {before!r}")
                key.append(value)
            else:
                if not _covers_category(value, before, hierarchies.get(name)):
                    problems.append(f"record {rid}: {name} {value!r} does not cover {before!r}")
                key.append(value)
        keys.append(tuple(key))
    problems += _loose_intervals(out_rows, by_id, col, id_column, qis)
    for key, count in Counter(keys).items():
        if count < k:
            problems.append(f"QI combination {key} is shared by only {count} record(s) (k={k})")
    return problems
