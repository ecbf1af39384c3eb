"""Global recoding along a hierarchy cut (Acs et al. Sec. V, Fig. 1): state in tables, SQL steps.

The generalization R is the table ``cut(item_id, node_id, leaf_id)``; the controller keeps only
its version number. Every step is "new table = query(old tables)".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import InputError, UsageError
from setanon_sql.io.hierarchy import Hierarchy, find_hierarchy, get_hierarchy, hierarchy_name
from setanon_sql.io.hierarchy import load_hierarchy as store_hierarchy
from setanon_sql.models.km.cutsearch import CutSearch, cut_figures
from setanon_sql.models.km.itemsets import choose_image_merges


def resolve_hierarchy(backend: Backend, dataset: Dataset, attribute: Attribute,
                      path: str | None) -> Hierarchy:
    """The hierarchy of ``attribute``: the loaded one, or ``path`` (loaded now if none is).

    A different hierarchy already loaded is not replaced silently: the user says so with
    ``setanon load hierarchy --replace``.
    """
    if path is None:
        return get_hierarchy(backend, dataset, attribute)
    existing = find_hierarchy(backend, hierarchy_name(dataset, attribute))
    if existing is None:
        return store_hierarchy(backend, path, dataset, attribute.name)
    if existing.source and Path(existing.source).resolve() == Path(path).resolve():
        return existing
    raise InputError(
        f"--hierarchy {path}: column {attribute.name!r} of dataset {dataset.name!r} already has "
        f"the hierarchy {existing.source}; replace it with 'setanon load hierarchy {path} "
        f"--name {dataset.name} --column {attribute.name} --replace' or drop --hierarchy"
    )


def too_few_records(k: int) -> UsageError:
    """The error when everything is merged and itemsets still violate k."""
    return UsageError(f"--k {k}: fewer than {k} records of the dataset hold an item, so no "
                      "generalization can make them k-anonymous; choose a smaller k")


@dataclass
class Generalization(CutSearch):
    """A hierarchy-cut search: the cut only coarsens by replacing nodes with an ancestor."""

    hierarchy_id: int

    @property
    def fixed(self) -> dict[str, exp.Table]:
        return {"hnode": self.table("hnode"), "anc": self.table("anc"), "occ": self.table("occ")}

    def prepare(self) -> None:
        """Node ids, ancestors and occurrence counts; R := identity (Alg. 2 l.4)."""
        b = self.backend
        hid = {"hierarchy_id": self.hierarchy_id}
        catalog = b.catalog_tables("hierarchy_nodes")
        labelanc = self.table("labelanc")
        b.materialize(labelanc, "km_label_ancestors", hid, {**catalog, "dict": self.dict})
        missing = b.query("km_items_without_leaf", tables={"dict": self.dict,
                                                           "labelanc": labelanc})
        if missing:
            shown = ", ".join(repr(row[0]) for row in missing)
            raise InputError(f"the hierarchy misses {missing[0][1]} item(s) of the data, first: "
                             f"{shown}; every item must be a leaf of the hierarchy")
        b.materialize(self.table("hnode"), "km_nodes", hid, {**catalog, "labelanc": labelanc})
        b.materialize(self.table("anc"), "km_item_ancestors", None,
                      {"labelanc": labelanc, "hnode": self.table("hnode")})
        b.drop_table(labelanc)
        b.materialize(self.table("occ"), "km_occurrences", None, {"items": self.items})
        b.materialize(self.cut, "km_identity_cut", None, self.fixed)

    def merge(self, vnodes: exp.Table, error: str, batch: float) -> int:
        """Alg. 2 l.13-14: each violating itemset proposes the ancestor of least error."""
        b = self.backend
        costs, chosen = self.table("costs"), self.table("chosen")
        b.materialize(costs, "km_merge_costs", {"error": error}, {**self.fixed, "cut": self.cut})
        b.materialize(chosen, "km_choose_merges", {"batch": batch},
                      {"vnodes": vnodes, "hnode": self.table("hnode"), "costs": costs})
        b.drop_table(costs)
        return self._apply_chosen(chosen)

    def merge_images(self, images: exp.Table, ell: int, error: str, batch: float) -> int:
        """:meth:`merge` for images one per row: the same merges, chosen from the rows
        (:func:`.itemsets.choose_image_merges`) instead of a row per (image, node) and a window
        per image: on BMS-WebView-2 (k = 5, m = 4, σ = 0.99) those cost about a quarter of the
        search's CPU time, mostly at size 2, whose rounds hold 10^5-10^6 violating images."""
        b = self.backend
        costs, chosen = self.table("costs"), self.table("chosen")
        b.materialize(costs, "km_merge_costs", {"error": error}, {**self.fixed, "cut": self.cut})
        b.materialize(chosen, choose_image_merges(images, self.table("hnode"), costs, ell),
                      {"batch": batch})
        b.drop_table(costs)
        return self._apply_chosen(chosen)

    def _next_cut(self, new: exp.Table, old: exp.Table, chosen: exp.Table) -> None:
        self.backend.materialize(new, "km_apply_merges", None,
                                 {"cut": old, "anc": self.table("anc"), "chosen": chosen})

    def no_merge_error(self, k: int) -> UsageError:
        """Only the root is left to violate."""
        return too_few_records(k)

    def figures(self) -> dict[str, float | int]:
        return cut_figures(self.backend.query(
            "km_cut_figures", None, {"cut": self.cut, "occ": self.table("occ"),
                                     "hnode": self.table("hnode")})[0], "hierarchy_leaves")

    def publish(self, attr_no: int) -> None:
        """A merged node is published under its own label."""
        self._publish_with(attr_no, "km_published_ids", {"hnode": self.table("hnode")})
