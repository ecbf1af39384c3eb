"""util_info, util_dist and util_mining of any run, in SQL, against a plain-Python oracle."""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest

from setanon_sql import api, metrics
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from tests.conftest import write
from tests.integration.test_prho import published, random_baskets
from tests.oracle import prho_oracle as oracle


@pytest.mark.parametrize(("model", "params"), [
    ("prho", {"rho": 0.4, "setting": "personalized", "sensitive_fraction": 0.4, "m": 2}),
    ("rho", {"rho": 0.4, "sensitive_fraction": 0.4, "heuristic": "mine"}),
])
def test_metrics_match_the_oracle(db: Backend, tmp_path: Path, model: str, params: dict) -> None:
    source = write(tmp_path / "in.dat", random_baskets(random.Random(5), 40, 6, 4))
    dataset = api.load_transactions(db, source, "d")
    api.anonymize(db, dataset, require_model(model), params, seed=4)
    run = api.get_run(db, dataset, "latest")
    original, output = oracle.read_fimi(source), published(db, dataset, run, tmp_path)
    assert original != output
    assert metrics.util_info(db, dataset, run) == pytest.approx(oracle.util_info(original,
                                                                                 output))
    assert metrics.util_dist(db, dataset, run) == pytest.approx(oracle.util_dist(original,
                                                                                 output))
    minsup, minconf = Fraction(1, 10), Fraction(3, 10)
    mined = metrics.util_mining(db, dataset, run, minsup=minsup, minconf=minconf)
    assert mined["rules_input"] == len(oracle.association_rules(original, minsup, minconf)) > 0
    assert mined["util_mining"] == pytest.approx(oracle.util_mining(original, output, minsup,
                                                                    minconf))
    assert [name for name in db.table_names("tmp_")] == []
