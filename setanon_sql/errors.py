"""Errors with actionable messages.

Every error a user can cause derives from :class:`SetanonError`; the CLI prints its message on one
line and exits with ``exit_code``. Messages name the thing that failed (file, table, column,
parameter) and say what to do next.
"""

from __future__ import annotations


class SetanonError(Exception):
    """Base class: a problem the user can fix. Exit code 2 (usage or input error)."""

    exit_code = 2


class InputError(SetanonError):
    """A file, table or column the user named is missing or malformed."""


class UsageError(SetanonError):
    """A parameter is out of range, or commands were combined in a way that cannot work."""


class NotFoundError(SetanonError):
    """A dataset, run or hierarchy name that does not exist in the setanon schema."""


class ConnectionFailedError(SetanonError):
    """The database URL does not connect, or the database is locked by another process."""


class SchemaVersionError(SetanonError):
    """The database's setanon schema is newer than this package."""


class PermissionDeniedError(SetanonError):
    """The database role may not create or write what setanon needs."""


class UnsupportedOperationError(SetanonError):
    """sqlglot cannot express a construct in the backend's dialect."""


class GuaranteeNotMetError(SetanonError):
    """Verification found a violation of the privacy guarantee (exit code 1)."""

    exit_code = 1
