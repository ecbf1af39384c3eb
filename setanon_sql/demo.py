"""``setanon demo``: the main job end to end on data the package ships.

Loads the demo baskets (set-valued) and admissions (complex data) with a diagnosis hierarchy,
checks that the exports reproduce the inputs line for line, then anonymizes with three models
(k-anonymity of the complex data, k^m-anonymity of the diagnoses along the hierarchy,
ρ-uncertainty of the baskets), verifies each run in the database, re-checks each export in plain
Python, and writes the HTML report of the k-anonymity run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import SetanonError
from setanon_sql.models import describe_models, model_params, require_model
from setanon_sql.summary import dataset_summary, format_summary


def _same_lines(a: Path, b: Path) -> bool:
    def normalized(path: Path) -> list[str]:
        return [" ".join(line.split()) for line in path.read_text(encoding="utf-8").splitlines()]

    return normalized(a) == normalized(b)


def _smallest_class(tsv: Path) -> int:
    """Smallest number of exported records sharing all their values (the id column aside)."""
    lines = tsv.read_text(encoding="utf-8").splitlines()[1:]
    groups = Counter(tuple(line.split("\t")[1:]) for line in lines)
    return min(groups.values(), default=0)


def _rarest_itemset(fimi: Path, m: int) -> int:
    """Smallest support of an itemset of at most ``m`` items in an exported FIMI file."""
    support: Counter[tuple[str, ...]] = Counter()
    for line in fimi.read_text(encoding="utf-8").splitlines():
        items = sorted(set(line.split()))
        for size in range(1, m + 1):
            support.update(combinations(items, size))
    return min(support.values(), default=0)


def _anonymize(backend: Backend, dataset: Dataset, model: str, args: list[str],
               say: Callable[[str], None]) -> api.Run:
    chosen = require_model(model)
    run_id = api.anonymize(backend, dataset, chosen, model_params(chosen, args), seed=1)
    run = api.get_run(backend, dataset, run_id)  # verified by anonymize, or it raised
    if run.verification != "passed":
        raise SetanonError(f"demo run {run_id} ({model}) failed its verification: please report")
    covered = (run.verification_detail or {}).get("covered")
    say(f"run {run_id}: --model {model} {' '.join(args)} in {run.seconds or 0:.1f} s; "
        f"verified: {covered}")
    return run


def run_demo(backend: Backend, workdir: Path, say: Callable[[str], None] = print) -> None:
    """Run the demo against ``backend``, writing exports and a report to ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    say(f"setanon demo on {backend.describe()} (schema {backend.schema!r})")
    baskets = api.load_transactions(backend, api.demo_file("baskets"), "demo_baskets",
                                    replace=True)
    admissions = api.load_table(backend, api.demo_file("admissions"), "demo_admissions",
                                id_column="patient_id", set_columns=["diagnoses", "drugs"],
                                replace=True)
    hierarchy = api.load_hierarchy(backend, api.demo_file("diagnosis_hierarchy"), admissions,
                                   column="diagnoses", replace=True)
    say(f"loaded hierarchy {hierarchy.name}: {hierarchy.n_leaves} leaves, height "
        f"{hierarchy.height}")
    checks = [
        (baskets, "fimi", "demo_baskets.dat", api.demo_file("baskets")),
        (admissions, "tsv", "demo_admissions.tsv", api.demo_file("admissions")),
    ]
    for dataset, fmt, file_name, original in checks:
        say(format_summary(dataset_summary(backend, dataset)))
        target = api.export_dataset(backend, dataset, workdir / file_name, fmt=fmt)
        if not _same_lines(original, target):
            raise SetanonError(f"demo export {target} differs from {original}: please report")
        say(f"  exported to {target}: identical to the shipped input, line for line")

    say("\nanonymizing (each run verified in the database, each export re-checked here):")
    run = _anonymize(backend, admissions, "kanon", ["--k", "5"], say)
    target = api.export_dataset(backend, admissions, workdir / "admissions_k5.tsv", "tsv", run)
    smallest = _smallest_class(target)
    _check(smallest >= 5, f"{target}: every record shares all its values with at least "
           f"{smallest - 1} others (k = 5)", say)
    _write_report(backend, admissions, run, workdir / "admissions_k5.html", say)
    reported = run.run_id

    run = _anonymize(backend, admissions, "km",
                     ["--k", "4", "--m", "2", "--column", "diagnoses"], say)
    target = api.export_dataset(backend, admissions, workdir / "diagnoses_k4m2.dat", "fimi",
                                run, column="diagnoses")
    rarest = _rarest_itemset(target, 2)
    labels = len({item for line in target.read_text(encoding="utf-8").splitlines()
                  for item in line.split()})
    _check(rarest >= 4, f"{target}: {labels} published labels; every published diagnosis and "
           f"pair of diagnoses is shared by at least {rarest} patients (k = 4, m = 2)", say)

    run = _anonymize(backend, baskets, "rho",
                     ["--rho", "0.7", "--sensitive-fraction", "0.2", "--m", "2"], say)
    target = api.export_dataset(backend, baskets, workdir / "baskets_rho07.dat", "fimi", run)
    kept = sum(len(line.split()) for line in target.read_text(encoding="utf-8").splitlines())
    total = sum(len(line.split()) for line in
                api.demo_file("baskets").read_text(encoding="utf-8").splitlines())
    say(f"  exported to {target}: {kept:,} of {total:,} item occurrences kept")

    say("\nprivacy models:\n" + describe_models())
    say(f"next: setanon report demo_admissions --run {reported} --db {backend.describe()}")


def _check(ok: bool, message: str, say: Callable[[str], None]) -> None:
    if not ok:
        raise SetanonError(f"demo check failed: {message}; please report")
    say(f"  exported to {message}")


def _write_report(backend: Backend, dataset: Dataset, run: api.Run, page: Path,
                  say: Callable[[str], None]) -> None:
    from setanon_sql.report.command import render_report

    page.write_text(render_report(backend, dataset, run, None, "html", False), encoding="utf-8")
    say(f"  report: {page}")
