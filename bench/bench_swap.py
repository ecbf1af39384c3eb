"""Tendency hiding: PartSwap vs RandSwap vs PartSupp, DuckDB and PostgreSQL.

Prints one Markdown row per (dataset, backend, method) with the paper's figures (Gunawan &
Mambo, Figs. 3-6): frequent itemsets found in D and D~ and their similarity (Eq. 2) at the
supports given, Diss (Eq. 3), items lost, the share of records with a tendency whose tendency
is hidden, run time, SQL statements and passes over the data (statements reading the items
table), whether ``verify`` passes and whether the brute-force oracle of the tests accepts the
exported files (real data only). Figures only: no assertions.

"suppress" is ``--model swap --method suppress`` (every tendency item deleted). PartSupp is
``--model rho`` (Jia et al. partial suppression), configured by ``--partsupp``
(default ρ = 0.7, 40% sensitive items, H_mine, adversary of at most m = 1 item: the paper names
no configuration). Its output is measured in the categories of the PartSwap run of the same
dataset (:mod:`setanon_sql.models.swap.compare`).

Usage (from the repository root)::

    python bench/bench_swap.py                                  # BMS1, BMS2; both backends
    python bench/bench_swap.py --datasets bms2 --backends duckdb --methods similarity,partsupp
    python bench/bench_swap.py --generate 1000000 --backends duckdb --methods similarity \\
        --no-metrics --profile

Categories: ``--random-categories 50`` (the paper's artificial categorization), seeded.
``--generate N`` creates N Quest-style transactions in the DBMS (:mod:`setanon_sql.synth.quest`,
T10I4 over 2,000 patterns and 1,000 items unless ``--quest T,I,L,N`` says otherwise) and prints
their shape. PostgreSQL comes from ``tests/support/pg_server.py`` (``$SETANON_TEST_PG_URL``,
Docker, or the local server binaries in a temporary directory).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.swap.compare import compare_run
from setanon_sql.models.swap.params import PAPER_SUPPORTS
from setanon_sql.synth.quest import QuestParams, generate_quest
from setanon_sql.synth.shape import format_shape, shape

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
DATASETS = {"bms1": "bms-webview-1/BMS1.dat", "bms2": "bms-webview-2/BMS2.dat"}


def _urls(backends: list[str], workdir: Path, stack: contextlib.ExitStack,
          memory_limit: str | None = None) -> dict[str, str]:
    urls = {}
    if "duckdb" in backends:
        urls["duckdb"] = f"duckdb:///{workdir / 'swap.duckdb'}" + (
            f"?memory_limit={memory_limit}" if memory_limit else "")
    if "postgres" in backends:
        from tests.support.pg_server import postgres_url

        url = stack.enter_context(postgres_url())
        if url is None:
            print("no PostgreSQL available: skipping it", file=sys.stderr)
        else:
            urls["postgres"] = url
    return urls


def _load(db: Backend, args: argparse.Namespace, label: str) -> api.Dataset:
    if label.startswith("synth"):
        started = time.perf_counter()
        t, i, patterns, items = args.quest
        params = QuestParams(int(label[5:]), t, i, int(patterns), int(items))
        dataset = generate_quest(db, label, params, seed=args.seed)
        print(f"# generated {label} ({params.name()}, L {int(patterns):,}, N {int(items):,}) in "
              f"the DBMS in {time.perf_counter() - started:.1f} s; load average "
              f"{os.getloadavg()}", flush=True)
        print("# " + format_shape(shape(db, dataset)).replace("\n", "\n# "), flush=True)
        return dataset
    return api.load_transactions(db, args.data_dir / DATASETS[label], label)


def _row(label: str, backend: str, method: str, figures: dict, seconds: float,
         verified: str, log: list[tuple[str, float]], items_name: str) -> str:
    fi = " / ".join(f"{f['fi_original']}:{f['fi_anonymized']}:{f['fi_similarity']:.3f}"
                    for f in figures.get("frequent_itemsets", []))
    phases = figures.get("seconds", {})
    # PostgreSQL's ANALYZE after a step samples its table: logged, but not a pass over it.
    passes = sum(1 for sql, _ in log
                 if items_name in sql and not sql.lstrip().upper().startswith("ANALYZE"))
    return (f"| {label} | {backend} | {method} | {figures['tendency_records']:,} | "
            f"{figures['hidden_share']:.4f} | {figures['tendency_changed_share']:.4f} | "
            f"{figures['items_lost']:,} | {figures['diss']:.5f} | {fi or '-'} | "
            f"{seconds:.1f} | {phases.get('destinations', 0):.1f} | "
            f"{phases.get('metrics', 0):.1f} | {len(log)} / {passes} | {verified} |")


def _timed_run(db: Backend, dataset: api.Dataset, model: str, params: dict, seed: int,
               verify: bool) -> tuple[api.Run, float, str, list[tuple[str, float]]]:
    db.statement_log = []
    started = time.perf_counter()
    api.anonymize(db, dataset, require_model(model), params, seed=seed)
    seconds = time.perf_counter() - started
    log, db.statement_log = db.statement_log, None
    run = api.get_run(db, dataset, "latest")
    verified = ("ok" if api.verify(db, dataset, run).ok else "FAILED") if verify else "-"
    return run, seconds, verified, log


def _profile(log: list[tuple[str, float]], top: int = 5) -> None:
    for sql, seconds in sorted(log, key=lambda e: -e[1])[:top]:
        print(f"#   {seconds:7.2f} s  {' '.join(sql.split())[:160]}")


def _labels_and_cats(db: Backend, dataset: api.Dataset, run: api.Run) -> dict[str, int]:
    from sqlglot import exp

    labels = db.table(dataset.dict_table(dataset.set_attributes[0]), "d")
    return {label: int(c) for label, c in db.query(
        exp.select("d.label", "c.category").from_(db.table(f"r{run.run_id}_cats", "c"))
        .join(labels, on="d.item_id = c.item_id"))}


def _oracle(db: Backend, dataset: api.Dataset, run: api.Run, swap_run: api.Run,
            figures: dict, workdir: Path) -> str:
    """The independent check of the test suite, on the exported files of a full run."""
    from sqlglot import exp

    from tests.oracle import swap_oracle as oracle

    original = oracle.read_fimi(api.export_dataset(db, dataset, workdir / "orig.dat"))
    published = oracle.read_fimi(api.export_dataset(db, dataset, workdir / "pub.dat", run=run))
    cats = _labels_and_cats(db, dataset, swap_run)
    if run.model == "rho":
        problems = oracle.changed_share_problem(original, published, cats, figures)
        if abs(oracle.hidden_share(original, published, cats) - figures["hidden_share"]) > 1e-9:
            problems.append("hidden share differs")
        if abs(oracle.diss(original, published) - figures["diss"]) > 1e-9:
            problems.append("Diss differs")
    elif run.params.get("method") == "suppress":
        problems = oracle.check_suppression(original, published, cats, figures)
    else:
        pairs = [(int(a), int(b)) for a, b in db.query(
            exp.select("record_id", "partner_id").from_(db.table(f"r{run.run_id}_pairs")))]
        check = (oracle.check_random_swap if run.params.get("method") == "random"
                 else oracle.check_similarity_swap)
        problems = check(original, published, cats, pairs, figures)
    return "oracle ok" if not problems else f"ORACLE: {problems[:3]}"


def _exactness(db: Backend, dataset: api.Dataset, args: argparse.Namespace,
               workdir: Path) -> None:
    """How often a window-stage destination misses the least-Jaccard partner that was free.

    For each pair direction (a, b) with Jaccard > 0 accepted in round r (a seeded sample of
    ``--sample`` per stage), the brute force (plain Python, the test oracle's Alg. 2 requisites)
    looks for a record c of a's kind, free before and after round r, with a valid pair (a, c)
    of smaller Jaccard similarity: (a, c) was available and better, so the
    greedy would have taken it had it been a candidate. Shuffle pairs have Jaccard 0 and never
    miss; the exact stage never misses by construction, which the count confirms. "Paper
    min" compares with the least Jaccard over ALL valid candidates of the database, the paper's
    per-source choice that ignores that a destination swaps once.
    """
    from sqlglot import exp

    from tests.oracle import swap_oracle as oracle

    original = oracle.read_fimi(api.export_dataset(db, dataset, workdir / "exact-orig.dat"))
    for limit in args.exactness:
        params = {"random_categories": args.categories, "metrics": False, "exact_limit": limit}
        run, seconds, _, _ = _timed_run(db, dataset, "swap", params, args.seed, False)
        cats = _labels_and_cats(db, dataset, run)
        shuffles = {kind: sum(e[0] == "shuffle" for e in run.figures[f"rounds_{kind}"])
                    for kind in ("partial", "full")}
        later = {kind: "+".join(sorted({e[0] for e in run.figures[f"rounds_{kind}"]}
                                       - {"shuffle"})) for kind in ("partial", "full")}
        pairs = db.query(exp.select("record_id", "partner_id", "kind", "round")
                         .from_(db.table(f"r{run.run_id}_pairs")))
        matched = {int(a): int(r) for a, _, _, r in pairs}
        kinds = {t: oracle.tendency(items, cats)[0] for t, items in original.items()}
        of_kind = {kind: [t for t, k in kinds.items() if k == kind] for kind in ("partial", "full")}
        by_stage: dict[str, list[int]] = {}
        positive: dict[str, list[tuple[int, int, str, int, float]]] = {}
        for a, b, kind, r in pairs:
            a, b, r = int(a), int(b), int(r)
            name = f"{kind} {'shuffle' if r <= shuffles[kind] else later[kind]}"
            by_stage.setdefault(name, [0, 0, 0, 0, 0])[0] += 1
            jc = oracle.jaccard(original[a], original[b])
            if jc > 0:  # a pair with Jaccard 0 is an exact minimum: nothing is below 0
                positive.setdefault(name, []).append((a, b, kind, r, jc))
        rng = random.Random(args.seed)
        for name, found in positive.items():
            tally = by_stage[name]
            tally[1] = len(found)
            for a, b, kind, r, jc in rng.sample(found, min(len(found), args.sample)):
                better = [c for c in of_kind[kind] if c not in (a, b)
                          and oracle.jaccard(original[a], original[c]) < jc
                          and oracle.valid_pair(original[a], original[c], cats)]
                tally[2] += 1
                tally[3] += any(matched.get(c, 10**9) > r for c in better)
                tally[4] += bool(better)
        for name, (n, pos, checked, missed, paper) in sorted(by_stage.items()):
            print(f"| {dataset.name} | --exact-limit {limit} | {name} | {n:,} | {pos:,} | "
                  f"{checked:,} | {missed:,} | {paper:,} | {seconds:.1f} |", flush=True)


def _partsupp(text: str) -> dict:
    rho, fraction, heuristic, m = text.split(",")
    return {"rho": float(rho), "sensitive_fraction": float(fraction), "heuristic": heuristic,
            "m": int(m)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="bms1,bms2")
    parser.add_argument("--backends", default="duckdb,postgres")
    parser.add_argument("--methods", default="similarity,random,suppress,partsupp")
    parser.add_argument("--categories", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--generate", type=lambda s: [int(x) for x in s.split(",")],
                        default=None, help="N[,N...] Quest transactions instead of --datasets")
    parser.add_argument("--quest", type=lambda s: [float(x) for x in s.split(",")],
                        default=[10.0, 4.0, 2000.0, 1000.0],
                        help="T,I,L,N of the Quest transactions of --generate")
    parser.add_argument("--partsupp", type=_partsupp, default=_partsupp("0.7,0.4,mine,1"),
                        help="rho,sensitive fraction,heuristic,m of the PartSupp baseline")
    parser.add_argument("--no-metrics", action="store_true", help="skip FI similarity")
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the brute-force oracle on the exported files (real data)")
    parser.add_argument("--profile", action="store_true", help="print the slowest statements")
    parser.add_argument("--exactness", type=lambda s: [int(x) for x in s.split(",")],
                        default=None, help="LIMIT[,LIMIT] --exact-limit values: measure misses "
                        "of the least-Jaccard choice instead of the comparison table")
    parser.add_argument("--sample", type=int, default=400,
                        help="--exactness: pair directions with Jaccard > 0 checked per stage")
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--memory-limit", default=None,
                        help="DuckDB's memory_limit (e.g. 6GB; default: setanon's, half the RAM)")
    args = parser.parse_args()
    labels = ([f"synth{n}" for n in args.generate] if args.generate
              else args.datasets.split(","))
    if args.exactness:
        print("| dataset | run | stage | pair directions | with Jaccard > 0 | of these checked "
              "| missed a better free partner | above the paper's min over all | run s |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| dataset | backend | method | records with tendency | hidden (no tendency item "
              "left) | tendency changed | items lost | Diss | FI(D):FI(D~):U per support | "
              "run s | matching s | metrics s | statements / passes | verify, oracle |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        for backend_name, url in _urls(args.backends.split(","), workdir, stack,
                                              args.memory_limit).items():
            schema = f"swapbench_{int(time.time())}"
            db = api.open_database(url, schema)
            try:
                for label in labels:
                    dataset = _load(db, args, label)
                    items_name = dataset.items_table(dataset.set_attributes[0])
                    if args.exactness:
                        _exactness(db, dataset, args, workdir)
                        continue
                    swap_run = None
                    for method in args.methods.split(","):
                        if method == "partsupp":
                            if swap_run is None:
                                print("# partsupp needs a swap run first", file=sys.stderr)
                                continue
                            run, seconds, verified, log = _timed_run(
                                db, dataset, "rho", args.partsupp, args.seed,
                                not args.no_verify)
                            figures = compare_run(db, dataset, run, swap_run,
                                                  PAPER_SUPPORTS if not args.no_metrics
                                                  else (), 3)
                            p = args.partsupp
                            method = (f"partsupp (rho {p['rho']}, {p['sensitive_fraction']:.0%}"
                                      f" sensitive, {p['heuristic']}, m={p['m']})")
                        else:
                            params = {"random_categories": args.categories, "method": method,
                                      "metrics": not args.no_metrics}
                            run, seconds, verified, log = _timed_run(
                                db, dataset, "swap", params, args.seed, not args.no_verify)
                            swap_run = swap_run or run
                            figures = run.figures
                        if not args.no_check and not args.generate:
                            verified += ", " + _oracle(db, dataset, run, swap_run or run,
                                                       figures, workdir)
                        print(_row(label, backend_name, method, figures, seconds, verified,
                                   log, items_name), flush=True)
                        print(f"# load average after the run: {os.getloadavg()}", flush=True)
                        if args.profile:
                            _profile(log)
                            rounds = {k: v for k, v in figures.items()
                                      if k.startswith(("rounds", "stopped"))}
                            print(f"#   {rounds}")
            finally:
                with contextlib.suppress(Exception):
                    db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                db.close()


if __name__ == "__main__":
    main()
