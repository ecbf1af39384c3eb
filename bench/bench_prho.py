"""Benchmark of --model prho (Nakagawa et al.) on BMS-WebView; prints Markdown table rows.

Usage: python bench/bench_prho.py [--backend URL] [--exp 1|2|2s] [--data bms1,bms2]
       [--settings fixed,personalized] [--rho 0.5] [--fraction 0.4] [--m all] [--seeds 1]
       [--choice paper|fewest] [--repair-pool N] [--stop-rule paper|bound] [--exact-upto L]
       [--share 0.1]
       [--trials 10] [--workdir DIR]

* ``--exp 1`` (Fig. 1): the records with at most 5 items (BMS-WebView-1'/2'), SUPPRESSOR with
  every adversary (--m all), fixed vs personalized, 40% sensitive; util_mining as in Exp. 2.
* ``--exp 2`` (Figs. 3-4): BMS-WebView-2', SUPPRESSOR, fixed+ vs personalized+, 10%, m = 5,
  with util_mining (minsup 0.05%, minconf 30%).
* ``--exp rules``: no run; the rules Q -> e of the input with conf > ρ (Q of a record, any
  size) and how many of them each setting makes sensitive (some u ⊇ Q with e ∈ E_u): why
  personalized suppresses more than fixed at the same fraction.
* ``--exp 2s`` (Figs. 2, 5-8): full BMS-WebView-2, SAMPLESUPPRESSOR, m = 5, ε = δ = 0.05
  (no util_mining: the paper could not mine the full data either).
* ``--exp cost --m 2,3,4,5``: at each m, SUPPRESSOR (the exact check) and SAMPLESUPPRESSOR
  (--eps) side by side on the whole data: which is the cheaper one as m grows (issue 23).
  ``--file PATH`` runs on a FIMI file of one's own (e.g. ``setanon generate quest`` exported).

``--share 0.1 --trials 10`` is the paper's own protocol (Sec. 6.1): ten trials, each on its own
random 10% extract with its own draw of sensitive items; a last table gives mean ± standard
deviation per (data, setting) and how many trials passed each check.

Each output is exported as FIMI and checked independently in plain Python
(tests/oracle/prho_oracle.py): exactly for SUPPRESSOR (every adversary), by 4·n_S fresh
adversaries per ℓ for SAMPLESUPPRESSOR; besides ``setanon verify``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from setanon_sql import api, metrics
from setanon_sql.models import require_model
from setanon_sql.models.prho.params import parse_params
from setanon_sql.models.prho.verify import verify_sample_size
from setanon_sql.stats import binomial
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


def check_output(db: Any, dataset: Any, run: Any, original: oracle.Records, label: str,
                 sampled: bool, setting: str, seed: int, fraction: float, rho: Fraction, m: str,
                 work: Path) -> tuple[str, bool]:
    """The independent check of one output (plain Python, from the exported file): exact for
    SUPPRESSOR, for SAMPLESUPPRESSOR as many fresh adversaries per ℓ as ``verify`` draws, and
    the one-sided Clopper-Pearson upper bound of the largest share below ε. Returns (text,
    passed)."""
    out = api.export_dataset(db, dataset, work / f"out_{label}_{os.getpid()}.dat", run=run)
    published = oracle.read_fimi(out)
    member = oracle.member_function(original, setting, seed, fraction)
    subset = oracle.is_record_subset(original, published)
    if sampled:
        f = run.figures
        n = verify_sample_size(parse_params(run.params))
        shares = [oracle.sampled_unsafe_share(original, published, member, rho, ell, n,
                                              1000 + seed)
                  for ell in range(1, int(m) + 1)]
        # the largest share's one-sided Clopper-Pearson upper bound must be below epsilon
        upper = binomial.upper_bound(round(max(shares) * n), n, f["delta"])
        passed = subset and upper < f["epsilon"]
        return (f"{'ok' if passed else 'NOT SUBSET' if not subset else 'FAIL'}, max sampled "
                f"share {max(shares):.4f}, upper bound {upper:.4f} (n={n}/l)"), passed
    bad = oracle.count_unsafe_adversaries(original, published, member, rho,
                                          None if m == "all" else int(m))
    passed = bad == 0 and subset
    return ("ok" if passed else f"FAIL ({bad} unsafe)"), passed


def spread(values: list[float], digits: str) -> str:
    """``mean ± sd`` of one cell's trials (the paper's Sec. 6.1 reports both)."""
    if len(values) < 2:
        return format(values[0], digits)
    return f"{format(statistics.mean(values), digits)} ± {format(statistics.stdev(values), digits)}"


def print_summary(cells: dict[tuple[str, str], list[dict[str, float]]], exp: str) -> None:
    """One row per (data, setting): mean ± sd over the trials, and how many checks passed."""
    print("\n| data | setting | trials | records | suppressed | util_info | util_dist | "
          "util_mining | seconds | verify ok | independent check ok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (label, setting), trials in cells.items():
        def column(key: str, digits: str, rows: list[dict[str, float]] = trials) -> str:
            return spread([row[key] for row in rows], digits)
        mining = column("util_mining", ".3f") if exp in ("1", "2") else "-"
        print(f"| {label} | {setting} | {len(trials)} | {column('records', '.0f')} | "
              f"{column('suppressed', '.0f')} | {column('util_info', '.4f')} | "
              f"{column('util_dist', '.2e')} | {mining} | {column('seconds', '.1f')} | "
              f"{sum(int(row['verified']) for row in trials)}/{len(trials)} | "
              f"{sum(int(row['checked']) for row in trials)}/{len(trials)} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default=None)
    parser.add_argument("--exp", default="1", choices=["1", "2", "2s", "rules", "cost"])
    parser.add_argument("--data", default=None)
    parser.add_argument("--file", type=Path, default=None,
                        help="a FIMI file to run on (named by its stem) instead of --data")
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
    parser.add_argument("--stop-rule", default="paper", choices=["paper", "bound"],
                        help="SAMPLESUPPRESSOR's stopping rule (paper = Alg. 2)")
    parser.add_argument("--exact-upto", type=int, default=0,
                        help="SAMPLESUPPRESSOR: start the sweeps from SUPPRESSOR's output for "
                             "adversaries of up to this many items (0 = the paper)")
    parser.add_argument("--share", type=float, default=None,
                        help="run on a random extract of this share of the records (seeded by "
                             "--extract-seed), as the paper's 10%% extracts")
    parser.add_argument("--extract-seed", type=int, default=1)
    parser.add_argument("--trials", type=int, default=None,
                        help="the paper's ten trials (Sec. 6.1): trial t draws extract t (with "
                             "--share) and sensitive items with seed t; prints mean ± sd")
    args = parser.parse_args()
    exp = args.exp
    if args.file is not None:
        FILES[args.file.stem] = args.file
    data = (args.data or (args.file.stem if args.file is not None else
                          "bms1,bms2" if exp in ("1", "rules") else "bms2")).split(",")
    settings = (args.settings or ("fixed,personalized" if exp in ("1", "rules")
                                  else "fixed+,personalized+")).split(",")
    fraction = args.fraction or (0.4 if exp in ("1", "rules") else 0.1)
    m = args.m or ("all" if exp == "1" else "5")
    # (m, sampled) of each run: the exact SUPPRESSOR, SAMPLESUPPRESSOR, or both per m (cost)
    variants = ([(m_value, sampled) for m_value in m.split(",") for sampled in (False, True)]
                if exp == "cost" else [(m, exp == "2s")])
    rho = Fraction(str(args.rho))
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    if exp == "rules":
        for name in data:
            sensitivity_table(f"{name}-c5", cutoff(FILES[name], work / f"{name}-c5.dat", 5),
                              settings, fraction, rho, seeds)
        return
    # (extract seed, anonymization seeds) per trial; without --trials, one extract, --seeds.
    trials = ([(t, [t]) for t in range(1, args.trials + 1)] if args.trials
              else [(args.extract_seed, seeds)])
    url = args.backend or f"duckdb:///{work / f'bench{exp}.duckdb'}"
    db = api.open_database(url, "bench_prho")
    model = require_model("prho")
    print("| data | setting | choice | alg | m | backend | records | occurrences | suppressed"
          " | util_info | util_dist | util_mining | rounds (sweeps) | seconds | verify"
          " | independent check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    cells: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for name in data:
        for extract_seed, trial_seeds in trials:
            if exp in ("2s", "cost"):
                source, label = FILES[name], name
            else:
                source = cutoff(FILES[name], work / f"{name}-c5.dat", 5)
                label = f"{name}-c5"
            cell_label = f"{label}-x{round(100 * args.share)}" if args.share else label
            if args.share:
                label = f"{cell_label}s{extract_seed}"
                source = extract(source, work / f"{label}.dat", args.share, extract_seed)
            if api.find_dataset(db, label) is not None:
                api.drop_dataset(db, api.get_dataset(db, label))
            dataset = api.load_transactions(db, source, label)
            original = oracle.read_fimi(source)
            for setting, (m, sampled), seed in ((setting, variant, seed)
                                                for setting in settings
                                                for variant in variants
                                                for seed in trial_seeds):
                params: dict[str, Any] = {"rho": args.rho, "setting": setting,
                                          "sensitive_fraction": fraction, "m": m,
                                          "choice": args.choice}
                if sampled:
                    params.update(epsilon=args.eps, delta=args.eps,
                                  repair_pool=args.repair_pool, stop_rule=args.stop_rule,
                                  exact_upto=args.exact_upto)
                started = time.perf_counter()
                api.anonymize(db, dataset, model, params, seed=seed)
                seconds = time.perf_counter() - started
                run = api.get_run(db, dataset, "latest")
                verify_started = time.perf_counter()
                verified = api.verify(db, dataset, run).ok
                verify_seconds = time.perf_counter() - verify_started
                mined = exp in ("1", "2")  # 2s and cost: the paper mines no full data
                mining = (metrics.util_mining(db, dataset, run)["util_mining"] if mined
                          else math.nan)
                check, checked = "-", False
                if not args.no_check:
                    check, checked = check_output(db, dataset, run, original, label, sampled,
                                                  setting, seed, fraction, rho, m, work)
                f = run.figures
                cells[cell_label, setting].append(
                    {"records": dataset.n_records, "suppressed": f["suppressed"],
                     "util_info": f["util_info"], "util_dist": f["util_dist"],
                     "util_mining": mining, "seconds": seconds, "verified": verified,
                     "checked": checked})
                alg = "2" if sampled else "1"
                phase = f.get("exact_phase")
                sweeps = f"{f.get('sweeps', f['rounds'])}" + (
                    f" (after exact <= {phase['upto']}: {phase['rounds']} rounds, "
                    f"{phase['seconds']} s)" if phase else "")
                print(f"| {label} | {setting} | {args.choice} | {alg} | {m} | "
                      f"{db.name} | {dataset.n_records} | {f['occurrences']} | "
                      f"{f['suppressed']} | {f['util_info']:.4f} | {f['util_dist']:.2e} | "
                      f"{f'{mining:.3f}' if mined else '-'} | "
                      f"{sweeps} | {seconds:.1f} | "
                      f"{'ok' if verified else 'FAIL'} ({verify_seconds:.1f} s) | {check} |",
                      flush=True)
            if args.share:
                api.drop_dataset(db, dataset)
    if args.trials:
        print_summary(cells, exp)


if __name__ == "__main__":
    main()
