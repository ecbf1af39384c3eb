"""``setanon verify`` for ρ-uncertainty: every qid (up to m items) re-checked exactly in SQL.

A run that published generalized labels (``--heuristic tdcontrol``: ``map_`` and ``dict_``) is
checked over the published labels: an adversary who knows an original item knows its label,
so every itemset of a published record is a qid, and a sensitive item is any published item
carrying a sensitive type's label. The published rows must then be exactly the original rows
under ``map_``, only sensitive types may lack a label (global suppression), a sensitive type
keeps its own label and shares it with nothing, and every other item's label is its own or
an ancestor's in the column's hierarchy.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.hierarchy import get_hierarchy
from setanon_sql.io.published import Published, published
from setanon_sql.models.base import Verification
from setanon_sql.models.rho.check import check_shape, count_unsafe
from setanon_sql.models.rho.params import parse_params
from setanon_sql.models.rho.qids import col
from setanon_sql.models.rho.sensitive import build_sensitive
from setanon_sql.models.rho.suppression import rho_fraction
from setanon_sql.names import staging_table


def verify_run(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Subset of the input record by record, and conf(q -> e) <= ρ for every qid q."""
    attribute = dataset.set_attribute(run.params.get("column"), "--model rho")
    view = published(backend, dataset, run)
    pub = view.items[attribute.attr_no]
    items = backend.table(dataset.items_table(attribute))
    chosen = parse_params(run.params)
    # The sensitive items are drawn again from the parameters and the run's seed (or read again
    # from the --sensitive file), not taken from the run's own table.
    sens = backend.table(staging_table("rhovsens"))
    build_sensitive(backend, sens, items, backend.table(dataset.dict_table(attribute)),
                    chosen.sensitive, chosen.sensitive_fraction, run.seed or 0)
    rho = rho_fraction(run.params["rho"])
    m = run.params.get("m")
    generalized = attribute.attr_no in view.maps
    if generalized:
        mapping = _mapping_faults(backend, dataset, view, attribute.attr_no, sens)
        extra = sum(mapping.values())
        pub_sens = backend.table(staging_table("rhovpsens"))
        backend.materialize(pub_sens, "tdc_sensitive_published", None, {
            "pdict": view.dicts[attribute.attr_no], "sens": sens,
            "dict": backend.table(dataset.dict_table(attribute))})
        backend.drop_table(sens)
        sens = pub_sens
    else:
        extra = int(backend.scalar("rho_not_subset", tables={"pub": pub, "items": items}))
    prefix = staging_table("rhov")

    def table(purpose: str) -> exp.Table:
        return backend.table(f"{prefix}_{purpose}")

    cur = table("cur")
    try:
        shape = check_shape(backend, pub, m, sens)
        backend.materialize(cur, exp.select(
            col("record_id"), col("item_id"),
            exp.cast(exp.Literal.number(0), "BIGINT").as_("part", quoted=True)).from_(pub.copy()))
        unsafe, top = count_unsafe(backend, table, cur, sens, shape, rho.numerator,
                                   rho.denominator)
    finally:
        backend.drop_table(cur)
        backend.drop_table(sens)
    # Any qid size: the bound comes from the published table itself (check_shape), never from
    # the run's --trim-above.
    bound = (f"qids of up to {m} items" if m else
             f"every qid (any subset of a record: no published record of more than "
             f"{shape.width} items holds a sensitive item, so the qids of up to "
             f"{shape.max_q} items checked cover every rule)")
    details: dict[str, object] = {"unsafe_rules": unsafe, "highest_confidence": round(top, 6),
                                  "qid_bound_m": m or "none", "largest_qid_checked": shape.max_q}
    if generalized:
        details.update(mapping)
        faithful = ("published labels as items; output is the input under map_ (hierarchy "
                    "ancestors for non-sensitive items, sensitive types kept or suppressed "
                    "globally)")
    else:
        details["occurrences_not_in_input"] = extra
        faithful = "output is a subset of the input record by record"
    return Verification(
        ok=extra == 0 and unsafe == 0,
        covered=f"{bound} and every sensitive item, exactly in SQL (rho = {run.params['rho']}); "
                + faithful,
        details=details)


def _mapping_faults(backend: Backend, dataset: Dataset, view: Published, attr_no: int,
                    sens: exp.Table) -> dict[str, int]:
    """Counts of published rows and labels that are not a valid generalization (all 0 when
    the publication is one): see the module docstring."""
    attribute = next(a for a in dataset.set_attributes if a.attr_no == attr_no)
    tables = {"items": backend.table(dataset.items_table(attribute)),
              "dict": backend.table(dataset.dict_table(attribute)),
              "map": view.maps[attr_no], "pdict": view.dicts[attr_no],
              "published": view.items[attr_no], "sens": sens}
    hierarchy = get_hierarchy(backend, dataset, attribute)
    labelanc = backend.table(staging_table("rhovanc"))
    try:
        backend.materialize(labelanc, "km_label_ancestors",
                            {"hierarchy_id": hierarchy.hierarchy_id},
                            {**backend.catalog_tables("hierarchy_nodes"),
                             "dict": tables["dict"]})
        unfaithful = int(backend.scalar("km_unfaithful_rows", tables=tables))
        faults = backend.query("tdc_bad_mapping", tables={**tables, "labelanc": labelanc})[0]
    finally:
        backend.drop_table(labelanc)
    return {"rows_not_the_generalization_of_the_input": unfaithful,
            "non_sensitive_types_suppressed": int(faults[0]),
            "sensitive_types_relabelled": int(faults[1]),
            "labels_shared_with_a_sensitive_type": int(faults[2]),
            "labels_not_an_ancestor_in_the_hierarchy": int(faults[3])}
