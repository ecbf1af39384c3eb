"""The gate: nothing of a run leaves unless the run finished and its verification passed.

Export (API and CLI), in place, report and metrics are asked for the output of runs in every
state that must be refused: still running (or killed), failed, never verified, failed
verification, inconclusive, and finished but with its tables gone. Each refusal names the run
and its state, exits 1 and writes no file. The verified run and the raw data still export, and
the CLI says which of the two it wrote. In place, a change that would not leave the verified
output in the user's tables is rolled back inside its transaction.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.errors import GuaranteeNotMetError, NotPublishableError
from setanon_sql.gate import record_verification
from setanon_sql.models.base import Model, Verification
from setanon_sql.names import run_table
from setanon_sql.runs import RunContext, recorded_run
from tests.conftest import DbUrl, write

BASKETS = "1 2\n2\n3 1\n2 3\n"


def drop_two(backend: Backend, dataset: api.Dataset, params: dict, context: RunContext) -> None:
    """Publishes the items without label '2' (a stand-in for a model's output)."""
    attribute = dataset.set_attributes[0]
    keep = (exp.select("i.record_id", "i.item_id")
            .from_(backend.table(dataset.items_table(attribute)).as_("i"))
            .join(backend.table(dataset.dict_table(attribute)).as_("d"),
                  on="d.item_id = i.item_id")
            .where(exp.column("label", table="d").neq(exp.Literal.string("2"))))
    backend.run(exp.Create(this=context.table("items_1"), kind="TABLE", expression=keep))


def no_two_left(backend: Backend, dataset: api.Dataset, run: api.Run) -> Verification:
    """An independent check of the stand-in guarantee: no published item is labelled '2'."""
    from setanon_sql.io.published import published

    view = published(backend, dataset, run)
    query = (exp.select(exp.func("count", exp.Star())).from_(view.items[1].as_("i"))
             .join(view.dicts[1].as_("d"), on="d.item_id = i.item_id")
             .where(exp.column("label", table="d").eq(exp.Literal.string("2"))))
    left = int(backend.scalar(query))
    return Verification(left == 0, "every published item, exactly", {"items labelled 2": left})


DROP_TWO = Model("drop_two", "suppress item 2 (test double)", (), drop_two, no_two_left)


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", BASKETS), "b")


def refused(db: Backend, dataset: api.Dataset, run_id: int, tmp_path: Path, match: str) -> None:
    """Every reader of a run's output refuses ``run_id`` with ``match``, and writes no file."""
    run = api.get_run(db, dataset, run_id)
    target = tmp_path / "out.dat"
    with pytest.raises(NotPublishableError, match=match):
        api.export_dataset(db, dataset, target, run=run)
    with pytest.raises(NotPublishableError, match=match):
        api.dataset_summary(db, dataset, run)
    from setanon_sql.metrics import util_info
    from setanon_sql.report.build import build_report

    with pytest.raises(NotPublishableError, match=match):
        util_info(db, dataset, run)
    with pytest.raises(NotPublishableError, match=match):
        build_report(db, dataset, run, None)
    assert not target.exists() and list(tmp_path.glob(".out.dat.partial*")) == []


def test_a_verified_run_exports_and_says_so(db: Backend, baskets: api.Dataset,
                                            tmp_path: Path) -> None:
    run_id = api.anonymize(db, baskets, DROP_TWO, {}, seed=1)
    run = api.get_run(db, baskets, run_id)
    assert (run.status, run.verification, run.phase) == ("done", "passed", "verified")
    assert run.verification_detail == {"covered": "every published item, exactly",
                                       "details": {"items labelled 2": 0}}
    out = api.export_dataset(db, baskets, tmp_path / "o.dat", run=run)
    assert out.read_text() == "1\n\n1 3\n3\n"


def test_a_run_still_running_or_killed_is_refused(db: Backend, baskets: api.Dataset,
                                                  tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), recorded_run(db, baskets, "drop_two", {}, 1) as ctx:
        drop_two(db, baskets, {}, ctx)
        # What a SIGKILL leaves: the status never leaves 'running', the tables stay.
        db.run("run_finish", {"run_id": ctx.run_id, "status": "running", "seconds": None,
                              "figures": None, "message": None}, db.catalog_tables("runs"))
        db.run(exp.Create(this=ctx.table("keep_items_1"), kind="TABLE",
                          expression=exp.select("*").from_(ctx.table("items_1"))))
        raise KeyboardInterrupt
    db.execute(f"UPDATE {db.render(db.table('runs'))} SET status = 'running'")
    refused(db, baskets, 1, tmp_path, "run 1 of 'b' is still running")


def test_a_failed_run_is_refused_and_latest_is_that_run(db: Backend, baskets: api.Dataset,
                                                       tmp_path: Path) -> None:
    api.anonymize(db, baskets, DROP_TWO, {}, seed=1)

    def fails(backend: Backend, dataset: api.Dataset, params: dict, ctx: RunContext) -> None:
        raise api.UsageError("asked to fail")

    with pytest.raises(api.UsageError):
        api.anonymize(db, baskets, Model("broken", "fails", (), fails, no_two_left), {}, seed=1)
    latest = api.get_run(db, baskets, "latest")
    assert (latest.run_id, latest.status) == (2, "failed")  # never the older run 1
    refused(db, baskets, 2, tmp_path, "run 2 of 'b' is failed: UsageError: asked to fail")


def test_an_unverified_run_is_refused_until_verify_passes(db: Backend, baskets: api.Dataset,
                                                         tmp_path: Path) -> None:
    run_id = api.anonymize(db, baskets, DROP_TWO, {}, seed=1, check=False)
    refused(db, baskets, run_id, tmp_path, "finished but was never verified")
    result = api.verify(db, baskets, api.get_run(db, baskets, run_id), model=DROP_TWO)
    assert result.outcome == "passed"
    api.export_dataset(db, baskets, tmp_path / "o.dat", run=api.get_run(db, baskets, run_id))


def test_failed_and_inconclusive_verifications_are_refused(db: Backend, baskets: api.Dataset,
                                                          tmp_path: Path) -> None:
    run_id = api.anonymize(db, baskets, DROP_TWO, {}, seed=1)
    # Tamper with the published output: the fresh verification fails and is recorded.
    items = db.table(run_table(run_id, "items_1"))
    two = db.scalar(exp.select("item_id").from_(db.table(baskets.dict_table(
        baskets.set_attributes[0]))).where(exp.column("label").eq(exp.Literal.string("2"))))
    db.run(exp.insert(exp.select(exp.Literal.number(1), exp.Literal.number(int(two))), items))
    with pytest.raises(GuaranteeNotMetError, match=f"run {run_id} of 'b' .* failed verif"):
        api.verify(db, baskets, api.get_run(db, baskets, run_id), enforce=True, model=DROP_TWO)
    refused(db, baskets, run_id, tmp_path, f"run {run_id} of 'b' failed verification")
    record_verification(db, run_id, Verification(False, "a sample", {}, inconclusive=True))
    refused(db, baskets, run_id, tmp_path, "was inconclusive")


def test_a_done_run_without_tables_is_not_shown_as_the_loaded_data(
        db: Backend, baskets: api.Dataset, tmp_path: Path) -> None:
    run_id = api.anonymize(db, baskets, DROP_TWO, {}, seed=1)
    db.drop_table(db.table(run_table(run_id, "items_1")))
    refused(db, baskets, run_id, tmp_path, "has no published tables")


def setanon(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_cli_export_refuses_a_failed_run_and_names_what_it_wrote(db_url: DbUrl,
                                                                 tmp_path: Path) -> None:
    data = write(tmp_path / "b.dat", BASKETS)
    url = list(db_url.args)
    assert setanon("load", "transactions", str(data), "--name", "b", *url)[0] == 0
    sensitive = str(write(tmp_path / "s.txt", "2\n"))
    code, out = setanon("anonymize", "b", "--model", "rho", "--rho", "0.5", "--sensitive",
                        sensitive, "--seed", "1", *url)
    assert code == 0 and "run 1 verification passed" in out
    # A missing file is refused before any run is recorded; labels that are not items of the
    # data are found by the run, which then fails (run 2).
    code, out = setanon("anonymize", "b", "--model", "rho", "--rho", "0.5", "--sensitive",
                        str(tmp_path / "missing.txt"), *url)
    assert code == 2 and "missing.txt" in out
    unknown = str(write(tmp_path / "unknown.txt", "zzz\n"))
    code, out = setanon("anonymize", "b", "--model", "rho", "--rho", "0.5", "--sensitive",
                        unknown, *url)
    assert code == 2 and "no sensitive item that occurs in the data" in out
    target = tmp_path / "out.dat"
    code, out = setanon("export", "b", "--run", "latest", "-o", str(target), *url)
    assert code == 1 and "run 2 of 'b' is failed" in out and not target.exists()
    code, out = setanon("export", "b", "--run", "1", "-o", str(target), *url)
    assert code == 0 and "run 1 of 'b', model rho" in out and "verification passed" in out
    code, out = setanon("export", "b", "-o", str(tmp_path / "raw.dat"), *url)
    assert code == 0 and "RAW data" in out and "NOT anonymized" in out
    code, out = setanon("runs", *url)
    header, first, second = out.splitlines()
    assert header.split()[:7] == ["run", "dataset", "model", "status", "verified", "in", "place"]
    assert first.split()[:6] == ["1", "b", "rho", "finished", "yes", "-"]
    assert "--rho 0.5 --sensitive" in first and first.endswith("--seed 1")
    assert second.split()[:5] == ["2", "b", "rho", "failed", "no"]
    raw = [sorted(line.split()) for line in (tmp_path / "raw.dat").read_text().splitlines()]
    assert raw == [sorted(line.split()) for line in BASKETS.splitlines()]


def test_in_place_rolls_back_what_would_not_leave_the_verified_output(
        db: Backend, user_schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from setanon_sql.inplace import apply as apply_module
    from setanon_sql.models import require_model
    from tests.integration.test_inplace import make_shop, rows

    make_shop(db, user_schema, 5)
    before = rows(db, user_schema, "purchases")
    dataset = api.attach(db, "shop", f"{user_schema}.purchases", "customer", "product")
    run_id = api.anonymize(db, dataset, require_model("rho"),
                           {"rho": 0.3, "sensitive": str(write(tmp_path / "s.txt", "p1\np2\n"))},
                           seed=1)
    # A faulty apply that skips its deletes: the in-transaction check must refuse it.
    monkeypatch.setattr(apply_module, "delete_where", lambda *args, **kwargs: None)
    with pytest.raises(GuaranteeNotMetError, match="would not leave the verified output"):
        api.apply_in_place(db, dataset, api.get_run(db, dataset, run_id))
    assert rows(db, user_schema, "purchases") == before
