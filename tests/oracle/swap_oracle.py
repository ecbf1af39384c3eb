"""Brute-force checker for tendency-hiding swaps (Gunawan & Mambo 2019), in plain Python.

Works on exported FIMI lines and plain lists; it does not import setanon_sql. Records are
``{record_no: set_of_labels}``; categories ``{label: category}``.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

Records = dict[int, set[str]]


def read_fimi(path: Path) -> Records:
    """Line n of a FIMI file is record n (1-based); an empty line is an empty record."""
    lines = path.read_text().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {n: set(line.split()) for n, line in enumerate(lines, start=1)}


def tendency(items: set[str], cats: dict[str, str]) -> tuple[str, str | None, int]:
    """(kind, tendency category, its weight) of one record, from Eqs. 4-5 and Algs. 1 and 4.

    kind is 'partial' when max weight > |t| / #categories, 'full' when the record has one
    category and at least two items, else 'none'. Ties go to the smallest category.
    """
    weights = Counter(cats[i] for i in items)
    if not weights:
        return "none", None, 0
    top = max(weights.values())
    category = min(c for c, w in weights.items() if w == top)
    if top * len(weights) > len(items):
        return "partial", category, top
    if len(weights) == 1 and len(items) > 1:
        return "full", category, top
    return "none", category, top


def moved(items: set[str], category: str | None, cats: dict[str, str]) -> set[str]:
    return {i for i in items if cats[i] == category}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def valid_pair(a: set[str], b: set[str], cats: dict[str, str]) -> bool:
    """Alg. 2's requisites: same kind (with a tendency), other category, no collision."""
    ka, ga, _ = tendency(a, cats)
    kb, gb, _ = tendency(b, cats)
    if ka == "none" or ka != kb or ga == gb:
        return False
    return not (moved(a, ga, cats) & b or moved(b, gb, cats) & a)


def changed_share_problem(original: Records, published: Records, cats: dict[str, str],
                          figures: dict) -> list[str]:
    """The share of records with a tendency whose published tendency is gone or different."""
    with_tendency = [r for r, items in original.items() if tendency(items, cats)[0] != "none"]
    changed = 0
    for record in with_tendency:
        kind, category, _ = tendency(published.get(record, set()), cats)
        changed += kind == "none" or category != tendency(original[record], cats)[1]
    share = changed / len(with_tendency) if with_tendency else 1.0
    if abs(share - figures["tendency_changed_share"]) > 1e-9:
        return [f"tendency changed share: reported {figures['tendency_changed_share']}, "
                f"oracle {share}"]
    return []


def check_similarity_swap(original: Records, published: Records, cats: dict[str, str],
                          pairs: list[tuple[int, int]], figures: dict) -> list[str]:
    """Every violation of the model's claims (empty when the run is correct)."""
    problems: list[str] = []
    partner: dict[int, int] = {}
    for a, b in pairs:
        if a in partner:
            problems.append(f"record {a} is in two swaps")
        partner[a] = b
    for a, b in partner.items():
        if partner.get(b) != a:
            problems.append(f"pair ({a}, {b}) is not symmetric")
        if not valid_pair(original[a], original[b], cats):
            problems.append(f"pair ({a}, {b}) breaks Alg. 2 (kind, category or collision)")
    for record, items in original.items():
        if record in partner:
            other = original[partner[record]]
            _, g, _ = tendency(items, cats)
            _, h, _ = tendency(other, cats)
            expected = (items - moved(items, g, cats)) | moved(other, h, cats)
        else:
            expected = items
        if published.get(record, set()) != expected:
            problems.append(f"record {record}: published {sorted(published.get(record, ()))} "
                            f"!= expected {sorted(expected)}")
    unmatched = [r for r, items in original.items()
                 if r not in partner and tendency(items, cats)[0] != "none"]
    for a, b in combinations(unmatched, 2):
        if valid_pair(original[a], original[b], cats):
            problems.append(f"records {a} and {b} are both unmatched but could swap")
            break
    with_tendency = [r for r, items in original.items() if tendency(items, cats)[0] != "none"]
    hidden = [r for r in with_tendency
              if not moved(published[r], tendency(original[r], cats)[1], cats)]
    if sorted(hidden) != sorted(partner):
        problems.append("hidden records are not exactly the swapped ones")
    if figures["hidden_records"] != len(hidden) or figures["tendency_records"] != len(
            with_tendency):
        problems.append(f"figures say {figures['hidden_records']}/{figures['tendency_records']} "
                        f"hidden, oracle {len(hidden)}/{len(with_tendency)}")
    if figures["items_lost"] != 0:
        problems.append(f"similarity swapping reported {figures['items_lost']} lost items")
    positive = sum(1 for a, b in partner.items()
                   if a < b and jaccard(original[a], original[b]) > 0)
    reported = sum(k["positive_jaccard"] for k in figures["pairs"].values())
    if positive != reported:
        problems.append(f"pairs with positive Jaccard: reported {reported}, oracle {positive}")
    return problems + changed_share_problem(original, published, cats, figures)


def check_random_swap(original: Records, published: Records, cats: dict[str, str],
                      pairs: list[tuple[int, int]], figures: dict) -> list[str]:
    """RandSwap: pairs of records with a tendency; each pair keeps the union of its items."""
    problems: list[str] = []
    partner = dict(pairs)
    with_tendency = {r for r, items in original.items() if tendency(items, cats)[0] != "none"}
    if set(partner) - with_tendency or len(with_tendency) - len(partner) > 1:
        problems.append("RandSwap must pair every record with a tendency (but one if odd)")
    lost = 0
    for a, b in partner.items():
        if partner.get(b) != a:
            problems.append(f"pair ({a}, {b}) is not symmetric")
        if a < b:
            if published[a] | published[b] != original[a] | original[b]:
                problems.append(f"pair ({a}, {b}) changed the union of its items")
            lost += (len(original[a]) + len(original[b])
                     - len(published[a]) - len(published[b]))
    for record, items in original.items():
        if record not in partner and published.get(record, set()) != items:
            problems.append(f"unpaired record {record} changed")
    if figures["items_lost"] != lost:
        problems.append(f"items lost: reported {figures['items_lost']}, oracle {lost}")
    return problems + changed_share_problem(original, published, cats, figures)


def frequent_itemsets(records: Records, min_count: int, max_size: int) -> set[frozenset[str]]:
    """All itemsets of at most ``max_size`` items contained in >= ``min_count`` records."""
    counts: Counter[frozenset[str]] = Counter()
    for items in records.values():
        for size in range(1, max_size + 1):
            counts.update(frozenset(c) for c in combinations(sorted(items), size))
    return {itemset for itemset, n in counts.items() if n >= min_count}


def diss(original: Records, published: Records) -> float:
    """Eq. 3 as sum_i |f_D(i) - f_D~(i)| / sum_i f_D(i)."""
    fo = Counter(i for items in original.values() for i in items)
    fp = Counter(i for items in published.values() for i in items)
    total = sum(fo.values())
    return sum(abs(fo[i] - fp[i]) for i in set(fo) | set(fp)) / total


def hidden_share(original: Records, published: Records, cats: dict[str, str]) -> float:
    """Share of records with a tendency whose published record keeps no tendency item."""
    with_tendency = [r for r, items in original.items() if tendency(items, cats)[0] != "none"]
    hidden = sum(not moved(published.get(r, set()), tendency(original[r], cats)[1], cats)
                 for r in with_tendency)
    return hidden / len(with_tendency) if with_tendency else 1.0


def generated_baskets(n_records: int, seed: int, universe: int, most: int,
                      skew: float) -> Records:
    """Record i: 1 + below(i, most, skew 2) draws j of item 1 + below(64 i + j, universe), with
    ``below`` the generator's hash in Python (setanon_sql.synth.mixing.below_int, itself checked
    against the SQL on both backends)."""
    from setanon_sql.synth.mixing import below_int

    records: Records = {}
    for i in range(1, n_records + 1):
        length = 1 + below_int(i, seed, 100, most, 2.0)
        records[i] = {str(1 + below_int(64 * i + j, seed, 101, universe, skew))
                      for j in range(1, length + 1)}
    return records


def check_suppression(original: Records, published: Records, cats: dict[str, str],
                      figures: dict) -> list[str]:
    """Tendency suppression: every record with a tendency loses exactly its tendency items."""
    problems: list[str] = []
    lost = 0
    for record, items in original.items():
        kind, category, _ = tendency(items, cats)
        expected = items - moved(items, category, cats) if kind != "none" else items
        lost += len(items) - len(expected)
        if published.get(record, set()) != expected:
            problems.append(f"record {record}: published {sorted(published.get(record, ()))} "
                            f"!= expected {sorted(expected)}")
    if figures["items_lost"] != lost or abs(figures["diss"] - diss(original, published)) > 1e-9:
        problems.append(f"items lost: reported {figures['items_lost']}, oracle {lost}")
    if figures["hidden_share"] != 1.0 and any(
            tendency(i, cats)[0] != "none" for i in original.values()):
        problems.append(f"hidden share {figures['hidden_share']} under suppression")
    return problems + changed_share_problem(original, published, cats, figures)
