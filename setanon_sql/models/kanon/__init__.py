"""k-anonymity of complex data by top-down specialization with set-value recoding (NEC).

Takahashi, Sobataka, Takenouchi, Toyoda, Mori: "Efficient set-value recoding for anonymizing
complex data" (NEC). ``setanon anonymize NAME --model kanon --k 5 --beta 0.05
--suppress-budget 0.01``: Alg. 1 (top-down specialization guided by NCP) over single-valued QIs
(numeric intervals, hierarchy or flat categories) and set-valued QIs (the set-value recoding of
§3.2-3.4), every step SQL over all classes at once.
"""

from __future__ import annotations

from typing import Any

import click

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.models.base import Model
from setanon_sql.models.kanon.controller import top_down
from setanon_sql.models.kanon.plan import make_plan
from setanon_sql.models.kanon.publish import figures, publish
from setanon_sql.models.kanon.verify import verify
from setanon_sql.models.kanon.work import Work
from setanon_sql.runs import RunContext


def anonymize(backend: Backend, dataset: Dataset, params: dict[str, Any],
              context: RunContext) -> None:
    """Validate, run Alg. 1 in the DBMS, publish, and report the figures."""
    plan = make_plan(backend, dataset, params)
    work = Work(backend, context)
    try:
        with backend.whole_table_joins():
            result = top_down(work, dataset, plan)
            publish(result, dataset, context)
        context.figures.update(figures(result, dataset))
    finally:
        work.drop_all()


OPTIONS = (
    click.Option(["--k"], type=int, required=True,
                 help="every published record shares its QI values (sets included) with k-1 "
                      "others"),
    click.Option(["--beta"], type=float, default=0.0, show_default=True,
                 help="prune items rarer than beta*|class| from a class's ranking (eq. 2)"),
    click.Option(["--suppress-budget"], type=float, default=0.0, show_default=True,
                 help="share of the records that may be deleted (the paper's epsilon)"),
    click.Option(["--qi"], multiple=True,
                 help="quasi-identifiers to anonymize (comma-separated or repeated; default: "
                      "all QI and set-valued columns); others are published unchanged"),
    click.Option(["--numeric"], multiple=True,
                 help="integer columns to generalize as intervals (the default for integer "
                      "columns without a hierarchy); an error if a column is not numeric"),
    click.Option(["--categorical"], multiple=True,
                 help="integer columns to generalize as categories (flat to '*' or a loaded "
                      "hierarchy) instead of intervals"),
)

def validate(backend: Backend, dataset: Dataset, params: dict[str, Any]) -> None:
    """Check every parameter against the dataset before the run is recorded."""
    make_plan(backend, dataset, params)


MODEL = Model("kanon", "k-anonymity of complex data by top-down specialization (NEC)", OPTIONS,
              anonymize, verify, validate)
