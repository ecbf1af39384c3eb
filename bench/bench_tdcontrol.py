"""Benchmark of ``--model rho --heuristic tdcontrol`` (Cao et al.'s TDControl, the baseline of
Jia et al.'s Table 3 and Figs. 1-2) on the public datasets; prints a Markdown table.

Usage (from the repository root)::

    SETANON_BENCH_TIMED=1 flock /tmp/bench.lock python bench/bench_tdcontrol.py \\
        --data bms1,bms2 --m 2 [--backend URL] [--records N] [--heuristics tdcontrol,mine]

BMS-WebView-2 uses the shared hierarchy (``hierarchy_BMS2.txt``, 7 levels, range-based);
BMS-WebView-1 ships none, so one is derived the way Retail's is for km
(``bench/make_retail_hierarchy.py``: item-id ranges, fan-out 10) and written to the workdir.
ρ = 0.7 and 40% of the item types sensitive (``--sensitive-fraction 0.4 --seed 1``), as the
paper. Each output is exported (labels) and checked in plain Python, independently of
``setanon verify``: it must be a cut generalization plus global suppression
(``tests/oracle/tdcontrol_oracle.py``) and have no unsafe rule with a qid of up to m items
(supports of every itemset of every published record, ``bench_rho.brute_force_unsafe``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_rho import brute_force_unsafe, read  # noqa: E402
from bench.make_retail_hierarchy import distinct_items, range_hierarchy  # noqa: E402
from setanon_sql import api  # noqa: E402
from setanon_sql.models import require_model  # noqa: E402
from tests.oracle import tdcontrol_oracle  # noqa: E402

DATA = REPO_ROOT.parent / "shared" / "data"
FILES = {"bms1": (DATA / "bms-webview-1/BMS1.dat", None),
         "bms2": (DATA / "bms-webview-2/BMS2.dat", DATA / "bms-webview-2/hierarchy_BMS2.txt")}


def hierarchy_file(name: str, data: Path, work: Path) -> Path:
    """The shipped hierarchy, or an id-range one with fan-out 10 derived into ``work``."""
    shipped = FILES[name][1]
    if shipped is not None:
        return shipped
    target = work / f"hierarchy_{name}.txt"
    if not target.exists():
        paths = range_hierarchy(distinct_items(data))
        target.write_text("".join(";".join(p) + "\n" for p in paths))
    return target


def first_records(source: Path, target: Path, n: int | None) -> Path:
    if n is None:
        return source
    lines = source.read_text().splitlines()[:n]
    target.write_text("\n".join(lines) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="duckdb:////tmp/tdc_bench/bench.duckdb")
    parser.add_argument("--data", default="bms1,bms2")
    parser.add_argument("--heuristics", default="tdcontrol")
    parser.add_argument("--rho", type=float, default=0.7)
    parser.add_argument("--fraction", type=float, default=0.4)
    parser.add_argument("--m", type=int, default=2)
    parser.add_argument("--records", type=int, default=None, help="only the first N records")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/tdc_bench"))
    args = parser.parse_args()
    args.work.mkdir(exist_ok=True)
    db = api.open_database(args.backend, "tdcbench")
    model = require_model("rho")
    print("| data | heuristic | backend | records | occurrences | suppressed | share | "
          "generalized | NCP (non-sens.) | info loss | sym. KL | trials (kept) | seconds | "
          "verify | brute force | m | load before/after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.data.split(","):
        source = first_records(FILES[name][0], args.work / f"{name}_{args.records}.dat",
                               args.records)
        label = name if args.records is None else f"{name}-{args.records}"
        hierarchy = hierarchy_file(name, FILES[name][0], args.work)
        dataset = api.find_dataset(db, label)
        if dataset is None:
            dataset = api.load_transactions(db, source, label)
            api.load_hierarchy(db, hierarchy, dataset)
        original = read(source)
        parent = tdcontrol_oracle.read_hierarchy(hierarchy)
        for heuristic in args.heuristics.split(","):
            params = {"rho": args.rho, "sensitive_fraction": args.fraction,
                      "heuristic": heuristic, "m": args.m}
            load = os.getloadavg()[0]
            started = time.perf_counter()
            api.anonymize(db, dataset, model, params, seed=args.seed)
            seconds = time.perf_counter() - started
            run = api.get_run(db, dataset, "latest")
            started = time.perf_counter()
            verified = api.verify(db, dataset, run)
            verify_seconds = time.perf_counter() - started
            out = api.export_dataset(db, dataset, args.work / f"{label}_{heuristic}.dat", run=run)
            published = read(out)
            sens_table = db.render(db.table(f"r{run.run_id}_sensitive"))
            dict_table = db.render(db.table(dataset.dict_table(dataset.set_attributes[0])))
            sensitive = {str(s) for (s,) in db.execute(
                f"SELECT d.label FROM {sens_table} s JOIN {dict_table} d "
                "ON d.item_id = s.item_id", fetch=True)}
            if heuristic == "tdcontrol":
                faults = tdcontrol_oracle.generalization_faults(original, published, parent,
                                                                sensitive)
            else:
                faults = [] if all(p <= o for o, p in zip(original, published, strict=True)) \
                    else ["not a subset"]
            unsafe = brute_force_unsafe(published, sensitive, Fraction(str(args.rho)), args.m)
            brute = "ok" if unsafe == 0 and not faults else f"FAIL ({unsafe} unsafe, " \
                f"{len(faults)} faults: {faults[:2]})"
            f = run.figures
            trials = (f"{f['trials']} ({f['specializations_kept']})"
                      if heuristic == "tdcontrol" else "-")
            print(f"| {label} | {heuristic} | {db.name} | {len(original):,} | "
                  f"{f['occurrences']:,} | {f['suppressed']:,} | {f['suppressed_share']:.3f} | "
                  f"{f.get('generalized_share', 0.0):.3f} | {f.get('ncp_nonsensitive', 0.0):.3f} "
                  f"| {f.get('information_loss', f['suppressed_share']):.3f} | "
                  f"{f['symmetric_kl']:.2e} | {trials} | {seconds:.1f} | "
                  f"{'ok' if verified.ok else 'FAIL'} ({verify_seconds:.0f} s) | {brute} | "
                  f"{args.m} | {load:.1f}/{os.getloadavg()[0]:.1f} |", flush=True)
    db.close()


if __name__ == "__main__":
    main()
