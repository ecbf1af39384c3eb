"""Build the run's sensitive constraint tables ``common`` and ``cons`` (see :mod:`.constraint`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError
from setanon_sql.models.prho.constraint import Constraint, md5_text
from setanon_sql.models.prho.params import PrhoParams
from setanon_sql.models.rho.qids import col, placeholder
from setanon_sql.names import staging_table
from setanon_sql.sqlrender import with_alias

log = logging.getLogger(__name__)
Namer = Callable[[str], exp.Table]

FIRST_BATCH = 1000  # fixed+: records scanned first for the union S+ (then x10 per batch)


def draw_common(backend: Backend, dictionary: exp.Table, count: int) -> exp.Select:
    """S: ``count`` labels in the order of md5(seed:label) (byte-wise), ties by label."""
    key = backend.binary_sort_key(md5_text(placeholder("seed"), col("label")))
    return (exp.select(col("item_id")).from_(dictionary.copy())
            .order_by(exp.Ordered(this=key),
                      exp.Ordered(this=backend.binary_sort_key(col("label"))))
            .limit(exp.convert(count)))


def _load_file(backend: Backend, constraint: Constraint, path: str) -> dict[str, Any]:
    lines = backend.table(staging_table("prholines"))
    tokens = backend.table(staging_table("prhotokens"))
    figures: dict[str, Any] = {}
    try:
        backend.load_lines(Path(path), lines)
        backend.run("tokens_from_blank_separated", {"spmf": False},
                    {"tokens": tokens, "lines": lines})
        unknown = backend.query("prho_unknown_constraint_labels", tables={
            "tokens": tokens, "dict": constraint.dictionary})
        if unknown:
            labels = [label for label, _ in unknown]
            figures["unknown_constraint_labels"] = {"count": int(unknown[0][1]), "first": labels}
            log.warning("--constraint %s: %d label(s) are not items of the data and are "
                        "ignored: %s", path, unknown[0][1], ", ".join(labels))
        backend.materialize(constraint.cons, "prho_cons_from_tokens", tables={
            "tokens": tokens, "records": constraint.records, "dict": constraint.dictionary})
    finally:
        backend.drop_table(tokens)
        backend.drop_table(lines)
    rows = int(backend.scalar("prho_count_rows", tables={"t": constraint.cons}))
    if rows == 0:
        raise InputError(f"--constraint {path}: no line names an item of the data, so there is "
                         "nothing to protect; list the items record n protects on line n")
    figures["constraint_pairs"] = rows
    return figures


def _union_plus(backend: Backend, table: Namer, base: Constraint, target: exp.Table,
                n_types: int) -> None:
    """S+ = the union of all E_u of personalized+ (fixed+), scanning records in growing batches.

    An item joins S+ as soon as one record draws it; after a batch of 1,000 records an item
    outside S is missing with probability 0.99^1000 ≈ 4e-5, so later batches check few items.
    """
    found = table("found")
    backend.materialize(found, "prho_no_items", tables={"dict": base.dictionary})
    last = int(backend.scalar("prho_max_position", tables={"records": base.records}))
    low, size = 1, FIRST_BATCH
    while low <= last:
        query = (exp.select(col("item_id", "d")).distinct()
                 .from_(with_alias(base.dictionary, "d"))
                 .join(with_alias(base.records, "r"), on=exp.and_(
                     col("position", "r") >= placeholder("lo"),
                     col("position", "r") < placeholder("hi")))
                 .where(exp.not_(exp.Exists(this=exp.select(exp.Literal.number(1))
                                            .from_(with_alias(found, "f"))
                                            .where(col("item_id", "f").eq(col("item_id", "d")))))))
        query = base.member_filter(backend, query, col("record_id", "r"), col("item_id", "d"))
        new = table("foundnew")
        backend.drop_table(new)
        backend.materialize(new, query, {"lo": low, "hi": low + size, **base.params()})
        merged = table("foundall")
        backend.drop_table(merged)
        backend.materialize(merged, "prho_found_union", tables={"found": found, "common": new})
        backend.drop_table(found)
        backend.drop_table(new)
        found = table("found")
        backend.materialize(found, exp.select(col("item_id")).from_(merged.copy()))
        backend.drop_table(merged)
        low, size = low + size, size * 10
        if int(backend.scalar("prho_count_rows", tables={"t": found})) == n_types:
            break
    backend.materialize(target, exp.select(col("item_id")).from_(found.copy()))
    backend.drop_table(found)


def build_constraint(backend: Backend, table: Namer, seed: int, chosen: PrhoParams,
                     items: exp.Table, records: exp.Table, dictionary: exp.Table) -> Constraint:
    """Create the tables ``common`` and ``cons`` named by ``table``; returns the constraint and
    its figures. A pure function of the data, the parameters and ``seed``: the verifier builds
    it again in its own tables rather than reading the run's."""
    common, cons = table("common"), table("cons")
    setting = chosen.setting or "file"
    fraction, noise = chosen.sensitive_fraction or 0.0, chosen.noise
    probabilities = {"personalized": (0.0, fraction),
                     "personalized+": (1.0 - noise, noise)}.get(setting, (0.0, 0.0))
    constraint = Constraint(setting, seed, common, cons, records, dictionary, *probabilities)
    figures: dict[str, Any] = {"constraint": setting}
    backend.materialize(cons, "prho_no_pairs", tables={"items": items})
    n_types = int(backend.scalar("prho_count_rows", tables={"t": dictionary}))
    if setting == "file":
        backend.drop_table(cons)
        assert chosen.constraint is not None
        figures.update(_load_file(backend, constraint, chosen.constraint))
        backend.materialize(common, "prho_no_items", tables={"dict": dictionary})
    elif setting == "personalized":
        backend.materialize(common, "prho_no_items", tables={"dict": dictionary})
    else:
        count = max(1, round(fraction * n_types))
        drawn = table("drawn") if setting == "fixed+" else common
        backend.materialize(drawn, draw_common(backend, dictionary, count), {"seed": seed})
        if setting == "fixed+":
            base = Constraint("personalized+", seed, drawn, cons, records, dictionary,
                              1.0 - noise, noise)
            _union_plus(backend, table, base, common, n_types)
            backend.drop_table(drawn)
            figures["drawn_sensitive_types"] = count
    figures["common_sensitive_types"] = int(backend.scalar("prho_count_rows",
                                                           tables={"t": common}))
    figures["item_types"] = n_types
    return Constraint(setting, seed, common, cons, records, dictionary, *probabilities, figures)
