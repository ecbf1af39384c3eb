"""kanon on both backends: random complex data checked by the brute-force oracle, MIMIC-III,
verification, and the errors a user can cause."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models.kanon import MODEL
from setanon_sql.models.kanon.work import Work
from tests.conftest import DbUrl, write
from tests.oracle import kanon_oracle

CITIES = {"Kobe": "West", "Osaka": "West", "Kyoto": "West", "Tokyo": "East", "Chiba": "East",
          "Sendai": "North"}
HIERARCHY = "".join(f"{city};{region};*\n" for city, region in CITIES.items())


def _skewed(rng: random.Random, universe: int, most: int) -> list[int]:
    return sorted({int(universe * rng.random() ** 2) + 1 for _ in range(rng.randint(0, most))})


def claims_file(path: Path, seed: int, n: int) -> Path:
    """Random complex data: numeric, flat and hierarchical categories, NULLs, two sets."""
    rng = random.Random(seed)
    lines = ["id\tbirth\tsex\tcity\tjob\tdx\trx"]
    for i in range(n):
        job = rng.choice(["", "clerk", "nurse", "cook"])
        dx = " ".join(f"D{x}" for x in _skewed(rng, 12, 5))
        rx = " ".join(str(x) for x in _skewed(rng, 8, 3))
        lines.append(f"{1000 + i}\t{rng.randint(1940, 2000)}\t{rng.choice('FM')}\t"
                     f"{rng.choice(list(CITIES))}\t{job}\t{dx}\t{rx}")
    return write(path, "\n".join(lines) + "\n")


def _load(db: Backend, tmp_path: Path, seed: int, n: int) -> tuple[api.Dataset, Path, Path]:
    source = claims_file(tmp_path / "claims.tsv", seed, n)
    dataset = api.load_table(db, source, "claims", "id", ["dx", "rx"])
    hierarchy = write(tmp_path / "city.txt", HIERARCHY)
    api.load_hierarchy(db, hierarchy, dataset, "city")
    return api.get_dataset(db, "claims"), source, hierarchy


KINDS = {"birth": "numeric", "sex": "category", "city": "category", "job": "category",
         "dx": "set", "rx": "set"}


@pytest.mark.on_spark(seeds=[4], connect=True)
@pytest.mark.parametrize(("seed", "n", "params"), [
    (1, 60, {"k": 2}),
    (2, 70, {"k": 3, "beta": 0.1, "suppress_budget": 0.05}),
    (3, 50, {"k": 4, "suppress_budget": 0.1, "qi": ["birth", "dx"]}),
    (4, 80, {"k": 2, "beta": 0.2, "suppress_budget": 0.2, "qi": ["dx", "rx", "city"]}),
])
def test_random_claims_pass_the_oracle(db: Backend, tmp_path: Path, seed: int, n: int,
                                       params: dict) -> None:
    dataset, source, hierarchy = _load(db, tmp_path, seed, n)
    run_id = api.anonymize(db, dataset, MODEL, params, seed=seed)
    run = api.get_run(db, dataset, run_id)
    out = api.export_dataset(db, dataset, tmp_path / "out.tsv", fmt="tsv", run=run)
    qis = {name: kind for name, kind in KINDS.items()
           if not params.get("qi") or name in params["qi"]}
    problems = kanon_oracle.check(
        source, out, "id", qis, params["k"], params.get("suppress_budget", 0.0),
        {"city": kanon_oracle.read_hierarchy(hierarchy)})
    assert problems == []
    check = api.verify(db, dataset, run)
    assert check.ok, check.details
    figures = run.figures
    assert figures["records_deleted"] == check.details["records_deleted"] <= figures[
        "deletion_budget"]
    assert set(figures["ncp"]) == set(qis)
    assert all(0.0 <= v <= 1.0 for v in figures["ncp"].values())
    assert figures["classes"]["min_size"] >= params["k"]


@pytest.mark.parametrize(("seed", "rows_per_grouping"), [(5, 120), (6, 7), (7, 1)])
def test_steps_in_slices_of_classes_publish_the_same(
        db: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
        rows_per_grouping: int) -> None:
    # Where one grouping may read fewer rows than `held` has (Backend.rows_per_grouping),
    # `held`, `rank` and `picks` are built per slice of classes: the published data, the
    # deletions and the class numbers must be those of the single statement, and the oracle
    # must pass. Spark spills any grouping (rows_per_grouping is None), so it never slices: its
    # kanon tests run the one-slice form of the same statements.
    dataset, source, hierarchy = _load(db, tmp_path, seed, 90)
    params = {"k": 2, "beta": 0.1, "suppress_budget": 0.1}

    def publish(name: str) -> tuple[str, api.Run]:
        run = api.get_run(db, dataset, api.anonymize(db, dataset, MODEL, params, seed=seed))
        out = api.export_dataset(db, dataset, tmp_path / name, fmt="tsv", run=run)
        return out.read_text(), run

    whole, whole_run = publish("whole.tsv")
    slices: list[int] = []
    original = Work.slices_for

    def counted(self: Work, rows: int) -> int:
        slices.append(original(self, rows))
        return slices[-1]

    monkeypatch.setattr(type(db), "rows_per_grouping", lambda self: rows_per_grouping)
    monkeypatch.setattr(Work, "slices_for", counted)
    sliced, sliced_run = publish("sliced.tsv")
    assert max(slices) > 1  # the steps did run in slices
    assert sliced == whole
    for figure in ("records_deleted", "classes", "ncp"):
        assert sliced_run.figures[figure] == whole_run.figures[figure]
    assert kanon_oracle.check(source, tmp_path / "sliced.tsv", "id", KINDS, 2, 0.1,
                              {"city": kanon_oracle.read_hierarchy(hierarchy)}) == []


@pytest.mark.on_spark
def test_small_pool_is_deleted_within_budget_deterministically(db: Backend,
                                                                 tmp_path: Path) -> None:
    # Picks: a (3 records), b (3 records); the record with only c is a pool of 1 < k.
    rows = ["1\ta x", "2\ta", "3\ta y", "4\tb", "5\tb x", "6\tb y", "7\tc"]
    source = write(tmp_path / "s.tsv", "id\tdx\n" + "\n".join(rows) + "\n")
    dataset = api.load_table(db, source, "s", "id", ["dx"])
    runs = [api.get_run(db, dataset, api.anonymize(
        db, dataset, MODEL, {"k": 3, "suppress_budget": epsilon}, seed=1))
        for epsilon in (0.15, 0.15, 0.1)]
    outputs = [api.export_dataset(db, dataset, tmp_path / f"o{r.run_id}.tsv", fmt="tsv", run=r)
               .read_text() for r in runs]
    assert outputs[0] == outputs[1] == "id\tdx\n1\ta\n2\ta\n3\ta\n4\tb\n5\tb\n6\tb\n"
    assert runs[0].figures["records_deleted"] == 1
    # Without budget for the pool, the class is not split: nothing is disclosed.
    assert outputs[2] == "id\tdx\n" + "".join(f"{i}\t\n" for i in range(1, 8))
    assert runs[2].figures["records_deleted"] == 0


def test_tampered_output_fails_verification(db: Backend, tmp_path: Path) -> None:
    dataset, _, _ = _load(db, tmp_path, 6, 40)
    run = api.get_run(db, dataset, api.anonymize(db, dataset, MODEL, {"k": 3}, seed=1))
    records = db.render(db.table(f"r{run.run_id}_records"))
    column = f"c{dataset.attribute('birth').attr_no}"
    db.execute(f"UPDATE {records} SET {column} = '1800' WHERE record_id = 1")
    check = api.verify(db, dataset, run)
    assert not check.ok
    assert check.details["records_in_groups_below_k"] >= 1
    assert check.details["values_not_covering_original"]["birth"] == 1


@pytest.mark.parametrize("k", [2, 5])
def test_mimic_demo(db: Backend, tmp_path: Path, shared_data: Path, k: int) -> None:
    source = shared_data / "mimic3-demo" / "admissions_dx.tsv"
    dataset = api.load_table(db, source, "mimic", "hadm_id", ["icd9_codes"],
                             ignore=["subject_id"])
    run = api.get_run(db, dataset, api.anonymize(db, dataset, MODEL, {"k": k}, seed=1))
    out = api.export_dataset(db, dataset, tmp_path / "mimic.tsv", fmt="tsv", run=run)
    qis = {name: "category" for name in ("gender", "admission_type", "insurance", "religion",
                                         "marital_status", "ethnicity")}
    qis["icd9_codes"] = "set"
    assert kanon_oracle.check(source, out, "hadm_id", qis, k, 0.0) == []
    assert api.verify(db, dataset, run).ok
    assert run.figures["disclosed_items"]["icd9_codes"]["disclosed"] > 0


@pytest.mark.parametrize(("params", "message"), [
    ({"k": 1}, r"--k must be >= 2"),
    ({"k": 500}, r"--k 500 is larger than the 30 records"),
    ({"k": 2, "beta": 1.0}, r"--beta must be in \[0, 1\)"),
    ({"k": 2, "suppress_budget": -0.1}, r"--suppress-budget must be in \[0, 1\)"),
    ({"k": 2, "qi": ["nope"]}, r"--qi nope: dataset 'claims' has no such column"),
    ({"k": 2, "numeric": ["city"]}, r"--numeric city: column 'city' .* is not numeric"),
])
def test_bad_parameters(db: Backend, tmp_path: Path, params: dict, message: str) -> None:
    dataset, _, _ = _load(db, tmp_path, 7, 30)
    with pytest.raises(api.UsageError if "numeric" not in params else api.InputError,
                       match=message):
        api.anonymize(db, dataset, MODEL, params, seed=1)
    assert db.table_names("r1_") == []


def test_numeric_column_with_empty_values(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "a.tsv", "id\tage\tdx\n1\t30\ta\n2\t\tb\n3\t41\ta b\n4\t50\tb\n")
    dataset = api.load_table(db, source, "a", "id", ["dx"])
    with pytest.raises(api.InputError, match=r"numeric column 'age' .* has empty values"):
        api.anonymize(db, dataset, MODEL, {"k": 2}, seed=1)
    run = api.get_run(db, dataset, api.anonymize(
        db, dataset, MODEL, {"k": 2, "categorical": ["age"]}, seed=1))
    out = api.export_dataset(db, dataset, tmp_path / "o.tsv", fmt="tsv", run=run)
    assert kanon_oracle.check(source, out, "id", {"age": "category", "dx": "set"}, 2, 0) == []


@pytest.mark.duckdb
@pytest.mark.parametrize("backend_name", ["duckdb"], indirect=False)
def test_cli(db_url: DbUrl, tmp_path: Path) -> None:
    source = claims_file(tmp_path / "c.tsv", 8, 40)
    runner = CliRunner()

    def invoke(*args: str) -> str:
        result = runner.invoke(main, [*args, *db_url.args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    invoke("load", "table", str(source), "--name", "c", "--id", "id", "--set-column", "dx",
           "--set-column", "rx")
    invoke("anonymize", "c", "--model", "kanon", "--k", "3", "--qi", "birth,sex,dx",
           "--suppress-budget", "0.05", "--seed", "1")
    assert "guarantee met" in invoke("verify", "c", "--run", "latest")


@pytest.mark.postgres
@pytest.mark.parametrize("backend_name", ["postgres"], indirect=False)
def test_merge_joins_are_off_for_the_run_only(db: Backend) -> None:
    # A kanon run plans its steps without merge joins (Backend.whole_table_joins); whatever the
    # connection runs afterwards (export, in-place work) gets the planner back, also after a
    # failed run.
    def setting() -> str:
        return str(db.execute("SELECT current_setting('enable_mergejoin')", fetch=True)[0][0])

    assert setting() == "on"
    with pytest.raises(RuntimeError, match="a step failed"), db.whole_table_joins():
        assert setting() == "off"
        raise RuntimeError("a step failed")
    assert setting() == "on"


@pytest.mark.postgres
@pytest.mark.parametrize("backend_name", ["postgres"], indirect=False)
def test_nested_loops_are_off_for_the_block_only(db: Backend) -> None:
    # rho's rule upkeep after a large delta hashes every join (Backend.hash_joins_only); the
    # setting before comes back, also after an error, and also inside whole_table_joins.
    def setting() -> str:
        return str(db.execute("SELECT current_setting('enable_nestloop')", fetch=True)[0][0])

    with db.whole_table_joins():
        assert setting() == "on"
        with pytest.raises(RuntimeError, match="a step failed"), db.hash_joins_only():
            assert setting() == "off"
            raise RuntimeError("a step failed")
        assert setting() == "on"
    assert setting() == "on"
