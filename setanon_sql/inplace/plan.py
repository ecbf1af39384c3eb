"""What applying a run to the user's tables changes, computed in setanon's schema by SQL.

The plan is made of the run's tables ``ip_plan`` (one row per original (record, item) pair
that changes: generalize, move, suppress, delete_record; and published pairs no original pair
becomes: insert), ``ip_pairs`` (the same, keyed by the user's record keys as text) and
``ip_recplan`` (records deleted and single values generalized). Nothing of the user's tables is
written here, so a plan doubles as the dry run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import GuaranteeNotMetError, InputError, UsageError
from setanon_sql.inplace.target import TEXT, UserTable, user_tables
from setanon_sql.io.published import publishable
from setanon_sql.names import run_table

ITEM_ACTIONS = ("generalize", "move", "suppress", "delete_record", "insert")


@dataclass(frozen=True)
class Plan:
    """The tables of a plan and the user's tables it applies to."""

    dataset: Dataset
    run: Run
    items: UserTable
    records: UserTable | None
    attr_no: int
    pairs: exp.Table  # ip_pairs
    recplan: exp.Table  # ip_recplan
    keymap: exp.Table  # ip_keymap
    counts: dict[str, int]  # per action, over (record, item) pairs and record changes


def _table(backend: Backend, run: Run, purpose: str) -> exp.Table:
    return backend.table(run_table(run.run_id, purpose))


def _record_changes(backend: Backend, dataset: Dataset, source: exp.Table,
                    keymap: exp.Table) -> exp.Select:
    """Deleted records and changed single values: (record_id, key_text, attr_no, action, ...)."""
    deleted = (exp.select(exp.column("record_id", table="r"), exp.column("key_text", table="k"),
                          exp.Literal.number(1).as_("attr_no"),
                          exp.Literal.string("delete_record").as_("action"),
                          exp.column("key_text", table="k").as_("old_value"),
                          exp.cast(exp.Null(), TEXT).as_("new_value"))
               .from_(backend.table(dataset.records_table, "r"))
               .join(keymap.as_("k"), on="k.record_id = r.record_id")
               .where(exp.not_(exp.Exists(this=exp.select("1").from_(source.as_("s")).where(
                   "s.record_id = r.record_id")))))  # not NOT IN: see inplace_pair_plan
    query: exp.Select | exp.Union = deleted
    for attribute in dataset.single_attributes:
        if attribute.role == "id":
            continue
        old = exp.cast(exp.column(attribute.column, table="r"), TEXT)
        new = exp.cast(exp.column(attribute.column, table="p"), TEXT)
        changed = (exp.select(exp.column("record_id", table="r"),
                              exp.column("key_text", table="k"),
                              exp.Literal.number(attribute.attr_no).as_("attr_no"),
                              exp.Literal.string("generalize").as_("action"),
                              old.as_("old_value"), new.as_("new_value"))
                   .from_(backend.table(dataset.records_table, "r"))
                   .join(keymap.as_("k"), on="k.record_id = r.record_id")
                   .join(source.as_("p"), on="p.record_id = r.record_id")
                   .where(exp.NullSafeEQ(this=old.copy(), expression=new.copy()).not_()))
        query = exp.union(query, changed, distinct=False)
    return exp.select("*").from_(query.subquery("c"))


def build_plan(backend: Backend, dataset: Dataset, run: Run) -> Plan:
    """Compute (or recompute) the plan of applying ``run`` to ``dataset``'s user tables."""
    items, records = user_tables(backend, dataset)
    if len(dataset.set_attributes) != 1:
        raise UsageError(f"dataset {dataset.name!r} has {len(dataset.set_attributes)} "
                         "set-valued columns; in-place work knows attached tables with one")
    attribute = dataset.set_attributes[0]
    out = publishable(backend, dataset, run)
    orig_dict = backend.table(dataset.dict_table(attribute))
    keymap, plan = _table(backend, run, "ip_keymap"), _table(backend, run, "ip_plan")
    pairs, recplan = _table(backend, run, "ip_pairs"), _table(backend, run, "ip_recplan")
    for table in (keymap, plan, pairs, recplan):
        backend.drop_table(table)
    backend.materialize(keymap, "inplace_keymap",
                        tables={"records": backend.table(dataset.records_table)})
    backend.materialize(plan, "inplace_pair_plan", tables={
        "items": backend.table(dataset.items_table(attribute)), "dict": orig_dict,
        "map": out.maps.get(attribute.attr_no, orig_dict),
        "pitems": out.items[attribute.attr_no], "pdict": out.dicts[attribute.attr_no],
        "precords": out.records})
    backend.materialize(pairs, "inplace_user_pairs", tables={"plan": plan, "keymap": keymap})
    backend.materialize(recplan, _record_changes(backend, dataset, out.records, keymap))
    counts = {str(a): int(n) for a, n in backend.query("inplace_plan_counts",
                                                       tables={"plan": plan})}
    for action, n in backend.query("inplace_plan_counts", tables={"plan": recplan}):
        counts[f"records_{action}"] = int(n)
    return Plan(dataset, run, items, records, attribute.attr_no, pairs, recplan, keymap, counts)


def check_in_sync(backend: Backend, dataset: Dataset, items: UserTable,
                  records: UserTable | None) -> None:
    """Refuse when the user's tables no longer hold what was attached.

    A plan computed from the attached copy would leave rows added since then unprotected.
    """
    attribute = dataset.set_attributes[0]
    assert items.item is not None  # an attached items table names its item column
    pairs = (exp.select(items.as_text(items.key).as_("key_text"),
                        items.as_text(items.item).as_("label"))
             .distinct().from_(items.table("t")).subquery("u"))
    known = (exp.select(exp.column("key_text", table="k"), exp.column("label", table="d"))
             .from_(backend.table(dataset.items_table(attribute), "i"))
             .join(backend.table(dataset.dict_table(attribute), "d"),
                   on="d.item_id = i.item_id")
             .join(exp.select(exp.column("record_id"),
                              exp.cast(exp.column("c1"), TEXT).as_("key_text"))
                   .from_(backend.table(dataset.records_table)).subquery("k"),
                   on="k.record_id = i.record_id"))
    # One pass over the user's table: its distinct pairs, left-joined to the attached ones
    # (unique per key and label), count both; the unmatched ones are new.
    matched = exp.and_(exp.column("key_text", table="u").eq(exp.column("key_text", table="a")),
                       exp.column("label", table="u").eq(exp.column("label", table="a")))
    [(n_pairs, n_matched)] = backend.query(
        exp.select(exp.func("count", exp.Star()),
                   exp.func("count", exp.column("key_text", table="a")))
        .from_(pairs).join(known.subquery("a"), on=matched, join_type="left"))
    unknown = int(n_pairs) - int(n_matched)
    n_known = backend.scalar("inplace_count",
                             tables={"t": backend.table(dataset.items_table(attribute))})
    if unknown or n_pairs != n_known:
        raise InputError(
            f"the table {items.ref} changed since it was attached as {dataset.name!r} "
            f"({unknown} (record, item) pairs are new, {int(n_known) - int(n_pairs) + unknown} "
            "are gone); attach it again with 'setanon attach --replace' and re-run")
    if records is not None:
        n_rows = backend.scalar(exp.select(exp.func("count", exp.Star())).from_(
            records.table("t")))
        if int(n_rows) != dataset.n_records:
            raise InputError(
                f"the table {records.ref} has {n_rows} rows but {dataset.n_records} were "
                f"attached as {dataset.name!r}; attach it again with 'setanon attach --replace'")


def affected_rows(backend: Backend, plan: Plan) -> dict[str, int]:
    """How many of the user's item rows each action touches (duplicates counted)."""
    items = plan.items
    assert items.item is not None
    query = (exp.select(exp.column("action", table="p"), exp.func("count", exp.Star()))
             .from_(items.table("t"))
             .join(plan.pairs.as_("p"), on=exp.and_(
                 exp.column("key_text", table="p").eq(items.as_text(items.key)),
                 exp.column("old_label", table="p").eq(items.as_text(items.item))))
             .group_by(exp.column("action", table="p")))
    return {str(action): int(n) for action, n in backend.query(query)}


def preview(backend: Backend, plan: Plan, top: int = 10) -> dict[str, Any]:
    """The dry run: counts per action, the most frequent changes and sample rows."""
    rows = affected_rows(backend, plan)
    rows["insert"] = plan.counts.get("insert", 0)
    return {
        "run_id": plan.run.run_id,
        "items_table": plan.items.ref,
        "records_table": plan.records.ref if plan.records else None,
        "pairs": {a: plan.counts.get(a, 0) for a in ITEM_ACTIONS},
        "item_rows": {a: rows.get(a, 0) for a in ITEM_ACTIONS},
        "records": {"delete_record": plan.counts.get("records_delete_record", 0),
                    "generalize": plan.counts.get("records_generalize", 0)},
        "top_changes": [list(r) for r in backend.query(
            "inplace_plan_top_changes", {"n": top}, tables={"plan": plan.pairs})],
        "sample": [list(r) for r in backend.query(
            "inplace_plan_sample", {"n": top}, tables={"plan": plan.pairs})],
    }


def check_matches_published(backend: Backend, plan: Plan) -> None:
    """Inside the apply's transaction, before it commits: the user's tables now hold exactly the
    run's verified output, or the transaction is refused and rolled back.

    The guarantee was verified on the run's published tables; this check carries it to the
    user's rows: the distinct (record key, item label) pairs of the user's item table equal the
    published pairs (keys through the attached record keys), and the user's record table has as
    many rows as the published records.
    """
    out = publishable(backend, plan.dataset, plan.run)
    items = plan.items
    assert items.item is not None
    user = (exp.select(items.as_text(items.key).as_("key_text"),
                       items.as_text(items.item).as_("label"))
            .distinct().from_(items.table("t")))
    wanted = (exp.select(exp.column("key_text", table="k"), exp.column("label", table="d"))
              .distinct()
              .from_(out.items[plan.attr_no].as_("i"))
              .join(out.dicts[plan.attr_no].as_("d"), on="d.item_id = i.item_id")
              .join(plan.keymap.as_("k"), on="k.record_id = i.record_id"))
    matched = exp.and_(exp.column("key_text", table="u").eq(exp.column("key_text", table="w")),
                       exp.column("label", table="u").eq(exp.column("label", table="w")))
    [(n_user, n_matched)] = backend.query(
        exp.select(exp.func("count", exp.Star()),
                   exp.func("count", exp.column("key_text", table="w")))
        .from_(user.subquery("u")).join(wanted.subquery("w"), on=matched, join_type="left"))
    n_wanted = backend.scalar(exp.select(exp.func("count", exp.Star()))
                              .from_(wanted.subquery("w")))
    problems = []
    if not int(n_user) == int(n_matched) == int(n_wanted):
        problems.append(f"{int(n_user) - int(n_matched)} (record, item) pairs of {items.ref} are "
                        f"not in the verified output and {int(n_wanted) - int(n_matched)} of "
                        "its pairs are missing")
    if plan.records is not None:
        n_rows = backend.scalar(exp.select(exp.func("count", exp.Star()))
                                .from_(plan.records.table("t")))
        n_published = backend.scalar(exp.select(exp.func("count", exp.Star()))
                                     .from_(out.records.copy()))
        if int(n_rows) != int(n_published):
            problems.append(f"{plan.records.ref} would hold {n_rows} rows, the verified output "
                            f"{n_published}")
    if problems:
        raise GuaranteeNotMetError(
            f"applying run {plan.run.run_id} would not leave the verified output in the tables "
            f"({'; '.join(problems)}); rolled back, nothing changed")
