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

    def drop(self, purpose: str) -> None:
        if purpose in self._version:
            self.backend.drop_table(self[purpose])
            del self._version[purpose]

    def drop_all(self) -> None:
        for purpose in list(self._version):
            self.drop(purpose)

    def count(self, purpose: str) -> int:
        return int(self.backend.scalar("kanon_count", tables={"t": self[purpose]}))
