"""Several runs of one dataset side by side: utility against the privacy parameter.

The steward's question is "which k (m, ρ, ...) do I choose?": the runs' parameters that differ
give the x axis (the privacy parameter, when one numeric parameter varies), and every utility
figure a run reports, plus the ones the report computes in the DBMS for any model, gives a curve.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from setanon_sql import __version__
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import UsageError
from setanon_sql.io.published import loaded as loaded_tables
from setanon_sql.report.build import Verifier, checked_run, run_meta
from setanon_sql.report.data import report_data, version_data
from setanon_sql.report.figures import figure_name, is_share, numeric_figures

# Parameters that set the strength of a privacy model, most telling first.
PRIVACY_PARAMS = ("k", "rho", "m", "sigma", "epsilon", "eps", "delta", "budget", "p", "l")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def privacy_axis(runs: Sequence[Run]) -> dict[str, Any]:
    """The x axis: the varying numeric parameter (the privacy one first), else the run ids.

    Returns ``{"key", "label", "values", "categories", "fixed"}``; ``categories`` is set when the
    axis is not numeric, ``fixed`` names the other varying parameters that split the lines.
    """
    keys = sorted({key for run in runs for key in run.params})
    varying = [key for key in keys
               if len({repr(run.params.get(key)) for run in runs}) > 1]
    numeric = [key for key in varying
               if all(_number(run.params.get(key)) is not None for run in runs)]
    numeric.sort(key=lambda k: (PRIVACY_PARAMS.index(k) if k in PRIVACY_PARAMS else 99, k))
    if numeric:
        key = numeric[0]
        others = [k for k in varying if k != key]
        lines = Counter(tuple(repr(run.params.get(k)) for k in others) for run in runs)
        return {"key": key, "label": key, "categories": None,
                "values": [_number(run.params[key]) for run in runs],
                # split lines by the other varying parameters, unless they vary with the axis
                "fixed": others if max(lines.values()) > 1 else []}
    return {"key": None, "label": "run", "values": [float(i) for i in range(len(runs))],
            "categories": [f"run {run.run_id}" for run in runs], "fixed": varying}


def series_name(run: Run, fixed: Sequence[str]) -> str:
    """The line a run belongs to: its model and the other parameters that vary."""
    extra = ", ".join(f"{key}={run.params.get(key)}" for key in fixed)
    return f"{run.model}, {extra}" if extra else run.model


def generic_metrics(data: dict[str, Any]) -> dict[str, float]:
    """Utility and risk figures the report computes in the DBMS for every model."""
    metrics: dict[str, float] = {}
    several = len(data["attributes"]) > 1
    for attribute in data["attributes"]:
        prefix = f"{attribute['name']}: " if several else ""
        after, totals = attribute["after"], attribute["changes"]["totals"]
        metrics[f"{prefix}item occurrences removed (share)"] = totals["removed_share"]
        metrics[f"{prefix}item occurrences added (share)"] = totals["added_share"]
        metrics[f"{prefix}distinct items published"] = float(after["distinct_items"])
        for row in after["unicity"]:
            metrics[f"{prefix}records with a unique {row['ell']}-itemset (share)"] = (
                row["records_at_risk_share"])
    return metrics


def tradeoff_data(backend: Backend, dataset: Dataset, runs: Sequence[Run],
                  verifier: Verifier | None) -> dict[str, Any]:
    """Side-by-side runs and the curves of every utility figure against the privacy axis."""
    if len(runs) < 2:
        raise UsageError("--runs needs at least two run ids of the dataset, e.g. --runs 3,4,5")
    checked = [checked_run(backend, dataset, run, verifier) for run in runs]
    loaded = loaded_tables(backend, dataset)
    original = {a.attr_no: version_data(backend, loaded, a.attr_no)
                for a in dataset.set_attributes}
    axis = privacy_axis(runs)
    entries: list[dict[str, Any]] = []
    curves: dict[str, dict[str, Any]] = {}
    for (run, outcome), x in zip(checked, axis["values"], strict=True):
        data = report_data(backend, dataset, run, original)
        figures = {figure_name(k): v for k, v in numeric_figures(run.figures).items()}
        shares = {figure_name(k) for k in run.figures if is_share(k)}
        metrics = {**figures, **generic_metrics(data)}
        entries.append({**run_meta(run), "metrics": metrics,
                        "verification": outcome})
        for name, value in metrics.items():
            curve = curves.setdefault(name, {"percent": name in shares or "(share)" in name,
                                             "series": {}})
            curve["series"].setdefault(series_name(run, axis["fixed"]), []).append([x, value])
    return {"report": "tradeoff", "generated_by": f"setanon_sql {__version__}",
            "dataset": {"name": dataset.name, "kind": dataset.kind, "source": dataset.source,
                        "records": dataset.n_records},
            "backend": backend.name, "axis": axis, "runs": entries, "curves": curves,
            "original": original}
