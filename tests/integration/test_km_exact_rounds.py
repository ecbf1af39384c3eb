"""The exact search's later rounds (``exact._next_violations``): the violating itemsets kept
from the round before plus those counted in the records holding a changed node are, round by
round, exactly what enumerating every record of <R, D> gives; and the output passes the
brute-force oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.models.km import exact, firstslices
from setanon_sql.models.km.itemsets import violating_itemsets
from tests.integration.test_km import random_case
from tests.integration.test_km_graph import grid_case
from tests.oracle import km_oracle


def _rows(db: Backend, table: exp.Table, ell: int) -> list[tuple]:
    columns = [f"n{j}" for j in range(1, ell + 1)] + ["support"]
    return sorted(db.query(exp.select(*columns).from_(table.copy())))


@pytest.mark.parametrize(("seed", "constraint"), [(1, "hierarchy"), (2, "hierarchy"),
                                                  (3, "hierarchy"), (4, "hierarchy"),
                                                  (5, "graph"), (6, "graph")])
@pytest.mark.on_spark(seeds=[2])
def test_later_rounds_equal_a_full_enumeration(db: Backend, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, seed: int,
                                               constraint: str) -> None:
    compared: list[int] = []
    incremental = exact._next_violations

    def checked(gen: Any, violations: exp.Table, prevcut: exp.Table, ell: int, k: int,
                round_no: int) -> exp.Table:
        nxt = incremental(gen, violations, prevcut, ell, k, round_no)
        generalized, full = gen.generalized(), gen.table("fullviol")
        db.materialize(full, violating_itemsets(generalized, ell), {"k": k})
        assert _rows(db, nxt, ell) == _rows(db, full, ell), (ell, round_no)
        for table in (generalized, full):
            db.drop_table(table)
        compared.append(ell)
        return nxt

    monkeypatch.setattr(exact, "_next_violations", checked)
    if seed % 2 == 0:  # every first round in slices (one node each where it has rows)
        monkeypatch.setattr(firstslices, "SLICE_ROWS", 1)
    m = 2 + seed % 2
    params: dict[str, Any] = {"k": "4,3,2"[: 2 * m - 1], "m": m, "batch": 0.2}
    if constraint == "graph":
        data, graph, coords = grid_case(tmp_path, seed)
        params.update(k="3", graph=str(graph), coordinates=str(coords), error="geo")
        dataset = api.load_transactions(db, data, "g")
    else:
        data, hierarchy = random_case(tmp_path, seed)
        dataset = api.load_transactions(db, data, "h")
        api.load_hierarchy(db, hierarchy, dataset)
    run = api.get_run(db, dataset, api.anonymize(db, dataset, require_model("km"), params,
                                                 seed=1))
    assert compared, "no later round: the case does not test the incremental path"
    out = tmp_path / "out.dat"
    api.export_dataset(db, dataset, out, run=run)
    k = [int(v) for v in str(params["k"]).split(",")] * (m if constraint == "graph" else 1)
    assert km_oracle.km_violations(km_oracle.read_fimi(out), k[:m], m) == []
    assert api.verify(db, dataset, run).ok
