"""--model km, exact k^m-anonymity: checked by the brute-force oracle on both backends."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from tests.conftest import write
from tests.oracle import km_oracle
from tests.support.hierarchies import random_hierarchy


def random_case(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    universe = [str(i) for i in range(1, rng.randint(11, 17))]
    used = universe[: max(3, len(universe) - 2)]  # the hierarchy also has items not in the data
    weights = [rng.random() + 0.1 for _ in used]
    lines = []
    for _ in range(rng.randint(20, 35)):
        size = rng.randint(1, 5)
        lines.append(" ".join(sorted(set(rng.choices(used, weights, k=size)), key=int)))
    data = write(tmp_path / f"d{seed}.dat", "\n".join(lines) + "\n")
    hierarchy = write(tmp_path / f"h{seed}.txt", random_hierarchy(universe, rng))
    return data, hierarchy


def run_km(db: Backend, data: Path, hierarchy: Path, tmp_path: Path, **params) -> tuple:
    dataset = api.load_transactions(db, data, f"d{data.stem}")
    api.load_hierarchy(db, hierarchy, dataset)
    run_id = api.anonymize(db, dataset, require_model("km"), params, seed=1)
    run = api.get_run(db, dataset, run_id)
    out, mapping = tmp_path / f"o{run_id}.dat", tmp_path / f"m{run_id}.txt"
    api.export_dataset(db, dataset, out, run=run, mapping=mapping)
    return dataset, run, out, mapping


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.on_spark(seeds=[1, 2], connect=[1])
def test_exact_km_passes_the_oracle(db: Backend, tmp_path: Path, seed: int) -> None:
    data, hierarchy = random_case(tmp_path, seed)
    k, m = [4, 3, 2][: 1 + seed % 3], 1 + seed % 3
    dataset, run, out, mapping_file = run_km(db, data, hierarchy, tmp_path,
                                             k=",".join(map(str, k)), m=m)
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    mapping = km_oracle.read_mapping(mapping_file)
    parent = km_oracle.read_hierarchy(hierarchy)
    assert km_oracle.km_violations(published, k, m) == []
    assert km_oracle.cut_problems(mapping, parent) == []
    assert km_oracle.generalization_problems(original, published, mapping) == []
    assert set(mapping) == {i for record in original for i in record}
    assert run.figures["ncp"] == pytest.approx(km_oracle.ncp(original, mapping, parent))
    assert run.figures["published_labels"] == len(set(mapping.values()))
    assert api.verify(db, dataset, run).ok


@pytest.mark.parametrize("seed", [1, 3])
def test_exact_km_with_every_enumeration_joined_left_deep(db: Backend, tmp_path: Path,
                                                          seed: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Deep enumerations join in the written order (``itemsets.enumeration_joins``, from the
    engine's ``left_deep_from`` nodes); the random cases are smaller, so every enumeration is
    made to, and the run still passes the oracle and verify."""
    monkeypatch.setattr(db, "left_deep_from", 1)
    test_exact_km_passes_the_oracle(db, tmp_path, seed)


def test_already_anonymous_data_is_not_generalized(db: Backend, tmp_path: Path) -> None:
    data = write(tmp_path / "a.dat", "1 2\n1 2\n3\n3\n1 2 3\n1 2 3\n")
    hierarchy = write(tmp_path / "a.txt", "1;x;*\n2;x;*\n3;*\n")
    _, run, out, mapping = run_km(db, data, hierarchy, tmp_path, k="2", m=3)
    assert km_oracle.read_mapping(mapping) == {"1": "1", "2": "2", "3": "3"}
    assert out.read_text() == data.read_text()
    assert run.figures["ncp"] == 0


def test_cheapest_merge_is_chosen(db: Backend, tmp_path: Path) -> None:
    # {3,4} and {1,4} occur once; merging 3,4 into b costs less NCP than 1,2 into a.
    data = write(tmp_path / "c.dat", "1 2\n1 2\n1 3\n2 3 4\n4 1\n1 2 3\n2 4\n")
    hierarchy = write(tmp_path / "c.txt", "1;a;*\n2;a;*\n3;b;*\n4;b;*\n")
    *_, out, mapping = run_km(db, data, hierarchy, tmp_path, k="2", m=2)
    assert km_oracle.read_mapping(mapping) == {"1": "1", "2": "2", "3": "b", "4": "b"}
    assert out.read_text() == "1 2\n1 2\n1 b\n2 b\n1 b\n1 2 b\n2 b\n"


def test_same_input_same_output(db: Backend, tmp_path: Path) -> None:
    data, hierarchy = random_case(tmp_path, 7)
    dataset, _, out1, map1 = run_km(db, data, hierarchy, tmp_path, k="3", m=2)
    second = api.anonymize(db, dataset, require_model("km"), {"k": "3", "m": 2}, seed=9)
    out2, map2 = tmp_path / "again.dat", tmp_path / "again.txt"
    api.export_dataset(db, dataset, out2, run=api.get_run(db, dataset, second), mapping=map2)
    assert (out1.read_text(), map1.read_text()) == (out2.read_text(), map2.read_text())
