"""`setanon report` end to end: terminal, JSON, the HTML page of a run, the trade-off page.

Runs come from the test double of test_report_data (suppress, generalize, add, delete); the
trade-off values are checked against the same plain-Python oracle over exported files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.cli import _Group, db_options
from setanon_sql.report.command import render_report, report_command
from tests.conftest import DbUrl
from tests.integration.test_report_data import MIXED, random_table
from tests.oracle.report_oracle import oracle_changes, read_tsv

pytest.importorskip("matplotlib")

REMOVED = "item occurrences removed (share)"


def setanon_report(*args: str) -> tuple[int, str]:
    group = _Group(commands={"report": report_command(db_options)})
    result = CliRunner().invoke(group, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.output


def make_runs(db_url: DbUrl, tmp_path: Path, ks: tuple[int, ...]) -> list[int]:
    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 5), "t", "id", ["codes"])
        return [api.anonymize(db, dataset, MIXED, {"salt": k, "k": k}, seed=1) for k in ks]


def figure_ids(page: str) -> list[str]:
    return re.findall(r'<figure id="([^"]+)"', page)


def test_run_page_json_and_text(db_url: DbUrl, tmp_path: Path) -> None:
    (run_id,) = make_runs(db_url, tmp_path, (3,))
    code, out = setanon_report("t", "--run", str(run_id), *db_url.args)
    assert code == 0 and "NCP (normalized certainty penalty): 0.25" in out  # 1 / (1 + k)
    assert "share of item occurrences suppressed: 20.00 %" in out

    target = tmp_path / "report.html"
    code, out = setanon_report("t", "--run", "latest", "-o", str(target), *db_url.args)
    assert (code, out.strip()) == (0, f"wrote {target}")
    page = target.read_text(encoding="utf-8")
    assert figure_ids(page) == ["fig-3-support", "fig-3-lengths", "fig-3-changes",
                                "fig-3-unicity", "fig-records", "fig-classes"]
    assert page.count("<svg") == 6
    assert not re.search(r'(src|href)="(https?:|//)|url\((https?:|//)', page)  # nothing fetched
    assert "z<1>" not in page and "z&lt;1&gt;" in page  # labels are escaped (table and SVG)
    assert "Privacy guarantee met" in page and "as recorded when the run was verified" in page
    with api.open_database(db_url.url, db_url.schema) as db:  # the same bytes every time
        dataset = api.get_dataset(db, "t")
        again = render_report(db, dataset, api.get_run(db, dataset, run_id), None, "html", False)
    assert again == page

    code, out = setanon_report("t", "--run", str(run_id), "--format", "json", *db_url.args)
    content = json.loads(out)
    assert (content["dataset"], content["run"]["run_id"], content["report"]) == ("t", run_id,
                                                                               "run")
    assert content["classes"] and content["attributes"][0]["changes"]["totals"]["removed"] > 0


def test_tradeoff_page_plots_utility_against_k(db_url: DbUrl, tmp_path: Path) -> None:
    ks = (2, 3, 5, 8)
    ids = make_runs(db_url, tmp_path, ks)
    code, out = setanon_report("t", "--runs", ",".join(map(str, ids)), "--format", "json",
                               "--no-verify", *db_url.args)
    assert code == 0
    content = json.loads(out)
    assert content["axis"]["key"] == "k" and content["axis"]["values"] == [float(k) for k in ks]
    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.get_dataset(db, "t")
        before = read_tsv(api.export_dataset(db, dataset, tmp_path / "b.tsv", fmt="tsv"))
        for run_id, entry, point in zip(ids, content["runs"],
                                        content["curves"][REMOVED]["series"]["mixed"],
                                        strict=True):
            run = api.get_run(db, dataset, run_id)
            after = read_tsv(api.export_dataset(db, dataset, tmp_path / f"{run_id}.tsv",
                                                fmt="tsv", run=run))
            counts = oracle_changes(before, after).values()
            share = sum(c["removed"] for c in counts) / sum(c["before"] for c in counts)
            assert entry["metrics"][REMOVED] == pytest.approx(share)
            assert point == [float(run.params["k"]), pytest.approx(share)]

    target = tmp_path / "tradeoff.html"
    code, _ = setanon_report("t", "--runs", ",".join(map(str, ids)), "-o", str(target),
                             "--no-verify", *db_url.args)
    page = target.read_text(encoding="utf-8")
    assert code == 0 and "the privacy parameter k" in page
    assert "curve-item-occurrences-removed-share" in figure_ids(page)
    assert "curve-ncp-normalized-certainty-penalty" in figure_ids(page)


USAGE_ERRORS = [
    (["--run", "1", "--runs", "1,2"], "give either --run (one run) or --runs"),
    (["--runs", "1,x"], "--runs '1,x': give run ids separated by commas"),
    (["--runs", "1,1"], "names a run twice"),
    (["--runs", "1"], "--runs needs at least two run ids"),
    (["--runs", "1,9"], "no run 9 of dataset 't'"),
]


def test_usage_errors(db_url: DbUrl, tmp_path: Path) -> None:
    make_runs(db_url, tmp_path, (2,))
    for args, message in USAGE_ERRORS:
        code, out = setanon_report("t", *args, *db_url.args)
        assert code == 2 and message in out, args


def test_failed_run_is_refused(db_url: DbUrl, tmp_path: Path) -> None:
    make_runs(db_url, tmp_path, (2,))
    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.get_dataset(db, "t")
        with pytest.raises(KeyError):
            api.anonymize(db, dataset, MIXED, {}, seed=1)  # no salt: the double fails
    code, out = setanon_report("t", "--run", "2", "-o", str(tmp_path / "r.html"), *db_url.args)
    assert code == 1 and "run 2 of 't' is failed: KeyError: 'salt'" in out
    assert not (tmp_path / "r.html").exists()


def _run(run_id: int, model: str, **params: object) -> api.Run:
    return api.Run(run_id, 1, model, dict(params), 1, "duckdb", "done", "0", 1.0, {}, None)


def test_privacy_axis_picks_the_privacy_parameter_and_splits_lines() -> None:
    from setanon_sql.report.tradeoff import privacy_axis, series_name

    runs = [_run(1, "km", k="2", m=1), _run(2, "km", k="5", m=1), _run(3, "km", k="2", m=2),
            _run(4, "km", k="5", m=2)]
    axis = privacy_axis(runs)
    assert (axis["key"], axis["values"], axis["fixed"]) == ("k", [2.0, 5.0, 2.0, 5.0], ["m"])
    assert [series_name(r, axis["fixed"]) for r in runs] == ["km, m=1"] * 2 + ["km, m=2"] * 2
    lockstep = privacy_axis([_run(1, "x", rho=0.3, salt=1), _run(2, "x", rho=0.5, salt=2)])
    assert (lockstep["key"], lockstep["fixed"]) == ("rho", [])
    models = privacy_axis([_run(1, "km", k="2,2"), _run(2, "rho", rho=0.5)])
    assert (models["key"], models["categories"]) == (None, ["run 1", "run 2"])
