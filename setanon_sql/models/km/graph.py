"""Partitions constrained by an adjacency graph (Acs et al. Sec. VI-C, the Voronoi regions).

A :class:`~.cutsearch.CutSearch` like the hierarchy cut, so the exact and sampled
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

from setanon_sql.errors import InputError, SetanonError
from setanon_sql.models.km.cutsearch import CutSearch, cut_figures
from setanon_sql.models.km.generalization import too_few_records
from setanon_sql.models.km.graphfile import load_coordinates, load_graph


@dataclass
class GraphGeneralization(CutSearch):
    """A graph-constrained search: a part only merges with an adjacent part."""

    graph: str
    coordinates: str | None = None

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

    def merge(self, vnodes: exp.Table, error: str, batch: float) -> int:
        """Alg. 2 l.13-14: each violating part proposes its neighbour of least error; chained
        merges of the round are joined into components."""
        b = self.backend
        costs, chosen = self.table("costs"), self.table("chosen")
        bound = {**self.fixed, "cut": self.cut, "vnodes": vnodes}
        if error == "geo":
            b.materialize(costs, "km_graph_pair_costs_geo", None, bound)
        else:
            b.materialize(costs, "km_graph_pair_costs", {"error": error}, bound)
        b.materialize(chosen, "km_graph_choose_merges", {"batch": batch},
                      {"vnodes": vnodes, "costs": costs})
        b.drop_table(costs)
        return self._apply_chosen(chosen)

    def _next_cut(self, new: exp.Table, old: exp.Table, chosen: exp.Table) -> None:
        """Chained merges of the round are joined into components first."""
        comp = self.table("comp")
        self.backend.materialize(comp, "km_graph_components", None, {"chosen": chosen})
        self.backend.materialize(new, "km_graph_apply_merges", None, {"cut": old, "comp": comp})
        self.backend.drop_table(comp)

    def no_merge_error(self, k: int) -> SetanonError:
        """One part is left (fewer than k records hold an item), or the violating parts are
        whole connected components of the graph."""
        parts = int(self.backend.scalar(exp.select(exp.func("count", exp.Distinct(
            expressions=[exp.column("node_id")]))).from_(self.cut.copy())))
        if parts == 1:
            return too_few_records(k)
        return InputError(f"--graph {self.graph}: itemsets still below k = {k} lie in parts that "
                          "already cover a whole connected component of the graph, so no merge "
                          "is allowed; add edges between the components (or choose a smaller k)")

    def figures(self) -> dict[str, float | int]:
        """NCP, generalized share, published labels and, with coordinates, the geo error."""
        figures = cut_figures(self.backend.query(
            "km_graph_figures", None, {"cut": self.cut, "occ": self.table("occ")})[0],
            "graph_items")
        if self.coordinates:
            occurrences = figures["item_occurrences"]
            total = self.backend.scalar("km_graph_geo_error", None,
                                        {**self.fixed, "cut": self.cut})
            figures["geo_error"] = float(total or 0.0) / occurrences if occurrences else 0.0
        return figures

    def publish(self, attr_no: int) -> None:
        """A merged part is published as ``region:<label>+<n>``."""
        self._publish_with(attr_no, "km_graph_published_ids", {"dict": self.dict})

