"""The run's working tables, versioned: a step builds the next version from the current ones.

"New table = query(old tables)" instead of updates: ``build`` materializes the next version of a
logical table (``state_3`` after ``state_2``) and drops the one it replaces. They are working
tables (``materialize(..., working=True)``): the run drops them all, and publishes new tables
built from them, so the engine need not make them crash-safe.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend, Params, Statement
from setanon_sql.runs import RunContext
from setanon_sql.sqlrender import TableBinding


class Work:
    """Current versions of a run's logical working tables."""

    def __init__(self, backend: Backend, context: RunContext) -> None:
        self.backend = backend
        self.context = context
        self._version: dict[str, int] = {}
        self._counter = 0

    def __getitem__(self, purpose: str) -> exp.Table:
        return self.context.table(f"{purpose}_{self._version[purpose]}")

    def __contains__(self, purpose: str) -> bool:
        return purpose in self._version

    def build(self, purpose: str, query: Statement, params: Params = None,
              tables: TableBinding | None = None) -> exp.Table:
        """Materialize the next version of ``purpose`` and drop the previous one."""
        self._counter += 1
        target = self.context.table(f"{purpose}_{self._counter}")
        self.backend.materialize(target, query, params, tables, working=True)
        self.drop(purpose)
        self._version[purpose] = self._counter
        return target

    def slices_for(self, rows: int) -> int:
        """How many slices of classes a step over ``rows`` record-item rows needs so that one
        GROUP BY reads no more than the engine groups at once
        (:meth:`Backend.rows_per_grouping`); 1 mostly."""
        cap = self.backend.rows_per_grouping()
        if cap is None:
            return 1
        return max(1, -(-rows // cap))

    def build_part(self, purpose: str, query: Statement, params: Params = None,
                   tables: TableBinding | None = None) -> exp.Table:
        """Materialize one slice's part of ``purpose``, kept until :meth:`build_union`."""
        self._counter += 1
        table = self.context.table(f"{purpose}_slice_{self._counter}")
        self.backend.materialize(table, query, params, tables, working=True)
        return table

    def build_union(self, purpose: str, parts: list[exp.Table]) -> exp.Table:
        """The next version of ``purpose``: the union of its slices' parts, which it drops.
        The parts hold disjoint classes, so for a query that groups or ranks within a class the
        union is the query's result over all classes."""
        union = exp.union(*(exp.select("*").from_(table) for table in parts), distinct=False)
        built = self.build(purpose, union)
        for table in parts:
            self.backend.drop_table(table)
        return built

    def drop(self, purpose: str) -> None:
        if purpose in self._version:
            self.backend.drop_table(self[purpose])
            del self._version[purpose]

    def drop_all(self) -> None:
        for purpose in list(self._version):
            self.drop(purpose)

    def count(self, purpose: str) -> int:
        return int(self.backend.scalar("kanon_count", tables={"t": self[purpose]}))
