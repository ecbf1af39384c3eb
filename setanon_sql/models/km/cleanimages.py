"""The generalized samples already found k-anonymous under the current cut, so not counted again.

Alg. 2 l.9-10 counts, for each part of a pool, the support in <R, D> of every distinct
generalized sample (:func:`.groupsupport.group_violations`). Under one cut that support is a
fact about the image alone: an image found at support >= k in one part is at support >= k in
every later part checked under the same cut. At σ = 0.999 a passing pool is 5.9 M samples
checked in parts of up to 1 M under one cut, and the parts repeat images: at 1 M CDR-like users
under the 35-region cut, a part of 1 M proposals held 446,000 distinct images at ℓ = 7 and
793,000 at ℓ = 11, of which only 263,000 and 639,000 were new against the part before
(BENCHMARKS.md, km, "Stop 92"); the cut check was ~430 of the run's 459 support counts.

So the images of a part found clean are remembered, as one row of ℓ node ids each (their
nodes in increasing order, -1 past the image's size), and the next part counts only the images
not among them. Only the parts of a pool that goes on are added: a violating sample fails the
pool, and the merges that follow change the cut (a part whose violating proposals the
rejection rule all drops goes on, and its clean images are added). A new cut version forgets
them all (an image's nodes name other item sets under it); nothing else is carried across, so
the violations found are exactly those of counting every image (tests compare the two).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import pivoted_sets
from setanon_sql.sqlrender import qualified_column as _col
from setanon_sql.sqlrender import union_all, with_alias

# Past an image's size its row holds this in place of a node id (node ids are never negative),
# so that two images match by plain equality, which every engine can hash-join on.
NO_NODE = -1


@dataclass
class CleanImages:
    """The clean images of one itemset size under one cut version, kept between parts."""

    backend: Backend
    table: Callable[[str], exp.Table]
    width: int  # the most nodes an image holds (ℓ: one node per item)
    version: int | None = None  # the cut version of the kept images (None: none kept)
    remembered: int = 0  # images of the parts not counted because they were kept (a figure)

    def unknown(self, groups: exp.Table, version: int, target: exp.Table) -> exp.Table:
        """The groups of ``groups(vid, node_id, n)`` (:func:`.sampled.group_samples`) whose
        image is not kept for ``version``: ``target``, or ``groups`` itself when none is."""
        b = self.backend
        if version != self.version:
            self.forget()
        if self.version is None:
            return groups
        images, known = self.table("simages"), self.table("sknown")
        slots = [f"i{j}" for j in range(1, self.width + 1)]
        try:
            b.materialize(images, pivoted_sets(groups, "vid", "node_id", self.width, NO_NODE))
            b.materialize(known, exp.select(_col("m", "vid").as_("vid", quoted=True))
                          .from_(with_alias(images, "m"))
                          .join(with_alias(self.table("sclean"), "c"),
                                on=exp.and_(*(_col("m", s).eq(_col("c", s)) for s in slots))))
            self.remembered += int(b.scalar(
                exp.select(exp.func("count", exp.Star())).from_(known.copy())) or 0)
            b.materialize(target, without_vids(groups, known))
        finally:
            b.drop_table(images)
            b.drop_table(known)
        return target

    def add(self, clean: exp.Table | exp.Select, version: int) -> None:
        """Keep the images of ``clean(vid, node_id, n)``: groups :meth:`unknown` returned,
        since counted under ``version`` and found clean. Each is new, so the kept rows stay
        distinct. The caller adds a part only when its pool goes on under the same cut (a
        failing pool's merges make a new version, which forgets them)."""
        b = self.backend
        if version != self.version:
            self.forget()
        kept, merged = self.table("sclean"), self.table("scleanu")
        images = pivoted_sets(clean, "vid", "node_id", self.width, NO_NODE)
        slots = [exp.column(f"i{j}", quoted=True) for j in range(1, self.width + 1)]
        fresh = exp.select(*(s.copy() for s in slots)).from_(images.subquery("n"))
        if self.version is None:
            b.materialize(kept, fresh)
        else:
            b.materialize(merged, union_all(
                [exp.select(*(s.copy() for s in slots)).from_(kept.copy()), fresh]))
            b.replace_table(kept, merged)
        self.version = version

    def forget(self) -> None:
        """Drop the kept images (a new cut version, or the size is done)."""
        for purpose in ("sclean", "scleanu", "simages", "sknown"):
            self.backend.drop_table(self.table(purpose))
        self.version = None


def without_vids(rows: exp.Table | exp.Select, vids: exp.Table) -> exp.Select:
    """The rows of ``rows(vid, ...)`` whose vid is not in ``vids(vid, ...)``: an anti-join
    written as an outer join (PostgreSQL hashes ``NOT IN (subquery)`` only within work_mem)."""
    source = with_alias(rows, "r") if isinstance(rows, exp.Table) else rows.subquery("r")
    ids = exp.select(exp.column("vid", quoted=True)).distinct().from_(vids.copy())
    return (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("r")))
            .from_(source)
            .join(ids.subquery("x"), on=_col("r", "vid").eq(_col("x", "vid")), join_type="left")
            .where(_col("x", "vid").is_(exp.Null())))
