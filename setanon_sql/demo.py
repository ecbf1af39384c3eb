"""``setanon demo``: the main job end to end on data the package ships.

Loads the demo baskets (set-valued) and admissions (complex data) with a diagnosis hierarchy,
summarizes them, exports them and checks that the exports reproduce the inputs line for line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import SetanonError
from setanon_sql.models import MODELS, describe_models
from setanon_sql.summary import dataset_summary, format_summary


def _same_lines(a: Path, b: Path) -> bool:
    def normalized(path: Path) -> list[str]:
        return [" ".join(line.split()) for line in path.read_text(encoding="utf-8").splitlines()]

    return normalized(a) == normalized(b)


def run_demo(backend: Backend, workdir: Path, say: Callable[[str], None] = print) -> None:
    """Run the demo against ``backend``, writing exports to ``workdir``."""
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
    ready = [m.name for m in MODELS.values() if m.implemented]
    say("privacy models:\n" + describe_models())
    if ready:
        say(f"next: setanon anonymize demo_baskets --model {ready[0]} --db {backend.describe()}")
