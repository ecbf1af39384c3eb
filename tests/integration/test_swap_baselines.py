"""Swap model: PartSupp (rho) measured by compare_run, and the in-DBMS basket generator,
both checked by the brute-force oracle on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.swap import MODEL
from setanon_sql.models.swap.compare import compare_run
from setanon_sql.models.swap.generate import MOST, SKEW, UNIVERSE, generate_baskets
from tests.conftest import write
from tests.integration.test_swap import category_file, random_baskets
from tests.oracle import swap_oracle as oracle


@pytest.mark.parametrize("seed", [1, 2])
def test_partsupp_figures_match_oracle(db: Backend, tmp_path: Path, seed: int) -> None:
    cats = category_file(tmp_path / "cats.tsv")
    source = write(tmp_path / "d.dat", random_baskets(seed, n_records=30))
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, MODEL, {"categories": str(tmp_path / "cats.tsv"),
                                       "metrics": False}, seed=seed)
    swap_run = api.get_run(db, dataset, "latest")
    api.anonymize(db, dataset, require_model("rho"),
                  {"rho": 0.3, "sensitive_fraction": 0.5, "m": 1}, seed=seed)
    rho_run = api.get_run(db, dataset, "latest")
    supports = (0.1, 0.2)
    figures = compare_run(db, dataset, rho_run, swap_run, supports, 2)
    original = oracle.read_fimi(source)
    published = oracle.read_fimi(api.export_dataset(db, dataset, tmp_path / "o.dat",
                                                    run=rho_run))
    lost = sum(map(len, original.values())) - sum(map(len, published.values()))
    assert lost > 0, "rho 0.3 on this data suppresses something"
    assert figures["items_lost"] == lost
    assert figures["diss"] == pytest.approx(oracle.diss(original, published))
    assert figures["hidden_share"] == pytest.approx(
        oracle.hidden_share(original, published, cats))
    assert oracle.changed_share_problem(original, published, cats, figures) == []
    for figure, support in zip(figures["frequent_itemsets"], supports, strict=True):
        count = max(1, -(-int(support * 1000) * len(original) // 1000))
        fo = oracle.frequent_itemsets(original, count, 2)
        fa = oracle.frequent_itemsets(published, count, 2)
        assert (figure["fi_original"], figure["fi_anonymized"], figure["fi_common"]) == (
            len(fo), len(fa), len(fo & fa))


def test_compare_run_needs_a_swap_run(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "d.dat", random_baskets(3)), "d")
    api.anonymize(db, dataset, require_model("rho"), {"rho": 0.5, "sensitive_fraction": 0.5,
                                                      "m": 1}, seed=1)
    rho_run = api.get_run(db, dataset, "latest")
    with pytest.raises(api.InputError, match="pass a swap run"):
        compare_run(db, dataset, rho_run, rho_run, (0.1,), 2)


@pytest.mark.parametrize("seed", [1, 7])
def test_generated_baskets_follow_their_formula(db: Backend, tmp_path: Path,
                                                seed: int) -> None:
    # The oracle recomputes every basket from the generator's definition in plain Python, so
    # both backends must produce the very same data.
    dataset = generate_baskets(db, "g", 300, seed=seed)
    exported = oracle.read_fimi(api.export_dataset(db, dataset, tmp_path / "g.dat"))
    assert exported == oracle.generated_baskets(300, seed, UNIVERSE, MOST, SKEW)
    api.anonymize(db, dataset, MODEL, {"random_categories": 20, "metrics": False}, seed=seed)
    run = api.get_run(db, dataset, "latest")
    assert run.figures["tendency_records"] > 0 and api.verify(db, dataset, run).ok
    with pytest.raises(api.UsageError, match="records must be between"):
        generate_baskets(db, "h", 0)


@pytest.mark.parametrize("seed", [3, 4])
def test_tendency_suppression_matches_oracle(db: Backend, tmp_path: Path, seed: int) -> None:
    cats = category_file(tmp_path / "cats.tsv")
    source = write(tmp_path / "d.dat", random_baskets(seed))
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, MODEL, {"categories": str(tmp_path / "cats.tsv"),
                                       "method": "suppress", "metrics": False}, seed=seed)
    run = api.get_run(db, dataset, "latest")
    published = oracle.read_fimi(api.export_dataset(db, dataset, tmp_path / "o.dat", run=run))
    original = oracle.read_fimi(source)
    assert run.figures["items_lost"] > 0
    assert oracle.check_suppression(original, published, cats, run.figures) == []
    assert api.verify(db, dataset, run).ok
