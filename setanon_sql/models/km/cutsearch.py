"""What every constrained search of Alg. 2 shares, whatever constrains its merges.

A search keeps the generalization R as a table ``cut(item_id, node_id, leaf_id)`` and only its
version number in Python; each merge round is "new cut = query(old cut, chosen merges)". The
hierarchy cut (:mod:`.generalization`) and the graph partition (:mod:`.graph`) differ only in
how they prepare their fixed tables, price and apply merges, label the published parts and
measure utility; the table naming, <R, D>, the round bookkeeping and publishing are here once.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import SetanonError
from setanon_sql.models.km.itemsets import image_nodes
from setanon_sql.models.km.levels import KeptLevels
from setanon_sql.runs import RunContext


@dataclass
class CutSearch(ABC):
    """The tables of one search: fixed ones (``fixed``) and the current cut."""

    backend: Backend
    context: RunContext
    items: exp.Table
    dict: exp.Table
    prefix: str = field(default="", kw_only=True)
    version: int = field(default=0, kw_only=True)
    # The enumeration's rows below k of the current cut, kept for its next enumeration
    # (:class:`.levels.KeptLevels`: keyed by version, so a merge makes them stale).
    kept_levels: KeptLevels = field(init=False)

    def __post_init__(self) -> None:
        self.kept_levels = KeptLevels(self.backend, lambda purpose: self.table(f"kept{purpose}"))

    def table(self, purpose: str) -> exp.Table:
        """A work table of this search (``prefix`` keeps independent trials apart)."""
        return self.context.table(self.prefix + purpose)

    @property
    def cut(self) -> exp.Table:
        return self.table(f"cut{self.version}")

    @property
    @abstractmethod
    def fixed(self) -> builtins.dict[str, exp.Table]:
        """The tables that stay while the cut changes (dropped with it at the end)."""

    @abstractmethod
    def prepare(self) -> None:
        """Create the fixed tables and the identity cut (Alg. 2 l.4)."""

    @abstractmethod
    def merge(self, vnodes: exp.Table, error: str, batch: float) -> int:
        """Alg. 2 l.13-14 for the itemsets in ``vnodes``; returns the number of merges."""

    def merge_images(self, images: exp.Table, ell: int, error: str, batch: float) -> int:
        """:meth:`merge` for violating images given one per row (``size``, ``n1``..``nℓ``,
        :func:`.itemsets.violating_image_rows`): here one node per row, as :meth:`merge`
        reads them; a search may choose from the rows directly (:mod:`.generalization`)."""
        vnodes = self.table("vnodes")
        self.backend.materialize(vnodes, image_nodes(images, ell))
        try:
            return self.merge(vnodes, error, batch)
        finally:
            self.backend.drop_table(vnodes)

    @abstractmethod
    def no_merge_error(self, k: int) -> SetanonError:
        """Why a round found nothing to merge while itemsets still violate ``k``."""

    @abstractmethod
    def figures(self) -> builtins.dict[str, float | int]:
        """Utility of the current cut: NCP, generalized share, published labels."""

    @abstractmethod
    def publish(self, attr_no: int) -> None:
        """map_<attr>, dict_<attr> and items_<attr> of the run."""

    def generalized(self) -> exp.Table:
        """Materialize <R, D> for the current cut (the records with items replaced by nodes)."""
        target = self.table(f"g{self.version}")
        self.backend.materialize(target, "km_generalized", None,
                                 {"items": self.items, "cut": self.cut})
        return target

    def generalized_since(self, previous: exp.Table, prevcut: exp.Table) -> exp.Table:
        """Materialize <R, D> for the current cut from ``previous``, <R, D> of the cut
        ``prevcut`` (``km_generalized_update``): only the rows of the nodes the merges since
        changed are found again. At 1 M CDR-like users the whole DISTINCT took 79 s of the
        search on DuckDB (87 versions), at 100,000 users 46 s on PostgreSQL."""
        target, changed = self.table(f"g{self.version}"), self.table("gchanged")
        try:
            self.backend.materialize(changed, "km_changed_nodes", None,
                                     {"cut": self.cut, "prevcut": prevcut})
            self.backend.materialize(target, "km_generalized_update", None,
                                     {"prev": previous, "items": self.items, "cut": self.cut,
                                      "changed": changed})
        finally:
            self.backend.drop_table(changed)
        return target

    def copy_cut(self, target: exp.Table, whole: bool = False) -> None:
        """``target``: the current cut's (item_id, node_id), kept while the cut changes; with
        ``whole``, every column, so that another search can start from it (:meth:`start_from`)."""
        self.backend.drop_table(target)
        columns = ["*"] if whole else ["item_id", "node_id"]
        self.backend.materialize(target, exp.select(*columns).from_(self.cut.copy()))

    def touched_since(self, prevcut: exp.Table, changed: exp.Table,
                      touched: exp.Table) -> None:
        """``changed``: the nodes whose items differ between ``prevcut`` and the current cut
        (``km_changed_nodes``); ``touched``: the records holding one, their nodes counted and
        flagged when changed (``km_touched_counts``). Every holder of an itemset with a changed
        node is among them, so a round after merges recounts only these (:mod:`.exact`,
        :mod:`.enumsteer`)."""
        self.backend.materialize(changed, "km_changed_nodes", None,
                                 {"cut": self.cut, "prevcut": prevcut})
        self.backend.materialize(touched, "km_touched_counts", None,
                                 {"items": self.items, "cut": self.cut, "changed": changed})

    def start_from(self, kept: exp.Table) -> None:
        """Make ``kept`` (a whole :meth:`copy_cut` of a search over the same items) the current
        cut: called after :meth:`prepare`, it replaces the identity cut."""
        self.kept_levels.drop()  # the same version now names another cut
        self.backend.drop_table(self.cut)
        self.backend.materialize(self.cut, exp.select("*").from_(kept.copy()))

    @abstractmethod
    def _next_cut(self, new: exp.Table, old: exp.Table, chosen: exp.Table) -> None:
        """Materialize ``new``: the cut ``old`` with the merges in ``chosen`` applied."""

    def row_count(self, table: exp.Table) -> int:
        return int(self.backend.scalar(
            exp.select(exp.func("count", exp.Star())).from_(table.copy())))

    def _apply_chosen(self, chosen: exp.Table) -> int:
        """The next cut version from the merges in ``chosen`` (if any); drops the old cut and
        ``chosen``. Returns the merge count."""
        merges = self.row_count(chosen)
        if merges:
            old = self.cut
            self.version += 1
            self._next_cut(self.cut, old, chosen)
            self.backend.drop_table(old)
        self.backend.drop_table(chosen)
        return merges

    def _publish_with(self, attr_no: int, pubid_statement: str,
                      pubid_tables: builtins.dict[str, exp.Table]) -> None:
        """Number the published labels by ``pubid_statement``, then write map_, dict_ and
        items_ of the run: one statement each."""
        b = self.backend
        pubid = self.table("pubid")
        b.materialize(pubid, pubid_statement, None, {"cut": self.cut, **pubid_tables})
        bound = {"cut": self.cut, "pubid": pubid, "items": self.items}
        for kind in ("map", "dict", "items"):
            b.materialize(self.context.table(f"{kind}_{attr_no}"), f"km_publish_{kind}", None,
                          bound)
        b.drop_table(pubid)

    def drop_work_tables(self) -> None:
        self.kept_levels.drop()
        for table in (*self.fixed.values(), self.cut):
            self.backend.drop_table(table)


def cut_figures(row: Sequence[Any], universe: str) -> dict[str, float | int]:
    """NCP, generalized share and label count from one figures row.

    ``row`` is (NCP numerator, occurrences, generalized occurrences, labels, |I|), as
    ``km_cut_figures`` and ``km_graph_figures`` return it; NCP divides by (|I| - 1) per
    occurrence. ``universe`` names |I| in the figures (hierarchy leaves or graph items).
    """
    ncp_sum, occurrences, generalized, labels, n_items = row
    total = int(occurrences or 0)
    denominator = (int(n_items) - 1) * total
    return {
        "ncp": float(ncp_sum) / denominator if denominator else 0.0,
        "generalized_share": int(generalized or 0) / total if total else 0.0,
        "published_labels": int(labels),
        "item_occurrences": total,
        universe: int(n_items),
    }
