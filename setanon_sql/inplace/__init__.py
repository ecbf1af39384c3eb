"""Anonymize in place: apply a finished run to the user's attached tables, and undo it.

``plan`` computes what would change (also the dry run), ``apply`` writes it in one transaction
with a change log and a typed backup, ``undo`` restores the original rows exactly. See
docs in each module; the user's tables are only written inside those transactions.
"""

from __future__ import annotations

from setanon_sql.inplace.apply import apply_plan, check_privileges
from setanon_sql.inplace.plan import Plan, build_plan, check_in_sync, preview
from setanon_sql.inplace.target import user_tables
from setanon_sql.inplace.undo import applied_figures, forget_dropped, undo_run

__all__ = [
    "Plan",
    "applied_figures",
    "apply_plan",
    "build_plan",
    "check_in_sync",
    "check_privileges",
    "forget_dropped",
    "preview",
    "undo_run",
    "user_tables",
]
