"""The violating images of ℓ-itemsets under a changing cut, kept from one try to the next.

Both users of the enumeration certificate look at the violating images (:mod:`.exactcheck`)
again and again while merges coarsen the cut: :mod:`.enumsteer` once per merge round, and the
sampled search (:mod:`.sampled`) at most once per cut version, between pools. An image whose
nodes all hold the same items under both cuts has the same holders, so the same support,
covers and bound: it is kept as it was. Every other image holds a changed node, so all its
holders are records holding one: only those records are enumerated, and only their itemsets
with a changed node. The union is what enumerating every record would give (tests compare
them), at a fraction of the rows once the merges get few. On 100,000 CDR-like users at
σ = 0.999, the sampled search's full re-enumerations were half of the run (BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.itemsets import (
    enumeration_joins,
    enumeration_rows,
    untouched_image_rows,
    violating_image_part,
    violating_image_rows,
)
from setanon_sql.models.km.levels import fits_levels, levels_pay
from setanon_sql.models.km.shapes import drop_shapes, record_lengths, record_shapes
from setanon_sql.sqlrender import union_all


@dataclass
class ImageTracker:
    """The violating images of ``ell``-itemsets (support below ``k``) under the current cut of
    ``gen``, one row each (:func:`.itemsets.violating_image_rows`: size, n1..nℓ, x).

    ``prefix`` names the work tables, so that two trackers of one search do not collide."""

    gen: CutSearch
    ell: int
    k: int
    prefix: str
    images: exp.Table | None = None

    def _table(self, purpose: str) -> exp.Table:
        return self.gen.table(f"{self.prefix}{purpose}")

    @property
    def started(self) -> bool:
        return self.images is not None

    def start(self, counts: exp.Table,
              lengths: list[tuple[int, int]] | None = None) -> exp.Table:
        """Enumerate every record of ``counts`` (``km_generalized_counts`` of the current cut),
        by its distinct node sets where they save rows (:mod:`.shapes`; ``lengths`` as
        :func:`.shapes.record_shapes` takes them, when the caller has them)."""
        images, b = self._table("images"), self.gen.backend
        if lengths is None:
            lengths = record_lengths(b, counts)
        # where the search kept levels of this cut, they are read, not the distinct node sets
        kept = self.gen.kept_levels.holds(self._key) and fits_levels(lengths, self.ell)
        shapes = None if kept else record_shapes(b, counts, self.ell, self._table, lengths)
        try:
            if kept or (shapes is None and levels_pay(lengths, self.ell)):
                self._start_by_levels(counts, lengths, images)
            else:
                with enumeration_joins(b, self.ell):
                    b.materialize(images, violating_image_rows(
                        counts, self.ell, shapes=shapes),
                        {"k": self.k})
        finally:
            drop_shapes(b, shapes)
        return self._made(images)

    @property
    def _key(self) -> tuple[int, int]:
        """What the search's kept levels are of (:class:`.levels.KeptLevels`)."""
        return (self.gen.version, self.k)

    def start_rows(self, lengths: list[tuple[int, int]]) -> int:
        """The rows :meth:`start` on the current cut enumerates at most (``lengths``: its
        records' (nodes, records) pairs): by levels, those of the levels not kept; else
        every itemset of every record (the distinct node sets read fewer)."""
        if fits_levels(lengths, self.ell):
            return self.gen.kept_levels.rows_to_build(self._key, lengths, self.ell)
        return enumeration_rows(lengths, self.ell)

    def _start_by_levels(self, counts: exp.Table, lengths: list[tuple[int, int]],
                         images: exp.Table) -> None:
        """``images`` as :func:`.itemsets.violating_image_rows` of ``counts``, each size read
        from its level's rows below k (:class:`.levels.KeptLevels` of the search: those an
        enumeration of this cut and k kept are not built again) into a part, the parts then
        put together."""
        b = self.gen.backend
        parts: list[exp.Table] = []

        def visit(size: int, rows: exp.Table) -> None:
            part = self._table(f"part{size}")
            parts.append(part)
            b.materialize(part, violating_image_part(counts, size, self.ell, level=rows),
                          {"k": self.k}, working=True)

        try:
            self.gen.kept_levels.each(self._key, counts, lengths, self.ell, visit)
            b.materialize(images, union_all([exp.select(exp.Star()).from_(part.copy())
                                             for part in parts], copy=False))
        finally:
            for part in parts:
                b.drop_table(part)

    def advance(self) -> exp.Table:
        """The images under the current cut, from those under the cut of the last call: only
        the records holding a node that changed since are enumerated."""
        assert self.images is not None, "start() first"
        b = self.gen.backend
        changed, touched, nxt = (self._table(p) for p in ("changed", "touched", "next"))
        try:
            self.gen.touched_since(self._table("imagecut"), changed, touched)
            b.materialize(nxt, exp.union(
                untouched_image_rows(self.images, changed, self.ell),
                violating_image_rows(touched, self.ell, touching="fresh"),
                distinct=False), {"k": self.k})
        finally:
            b.drop_table(changed)
            b.drop_table(touched)
        b.replace_table(self.images, nxt)
        return self._made(self.images)

    def _made(self, images: exp.Table) -> exp.Table:
        """Keep ``images`` and the cut they were made under (what :meth:`advance` compares)."""
        self.images = images
        self.gen.copy_cut(self._table("imagecut"))
        return images

    def tally(self) -> tuple[int, float]:
        """(violating images, Σ x): the certificate's count and the numerator of its bound."""
        assert self.images is not None, "start() first"
        found, total = self.gen.backend.query(
            exp.select(exp.func("count", exp.Star()),
                       exp.func("coalesce", exp.func("sum", exp.column("x", quoted=True)),
                                exp.Literal.number(0.0))).from_(self.images.copy()))[0]
        return int(found), float(total)

    def drop(self) -> None:
        for purpose in ("images", "imagecut", "next", "changed", "touched", "shapes",
                        "members"):
            self.gen.backend.drop_table(self._table(purpose))
        self.images = None
