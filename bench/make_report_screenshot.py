"""Make docs/report-screenshot.png: a real report of a real run on the shipped demo data.

Loads the demo admissions (complex data) into a fresh DuckDB file, runs ``--model kanon`` with
k = 5, writes the HTML report and photographs its top with headless Chromium (Debian's
``chromium``). Optionally (``--bms2``) also writes the trade-off page of km on BMS-WebView-2 for
k = 2, 5, 10, 20 (m = 2) from ../shared/data.

    python bench/make_report_screenshot.py [--out docs] [--bms2]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

from setanon_sql import api
from setanon_sql.models import require_model
from setanon_sql.report.command import render_report

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def screenshot(page: Path, target: Path, height: int) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}",
                        f"--window-size=1100,{height}", f"--screenshot={target}",
                        page.as_uri()], check=True, capture_output=True)


def demo_report(work: Path, out: Path) -> None:
    with api.open_database(f"duckdb:///{work / 'demo.duckdb'}") as db:
        dataset = api.load_table(db, api.demo_file("admissions"), "demo_admissions",
                                 id_column="patient_id", set_columns=["diagnoses", "drugs"])
        model = require_model("kanon")
        params = {"k": 5, "beta": 0.0, "suppress_budget": 0.0, "qi": [], "numeric": [],
                  "categorical": []}
        run = api.get_run(db, dataset, api.anonymize(db, dataset, model, params, seed=1))
        page = work / "report.html"
        page.write_text(render_report(db, dataset, run, None, "html", True), encoding="utf-8")
    screenshot(page, out / "report-screenshot.png", 2300)
    print(f"wrote {out / 'report-screenshot.png'} (page: {page})")


def bms2_tradeoff(work: Path, out: Path) -> None:
    with api.open_database(f"duckdb:///{work / 'bms2.duckdb'}") as db:
        dataset = api.load_transactions(db, SHARED / "bms-webview-2" / "BMS2.dat", "bms2")
        api.load_hierarchy(db, SHARED / "bms-webview-2" / "hierarchy_BMS2.txt", dataset)
        model = require_model("km")
        runs = []
        for k in (2, 5, 10, 20):
            params = {"k": str(k), "m": 2, "sigma": "1", "hierarchy": None, "column": None,
                      "error": "ncp", "trials": 1, "exact_upto": 0, "batch": 0.25}
            runs.append(api.get_run(db, dataset, api.anonymize(db, dataset, model, params,
                                                               seed=1)))
        page = out / "tradeoff-bms2.html"
        page.write_text(render_report(db, dataset, None, runs, "html", True), encoding="utf-8")
    print(f"wrote {page}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--bms2", action="store_true", help="also the BMS-WebView-2 trade-off")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        demo_report(Path(work), args.out)
        if args.bms2:
            bms2_tradeoff(Path(work), args.out)


if __name__ == "__main__":
    main()
