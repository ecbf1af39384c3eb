"""k^m-anonymity (``--model km``) on BMS-WebView-2 and Retail, DuckDB and PostgreSQL.

Prints one Markdown row per (dataset, backend, variant, k, m): published labels (the paper's
"partitions"), NCP, share of occurrences generalized, rounds, run and verify time (the run's
seconds are ``api.anonymize``'s, which verifies the run before it returns: they include one
verify, and "verify s" times a second one), whether ``verify`` passes and, with ``--check``,
an independent brute-force check of the FIMI export plus ``--mapping``
(tests/oracle/km_oracle.py; sampled sizes by fresh uniform samples of the ORIGINAL ℓ-itemsets
drawn here in plain Python). Figures only: no assertions.

Variants: ``exact`` is σ = 1 (the apriori-based anonymization, Acs et al. Sec. V-C);
``sampled`` is σ = ``--sigma`` (default 0.99) by Alg. 2, exact up to ``--exact-upto``.

Each cell runs in a child process under ``--timeout`` seconds (SIGINT, then SIGKILL after 30 s),
so one slow cell cannot eat a locked benchmark slot; such a cell prints "timeout" (and, with
``--profile``, where its time went until then). Cells that would start after ``--budget``
seconds print "not measured".

Usage (from the repository root; Retail's hierarchy is derived by make_retail_hierarchy.py)::

    python bench/bench_km.py --workdir /tmp/kmbench --datasets bms2 --backends duckdb \\
        --variants exact,sampled --k 5,10,20 --m 2,3,4
    python bench/bench_km.py --workdir /tmp/kmbench --k 5 --m 2 --check

PostgreSQL: ``--pg-url``, else ``tests/support/pg_server.py`` (``$SETANON_TEST_PG_URL``,
Docker, or the local server binaries in a temporary directory).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from setanon_sql.progress import Step

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.make_retail_hierarchy import distinct_items, range_hierarchy  # noqa: E402
from tests.oracle import km_oracle  # noqa: E402

DATASETS = {"bms2": ("bms-webview-2/BMS2.dat", "bms-webview-2/hierarchy_BMS2.txt"),
            "retail": ("retail/retail.dat", None),
            "cdr": ("", None)}  # generated into the workdir (--cdr-users), graph-constrained
# How the sampled sizes were decided (models/km/__init__.py): certified by enumeration, by
# γ samples, and pools failed by a violating sample.
POOL_FIGURES = ("pools_certified_exactly", "pools_certified_by_samples", "pools_failed_by_samples")
CHECK_SAMPLES = 45_845  # the paper's γ for σ = 0.99 (Sec. VI-E), per sampled size
CHECK_DELTA = 0.01


def _hierarchy_file(name: str, data: Path, workdir: Path, data_dir: Path) -> Path:
    """The shared hierarchy, or Retail's derived one (written once into the workdir)."""
    shipped = DATASETS[name][1]
    if shipped is not None:
        return data_dir / shipped
    target = workdir / f"hierarchy_{name}.txt"
    if not target.exists():
        paths = range_hierarchy(distinct_items(data))
        target.write_text("".join(";".join(path) + "\n" for path in paths))
    return target


# ---- independent check (plain Python over the exported files) -------------------------------

def _postings(records: list[frozenset[str]]) -> dict[str, set[int]]:
    index: dict[str, set[int]] = {}
    for n, record in enumerate(records):
        for item in record:
            index.setdefault(item, set()).add(n)
    return index


def _support(itemset: frozenset[str], postings: dict[str, set[int]]) -> int:
    lists = sorted((postings.get(item, set()) for item in itemset), key=len)
    return len(set.intersection(*lists)) if lists else 0


def sampled_violation(original: list[frozenset[str]], published: list[frozenset[str]],
                      mapping: dict[str, str], k: int, ell: int, samples: int,
                      seed: int) -> tuple[float, float]:
    """Estimated Pr[uniform ℓ-itemset of the ORIGINAL data is not k-anonymous once published]
    and its one-sided Hoeffding margin at confidence 1 - CHECK_DELTA.

    Uniform over Omega^ℓ by rejection: a record with probability ∝ C(|r|, ℓ), a uniform
    ℓ-subset of it (so Pr[s] ∝ supp(s)), kept with probability 1 / supp(s).
    """
    rng = random.Random(seed)
    long_enough = [r for r in original if len(r) >= ell]
    weights = list(itertools.accumulate(math.comb(len(r), ell) for r in long_enough))
    before, after = _postings(original), _postings(published)
    image_support: dict[frozenset[str], int] = {}
    bad = drawn = 0
    while drawn < samples:
        record = long_enough[bisect.bisect_right(weights, rng.random() * weights[-1])]
        itemset = frozenset(rng.sample(sorted(record), ell))
        if rng.random() * _support(itemset, before) >= 1:
            continue
        drawn += 1
        image = frozenset(mapping[item] for item in itemset)
        if image not in image_support:
            image_support[image] = _support(image, after)
        bad += image_support[image] < k
    return bad / samples, math.sqrt(math.log(1 / CHECK_DELTA) / (2 * samples))


def check_export(fimi: Path, mapping_file: Path, original_file: Path, hierarchy: Path,
                 k: int, m: int, sigma: float, exact_upto: int, ncp: float,
                 seed: int) -> dict[str, Any]:
    """Brute-force check of the published files; every figure computed here, none read back."""
    original = km_oracle.read_fimi(original_file)
    published = km_oracle.read_fimi(fimi)
    mapping = km_oracle.read_mapping(mapping_file)
    parent = km_oracle.read_hierarchy(hierarchy)
    result: dict[str, Any] = {
        "recoding_problems": len(km_oracle.generalization_problems(original, published,
                                                                   mapping)),
        "cut_problems": len(km_oracle.cut_problems(mapping, parent)),
        "ncp_difference": abs(km_oracle.ncp(original, mapping, parent) - ncp),
    }
    exact_sizes = m if sigma >= 1 else min(exact_upto, m)
    result["exact_violations"] = len(km_oracle.km_violations(published, [k] * m, exact_sizes))
    result["sampled"] = {ell: sampled_violation(original, published, mapping, k, ell,
                                                CHECK_SAMPLES, seed + ell)
                         for ell in range(exact_sizes + 1, m + 1)}
    within = all(share <= 1 - sigma for share, _ in result["sampled"].values())
    result["ok"] = (result["recoding_problems"] == 0 and result["cut_problems"] == 0
                    and result["exact_violations"] == 0 and result["ncp_difference"] < 1e-9
                    and within)
    return result


# ---- profile: seconds per km call site --------------------------------------------------------

def _call_site() -> str:
    """The two innermost frames in setanon_sql/models/km that issued the statement."""
    frame: Any = sys._getframe(2)
    sites: list[str] = []
    while frame is not None and len(sites) < 2:
        name = frame.f_code.co_filename
        if "/models/km/" in name:
            sites.append(f"{Path(name).stem}.{frame.f_code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return " < ".join(sites) or "other"


@dataclass
class Profile:
    """Seconds and statements per km call site, for the phase now running (search, verify).

    With ``keep``, the totals, the phase and the statement running now are written to that
    JSON file at each statement's start and end, so a cell stopped at its timeout (even by
    SIGKILL, while a statement runs) still tells where its time went (:func:`_spawn` prints
    it).
    """

    keep: Path | None
    phase: str = "search"
    totals: dict[str, list[float]] = field(default_factory=dict)

    def save(self, running: list[Any] | None) -> None:
        if self.keep is not None:
            scratch = self.keep.with_suffix(".tmp")
            scratch.write_text(json.dumps({"phase": self.phase, "totals": self.totals,
                                           "running": running}))
            scratch.replace(self.keep)

    def next_phase(self, phase: str) -> None:
        self.phase = phase
        self.totals.clear()


def profile_backend(backend: Any, keep: Path | None = None) -> Profile:
    """Wrap ``backend._timed`` so every statement adds its seconds to its km call site."""
    profile = Profile(keep)
    timed = backend._timed

    def wrapped(sql: str, params: Any, fetch: bool) -> Any:
        site = _call_site()
        profile.save([site, time.time()])
        started = time.perf_counter()
        try:
            return timed(sql, params, fetch)
        finally:
            entry = profile.totals.setdefault(site, [0.0, 0])
            entry[0] += time.perf_counter() - started
            entry[1] += 1
            profile.save(None)

    backend._timed = wrapped
    return profile


@dataclass
class ProgressLines:
    """With ``--profile``, each new progress step of the cell (:func:`setanon_sql.progress.
    report`) as a line on stderr with the seconds since the cell began: a cell stopped at its
    timeout then shows how far it got (which size, how many of γ samples), not only where its
    time went."""

    started: float
    last: str = ""

    def show(self, step: Step) -> None:
        line = f"{step.phase}: {step.detail}"
        if line != self.last:
            self.last = line
            print(f"# [{time.perf_counter() - self.started:8.1f} s] {line}", file=sys.stderr,
                  flush=True)


def saved_profile(keep: Path) -> tuple[str, str] | None:
    """(phase, profile as text) that a stopped cell left in ``keep`` (:class:`Profile`)."""
    if not keep.exists():
        return None
    saved = json.loads(keep.read_text())
    totals = saved["totals"]
    running = saved["running"]
    if running is not None:  # the statement the timeout stopped counts as far as it got
        entry = totals.setdefault(f"{running[0]} (running when stopped)", [0.0, 0])
        entry[0] += time.time() - running[1]
        entry[1] += 1
    return saved["phase"], format_profile(totals)


def format_profile(totals: dict[str, list[float]], top: int = 25) -> str:
    ranked = sorted(totals.items(), key=lambda item: -item[1][0])
    return "\n".join(f"#   {seconds:8.2f} s {int(calls):5d}x  {key}"
                     for key, (seconds, calls) in ranked[:top])


# ---- one cell, in a child process ------------------------------------------------------------

def run_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """Anonymize, verify and (optionally) check one cell; figures as a JSON-able dict."""
    from setanon_sql import api
    from setanon_sql.cli import interrupt_handling
    from setanon_sql.models import require_model
    from setanon_sql.progress import reporting_to

    db = api.open_database(cell["url"], "km_bench")
    dataset = api.find_dataset(db, cell["dataset"])
    params: dict[str, Any] = {"k": cell["k"], "m": cell["m"], "sigma": cell["sigma"],
                              "exact_upto": cell["exact_upto"], "trials": cell["trials"],
                              "certify": cell.get("certify", "auto")}
    if cell.get("batch") is not None:
        params["batch"] = cell["batch"]
    if cell.get("graph"):
        params.update(graph=cell["graph"], coordinates=cell["coordinates"], error="geo")
    keep = Path(cell["workdir"]) / f"profile-{os.getpid()}.json"
    profile = profile_backend(db, keep) if cell.get("profile") else None
    started = time.perf_counter()
    lines = ProgressLines(started) if profile is not None else None
    try:
        # the timeout's SIGINT stops a DuckDB statement at once
        with interrupt_handling(), reporting_to(lines):
            run_id = api.anonymize(db, dataset, require_model("km"), params,
                                   seed=cell["seed"])
            out: dict[str, Any] = {"seconds": time.perf_counter() - started, "run_id": run_id}
            run = api.get_run(db, dataset, run_id)
            if profile is not None:  # the run is verified and published by now
                print(f"# anonymize (the search and the run's own verify) returned after "
                      f"{out['seconds']:.1f} s", file=sys.stderr, flush=True)
                print(f"# profile of the search, {cell['dataset']} k={cell['k']} "
                      f"m={cell['m']} sigma={cell['sigma']}\n{format_profile(profile.totals)}",
                      file=sys.stderr, flush=True)
                profile.next_phase("verify")
            started = time.perf_counter()
            out["verify"] = api.verify(db, dataset, run).ok
            out["verify_seconds"] = time.perf_counter() - started
    except KeyboardInterrupt:  # the cell's timeout: _spawn prints the profile kept so far
        raise SystemExit(130) from None
    if profile is not None:
        print(f"# profile of verify\n{format_profile(profile.totals, 10)}", file=sys.stderr,
              flush=True)
        profile.keep = None
    keep.unlink(missing_ok=True)
    out["figures"] = {key: run.figures[key] for key in
                      ("published_labels", "ncp", "generalized_share", "rounds", "geo_error",
                       "utility_by_size", *POOL_FIGURES) if key in run.figures}
    if cell["check"]:
        workdir = Path(cell["workdir"])
        fimi, mapping = (workdir / f"check_{run_id}.{ext}" for ext in ("dat", "map"))
        api.export_dataset(db, dataset, fimi, "fimi", run, None, mapping)
        out["check"] = check_export(fimi, mapping, Path(cell["data"]), Path(cell["hierarchy"]),
                                    int(cell["k"]), cell["m"], float(cell["sigma"]),
                                    cell["exact_upto"], run.figures["ncp"], cell["seed"])
        fimi.unlink()
        mapping.unlink()
    db.close()
    return out


def _spawn(cell: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """Run one cell in a child; None when it ran past ``timeout`` (then it is stopped)."""
    child = subprocess.Popen([sys.executable, __file__, "--cell", json.dumps(cell)],
                             stdout=subprocess.PIPE, text=True)
    keep = Path(cell["workdir"]) / f"profile-{child.pid}.json"
    try:
        stdout, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        saved = saved_profile(keep)  # read before the child's own clean-up statements
        child.send_signal(signal.SIGINT)  # lets the driver cancel the running statement
        try:
            child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
        if saved is not None:
            print(f"# profile of the {saved[0]} until the cell's timeout ({timeout:.0f} s), "
                  f"{cell['dataset']} k={cell['k']} m={cell['m']} sigma={cell['sigma']}\n"
                  f"{saved[1]}", file=sys.stderr, flush=True)
        keep.unlink(missing_ok=True)
        return None
    keep.unlink(missing_ok=True)  # left by a child that failed
    if child.returncode != 0:
        return {"error": f"exit code {child.returncode}"}
    return json.loads(stdout.strip().splitlines()[-1])


def _row(cell: dict[str, Any], result: dict[str, Any] | None, timeout: float) -> str:
    head = (f"| {cell['dataset']} | {cell['backend']} | {cell['variant']} | {cell['k']} | "
            f"{cell['m']} | {cell['sigma']} | {cell['exact_upto']} | ")
    if result is None:
        return head + f"timeout > {timeout:.0f} s | | | | | | | | |"
    if "error" in result:
        return head + f"{result['error']} | | | | | | | | |"
    f = result["figures"]
    check = "not run"
    if "check" in result:
        c = result["check"]
        sampled = ", ".join(f"ℓ={ell}: {share:.4f}±{margin:.4f}"
                            for ell, (share, margin) in c["sampled"].items())
        check = ("ok" if c["ok"] else "FAILED") + (f" ({sampled})" if sampled else "")
    pools = " / ".join(str(f[key]) for key in POOL_FIGURES) if POOL_FIGURES[0] in f else "–"
    ncp = (f"{f['ncp']:.4f}" + (f" (geo {f['geo_error']:.0f} m)" if "geo_error" in f else ""))
    return head + (f"{f['published_labels']} | {ncp} | {f['generalized_share']:.3f} | "
                   f"{len(f['rounds'])} | {pools} | {result['seconds']:.1f} | "
                   f"{'ok' if result['verify'] else 'FAILED'} | "
                   f"{result['verify_seconds']:.1f} | {check} |")


def _best_after_sizes(figures: dict[str, Any], sizes: list[int], m: int,
                      every: bool) -> list[tuple[int, dict[str, Any]]]:
    """(size, the trial of least geo error after it) for every size of ``sizes`` up to ``m``
    with ``every``, else for ``m`` only (from the run's ``utility_by_size``)."""
    rows = figures.get("utility_by_size") or [{"size": m, **figures}]
    return [(size, min(at, key=lambda row: row["geo_error"]))
            for size, at in _rows_by_size(rows, sizes if every else [m], m)]


def _rows_by_size(rows: list[dict[str, Any]], sizes: list[int],
                  m: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """Each size of ``sizes`` up to ``m`` with its rows of ``utility_by_size`` (one a trial)."""
    return [(size, [row for row in rows if row["size"] == size]) for size in sizes if size <= m]


def _size_row(cell: dict[str, Any], size: int, row: dict[str, Any], m: int) -> str:
    """A row of --every-m: the best trial's cut after ``size`` in the run at ``m``."""
    trials = "" if cell["trials"] == 1 else f", best of {cell['trials']} trials"
    return (f"| {cell['dataset']} | {cell['backend']} | {cell['variant']} | {cell['k']} | "
            f"{size} | {cell['sigma']} | {cell['exact_upto']} | {row['published_labels']} | "
            f"{row['ncp']:.4f} (geo {row['geo_error']:.0f} m) | "
            f"{row['generalized_share']:.3f} | | | from the m = {m} run{trials} | | | |")


def trial_spread(figures: dict[str, Any], sizes: list[int], m: int) -> list[str]:
    """Per size up to ``m``, the first trial (what r = 1 would publish) and the range over
    all trials of ``utility_by_size``: how much A^(r) gains over one trial (Sec. IV-D)."""
    lines = []
    for size, at in _rows_by_size(figures.get("utility_by_size") or [], sizes, m):
        if len(at) < 2:
            continue
        first = min(at, key=lambda row: row["trial"])
        labels = [row["published_labels"] for row in at]
        geo = [row["geo_error"] for row in at]
        lines.append(f"# m = {size}: trial {first['trial']} {first['published_labels']} "
                     f"partitions, {first['geo_error']:.0f} m; over {len(at)} trials "
                     f"{min(labels)}-{max(labels)} partitions, {min(geo):.0f}-{max(geo):.0f} m")
    return lines


def merged_points(points: list[dict[str, Any]], saved: Path) -> list[dict[str, Any]]:
    """``points`` with those kept in ``saved`` from earlier runs (other σ, k or r), a point
    of this run replacing a kept one of the same (σ, k, m, r); ``saved`` is rewritten, so
    runs of one (σ, k) each build up one plot of the paper's grid."""
    def key(point: dict[str, Any]) -> tuple[float, int, int, int]:
        return (point["sigma"], point["k"], point["m"], point["trials"])

    kept = {key(p): p for p in (json.loads(saved.read_text()) if saved.exists() else [])}
    kept.update((key(p), p) for p in points)
    merged = sorted(kept.values(), key=key)
    saved.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def _urls(backends: list[str], pg_url: str | None,
          stack: contextlib.ExitStack) -> dict[str, str]:
    urls = {}
    for backend in backends:
        if backend == "duckdb":
            urls["duckdb"] = ""
        elif pg_url:
            urls["postgres"] = pg_url
        else:
            from tests.support.pg_server import postgres_url

            url = stack.enter_context(postgres_url())
            if url is None:
                print("no PostgreSQL available: skipping it", file=sys.stderr)
            else:
                urls["postgres"] = url
    return urls


def _cdr_files(workdir: Path, users: int) -> tuple[Path, None, dict[str, str]]:
    """The CDR-like data of ``users`` users (written once per size) and its shape on stderr."""
    from setanon_sql.synth.cdr import format_cdr_shape, write_cdr

    target = workdir / f"cdr_{users}"
    if not (target / "cdr.dat").exists():
        shape = write_cdr(target, users, seed=1)
        print(f"# CDR-like data: {format_cdr_shape(shape)}", file=sys.stderr, flush=True)
    return target / "cdr.dat", None, {"graph": str(target / "graph.tsv"),
                                      "coordinates": str(target / "coordinates.tsv")}


# Acs et al. Fig. 3 (k = 20, r = 10): (partitions, average error in metres) per (σ, m).
PAPER_FIG3 = {(0.99, 5): (296, 143), (0.99, 8): (158, 264), (0.99, 11): (143, 284),
              (0.999, 5): (234, 184), (0.999, 8): (121, 314), (0.999, 11): (118, 331)}


def plot_cdr(points: list[dict[str, Any]], target: Path) -> None:
    """Partitions kept and average geographic error against m, per (σ, k), beside the paper's
    Fig. 3 points (k = 20), as its Figs. 4 and 5 show them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    series: dict[tuple[float, int, int], list[tuple[int, int, float]]] = {}
    for point in points:
        series.setdefault((point["sigma"], point["k"], point["trials"]), []).append(
            (point["m"], point["labels"], point["geo"]))
    for (sigma, k, trials), values in sorted(series.items()):
        values.sort()
        ms = [v[0] for v in values]
        label = f"ours σ={sigma} k={k} r={trials}"
        left.plot(ms, [v[1] for v in values], marker="o", label=label)
        right.plot(ms, [v[2] for v in values], marker="o", label=label)
    for sigma in (0.99, 0.999):
        ms = sorted(m for s, m in PAPER_FIG3 if s == sigma)
        left.plot(ms, [PAPER_FIG3[sigma, m][0] for m in ms], linestyle="--", marker="x",
                  label=f"paper σ={sigma} k=20 r=10")
        right.plot(ms, [PAPER_FIG3[sigma, m][1] for m in ms], linestyle="--", marker="x",
                   label=f"paper σ={sigma} k=20 r=10")
    left.set(xlabel="m", ylabel="partitions (published labels)", title="partitions kept")
    right.set(xlabel="m", ylabel="average error (m)", title="geographic error")
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(target, dpi=100)


def _ensure_loaded(url: str, name: str, data: Path, hierarchy: Path | None) -> None:
    from setanon_sql import api

    db = api.open_database(url, "km_bench")
    if api.find_dataset(db, name) is None:
        started = time.perf_counter()
        dataset = api.load_transactions(db, data, name)
        if hierarchy is not None:
            api.load_hierarchy(db, hierarchy, dataset)
        print(f"loaded {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/kmbench"))
    parser.add_argument("--datasets", default="bms2")
    parser.add_argument("--backends", default="duckdb,postgres")
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--variants", default="exact")
    parser.add_argument("--k", default="5")
    parser.add_argument("--m", default="2")
    parser.add_argument("--sigma", default="0.99", help="σ of the sampled variant")
    parser.add_argument("--exact-upto", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per cell")
    parser.add_argument("--budget", type=float, default=660,
                        help="seconds for the whole command (a locked slot is < 12 min): "
                             "cells that would start later print 'not measured'")
    parser.add_argument("--trials", type=int, default=1, help="--trials of the sampled variant")
    parser.add_argument("--every-m", action="store_true",
                        help="run only the largest --m and print every --m from its utility "
                             "after each size, the best of the trials at each (a size never "
                             "looks ahead, so that is what --m of that size publishes; tested "
                             "in tests/integration/test_km_trials.py)")
    parser.add_argument("--batch", type=float, default=None,
                        help="--batch: the share of proposed merges applied per round (the "
                             "model's default unless given)")
    parser.add_argument("--cdr-users", type=int, default=1_000_000,
                        help="users of the generated CDR-like data (dataset 'cdr', "
                             "setanon_sql/synth/cdr.py, seed 1): --graph, --coordinates, "
                             "--error geo")
    parser.add_argument("--plot", type=Path, default=None,
                        help="cdr cells: plot partitions and geo error against m to this PNG; "
                             "the points are kept beside it (.json) and runs of other (σ, k, "
                             "--trials) add their series to the same plot")
    parser.add_argument("--certify", choices=("auto", "samples"), default="auto",
                        help="--certify of the sampled variant (auto: a size is certified by "
                             "enumeration where that is cheaper)")
    parser.add_argument("--memory-limit", default=None,
                        help="DuckDB memory_limit of the benchmark database (e.g. 2GB), for runs "
                             "beside other work on a shared machine")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="print seconds per km call site (search, then verify) and each "
                             "progress step with its time to stderr")
    args = parser.parse_args()
    if args.cell:
        print(json.dumps(run_cell(json.loads(args.cell))))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    print("| dataset | backend | variant | k | m | σ | exact up to | labels | NCP | generalized "
          "| rounds | pools exact / samples / failed | seconds | verify | verify s | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    deadline = time.monotonic() + args.budget
    points: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        urls = _urls(args.backends.split(","), args.pg_url, stack)
        for name, (backend, url) in itertools.product(args.datasets.split(","), urls.items()):
            if not url:
                url = f"duckdb:///{args.workdir / 'km.duckdb'}"
                if args.memory_limit:
                    url += f"?memory_limit={args.memory_limit}"
            graph: dict[str, str] = {}
            hierarchy: Path | None
            if name == "cdr":
                data, hierarchy, graph = _cdr_files(args.workdir, args.cdr_users)
            else:
                data = args.data_dir / DATASETS[name][0]
                hierarchy = _hierarchy_file(name, data, args.workdir, args.data_dir)
            _ensure_loaded(url, name, data, hierarchy)
            sizes = sorted(map(int, args.m.split(",")))
            for variant, k, m in itertools.product(args.variants.split(","),
                                                   args.k.split(","),
                                                   sizes[-1:] if args.every_m else sizes):
                cell = {"dataset": name, "backend": backend, "url": url, "variant": variant,
                        "k": k, "m": m, "sigma": "1" if variant == "exact" else args.sigma,
                        "exact_upto": 0 if variant == "exact" else args.exact_upto,
                        "seed": args.seed, "check": args.check and not graph,
                        "data": str(data), "hierarchy": str(hierarchy),
                        "workdir": str(args.workdir), "profile": args.profile,
                        "certify": args.certify, "batch": args.batch,
                        "trials": args.trials if variant != "exact" else 1, **graph}
                left = deadline - time.monotonic()
                if left < 10:
                    print(_row(cell, {"error": "not measured (budget)"}, 0), flush=True)
                    continue
                limit = min(args.timeout, left)
                result = _spawn(cell, limit)
                print(_row(cell, result, limit), flush=True)
                if result and "figures" in result and "geo_error" in result["figures"]:
                    for size, row in _best_after_sizes(result["figures"], sizes, m,
                                                       args.every_m):
                        points.append({"sigma": float(cell["sigma"]), "k": int(k), "m": size,
                                       "trials": cell["trials"],
                                       "labels": row["published_labels"],
                                       "geo": row["geo_error"]})
                        if size != m:
                            print(_size_row(cell, size, row, m), flush=True)
                    if args.every_m:
                        for line in trial_spread(result["figures"], sizes, m):
                            print(line, flush=True)
    if args.plot and points:
        plot_cdr(merged_points(points, args.plot.with_suffix(".json")), args.plot)


if __name__ == "__main__":
    main()
