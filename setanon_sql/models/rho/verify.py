"""``setanon verify`` for ρ-uncertainty: every qid (up to m items) re-checked exactly in SQL."""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.published import published
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
    pub = published(backend, dataset, run).items[attribute.attr_no]
    items = backend.table(dataset.items_table(attribute))
    chosen = parse_params(run.params)
    # The sensitive items are drawn again from the parameters and the run's seed (or read again
    # from the --sensitive file), not taken from the run's own table.
    sens = backend.table(staging_table("rhovsens"))
    build_sensitive(backend, sens, items, backend.table(dataset.dict_table(attribute)),
                    chosen.sensitive, chosen.sensitive_fraction, run.seed or 0)
    rho = rho_fraction(run.params["rho"])
    m = run.params.get("m")
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
    bound = f"qids of up to {m} items" if m else "every qid (any subset of a record)"
    return Verification(
        ok=extra == 0 and unsafe == 0,
        covered=f"{bound} and every sensitive item, exactly in SQL (rho = {run.params['rho']}); "
                "output is a subset of the input record by record",
        details={"unsafe_rules": unsafe, "highest_confidence": round(top, 6),
                 "occurrences_not_in_input": extra, "qid_bound_m": m or "none"})
