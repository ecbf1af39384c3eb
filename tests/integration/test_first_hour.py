"""A new user's first hour, as issue 26 found it: help that is complete (no empty defaults, no
summaries cut with "..."), reports that render without matplotlib warnings, a text report that
prints its tables, and a demo whose report says what the demo checked.
"""

from __future__ import annotations

import inspect
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models.base import Model, Verification
from setanon_sql.runs import RunContext
from tests.conftest import DbUrl
from tests.integration.test_report_data import mixed_changes, random_table


def invoke(*args: str, width: int | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, terminal_width=width)
    return result.exit_code, result.output


def command_paths(group: click.Group = main, prefix: tuple[str, ...] = ()
                  ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group of the CLI, walked from ``main`` (new commands are included)."""
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name))


ALL = list(command_paths())
GROUPS = [((), main)] + [(path, c) for path, c in ALL if isinstance(c, click.Group)]


def test_the_walk_finds_the_load_subcommands() -> None:
    paths = {path for path, _ in ALL}
    assert {("load", "table"), ("load", "transactions"), ("load", "hierarchy"),
            ("generate", "claims"), ("report",), ("anonymize",)} <= paths


@pytest.mark.parametrize("path", [path for path, _ in ALL], ids=" ".join)
def test_help_has_an_example_and_no_empty_default(path: tuple[str, ...]) -> None:
    code, out = invoke(*path, "--help")
    assert code == 0
    assert "Example:" in out
    assert not re.search(r"\[default:\s*\]", out), out  # '[default:  ]' for a blank default
    assert "[default: ]" not in out and "[default:  ]" not in out


def test_blank_separator_default_is_named() -> None:
    code, out = invoke("load", "table", "--help")
    assert code == 0 and "[default: (space)]" in " ".join(out.split())


@pytest.mark.parametrize("width", [None, 60, 200])
@pytest.mark.parametrize("path", [path for path, _ in GROUPS], ids=lambda p: " ".join(p) or "main")
def test_command_summaries_are_whole(path: tuple[str, ...], width: int | None) -> None:
    group = main if not path else dict(ALL)[path]
    assert isinstance(group, click.Group)
    code, out = invoke(*path, "--help", width=width)
    assert code == 0
    commands = out.split("Commands:", 1)[1]
    flat = " ".join(commands.split())
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        assert command is not None and command.help
        first_line = inspect.cleandoc(command.help).splitlines()[0]
        assert f"{name} {first_line}" in flat, (name, first_line, commands)
    for line in commands.splitlines():
        assert not line.rstrip().endswith(("...", "…")), line


# --- the text report prints the contents of table figures ------------------------------------

ROUNDS = [{"round": i, "k": 2 + i, "ncp": round(0.05 * i, 2)} for i in range(1, 18)]
PAIRS = {"a1 a2": {"support": 3, "moved": 1}, "z3 a7": {"support": 12, "moved": 4}}


def tabled_changes(backend: Backend, dataset: api.Dataset, params: dict[str, Any],
                   context: RunContext) -> None:
    """The report's test double, recording two table figures as a search model would."""
    mixed_changes(backend, dataset, params, context)
    context.figures.update({"rounds": ROUNDS, "pairs": PAIRS})


TABLED = Model("mixed", "the report double, with table figures", (), tabled_changes,
               lambda backend, dataset, run: Verification(True, "nothing (test double)"))


def anonymized(db_url: DbUrl, tmp_path: Path, ks: tuple[int, ...] = (3,)) -> list[int]:
    """Runs of the double with table figures on a loaded random table, one per k."""
    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 5), "t", "id", ["codes"])
        return [api.anonymize(db, dataset, TABLED, {"salt": k, "k": k}, seed=1) for k in ks]


def cells(line: str) -> list[str]:
    return line.split()


def test_text_report_prints_table_rows(db_url: DbUrl, tmp_path: Path) -> None:
    from setanon_sql.report.command import TEXT_ROWS

    (run_id,) = anonymized(db_url, tmp_path)
    code, out = invoke("report", "t", "--run", str(run_id), *db_url.args)
    assert code == 0, out
    lines = out.splitlines()
    assert not re.search(r"\b\d+ rows$", out, re.MULTILINE)  # no bare count any more

    start = next(i for i, line in enumerate(lines) if line.strip().startswith("rounds of the"))
    assert "(17 rows)" in lines[start]
    assert cells(lines[start + 1]) == ["k", "ncp", "round"]  # the header, sorted keys
    shown = lines[start + 2:start + 2 + TEXT_ROWS]
    for line, entry in zip(shown, ROUNDS[:TEXT_ROWS], strict=True):
        assert cells(line) == [str(entry["k"]), f"{entry['ncp']:.4g}", str(entry["round"])]
    hidden = len(ROUNDS) - TEXT_ROWS
    assert f"... {hidden} more rows not shown (17 in all" in lines[start + 2 + TEXT_ROWS]
    header_width = len(lines[start + 1].rstrip())  # aligned: numbers end under their header
    assert all(len(line.rstrip()) == header_width for line in shown)

    start = next(i for i, line in enumerate(lines) if line.strip().startswith("pairs"))
    assert "(2 rows)" in lines[start]
    assert cells(lines[start + 1]) == ["moved", "support"]
    assert cells(lines[start + 2]) == ["a1", "a2", "1", "3"]
    assert cells(lines[start + 3]) == ["z3", "a7", "4", "12"]


def test_text_table_shows_short_tables_whole() -> None:
    from setanon_sql.report.command import text_table

    lines = text_table(["name", "n"], [["a", "1"], ["bbb", "1,000"]], limit=2, indent="")
    assert lines == ["name      n", "a         1", "bbb   1,000"]
    lines = text_table(["n"], [[str(i)] for i in range(5)], limit=3, indent="")
    assert lines[-1] == ("... 2 more rows not shown (5 in all; --format json or html shows "
                         "every row)")
    assert len(lines) == 1 + 3 + 1
    # "-" (no value) does not make a numeric column ragged
    assert text_table(["n", "s"], [["-", "x"], ["10", "-"]], indent="") == [
        " n  s", " -  x", "10  -"]


# --- reports render without matplotlib warnings, whatever the user's matplotlibrc -----------

# A font without ℓ, ρ, ε (matplotlib's own Computer Modern): what a user's matplotlibrc may set.
HOSTILE_RC: dict[Any, Any] = {"font.family": "cmr10", "axes.formatter.use_mathtext": True}


def test_the_hostile_font_does_lack_the_glyphs() -> None:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(HOSTILE_RC), warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = Figure()
        figure.add_subplot().set_title("ℓ = 2, ρ = 0.5")
        with pytest.raises(UserWarning, match="missing from font"):
            figure.savefig(io.StringIO(), format="svg")


def test_every_plot_renders_without_warnings() -> None:
    import matplotlib

    from setanon_sql.report import plots
    from setanon_sql.report.figures import _KNOWN
    from setanon_sql.report.html import _PARAM_NAMES

    names = [name for _, name in _KNOWN]
    with matplotlib.rc_context(HOSTILE_RC), warnings.catch_warnings():
        warnings.simplefilter("error")
        for symbol in sorted(set(_PARAM_NAMES.values())):
            for name in names:
                svg = plots.tradeoff({f"km, {symbol}=1": [(1.0, 0.2), (2.0, 0.1)]}, symbol,
                                     name, True, None, "t")
                assert symbol in svg and name.replace("&", "&amp;") in svg
        # the user's own labels, in any script: the SVG keeps them as text for the browser
        svg = plots.item_changes([{"label": "診断 ℓ≤ρ", "removed": 3, "added": 1}])
        assert "診断 ℓ≤ρ" in svg
        plots.support_curves([[1, 900], [10, 90], [100, 9]], [[1, 800], [10, 70]])
        plots.record_lengths([[1, 10], [2, 5]], [[1, 9]])
        plots.class_sizes([[2, 10], [3, 4]], 2.0)
        plots.record_classes([[1, 5], [2, 3]], [[2, 4]], 2.0)
        plots.unicity([{"ell": 1, "unique_share": 0.1, "records_at_risk_share": 0.2}],
                      [{"ell": 1, "unique_share": 0.0, "records_at_risk_share": 0.0}])


def test_log_axes_print_plain_numbers_through_public_api() -> None:
    from setanon_sql.report import plots

    svg = plots.support_curves([[1, 1000], [10, 100], [100, 10]], None)
    assert "1,000" in svg and "10^" not in svg and "10^{" not in svg
    # no private matplotlib method is overridden: only public names and dunders
    own = [name for name in vars(plots._PlainLog) if name.startswith("_")
           and not (name.startswith("__") and name.endswith("__"))]
    assert own == []


def test_report_pages_render_without_warnings(db_url: DbUrl, tmp_path: Path) -> None:
    import matplotlib

    from setanon_sql.report.command import render_report

    ids = anonymized(db_url, tmp_path, (2, 5))
    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.get_dataset(db, "t")
        runs = [api.get_run(db, dataset, run_id) for run_id in ids]
        with matplotlib.rc_context(HOSTILE_RC), warnings.catch_warnings():
            warnings.simplefilter("error")
            page = render_report(db, dataset, runs[0], None, "html", False)
            tradeoff = render_report(db, dataset, None, runs, "html", False)
    assert page.count("<svg") >= 5 and tradeoff.count("<svg") >= 2
    assert "Privacy guarantee met" in page


# --- the demo's report says what the demo checked --------------------------------------------

def test_demo_report_says_the_guarantee_was_met(db_url: DbUrl, tmp_path: Path) -> None:
    code, out = invoke("demo", "--workdir", str(tmp_path / "demo"), *db_url.args)
    assert code == 0, out
    page = (tmp_path / "demo" / "admissions_k5.html").read_text(encoding="utf-8")
    assert "Privacy guarantee met" in page
    assert "as recorded when the run was verified" in page
    assert "skipped" not in page.lower() and "--no-verify" not in page
    assert "not available" not in page.lower()


def test_text_report_says_whether_the_guarantee_holds(db_url: DbUrl, tmp_path: Path) -> None:
    baskets = tmp_path / "b.dat"
    baskets.write_text("1 2\n1 2 4\n1 3\n1 3 4\n2 3\n4\n1 4\n", encoding="utf-8")
    assert invoke("load", "transactions", str(baskets), "--name", "b", *db_url.args)[0] == 0
    code, out = invoke("anonymize", "b", "--model", "rho", "--rho", "0.5",
                       "--sensitive-fraction", "0.3", "--seed", "1", *db_url.args)
    assert code == 0, out
    code, out = invoke("report", "b", "--run", "latest", *db_url.args)
    assert code == 0 and "  privacy guarantee met (as recorded when the run was verified); " \
        "checked " in out
    code, out = invoke("report", "b", "--run", "latest", "--verify", *db_url.args)
    assert code == 0 and re.search(r"privacy guarantee met \(checked again now in [\d.]+ s\)",
                                   out), out


def test_text_report_refuses_a_run_that_fails_a_fresh_check(db_url: DbUrl, tmp_path: Path
                                                           ) -> None:
    from setanon_sql.errors import GuaranteeNotMetError
    from setanon_sql.report.command import _text

    (run_id,) = anonymized(db_url, tmp_path)

    def fails(backend: Backend, dataset: api.Dataset, run: api.Run) -> Verification:
        return api.verify(backend, dataset, run, model=Model(
            "mixed", "fails now", (), tabled_changes,
            lambda b, d, r: Verification(False, "every 1-itemset", {"bad": 1})))

    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.get_dataset(db, "t")
        run = api.get_run(db, dataset, run_id)
        assert "privacy guarantee met (as recorded" in _text(db, dataset, run)
        with pytest.raises(GuaranteeNotMetError):
            _text(db, dataset, run, fails)


@pytest.mark.parametrize("path", [path for path, _ in ALL], ids=" ".join)
def test_every_option_says_what_it_does(path: tuple[str, ...]) -> None:
    command = dict(ALL)[path]
    bare = [param.opts for param in command.params
            if isinstance(param, click.Option) and not param.hidden and not param.help]
    assert bare == []
