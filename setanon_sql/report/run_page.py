"""The HTML page of one run (or of a dataset as loaded), drawn from :func:`build_report`'s dict."""

from __future__ import annotations

from html import escape
from typing import Any

from setanon_sql.report import plots
from setanon_sql.report.figures import figure_rows, format_value
from setanon_sql.report.html import figure, page, params_text, table, verdict


def figure_ids(report: dict[str, Any]) -> list[str]:
    """Ids of the figures the page of ``report`` holds, in page order."""
    ids = []
    for attribute in report["attributes"]:
        no = attribute["attr_no"]
        ids += [f"fig-{no}-support", f"fig-{no}-lengths"]
        if attribute["changes"] is not None and attribute["changes"]["top"]:
            ids.append(f"fig-{no}-changes")
        ids.append(f"fig-{no}-unicity")
    ids.append("fig-records")
    if report.get("classes"):
        ids.append("fig-classes")
    return ids


def _what_was_done(report: dict[str, Any]) -> str:
    summary, run = report["summary"], report["run"]
    rows = [["dataset", f"{summary['dataset']} ({summary['kind']})"],
            ["source", summary["source"] or "-"],
            ["records", f"{summary['records']:,}"],
            ["backend", summary["backend"]]]
    if run is not None:
        rows += [["model", run["model"]], ["parameters", params_text(run["params"])],
                 ["seed", run["seed"]],
                 ["runtime", f"{run['seconds']:.2f} s" if run["seconds"] is not None else "-"],
                 ["package version", run["package_version"]],
                 ["run backend", run["backend"]]]
    return "<section><h2>What was done</h2>" + table(None, rows) + "</section>"


def _model_figures(report: dict[str, Any]) -> str:
    """The figures the model reported: scalars in a table, longer ones folded away."""
    run = report["run"]
    if run is None:
        return ""
    rows = figure_rows(run["figures"])
    scalars = [[r.name, r.text] for r in rows if not r.is_table]
    parts = ["<section><h2>Utility reported by the model</h2>",
             table(["figure", "value"], scalars, {1}) if scalars else "<p>none</p>"]
    for row in (r for r in rows if r.is_table):
        parts.append(f"<details><summary>{escape(row.name)} ({escape(row.text)})</summary>"
                     f"{table(row.header, row.rows or [])}</details>")
    return "".join(parts) + "</section>"


def _measured(attribute: dict[str, Any]) -> str:
    """Sizes of one set-valued column as loaded and published, and what the run changed."""
    before, after = attribute["before"], attribute["after"]
    rows = [[label, format_value(key, before[key]), format_value(key, after[key]) if after
             else ""]
            for label, key in (("records", "records"), ("distinct items", "distinct_items"),
                               ("item occurrences", "item_occurrences"),
                               ("average record length", "avg_length"))]
    if attribute["changes"] is not None:
        totals = attribute["changes"]["totals"]
        for what in ("removed", "added"):
            rows.append([f"item occurrences {what}", "",
                         f"{totals[what]:,} ({100 * totals[what + '_share']:.2f} %)"])
    header = ["measured in the DBMS", "as loaded"] + (["published"] if after else [])
    return table(header, [row[: len(header)] for row in rows], {1, 2})


def _attribute(attribute: dict[str, Any]) -> str:
    no, before, after = attribute["attr_no"], attribute["before"], attribute["after"]
    changes = attribute["changes"]
    figures = [
        figure(f"fig-{no}-support",
               plots.support_curves(before["curve"], after["curve"] if after else None),
               "Item frequency: support of the r-th most frequent item (log-log)."),
        figure(f"fig-{no}-lengths",
               plots.record_lengths(before["lengths"], after["lengths"] if after else None),
               "Record length: records by number of items (log scale)."),
    ]
    if changes is not None and changes["top"]:
        what = "generalized" if attribute["mapped"] else "suppressed, generalized or swapped"
        figures.append(figure(
            f"fig-{no}-changes", plots.item_changes(changes["top"]),
            f"The {len(changes['top'])} labels changed most ({what}): occurrences removed from "
            "records that held them, and added to records that did not."))
    figures.append(figure(
        f"fig-{no}-unicity", plots.unicity(before["unicity"], after["unicity"] if after else None),
        "Unicity, exact for ℓ = 1, 2: share of distinct ℓ-itemsets held by a single record, and "
        "share of records holding such an itemset (an adversary knowing those ℓ items singles "
        "the record out)."))
    unicity_rows = []
    for label, version in (("as loaded", before), ("published", after)):
        for row in (version or {}).get("unicity", []):
            unicity_rows.append([label, row["ell"], f"{row['itemsets']:,}",
                                 f"{row['unique_itemsets']:,}",
                                 f"{100 * row['unique_share']:.2f} %",
                                 f"{row['records_at_risk']:,}",
                                 f"{100 * row['records_at_risk_share']:.2f} %"])
    return (f"<h2>Set-valued column {escape(attribute['name'])}</h2>"
            f'<div class="grid">{"".join(figures)}</div><div class="grid"><div>'
            + _measured(attribute) + "</div><div>"
            + table(["", "ℓ", "ℓ-itemsets", "of support 1", "share", "records with one",
                     "share"], unicity_rows, {2, 3, 4, 5, 6})
            + "</div></div>")


def _whole_records(report: dict[str, Any]) -> str:
    """Classes of identical records, the run's own classes, and the single-valued columns."""
    k = _privacy_k(report)
    classes = report["record_classes"]
    figures = [figure(
        "fig-records", plots.record_classes(classes["before"], classes["after"], k),
        "Records identical in every published quasi-identifier and set: share of records in "
        "classes of size ≤ s (a record left of k has fewer than k-1 look-alikes).")]
    if report.get("classes"):
        figures.append(figure(
            "fig-classes", plots.class_sizes(report["classes"], k),
            "Equivalence classes the run published, by size (log scale); none may be below k."))
    parts = ['<h2>Records as a whole</h2><div class="grid">', *figures, "</div>"]
    summary = report["summary"]
    changes = {c["name"]: c for c in report.get("columns", [])}
    if summary["columns"]:
        rows = []
        for column in summary["columns"]:
            change = changes.get(column["name"])
            rows.append([column["name"], column["role"], column["type"],
                         f"{column['distinct']:,}",
                         f"{change['distinct_after']:,}" if change else "",
                         f"{100 * change['changed_share']:.2f} %" if change else ""])
        parts.append("<h3>Single-valued columns</h3>" + table(
            ["column", "role", "type", "distinct values as loaded", "published",
             "published records whose value changed"], rows, {3, 4, 5}))
    return "".join(parts)


def _privacy_k(report: dict[str, Any]) -> float | None:
    params = (report["run"] or {}).get("params", {})
    try:
        return float(str(params.get("k")).split(",")[0])
    except ValueError:
        return None


def run_page(report: dict[str, Any]) -> str:
    """The page of one run: what was done, verification, utility, plots per column."""
    summary, run = report["summary"], report["run"]
    if run is not None:
        title = f"setanon report: {summary['dataset']}, run {run['run_id']} ({run['model']})"
        sub = f"model {run['model']}: {params_text(run['params'])}"
    else:
        title, sub = f"setanon report: {summary['dataset']} as loaded", "no run: the input data"
    body = [f"<h1>{escape(title)}</h1><p class=\"sub\">{escape(sub)}</p>",
            verdict(report["verification"]),
            f'<div class="grid">{_what_was_done(report)}{_model_figures(report)}</div>']
    body += [_attribute(a) for a in report["attributes"]]
    body.append(_whole_records(report))
    body.append(f"<footer>Generated by {escape(report['generated_by'])}; every figure was "
                f"computed in {escape(summary['backend'])}, the page holds aggregates only."
                "</footer>")
    return page(title, "\n".join(body))
