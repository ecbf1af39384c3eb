"""Benchmark of --model prho (Nakagawa et al.) on BMS-WebView; prints Markdown table rows.

Usage: python bench/bench_prho.py [--backend URL] [--exp 1|2|2s] [--data bms1,bms2]
       [--settings fixed,personalized] [--rho 0.5] [--fraction 0.4] [--m all] [--seeds 1]

* ``--exp 1`` (Fig. 1): the records with at most 5 items (BMS-WebView-1'/2'), SUPPRESSOR with
  every adversary (--m all), fixed vs personalized, 40% sensitive.
* ``--exp 2`` (Figs. 3-4): BMS-WebView-2', SUPPRESSOR, fixed+ vs personalized+, 10%, m = 5,
  with util_mining (minsup 0.05%, minconf 30%).
* ``--exp 2s`` (Figs. 2, 5-8): full BMS-WebView-2, SAMPLESUPPRESSOR, m = 5, ε = δ = 0.05.

Each output is exported as FIMI and checked independently in plain Python
(tests/oracle/prho_oracle.py): exactly for SUPPRESSOR (every adversary), by 4·n_S fresh
adversaries per ℓ for SAMPLESUPPRESSOR; besides ``setanon verify``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from setanon_sql import api, metrics
from setanon_sql.models import require_model
from tests.oracle import prho_oracle as oracle

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
FILES = {"bms1": DATA / "bms-webview-1/BMS1.dat", "bms2": DATA / "bms-webview-2/BMS2.dat"}


def cutoff(source: Path, target: Path, longest: int) -> Path:
    lines = [line for line in source.read_text().splitlines() if len(line.split()) <= longest]
    target.write_text("\n".join(lines) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default=None)
    parser.add_argument("--exp", default="1", choices=["1", "2", "2s"])
    parser.add_argument("--data", default=None)
    parser.add_argument("--settings", default=None)
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--fraction", type=float, default=None)
    parser.add_argument("--m", default=None)
    parser.add_argument("--eps", type=float, default=0.05)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()
    exp = args.exp
    data = (args.data or ("bms1,bms2" if exp == "1" else "bms2")).split(",")
    settings = (args.settings or ("fixed,personalized" if exp == "1"
                                  else "fixed+,personalized+")).split(",")
    fraction = args.fraction or (0.4 if exp == "1" else 0.1)
    m = args.m or ("all" if exp == "1" else "5")
    work = Path("/tmp/bench_prho")
    work.mkdir(exist_ok=True)
    url = args.backend or f"duckdb:///{work / 'bench.duckdb'}"
    db = api.open_database(url, "bench_prho")
    model = require_model("prho")
    print("| data | setting | alg | m | backend | records | occurrences | suppressed | util_info"
          " | util_dist | util_mining | rounds | seconds | verify | independent check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in data:
        if exp == "2s":
            source, label = FILES[name], name
        else:
            source = cutoff(FILES[name], work / f"{name}-c5.dat", 5)
            label = f"{name}-c5"
        if api.find_dataset(db, label) is not None:
            api.drop_dataset(db, api.get_dataset(db, label))
        dataset = api.load_transactions(db, source, label)
        original = oracle.read_fimi(source)
        for setting in settings:
            for seed in [int(s) for s in args.seeds.split(",")]:
                params: dict = {"rho": args.rho, "setting": setting,
                                "sensitive_fraction": fraction, "m": m}
                if exp == "2s":
                    params.update(epsilon=args.eps, delta=args.eps)
                started = time.perf_counter()
                api.anonymize(db, dataset, model, params, seed=seed)
                seconds = time.perf_counter() - started
                run = api.get_run(db, dataset, "latest")
                verified = api.verify(db, dataset, run)
                mining = ("-" if exp != "2" else
                          f"{metrics.util_mining(db, dataset, run)['util_mining']:.3f}")
                check = "-"
                if not args.no_check:
                    out = api.export_dataset(db, dataset, work / f"out_{label}_{os.getpid()}.dat",
                                             run=run)
                    published = oracle.read_fimi(out)
                    member = oracle.member_function(original, setting, seed, fraction)
                    rho = Fraction(str(args.rho))
                    subset = oracle.is_record_subset(original, published)
                    if exp == "2s":
                        n = 4 * run.figures["samples_per_l"]
                        shares = [oracle.sampled_unsafe_share(original, published, member, rho,
                                                              ell, n, 1000 + seed)
                                  for ell in range(1, int(m) + 1)]
                        check = (f"{'ok' if subset else 'NOT SUBSET'}, max sampled share "
                                 f"{max(shares):.4f} (n={n}/l)")
                    else:
                        bad = oracle.count_unsafe_adversaries(
                            original, published, member, rho, None if m == "all" else int(m))
                        check = "ok" if bad == 0 and subset else f"FAIL ({bad} unsafe)"
                f = run.figures
                print(f"| {label} | {setting} | {'2' if exp == '2s' else '1'} | {m} | "
                      f"{db.name} | {dataset.n_records} | {f['occurrences']} | "
                      f"{f['suppressed']} | {f['util_info']:.4f} | {f['util_dist']:.2e} | "
                      f"{mining} | {f['rounds']} | {seconds:.1f} | "
                      f"{'ok' if verified.ok else 'FAIL'} | {check} |", flush=True)


if __name__ == "__main__":
    main()
