"""Reports of real runs of every model that has landed, on both backends.

Each model runs on small random data with its own options parsed as the CLI parses them; the
report's verification must say the guarantee is met, and its change totals must match the
plain-Python oracle of test_report_data over the exported files.
"""

from __future__ import annotations

import random
from pathlib import Path

import click
import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import MODELS, require_model
from setanon_sql.report.build import build_report
from tests.conftest import write
from tests.integration.test_report_data import random_table
from tests.oracle.report_oracle import oracle_changes, read_tsv

TRANSACTION_MODELS = {
    "km": ["--k", "3", "--m", "2"],
    "rho": ["--rho", "0.5", "--sensitive-fraction", "0.3"],
    "swap": ["--random-categories", "3"],
}


def model_params(name: str, args: list[str]) -> dict:
    model = require_model(name)
    command = click.Command(name, params=list(model.options))
    with command.make_context(name, list(args)) as context:
        return dict(context.params)


def transactions(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    """60 baskets over items 1..12, and a hierarchy item -> g0..g2 -> *."""
    rng = random.Random(seed)
    lines = [" ".join(map(str, sorted(rng.sample(range(1, 13), rng.randint(1, 4)))))
             for _ in range(60)]
    hierarchy = "\n".join(f"{i};g{(i - 1) // 4};*" for i in range(1, 13))
    return (write(tmp_path / "t.dat", "\n".join(lines) + "\n"),
            write(tmp_path / "h.txt", hierarchy + "\n"))


def read_fimi(path: Path) -> dict[str, set[str]]:
    return {str(n): set(line.split()) for n, line in
            enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)}


def check_totals(report: dict, before: dict[str, set[str]], after: dict[str, set[str]]) -> None:
    counts = oracle_changes(before, after).values()
    totals = report["attributes"][0]["changes"]["totals"]
    for key in ("before", "kept", "removed", "added"):
        assert totals[key] == sum(c[key] for c in counts), key


@pytest.mark.parametrize("name", sorted(TRANSACTION_MODELS))
def test_report_of_a_transaction_model(db: Backend, tmp_path: Path, name: str) -> None:
    if not MODELS[name].implemented:
        pytest.skip(f"model {name} has not landed")
    data, hierarchy = transactions(tmp_path, 11)
    dataset = api.load_transactions(db, data, "t")
    api.load_hierarchy(db, hierarchy, dataset)
    run_id = api.anonymize(db, dataset, require_model(name),
                           model_params(name, TRANSACTION_MODELS[name]), seed=1)
    run = api.get_run(db, dataset, run_id)
    report = build_report(db, dataset, run)
    assert report["verification"]["status"] == "met", report["verification"]
    assert report["run"]["figures"] == run.figures
    check_totals(report, read_fimi(data),
                 read_fimi(api.export_dataset(db, dataset, tmp_path / "o.dat", run=run)))


def test_report_of_kanon(db: Backend, tmp_path: Path) -> None:
    if not MODELS["kanon"].implemented:
        pytest.skip("model kanon has not landed")
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 3), "t", "id", ["codes"])
    run = api.get_run(db, dataset, api.anonymize(db, dataset, require_model("kanon"),
                                                 model_params("kanon", ["--k", "3"]), seed=1))
    report = build_report(db, dataset, run)
    assert report["verification"]["status"] == "met", report["verification"]
    before = read_tsv(api.export_dataset(db, dataset, tmp_path / "b.tsv", fmt="tsv"))
    after = read_tsv(api.export_dataset(db, dataset, tmp_path / "a.tsv", fmt="tsv", run=run))
    check_totals(report, before, after)
    # k-anonymity over the QI and the set: no published record in a class smaller than k
    assert min(size for size, _ in report["record_classes"]["after"]) >= 3
