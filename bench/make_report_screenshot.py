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
import sys
import tempfile
from pathlib import Path

from setanon_sql import api

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


def setanon(db: str, *args: str) -> str:
    """Run the setanon CLI exactly as a user would; returns what it printed."""
    done = subprocess.run([sys.executable, "-m", "setanon_sql", *args, "--db", db], check=True,
                          capture_output=True, text=True)
    return done.stdout


def demo_report(work: Path, out: Path) -> None:
    db = f"duckdb:///{work / 'demo.duckdb'}"
    setanon(db, "load", "table", str(api.demo_file("admissions")), "--name", "demo_admissions",
            "--id", "patient_id", "--set-column", "diagnoses", "--set-column", "drugs")
    run = setanon(db, "anonymize", "demo_admissions", "--model", "kanon", "--k", "5",
                  "--seed", "1").split()[0]
    page = work / "report.html"
    setanon(db, "report", "demo_admissions", "--run", run, "-o", str(page))
    screenshot(page, out / "report-screenshot.png", 2300)
    print(f"wrote {out / 'report-screenshot.png'} (page: {page})")


def bms2_tradeoff(work: Path, out: Path) -> None:
    db = f"duckdb:///{work / 'bms2.duckdb'}"
    setanon(db, "load", "transactions", str(SHARED / "bms-webview-2" / "BMS2.dat"),
            "--name", "bms2")
    setanon(db, "load", "hierarchy", str(SHARED / "bms-webview-2" / "hierarchy_BMS2.txt"),
            "--name", "bms2")
    runs = [setanon(db, "anonymize", "bms2", "--model", "km", "--k", str(k), "--m", "2",
                    "--seed", "1").split()[0] for k in (2, 5, 10, 20)]
    page = out / "tradeoff-bms2.html"
    setanon(db, "report", "bms2", "--runs", ",".join(runs), "-o", str(page))
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
