"""Swap model (Gunawan & Mambo): outputs checked by the brute-force oracle on both backends."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.swap import MODEL
from tests.conftest import write
from tests.oracle import swap_oracle as oracle

CATEGORIES = "ABCD"


def random_baskets(seed: int, n_records: int = 40, n_items: int = 24) -> str:
    """Records leaning towards one category each, so that tendencies and collisions occur."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_records):
        favourite = rng.randrange(len(CATEGORIES))
        length = rng.choice([1, 2, 3, 3, 4, 5, 6])
        items = set()
        for _ in range(length):
            if rng.random() < 0.6:
                items.add(favourite + len(CATEGORIES) * rng.randrange(n_items // 4) + 1)
            else:
                items.add(rng.randrange(n_items) + 1)
        lines.append(" ".join(map(str, sorted(items))))
    return "\n".join(lines) + "\n"


def category_file(path: Path, n_items: int = 24) -> dict[str, str]:
    cats = {str(i): CATEGORIES[(i - 1) % len(CATEGORIES)] for i in range(1, n_items + 1)}
    write(path, "".join(f"{item}\t{cat}\n" for item, cat in cats.items()))
    return cats


def run_and_read(db: Backend, tmp_path: Path, data: str, params: dict, seed: int):
    source = write(tmp_path / "d.dat", data)
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, MODEL, params, seed=seed)
    run = api.get_run(db, dataset, "latest")
    out = api.export_dataset(db, dataset, tmp_path / "out.dat", run=run)
    pairs = [(int(a), int(b)) for a, b in db.query(
        exp.select("record_id", "partner_id").from_(db.table(f"r{run.run_id}_pairs")))]
    return dataset, run, oracle.read_fimi(source), oracle.read_fimi(out), pairs


@pytest.mark.on_spark(seeds=[1], connect=True)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_similarity_swap_matches_oracle(db: Backend, tmp_path: Path, seed: int) -> None:
    cats = category_file(tmp_path / "cats.tsv")
    params = {"categories": str(tmp_path / "cats.tsv"), "fi_supports": "0.05,0.1"}
    dataset, run, original, published, pairs = run_and_read(
        db, tmp_path, random_baskets(seed), params, seed)
    assert pairs, "the data is built so that some records swap"
    assert oracle.check_similarity_swap(original, published, cats, pairs, run.figures) == []
    result = api.verify(db, dataset, run)
    assert result.ok, result.details
    # The verifier recomputes tendencies of the changed records only; the hidden ones are all
    # among them, so it counts as many as the oracle-checked figure over every record.
    assert result.details["hidden_records"] == run.figures["hidden_records"] > 0


@pytest.mark.parametrize("exact_limit", [1, 2000])
def test_randomized_rounds_and_exact_stage_both_meet_the_claims(
        db: Backend, tmp_path: Path, exact_limit: int) -> None:
    # exact_limit 1 forces the randomized rounds alone; 2000 lets the exact stage finish.
    cats = category_file(tmp_path / "cats.tsv")
    params = {"categories": str(tmp_path / "cats.tsv"), "exact_limit": exact_limit,
              "metrics": False}
    _, run, original, published, pairs = run_and_read(
        db, tmp_path, random_baskets(11, n_records=60), params, 5)
    problems = oracle.check_similarity_swap(original, published, cats, pairs, run.figures)
    if exact_limit == 1:
        # Without the exact stage the matching need not be maximal; everything else holds.
        problems = [p for p in problems if "could swap" not in p]
    assert problems == []


@pytest.mark.parametrize("seed", [4, 5])
def test_random_swap_matches_oracle(db: Backend, tmp_path: Path, seed: int) -> None:
    cats = category_file(tmp_path / "cats.tsv")
    params = {"categories": str(tmp_path / "cats.tsv"), "method": "random", "metrics": False}
    dataset, run, original, published, pairs = run_and_read(
        db, tmp_path, random_baskets(seed), params, seed)
    assert oracle.check_random_swap(original, published, cats, pairs, run.figures) == []
    assert api.verify(db, dataset, run).ok


def test_random_categories_are_equal_sized_and_seeded(db: Backend, tmp_path: Path) -> None:
    params = {"random_categories": 5, "metrics": False}
    dataset, run, original, published, pairs = run_and_read(
        db, tmp_path, random_baskets(7, n_records=50), params, 9)
    dictionary = db.table(dataset.dict_table(dataset.set_attributes[0]), "d")
    rows = db.query(exp.select("d.label", "c.category").from_(db.table(f"r{run.run_id}_cats", "c"))
                    .join(dictionary, on="d.item_id = c.item_id"))
    cats = {label: int(category) for label, category in rows}
    sizes = sorted(oracle.Counter(cats.values()).values())
    assert len(sizes) == 5 and sizes[-1] - sizes[0] <= 1
    assert set(cats) == {i for items in original.values() for i in items}
    assert oracle.check_similarity_swap(original, published, cats, pairs, run.figures) == []
    api.anonymize(db, dataset, MODEL, params, seed=9)
    again = api.export_dataset(db, dataset, tmp_path / "again.dat",
                               run=api.get_run(db, dataset, "latest"))
    assert oracle.read_fimi(again) == published


def test_metrics_match_brute_force(db: Backend, tmp_path: Path) -> None:
    category_file(tmp_path / "cats.tsv")
    supports = (0.05, 0.1, 0.2)
    params = {"categories": str(tmp_path / "cats.tsv"), "method": "random",
              "fi_supports": ",".join(map(str, supports)), "fi_max_size": 3}
    _, run, original, published, _ = run_and_read(db, tmp_path, random_baskets(3), params, 3)
    for figure, support in zip(run.figures["frequent_itemsets"], supports, strict=True):
        count = max(1, -(-int(support * 1000) * len(original) // 1000))
        fo = oracle.frequent_itemsets(original, count, 3)
        fa = oracle.frequent_itemsets(published, count, 3)
        assert (figure["fi_original"], figure["fi_anonymized"], figure["fi_common"]) == (
            len(fo), len(fa), len(fo & fa))
        assert figure["fi_similarity"] == pytest.approx(len(fo & fa) / len(fo | fa))
    assert run.figures["diss"] == pytest.approx(oracle.diss(original, published))
