"""Every model tells its progress: the phases in order, and bars that never overrun."""

from __future__ import annotations

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import model_params, require_model
from setanon_sql.progress import Step, reporting_to

CASES = [
    ("kanon", "admissions", ["--k", "5"]),
    ("km", "admissions", ["--k", "4", "--m", "2", "--column", "diagnoses"]),
    ("km", "admissions", ["--k", "4", "--m", "2", "--column", "diagnoses", "--sigma", "0.9",
                          "--exact-upto", "1"]),
    ("rho", "baskets", ["--rho", "0.7", "--sensitive-fraction", "0.2", "--m", "2"]),
    ("prho", "baskets", ["--rho", "0.5", "--setting", "personalized",
                         "--sensitive-fraction", "0.4", "--m", "2"]),
    ("swap", "baskets", ["--random-categories", "4", "--no-metrics"]),
]


class Recorder:
    def __init__(self) -> None:
        self.steps: list[Step] = []

    def show(self, step: Step) -> None:
        self.steps.append(step)


def _load(db: Backend, name: str) -> api.Dataset:
    if name == "baskets":
        return api.load_transactions(db, api.demo_file("baskets"), "d")
    dataset = api.load_table(db, api.demo_file("admissions"), "d", id_column="patient_id",
                             set_columns=["diagnoses", "drugs"])
    api.load_hierarchy(db, api.demo_file("diagnosis_hierarchy"), dataset, "diagnoses")
    return api.get_dataset(db, "d")


@pytest.mark.parametrize(("model", "data", "args"), CASES, ids=[" ".join(c[2][:3]) + f" {c[0]}"
                                                                for c in CASES])
def test_a_run_reports_search_publish_verify(db: Backend, model: str, data: str,
                                             args: list[str]) -> None:
    dataset = _load(db, data)
    chosen = require_model(model)
    recorder = Recorder()
    with reporting_to(recorder):
        api.anonymize(db, dataset, chosen, model_params(chosen, args), seed=2)
    phases = [step.phase for step in recorder.steps]
    first = {phase: phases.index(phase) for phase in ("search", "publish", "verify", "verified")}
    assert first["search"] < first["publish"] < first["verify"] < first["verified"]
    rounds = [step for step in recorder.steps if step.phase == "search" and step.detail]
    assert rounds, "the search told nothing of its rounds or steps"
    for step in rounds:
        if step.total is not None:
            assert step.done is not None and 0 <= step.done <= step.total, step
