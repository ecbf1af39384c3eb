"""Bounded work (issue 21, item 6): one record far longer than the rest is refused by name
before any heavy SQL runs, and ``max_items_per_record`` leaves it out so the step finishes
with results that match brute-force oracles on the remaining records. Both backends."""

from __future__ import annotations

import math
import os
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.backends.duckdb import MEMORY_SHARE, DuckDBBackend, default_settings
from setanon_sql.errors import WorkTooLargeError
from setanon_sql.models.km.positions import PositionSampler
from setanon_sql.models.km.risk import estimate_unicity
from setanon_sql.models.swap import MODEL
from setanon_sql.runs import list_runs
from tests.conftest import write
from tests.integration.test_km import random_case
from tests.integration.test_swap import category_file, random_baskets
from tests.oracle import km_oracle
from tests.oracle import swap_oracle as oracle

HUGE = 3000


def with_huge_record(text: str) -> tuple[str, int]:
    """The data with one more line of HUGE distinct items (labels unused elsewhere); returns
    the text and that record's id (its line number)."""
    lines = text.rstrip("\n").split("\n")
    lines.append(" ".join(str(100_000 + i) for i in range(HUGE)))
    return "\n".join(lines) + "\n", len(lines)


def _no_scratch(db: Backend) -> None:
    assert list(db.table_names("tmp_")) == []


def test_risk_finishes_on_the_long_record_within_its_bound(db: Backend, tmp_path: Path) -> None:
    # The long record's items occur nowhere else, so the truth is known without enumerating
    # its C(3000, 3) = 4.5e9 itemsets: all of them are unique, and no other itemset is one.
    data, _ = random_case(tmp_path, 4)
    text, _ = with_huge_record(data.read_text())
    dataset = api.load_transactions(db, write(tmp_path / "big.dat", text), "big")
    estimates = estimate_unicity(db, dataset, 3, seed=2, epsilon=0.05, delta=0.001)
    rest = km_oracle.read_fimi(data)
    for estimate in estimates:
        ell = estimate["size"]
        supports = km_oracle.itemset_supports(rest, ell)
        unique = sum(1 for n in supports.values() if n == 1) + math.comb(HUGE, ell)
        truth = unique / (len(supports) + math.comb(HUGE, ell))
        assert abs(estimate["unique_share"] - truth) <= 0.05, (estimate, truth)
    _no_scratch(db)


def test_position_sampler_is_uniform_over_records_of_any_length(db: Backend,
                                                                 tmp_path: Path) -> None:
    # Records of 2 to 12 items: the sampler must reach every ℓ-itemset equally often.
    source = write(tmp_path / "d.dat", "1 2 3\n2 3 4 5\n1 5\n"
                   + " ".join(map(str, range(1, 13))) + "\n3 4\n1 2 3 4 5 6\n")
    dataset = api.load_transactions(db, source, "p")
    attribute = dataset.set_attributes[0]
    items = db.table(dataset.items_table(attribute))
    labels = dict(db.query(exp.select("item_id", "label").from_(
        db.table(dataset.dict_table(attribute)))))
    for ell in (2, 3):
        omega = km_oracle.itemset_supports(km_oracle.read_fimi(source), ell)
        sampler = PositionSampler(db, items, lambda p: db.table(f"x_{p}"), seed=5, stream=1)
        target = db.table("x_target")
        drawn = sampler.draw(ell, 30 * len(omega), target)
        by_sample: dict[int, list[str]] = {}
        for sid, item_id in db.query(exp.select("sid", "item_id").from_(target)):
            by_sample.setdefault(sid, []).append(labels[item_id])
        counts = Counter(tuple(sorted(v)) for v in by_sample.values())
        assert len(by_sample) == drawn >= 30 * len(omega)
        assert all(len(v) == ell for v in by_sample.values())
        assert set(counts) == set(omega)
        statistic, critical = km_oracle.chi_square_uniform(counts, omega)
        assert statistic < critical, (ell, statistic, critical)
        db.drop_table(target)
        db.drop_table(db.table("x_snum"))


def test_risk_with_the_cap_matches_the_oracle_on_the_rest(db: Backend, tmp_path: Path) -> None:
    data, _ = random_case(tmp_path, 4)
    text, _ = with_huge_record(data.read_text())
    dataset = api.load_transactions(db, write(tmp_path / "big.dat", text), "big")
    estimates = estimate_unicity(db, dataset, 3, seed=2, epsilon=0.05, delta=0.001,
                                 max_items_per_record=100)
    rest = km_oracle.read_fimi(data)  # the data without the long record
    for estimate in estimates:
        assert estimate["records_left_out"] == 1
        truth = km_oracle.unicity(rest, estimate["size"])
        assert abs(estimate["unique_share"] - truth) <= 0.05, (estimate, truth)
    _no_scratch(db)


def test_swap_refuses_the_long_record_before_the_run(db: Backend, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    category_file(tmp_path / "cats.tsv")
    text, huge_id = with_huge_record(random_baskets(1))
    dataset = api.load_transactions(db, write(tmp_path / "big.dat", text), "big")
    monkeypatch.setenv("SETANON_MAX_WORK_ROWS", "1000000")
    # Default supports on 41 records: min count 1, every item is frequent, and the figures
    # would mine the long record's C(3000, 2) + C(3000, 3) = 4.5e9 itemsets.
    params = {"categories": str(tmp_path / "cats.tsv"), "uncategorized": "own"}
    with pytest.raises(WorkTooLargeError) as refused:
        api.anonymize(db, dataset, MODEL, params, seed=1)
    assert f"record {huge_id} holds {HUGE} frequent items" in str(refused.value)
    assert "--max-items-per-record" in str(refused.value)
    assert list_runs(db, dataset.name) == []  # refused before the run was recorded
    _no_scratch(db)
    # At support 0.05 (3 records) its items, each in one record, are not frequent: it runs.
    api.anonymize(db, dataset, MODEL, {**params, "fi_supports": "0.05,0.1"}, seed=1)
    assert [run["status"] for run in list_runs(db, dataset.name)] == ["done"]


def test_swap_with_the_cap_matches_the_oracle_on_the_rest(db: Backend, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cats = category_file(tmp_path / "cats.tsv")
    text, huge_id = with_huge_record(random_baskets(1))
    source = write(tmp_path / "big.dat", text)
    dataset = api.load_transactions(db, source, "big")
    monkeypatch.setenv("SETANON_MAX_WORK_ROWS", "1000000")
    params = {"categories": str(tmp_path / "cats.tsv"), "uncategorized": "own",
              "fi_supports": "0.05,0.1", "max_items_per_record": 50}
    api.anonymize(db, dataset, MODEL, params, seed=1)
    run = api.get_run(db, dataset, "latest")
    assert run.figures["records_over_item_cap"] == 1
    assert run.figures["items_over_item_cap"] == HUGE
    out = api.export_dataset(db, dataset, tmp_path / "out.dat", run=run)
    original, published = oracle.read_fimi(source), oracle.read_fimi(out)
    assert published.pop(huge_id) == original.pop(huge_id)  # left out: published unchanged
    pairs = [(int(a), int(b)) for a, b in db.query(
        exp.select("record_id", "partner_id").from_(db.table(f"r{run.run_id}_pairs")))]
    assert pairs
    assert oracle.check_similarity_swap(original, published, cats, pairs, run.figures) == []
    assert api.verify(db, dataset, run).ok


def test_duckdb_connection_defaults_come_from_the_machine(tmp_path: Path) -> None:
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    file = str(tmp_path / "f.duckdb")
    chosen = default_settings(file)
    assert chosen["temp_directory"] == file + ".tmp"
    assert chosen["memory_limit"] == f"{int(physical * MEMORY_SHARE) // 2**20}MB"
    backend = DuckDBBackend(file, "s", {"memory_limit": "700MB"})  # the URL's setting wins
    limit, spill = backend.execute(
        "SELECT current_setting('memory_limit'), current_setting('temp_directory')",
        fetch=True)[0]
    backend.close()
    assert (limit, spill) == ("667.5 MiB", file + ".tmp")  # 700 MB as DuckDB shows it
    memory = DuckDBBackend(":memory:", "s")
    spill = memory.execute("SELECT current_setting('temp_directory')", fetch=True)[0][0]
    assert Path(spill).parent == Path(tempfile.gettempdir())  # not ./.tmp
    memory.close()
    assert not Path(spill).exists()
