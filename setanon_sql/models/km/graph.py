"""Partitions constrained by an adjacency graph (Acs et al. Sec. VI-C, the Voronoi regions).

The same interface as :class:`~.generalization.Generalization`, so the exact and sampled
searches run unchanged: ``cut(item_id, node_id, leaf_id)`` maps every item to its part, whose
id is the smallest item id in it. A part only grows by merging with an adjacent part (an edge
joins an item of each), so every part stays connected. Violating itemsets propose the merge of
one of their parts with a neighbour of least error increase (Alg. 2 l.13-14); chained merges
of one round are joined by a recursive statement.

Published labels: a part of one item keeps the item's label; a merged part is
``region:<label of its smallest item>+<number of other items>`` (e.g. ``region:12+3``).
Errors: ``ncp`` (part size - 1 over |I| - 1 per occurrence, the hierarchy NCP with the part as
the node), ``share`` (occurrences generalized) and ``geo``: the paper's average geographic error,
sum over occurrences of the distance from the item to the centre of its part over the number
of occurrences (Sec. VI-C; the centre is the mean of the part's item coordinates, as we have
points, not the Voronoi polygons whose centroid the paper uses, footnote 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError, SetanonError
from setanon_sql.models.km.generalization import Generalization, too_few_records
from setanon_sql.models.km.graphfile import load_coordinates, load_graph
from setanon_sql.runs import RunContext


@dataclass
class GraphGeneralization:
    """The tables of one graph-constrained search: edges, occurrences and the current parts."""

    backend: Backend
    context: RunContext
    items: exp.Table
    dict: exp.Table
    graph: str
    coordinates: str | None = None
    prefix: str = ""
    version: int = 0

    def table(self, purpose: str) -> exp.Table:
        return self.context.table(self.prefix + purpose)

    @property
    def cut(self) -> exp.Table:
        return self.table(f"cut{self.version}")

    @property
    def fixed(self) -> dict[str, exp.Table]:
        return {"edge": self.table("edge"), "occ": self.table("occ"),
                "coord": self.table("coord")}

    def prepare(self) -> None:
        """Edges, coordinates, occurrences; every item its own part (Alg. 2 l.4)."""
        b = self.backend
        load_graph(b, self.graph, self.dict, self.table, self.table("edge"))
        if self.coordinates:
            load_coordinates(b, self.coordinates, self.dict, self.table, self.table("coord"))
        b.materialize(self.table("occ"), "km_occurrences", None, {"items": self.items})
        b.materialize(self.cut, "km_graph_identity_cut", None, {"dict": self.dict})

    def generalized(self) -> exp.Table:
        target = self.table(f"g{self.version}")
        self.backend.materialize(target, "km_generalized", None,
                                 {"items": self.items, "cut": self.cut})
        return target

    def merge(self, vnodes: exp.Table, error: str, batch: float) -> int:
        """Alg. 2 l.13-14 for the itemsets in ``vnodes``; returns the number of merges."""
        b = self.backend
        costs, chosen, comp = self.table("costs"), self.table("chosen"), self.table("comp")
        bound = {**self.fixed, "cut": self.cut, "vnodes": vnodes}
        if error == "geo":
            b.materialize(costs, "km_graph_pair_costs_geo", None, bound)
        else:
            b.materialize(costs, "km_graph_pair_costs", {"error": error}, bound)
        b.materialize(chosen, "km_graph_choose_merges", {"batch": batch},
                      {"vnodes": vnodes, "costs": costs})
        merges = int(b.scalar(exp.select(exp.func("count", exp.Star())).from_(chosen.copy())))
        if merges:
            old = self.cut
            self.version += 1
            b.materialize(comp, "km_graph_components", None, {"chosen": chosen})
            b.materialize(self.cut, "km_graph_apply_merges", None, {"cut": old, "comp": comp})
            b.drop_table(comp)
            b.drop_table(old)
        b.drop_table(costs)
        b.drop_table(chosen)
        return merges

    def no_merge_error(self, k: int) -> SetanonError:
        """Why a round found nothing to merge: one part is left (fewer than k records hold an
        item), or the violating parts are whole connected components of the graph."""
        parts = int(self.backend.scalar(exp.select(exp.func("count", exp.Distinct(
            expressions=[exp.column("node_id")]))).from_(self.cut.copy())))
        if parts == 1:
            return too_few_records(k)
        return InputError(f"--graph {self.graph}: itemsets still below k = {k} lie in parts that "
                          "already cover a whole connected component of the graph, so no merge "
                          "is allowed; add edges between the components (or choose a smaller k)")

    def figures(self) -> dict[str, float | int]:
        """Utility of the current parts: NCP, generalized share, geo error, published labels."""
        ncp_sum, occurrences, generalized, labels, n_items = self.backend.query(
            "km_graph_figures", None, {"cut": self.cut, "occ": self.table("occ")})[0]
        occurrences = int(occurrences or 0)
        denominator = (int(n_items) - 1) * occurrences
        figures: dict[str, float | int] = {
            "ncp": float(ncp_sum) / denominator if denominator else 0.0,
            "generalized_share": int(generalized or 0) / occurrences if occurrences else 0.0,
            "published_labels": int(labels),
            "item_occurrences": occurrences,
            "graph_items": int(n_items),
        }
        if self.coordinates:
            total = self.backend.scalar("km_graph_geo_error", None,
                                        {**self.fixed, "cut": self.cut})
            figures["geo_error"] = float(total or 0.0) / occurrences if occurrences else 0.0
        return figures

    def publish(self, attr_no: int) -> None:
        """map_<attr>, dict_<attr> and items_<attr> of the run: one statement each."""
        b = self.backend
        pubid = self.table("pubid")
        b.materialize(pubid, "km_graph_published_ids", None, {"cut": self.cut, "dict": self.dict})
        bound = {"cut": self.cut, "pubid": pubid, "items": self.items}
        for kind in ("map", "dict", "items"):
            b.materialize(self.context.table(f"{kind}_{attr_no}"), f"km_publish_{kind}", None,
                          bound)
        b.drop_table(pubid)

    def drop_work_tables(self) -> None:
        for table in (*self.fixed.values(), self.cut):
            self.backend.drop_table(table)


AnyGeneralization = Generalization | GraphGeneralization
