"""Brute-force checks of in-place application and undo, on plain Python rows.

Does not import setanon_sql. Rows are tuples of the user's table as a driver returns them;
``key`` and ``item`` are the positions of the record-key and item columns. Published data is
given as ``{key text: set of label texts}`` (what the run published, read from its tables), an
optional ``mapping`` (original label -> published label, for generalization) and the keys of
deleted records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

Row = tuple[Any, ...]


def as_text(value: Any) -> str:
    """How the database casts a key or label to text (integers and strings suffice here)."""
    return str(value)


def _others(row: Row, key: int, item: int) -> Row:
    return tuple(v for i, v in enumerate(row) if i not in (key, item))


def pairs(rows: Iterable[Row], key: int, item: int) -> dict[str, set[str]]:
    """Distinct (key, item) pairs of ``rows`` as {key text: labels}."""
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(as_text(row[key]), set()).add(as_text(row[item]))
    return found


def check_applied(original: Sequence[Row], after: Sequence[Row], key: int, item: int,
                  published: dict[str, set[str]], mapping: dict[str, str] | None = None,
                  moves: bool = False) -> list[str]:
    """Problems of ``after`` as the in-place version of ``original`` under ``published``.

    Always: the distinct pairs of ``after`` are exactly the published ones, and every row keeps
    the other columns of an original row (no values invented, none duplicated). Without moves:
    ``after`` is exactly the original rows whose generalized pair is published, generalized.
    """
    problems = []
    got = {k: v for k, v in pairs(after, key, item).items() if v}
    want = {k: v for k, v in published.items() if v}
    if got != want:
        wrong = [k for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)][:5]
        problems.append(f"pairs differ from the published ones for keys {wrong}")
    before_others = Counter(_others(r, key, item) for r in original)
    after_others = Counter(_others(r, key, item) for r in after)
    invented = after_others - before_others
    if invented:
        problems.append(f"rows whose other columns no original row has: {list(invented)[:3]}")
    if not moves:
        expected = Counter()
        for row in original:
            label = as_text(row[item])
            new = mapping.get(label, label) if mapping else label
            if new in published.get(as_text(row[key]), set()):
                expected[(as_text(row[key]), new, _others(row, key, item))] += 1
        actual = Counter((as_text(r[key]), as_text(r[item]), _others(r, key, item))
                         for r in after)
        if expected != actual:
            diff = list((expected - actual) + (actual - expected))[:3]
            problems.append(f"rows differ from the generalized/suppressed originals: {diff}")
    else:
        before_items = Counter((as_text(r[item]), _others(r, key, item)) for r in original)
        after_items = Counter((as_text(r[item]), _others(r, key, item)) for r in after)
        if after_items - before_items:
            problems.append("a moved row changed its item or its other columns")
    return problems


def check_records(original: Sequence[Row], after: Sequence[Row], key: int,
                  published: dict[str, dict[int, str]]) -> list[str]:
    """Records table: deleted records gone, published single values in place, rest unchanged.

    ``published`` maps a key text to {column position: published value text}.
    """
    problems = []
    by_key = {as_text(r[key]): r for r in after}
    if set(by_key) != set(published):
        problems.append(f"record keys differ: {sorted(set(by_key) ^ set(published))[:5]}")
    for row in original:
        k = as_text(row[key])
        if k not in by_key or k not in published:
            continue
        for position, value in enumerate(by_key[k]):
            want = published[k].get(position)
            if want is None and value != row[position]:
                problems.append(f"record {k}: column {position} changed to {value!r}")
            if want is not None and as_text(value) != want:
                problems.append(f"record {k}: column {position} is {value!r}, not {want!r}")
    return problems


def same_rows(original: Sequence[Row], restored: Sequence[Row]) -> list[str]:
    """Undo: exactly the original rows (as a multiset, every column, compared by value and type)."""
    def typed(rows: Sequence[Row]) -> Counter:
        return Counter(tuple((type(v).__name__, v) for v in r) for r in rows)

    before, after = typed(original), typed(restored)
    if before == after:
        return []
    return [f"missing after undo: {list((before - after).elements())[:3]}; "
            f"extra: {list((after - before).elements())[:3]}"]
