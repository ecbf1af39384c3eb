"""Every model's verifier rejects a tampered output, on both backends.

Each model runs on the shipped demo data and passes its verifier; then the run's published
tables are changed after the run (the output the gate would hand on) in a way that breaks the
guarantee, and the verifier, which reads only the original data and the published output, must
fail it. The gate then refuses the run.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import NotPublishableError
from setanon_sql.models import model_params, require_model
from setanon_sql.names import qi_column, run_table

Tamper = Callable[[Backend, api.Dataset, api.Run], None]


def _count(db: Backend, table: exp.Table) -> int:
    return int(db.scalar(exp.select(exp.func("count", exp.Star())).from_(table)))


def publish_the_original(db: Backend, dataset: api.Dataset, run: api.Run) -> None:
    """Replace the published items of the run's column by the original ones."""
    attribute = dataset.set_attributes[0] if len(dataset.set_attributes) == 1 else next(
        a for a in dataset.set_attributes if db.table_names(run_table(run.run_id,
                                                                      f"items_{a.attr_no}")))
    published = db.table(run_table(run.run_id, f"items_{attribute.attr_no}"))
    original = db.table(dataset.items_table(attribute))
    db.run(exp.delete(published))
    db.run(exp.insert(exp.select("record_id", "item_id").from_(original), published))


def drop_one_published_row(db: Backend, dataset: api.Dataset, run: api.Run) -> None:
    """Delete one (record, item) row of the published output."""
    attribute = dataset.set_attributes[0]
    published = db.table(run_table(run.run_id, f"items_{attribute.attr_no}"))
    first = db.query(exp.select("record_id", "item_id").from_(published)
                     .order_by("record_id", "item_id").limit(1))[0]
    db.run(exp.delete(published).where(exp.and_(
        exp.column("record_id").eq(exp.Literal.number(int(first[0]))),
        exp.column("item_id").eq(exp.Literal.number(int(first[1]))))))


def ungeneralize_one_record(db: Backend, dataset: api.Dataset, run: api.Run) -> None:
    """Give one published record its original birth year back: its class falls below k."""
    attribute = next(a for a in dataset.single_attributes if a.name == "birth_year")
    column = qi_column(attribute.attr_no)
    records = db.table(run_table(run.run_id, "records"))
    first = int(db.scalar(exp.select(exp.func("min", exp.column("record_id"))).from_(records)))
    original = db.scalar(exp.select(exp.column(column)).from_(db.table(dataset.records_table))
                         .where(exp.column("record_id").eq(exp.Literal.number(first))))
    db.run(exp.update(records, {column: exp.Literal.string(str(original))},
                      where=exp.column("record_id").eq(exp.Literal.number(first))))


def garble_one_label(db: Backend, dataset: api.Dataset, run: api.Run) -> None:
    """A published birth year that is no value and no interval: counted uncovered, no error."""
    attribute = next(a for a in dataset.single_attributes if a.name == "birth_year")
    records = db.table(run_table(run.run_id, "records"))
    db.run(exp.update(records, {qi_column(attribute.attr_no): exp.Literal.string("[19x-2000]")}))


CASES: list[tuple[str, str, list[str], Tamper]] = [
    ("kanon", "admissions", ["--k", "5"], ungeneralize_one_record),
    ("kanon", "admissions", ["--k", "5"], garble_one_label),
    ("km", "admissions", ["--k", "4", "--m", "2", "--column", "diagnoses"],
     drop_one_published_row),
    ("rho", "baskets", ["--rho", "0.7", "--sensitive-fraction", "0.2", "--m", "2"],
     publish_the_original),
    ("prho", "baskets", ["--rho", "0.5", "--setting", "personalized",
                         "--sensitive-fraction", "0.4", "--m", "2"], publish_the_original),
    ("swap", "baskets", ["--random-categories", "4", "--no-metrics"], publish_the_original),
    ("swap", "baskets", ["--random-categories", "4", "--no-metrics"], drop_one_published_row),
]


def _load(db: Backend, name: str) -> api.Dataset:
    if name == "baskets":
        return api.load_transactions(db, api.demo_file("baskets"), "d")
    dataset = api.load_table(db, api.demo_file("admissions"), "d", id_column="patient_id",
                             set_columns=["diagnoses", "drugs"])
    api.load_hierarchy(db, api.demo_file("diagnosis_hierarchy"), dataset, "diagnoses")
    return api.get_dataset(db, "d")


@pytest.mark.parametrize(("model", "data", "args", "tamper"), CASES,
                         ids=[f"{c[0]}-{c[3].__name__}" for c in CASES])
def test_tampered_output_fails_its_verifier(db: Backend, model: str, data: str,
                                            args: list[str], tamper: Tamper) -> None:
    dataset = _load(db, data)
    chosen = require_model(model)
    run_id = api.anonymize(db, dataset, chosen, model_params(chosen, args), seed=3)
    run = api.get_run(db, dataset, run_id)
    assert run.verification == "passed"
    tamper(db, dataset, run)
    result = api.verify(db, dataset, run)
    assert result.outcome == "failed", result.details
    with pytest.raises(NotPublishableError, match="failed verification"):
        api.dataset_summary(db, dataset, api.get_run(db, dataset, run_id))
