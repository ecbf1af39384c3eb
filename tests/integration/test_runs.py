"""The run contract every model relies on: recording, publishing, export, failure, cleanup.

The model here is a test double that drops one item type (global suppression of a fixed item);
it exercises the plumbing, not a privacy guarantee.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.base import Model, Verification
from setanon_sql.runs import RunContext, cleanup_runs, list_runs
from tests.conftest import write


def drop_item(backend: Backend, dataset: api.Dataset, params: dict, context: RunContext) -> None:
    attribute = dataset.set_attributes[0]
    items = backend.table(dataset.items_table(attribute))
    dictionary = backend.table(dataset.dict_table(attribute))
    keep = (exp.select("i.record_id", "i.item_id").from_(items.as_("i"))
            .join(dictionary.as_("d"), on="d.item_id = i.item_id")
            .where(exp.column("label", table="d").neq(exp.Literal.string(params["label"]))))
    backend.run(exp.Create(this=context.table("items_1"), kind="TABLE", expression=keep))
    if params.get("delete_record"):
        records = (exp.select("record_id", "position", "c1", "c2")
                   .from_(backend.table(dataset.records_table))
                   .where(exp.column("record_id").neq(exp.Literal.number(params["delete_record"]))))
        backend.run(exp.Create(this=context.table("records"), kind="TABLE", expression=records))
    if params.get("fail"):
        raise api.UsageError("asked to fail")
    context.figures["dropped"] = params["label"]


def never_checked(backend: Backend, dataset: api.Dataset, run: api.Run) -> Verification:
    return Verification(True, "nothing (test double)")


DROP = Model("drop", "drop one item (test double)", (), drop_item, never_checked)


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n2\n3 1\n"), "b")


def test_run_is_recorded_and_exported(db: Backend, baskets: api.Dataset, tmp_path: Path) -> None:
    run_id = api.anonymize(db, baskets, DROP, {"label": "2"}, seed=7)
    run = api.get_run(db, baskets, "latest")
    assert (run.run_id, run.status, run.seed, run.figures) == (run_id, "done", 7, {"dropped": "2"})
    out = api.export_dataset(db, baskets, tmp_path / "o.dat", run=run)
    assert out.read_text() == "1\n\n1 3\n"
    summary = api.dataset_summary(db, baskets, run)
    assert summary["set_columns"][0]["item_rows"] == 3


def test_deleted_records_are_empty_fimi_lines_and_absent_rows(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "a.tsv", "id\tsex\tcodes\nx\tF\t1 2\ny\tM\t2\nz\tF\t3\n")
    dataset = api.load_table(db, source, "a", "id", ["codes"])
    api.anonymize(db, dataset, DROP, {"label": "9", "delete_record": 2}, seed=1)
    run = api.get_run(db, dataset, "latest")
    fimi = api.export_dataset(db, dataset, tmp_path / "o.dat", run=run)
    assert fimi.read_text() == "1 2\n\n3\n"
    tsv = api.export_dataset(db, dataset, tmp_path / "o.tsv", fmt="tsv", run=run)
    assert tsv.read_text() == "id\tsex\tcodes\nx\tF\t1 2\nz\tF\t3\n"


def test_failed_run_is_marked_and_leaves_no_tables(db: Backend, baskets: api.Dataset) -> None:
    with pytest.raises(api.UsageError, match="asked to fail"):
        api.anonymize(db, baskets, DROP, {"label": "2", "fail": True}, seed=1)
    runs = list_runs(db, "b")
    assert [r["status"] for r in runs] == ["failed"]
    assert db.table_names(f"r{runs[0]['run_id']}_") == []
    latest = api.get_run(db, baskets, "latest")  # the failed run, not an older finished one
    assert (latest.run_id, latest.status) == (runs[0]["run_id"], "failed")


def test_cleanup_marks_dead_runs_abandoned(db: Backend, baskets: api.Dataset) -> None:
    from setanon_sql.runs import recorded_run

    with pytest.raises(KeyboardInterrupt), recorded_run(db, baskets, "drop", {}, 1) as context:
        # A run killed before its end: simulate by never finishing the recorded status.
        db.run("run_finish", {"run_id": context.run_id, "status": "running", "seconds": None,
                              "figures": None, "message": None}, db.catalog_tables("runs"))
        raise KeyboardInterrupt
    db.run("run_mark_failed", {"run_id": 1, "message": "x"}, db.catalog_tables("runs"))
    db.execute(f"UPDATE {db.render(db.table('runs'))} SET status = 'running'")
    db.run(exp.Create(this=db.table("r1_items_1"), kind="TABLE",
                      expression=exp.select(exp.Literal.number(1).as_("x"))))
    assert cleanup_runs(db) == [1]
    assert db.table_names("r1_") == []
    assert [r["status"] for r in list_runs(db)] == ["abandoned"]
