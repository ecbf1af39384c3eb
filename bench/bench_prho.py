"""Benchmark of --model prho (Nakagawa et al.) on BMS-WebView; prints Markdown table rows.

Usage: python bench/bench_prho.py [--backend URL] [--exp 1|2|2s] [--data bms1,bms2]
       [--settings fixed,personalized] [--rho 0.5] [--fraction 0.4] [--m all] [--seeds 1]
       [--choice paper|fewest] [--repair-pool N] [--workdir DIR]

* ``--exp 1`` (Fig. 1): the records with at most 5 items (BMS-WebView-1'/2'), SUPPRESSOR with
  every adversary (--m all), fixed vs personalized, 40% sensitive; util_mining as in Exp. 2.
* ``--exp 2`` (Figs. 3-4): BMS-WebView-2', SUPPRESSOR, fixed+ vs personalized+, 10%, m = 5,
  with util_mining (minsup 0.05%, minconf 30%).
* ``--exp rules``: no run; the rules Q -> e of the input with conf > ρ (Q of a record, any
  size) and how many of them each setting makes sensitive (some u ⊇ Q with e ∈ E_u): why
  personalized suppresses more than fixed at the same fraction.
* ``--exp 2s`` (Figs. 2, 5-8): full BMS-WebView-2, SAMPLESUPPRESSOR, m = 5, ε = δ = 0.05
  (no util_mining: the paper could not mine the full data either).

Each output is exported as FIMI and checked independently in plain Python
(tests/oracle/prho_oracle.py): exactly for SUPPRESSOR (every adversary), by 4·n_S fresh
adversaries per ℓ for SAMPLESUPPRESSOR; besides ``setanon verify``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections import Counter
from fractions import Fraction
from itertools import combinations
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


def risky_rules(records: oracle.Records, rho: Fraction
                ) -> tuple[list[tuple[frozenset[str], str, int]], dict[frozenset[str], list[int]]]:
    """Rules Q -> e of D with conf > ρ and N_s(e) (eq. 7), and the records holding each Q."""
    counts: Counter[frozenset[str]] = Counter()
    for record in records:
        for size in range(1, len(record) + 1):
            counts.update(frozenset(c) for c in combinations(sorted(record), size))
    rules = [(itemset - {e}, e, math.ceil(sx - rho * counts[itemset - {e}]))
             for itemset, sx in counts.items() if len(itemset) >= 2
             for e in itemset if sx > rho * counts[itemset - {e}]]
    wanted = {q for q, _, _ in rules}
    holders: dict[frozenset[str], list[int]] = {q: [] for q in wanted}
    for u, record in enumerate(records):
        for size in range(1, len(record) + 1):
            for c in combinations(sorted(record), size):
                key = frozenset(c)
                if key in holders:
                    holders[key].append(u)
    return rules, holders


def sensitivity_table(label: str, source: Path, settings: list[str], fraction: float,
                      rho: Fraction, seeds: list[int]) -> None:
    """Print, per setting, the risky rules some adversary may use (Def. 2) and by support."""
    records = oracle.read_fimi(source)
    rules, holders = risky_rules(records, rho)
    bands = Counter("1" if len(holders[q]) == 1 else "2-4" if len(holders[q]) < 5 else "5+"
                    for q, _, _ in rules)
    print(f"{label}: {len(rules)} rules with conf > {rho} in D; by supp(Q): 1: {bands['1']}, "
          f"2-4: {bands['2-4']}, >= 5: {bands['5+']}")
    print("| data | setting | seed | sensitive rules | share | share, supp(Q) = 1 |"
          " share, supp(Q) 2-4 | share, supp(Q) >= 5 | sum of N_s(e) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for setting in settings:
        for seed in seeds:
            member = oracle.member_function(records, setting, seed, fraction)
            hit: Counter[str] = Counter()
            total: Counter[str] = Counter()
            need = 0
            for q, e, n_s in rules:
                users = holders[q]
                band = "1" if len(users) == 1 else "2-4" if len(users) < 5 else "5+"
                total[band] += 1
                sensitive = any(member(u, e) for u in users)
                hit[band] += sensitive
                need += n_s if sensitive else 0
            shares = " | ".join(f"{hit[b] / total[b]:.3f}" if total[b] else "-"
                                for b in ("1", "2-4", "5+"))
            print(f"| {label} | {setting} | {seed} | {sum(hit.values())} | "
                  f"{sum(hit.values()) / len(rules):.3f} | {shares} | {need} |", flush=True)


def extract(source: Path, target: Path, share: float, seed: int) -> Path:
    """A random ``share`` of the records (the paper's Sec. 6.1 runs on 10% extracts)."""
    lines = source.read_text().splitlines()
    rng = random.Random(seed)
    keep = sorted(rng.sample(range(len(lines)), round(share * len(lines))))
    target.write_text("\n".join(lines[i] for i in keep) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default=None)
    parser.add_argument("--exp", default="1", choices=["1", "2", "2s", "rules"])
    parser.add_argument("--data", default=None)
    parser.add_argument("--settings", default=None)
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--fraction", type=float, default=None)
    parser.add_argument("--m", default=None)
    parser.add_argument("--eps", type=float, default=0.05)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--workdir", default="/tmp/bench_prho")
    parser.add_argument("--choice", default="paper", choices=["paper", "fewest"])
    parser.add_argument("--repair-pool", type=int, default=1,
                        help="SAMPLESUPPRESSOR: repair from N x n_S draws per sweep (1 = paper)")
    parser.add_argument("--share", type=float, default=None,
                        help="run on a random extract of this share of the records (seeded by "
                             "--extract-seed), as the paper's 10%% extracts")
    parser.add_argument("--extract-seed", type=int, default=1)
    args = parser.parse_args()
    exp = args.exp
    data = (args.data or ("bms1,bms2" if exp in ("1", "rules") else "bms2")).split(",")
    settings = (args.settings or ("fixed,personalized" if exp in ("1", "rules")
                                  else "fixed+,personalized+")).split(",")
    fraction = args.fraction or (0.4 if exp in ("1", "rules") else 0.1)
    m = args.m or ("all" if exp == "1" else "5")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if exp == "rules":
        for name in data:
            sensitivity_table(f"{name}-c5", cutoff(FILES[name], work / f"{name}-c5.dat", 5),
                              settings, fraction, Fraction(str(args.rho)),
                              [int(s) for s in args.seeds.split(",")])
        return
    url = args.backend or f"duckdb:///{work / f'bench{exp}.duckdb'}"
    db = api.open_database(url, "bench_prho")
    model = require_model("prho")
    print("| data | setting | choice | alg | m | backend | records | occurrences | suppressed"
          " | util_info | util_dist | util_mining | rounds (sweeps) | seconds | verify"
          " | independent check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in data:
        if exp == "2s":
            source, label = FILES[name], name
        else:
            source = cutoff(FILES[name], work / f"{name}-c5.dat", 5)
            label = f"{name}-c5"
        if args.share:
            label = f"{label}-x{round(100 * args.share)}s{args.extract_seed}"
            source = extract(source, work / f"{label}.dat", args.share, args.extract_seed)
        if api.find_dataset(db, label) is not None:
            api.drop_dataset(db, api.get_dataset(db, label))
        dataset = api.load_transactions(db, source, label)
        original = oracle.read_fimi(source)
        for setting in settings:
            for seed in [int(s) for s in args.seeds.split(",")]:
                params: dict = {"rho": args.rho, "setting": setting,
                                "sensitive_fraction": fraction, "m": m, "choice": args.choice}
                if exp == "2s":
                    params.update(epsilon=args.eps, delta=args.eps, repair_pool=args.repair_pool)
                started = time.perf_counter()
                api.anonymize(db, dataset, model, params, seed=seed)
                seconds = time.perf_counter() - started
                run = api.get_run(db, dataset, "latest")
                verified = api.verify(db, dataset, run)
                mining = ("-" if exp == "2s" else
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
                alg = "2" if exp == "2s" else "1"
                print(f"| {label} | {setting} | {args.choice} | {alg} | {m} | "
                      f"{db.name} | {dataset.n_records} | {f['occurrences']} | "
                      f"{f['suppressed']} | {f['util_info']:.4f} | {f['util_dist']:.2e} | "
                      f"{mining} | {f.get('sweeps', f['rounds'])} | {seconds:.1f} | "
                      f"{'ok' if verified.ok else 'FAIL'} | {check} |", flush=True)


if __name__ == "__main__":
    main()
