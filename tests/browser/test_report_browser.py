"""The report pages in a real browser: Debian's headless Chromium loads the files offline.

Chromium logs every console message of the page (errors, blocked fetches, CSP violations) to
stderr as ``...:CONSOLE...`` lines with ``--enable-logging=stderr``; the test asserts there are
none and that the DOM Chromium built holds every figure with its SVG. A control page with a
forbidden fetch proves the console check sees what it should.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.report.command import render_report
from setanon_sql.report.tradeoff import tradeoff_data
from tests.integration.test_report_data import MIXED, random_table

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if os.environ.get("SETANON_REQUIRE_BROWSER") == "1":  # CI sets it: a missing browser fails
    assert CHROMIUM is not None, "SETANON_REQUIRE_BROWSER=1 but no chromium on PATH"
    import matplotlib  # noqa: F401  (a missing plotting dependency fails too)
pytest.importorskip("matplotlib")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)")

# Flags for a root sandbox on a closed network (see the machine notes): no background traffic.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def load(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM Chromium built from ``page``, and the console messages it logged."""
    result = subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


class Figures(HTMLParser):
    """Ids of <figure> elements and whether each holds an <svg> with drawn paths or text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, int] = {}
        self._current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "figure":
            self._current = dict(attrs).get("id") or ""
            self.figures[self._current] = 0
        elif self._current is not None and tag in ("path", "text", "use"):
            self.figures[self._current] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._current = None


def drawn_figures(dom: str) -> dict[str, int]:
    parser = Figures()
    parser.feed(dom)
    return parser.figures


def test_console_check_sees_a_blocked_fetch(tmp_path: Path) -> None:
    from setanon_sql.report.html import page

    control = tmp_path / "control.html"
    control.write_text(page("control", '<img src="http://127.0.0.1:9/x.png" alt="">'),
                       encoding="utf-8")
    _, console = load(control, tmp_path / "profile")
    assert any("Content Security Policy" in line for line in console), console


def test_run_and_tradeoff_pages_render_without_console_errors(db: Backend,
                                                              tmp_path: Path) -> None:
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 7), "t", "id", ["codes"])
    runs = [api.get_run(db, dataset, api.anonymize(db, dataset, MIXED, {"salt": k, "k": k},
                                                     seed=1)) for k in (2, 3, 5)]
    from setanon_sql.report.tradeoff_page import figure_ids as tradeoff_figure_ids
    from setanon_sql.report.tradeoff_page import tradeoff_page

    tradeoff = tradeoff_data(db, dataset, runs, None)
    curves = tradeoff_figure_ids(tradeoff)
    assert "curve-ncp-normalized-certainty-penalty" in curves and len(curves) >= 2
    pages = {
        # The verification recorded with the run (the double is no registered model, so
        # --verify could not look it up).
        "run.html": (render_report(db, dataset, runs[0], None, "html", False),
                     ["fig-3-support", "fig-3-lengths", "fig-3-changes", "fig-3-unicity",
                      "fig-records", "fig-classes"]),
        "tradeoff.html": (tradeoff_page(tradeoff), curves),
    }
    for name, (text, expected) in pages.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        dom, console = load(path, tmp_path / f"profile-{name}")
        assert console == [], console
        figures = drawn_figures(dom)
        assert all(count > 10 for count in figures.values()), figures
        assert list(figures) == expected
    run_dom, _ = load(tmp_path / "run.html", tmp_path / "profile-again")
    assert "Privacy guarantee met" in run_dom
    assert "as recorded when the run was verified" in run_dom


def test_demo_report_says_what_the_demo_verified(db: Backend, tmp_path: Path) -> None:
    """The page a new user opens first: every figure drawn, and the verification the demo's
    run recorded (not "skipped", not "not available")."""
    from setanon_sql.demo import run_demo

    said: list[str] = []
    run_demo(db, tmp_path / "demo", said.append)
    dom, console = load(tmp_path / "demo" / "admissions_k5.html", tmp_path / "profile")
    assert console == [], console
    figures = drawn_figures(dom)
    assert figures and all(count > 10 for count in figures.values()), figures
    assert "Privacy guarantee met" in dom and "as recorded when the run was verified" in dom
    lowered = dom.lower()
    assert "skipped" not in lowered and "not available" not in lowered
    assert "--no-verify" not in dom
