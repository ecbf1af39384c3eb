"""Quest-style transactions generated in the DBMS (setanon_sql/synth/quest.py): the shape
checked statistically against the parameters T, I, L, N on every backend, the same data on
every backend, the pattern model itself, and bad parameters."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.errors import UsageError
from setanon_sql.synth import quest, store
from setanon_sql.synth.quest import QuestParams, generate_quest
from setanon_sql.synth.shape import shape
from tests.conftest import DbUrl


def _transactions(db: Backend, dataset: api.Dataset) -> dict[int, set[int]]:
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    found: dict[int, set[int]] = defaultdict(set)
    for record_id, item_id in db.query(exp.select("record_id", "item_id").from_(items)):
        found[int(record_id)].add(int(item_id))
    return found


@pytest.mark.parametrize(("params", "seed", "distinct"), [
    (QuestParams(20_000, avg_length=10, avg_pattern=4, patterns=2000, items=1000), 1, 0.95),
    (QuestParams(20_000, avg_length=5, avg_pattern=2, patterns=500, items=300), 7, 0.8),
], ids=["T10I4", "T5I2"])
def test_shape_matches_the_parameters(db: Backend, params: QuestParams, seed: int,
                                      distinct: float) -> None:
    """Lengths Poisson(T) (mean and variance), skewed item frequencies, most transactions
    distinct (short ones over few items repeat more), and pairs of items that patterns put
    together far above independence."""
    dataset = generate_quest(db, "q", params, seed)
    n, t = params.records, params.avg_length
    baskets = _transactions(db, dataset)
    lengths = [len(baskets.get(i, ())) for i in range(1, n + 1)]
    assert min(lengths) >= 1
    mean = sum(lengths) / n
    variance = sum((x - mean) ** 2 for x in lengths) / n
    # Poisson(T) has mean and variance T; at least 1 and the cut of step 2 move both a little
    # (bias measured under 1%); 4 standard errors of the mean besides.
    assert abs(mean - t) <= 0.015 * t + 4 * math.sqrt(t / n)
    assert 0.85 * t <= variance <= 1.15 * t
    found = shape(db, dataset)
    assert found["sets"]["items"]["mean_set_size"] == pytest.approx(mean)
    assert found["distinct_rows"] >= distinct * n
    frequencies = sorted(Counter(i for b in baskets.values() for i in b).values(), reverse=True)
    assert found["sets"]["items"]["distinct_items"] == len(frequencies) <= params.items
    top = max(1, len(frequencies) // 100)
    assert sum(frequencies[:top]) / sum(frequencies) > 3 * top / len(frequencies)
    assert found["sets"]["items"]["max_over_median_frequency"] > 5
    # Co-occurrence: at least 20 pairs seen 30 times or more, each at ten times what
    # independent items with these frequencies would give (independence would give none).
    frequency = Counter(i for b in baskets.values() for i in b)
    pairs = Counter((a, b) for basket in baskets.values() for a in basket for b in basket
                    if a < b)

    def lift(pair: tuple[int, int]) -> float:
        return pairs[pair] * n / (frequency[pair[0]] * frequency[pair[1]])

    assert sum(1 for pair, together in pairs.items() if together >= 30 and lift(pair) > 10) >= 20


def test_patterns_follow_the_model(db: Backend) -> None:
    """The pattern tables themselves: sizes Poisson(I) (at least 1), corruption levels around
    0.5, weights exponential with mean 1, every pattern picked in proportion to its weight
    (the bucket table), and about CORRELATION of the positions the previous pattern also has
    holding its item there."""
    params = QuestParams(10, avg_length=10, avg_pattern=4, patterns=3000, items=5000)
    patterns, buckets, pattern_items = (db.table(f"quest_test_{n}")
                                        for n in ("patterns", "buckets", "pattern_items"))
    db.materialize(patterns, quest._patterns_query(params, 3))
    db.materialize(buckets, quest._buckets_query(params, patterns))
    db.materialize(pattern_items, quest._pattern_items_query(params, 3, patterns))
    rows = {int(p): (int(s), float(c), float(w)) for p, s, c, w in db.query(
        exp.select("pattern", "size", "corruption", "weight").from_(patterns))}
    assert sorted(rows) == list(range(1, 3001))
    sizes = [s for s, _, _ in rows.values()]
    # E[max(1, Poisson(4))] = 4 + e^-4; standard error sqrt(4 / 3000) = 0.037.
    assert sum(sizes) / len(sizes) == pytest.approx(4 + math.exp(-4), abs=0.15)
    corruption = [c for _, c, _ in rows.values()]
    assert sum(corruption) / len(corruption) == pytest.approx(0.5, abs=0.01)
    assert min(corruption) >= 0 and max(corruption) <= 0.95
    weights = [w for _, _, w in rows.values()]
    assert sum(weights) / len(weights) == pytest.approx(1.0, abs=0.06)
    slices = Counter(int(p) for (p,) in db.query(exp.select("pattern").from_(buckets)))
    n_buckets = quest.buckets(params)
    assert sum(slices.values()) == n_buckets
    total = sum(weights)
    for p, (_, _, w) in rows.items():
        assert abs(slices.get(p, 0) - n_buckets * w / total) <= 1
    held = {(int(p), int(j)): int(i) for p, j, i in db.query(
        exp.select("pattern", "position", "item").from_(pattern_items))}
    assert len(held) == sum(sizes)
    shared = [held[p, j] == held[p - 1, j] for (p, j) in held if p > 1 and (p - 1, j) in held]
    # Chained with probability 0.5; an unchained position equals by chance with
    # probability sum of squared item probabilities (small for 5,000 items).
    assert sum(shared) / len(shared) == pytest.approx(quest.CORRELATION, abs=0.04)


@pytest.mark.on_spark(connect=True)
def test_same_data_on_every_backend(db: Backend, tmp_path: Path) -> None:
    params = QuestParams(500, avg_length=6, avg_pattern=3, patterns=100, items=200)
    out = api.export_dataset(db, generate_quest(db, "q", params, 4), tmp_path / "a.dat",
                             fmt="fimi")
    with api.open_database("duckdb:///:memory:") as other:
        again = api.export_dataset(other, generate_quest(other, "q", params, 4),
                                   tmp_path / "b.dat", fmt="fimi")
        assert again.read_text() == out.read_text()
        changed = api.export_dataset(other, generate_quest(other, "q5", params, 5),
                                     tmp_path / "c.dat", fmt="fimi")
        assert changed.read_text() != out.read_text()


@pytest.mark.on_spark
def test_transactions_drawn_in_slices_are_the_same_data(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large datasets are drawn in record slices (store.CHUNK_RECORDS): slices of 64
    transactions give the same rows as one statement."""
    params = QuestParams(300, avg_length=6, avg_pattern=3, patterns=100, items=200)
    whole = api.export_dataset(db, generate_quest(db, "q", params, 4), tmp_path / "a.dat",
                               fmt="fimi")
    monkeypatch.setattr(store, "CHUNK_RECORDS", 64)
    sliced = api.export_dataset(db, generate_quest(db, "sliced", params, 4),
                                tmp_path / "b.dat", fmt="fimi")
    assert sliced.read_text() == whole.read_text()


@pytest.mark.parametrize(("changes", "message"), [
    ({"avg_length": 100}, "--avg-length (T) must be between 1 and 40, got 100"),
    ({"avg_pattern": 0.5}, "--avg-pattern (I) must be between 1 and 20, got 0.5"),
    ({"patterns": 0}, "--patterns (L) must be between 1 and 100,000, got 0"),
    ({"items": 1}, "--items (N) must be between 2 and 10,000,000, got 1"),
    ({"avg_length": 40, "avg_pattern": 1},
     "--avg-length 40 with --avg-pattern 1 needs more than 63 pattern draws per transaction"),
])
def test_bad_parameters_are_refused(changes: dict[str, float], message: str) -> None:
    params = QuestParams(**{"records": 10, **changes})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        quest.check_quest(params)


@pytest.mark.on_spark(connect=True)
def test_cli_prints_the_shape_and_refuses_bad_parameters(db_url: DbUrl) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["generate", "quest", "--records", "300", "--name", "q",
                                  "--avg-length", "8", "--seed", "2", *db_url.args])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "generated q: 300 transactions (T8I4D300, 2,000 patterns over 1,000 items)\n"
        "shape: 300 records, ")
    assert "items: " in result.output and "set size mean" in result.output
    result = runner.invoke(main, ["generate", "quest", "--records", "300", "--name", "r",
                                  "--items", "1", *db_url.args])
    assert result.exit_code == 2
    assert "--items (N) must be between 2 and 10,000,000, got 1" in result.output
    result = runner.invoke(main, ["datasets", *db_url.args])
    assert " r " not in result.output and "q" in result.output
