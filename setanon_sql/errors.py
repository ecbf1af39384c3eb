"""Errors with actionable messages, one class per kind, each with its own exit code.

Every error a user can cause derives from :class:`SetanonError`; the CLI prints its message on one
line and exits with ``exit_code``. Messages name the thing that failed (file, table, column,
parameter, run) and say what to do next.

Exit codes (documented in the README; scripts rely on them):

====  ==========================================================================================
0     success
1     the privacy guarantee is not met: verification failed, or a run's output was refused
      because it did not finish or did not pass verification (:class:`GuaranteeNotMetError`,
      :class:`NotPublishableError`)
2     bad input or parameters, unknown names, a locked or unreachable database
3     a database error (:class:`DatabaseError`, carrying the driver's SQLSTATE)
4     a sampled verification could not decide at its stated confidence
      (:class:`VerificationInconclusiveError`); nothing is published
130   interrupted (Ctrl-C, SIGTERM): the run is marked interrupted, nothing is published
====  ==========================================================================================
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


class DatabaseLockedError(ConnectionFailedError):
    """Another process holds the database (DuckDB's single writer); ``holder_pid`` if known.

    A separate class so that ``--wait`` can retry exactly this refusal and nothing else.
    """

    def __init__(self, message: str, holder_pid: int | None = None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


class SchemaVersionError(SetanonError):
    """The database's setanon schema is newer than this package."""


class PermissionDeniedError(SetanonError):
    """The database role may not create or write what setanon needs."""


class UnsupportedOperationError(SetanonError):
    """sqlglot cannot express a construct in the backend's dialect."""


class WorkTooLargeError(UsageError):
    """The estimated work of a step exceeds what the machine can do; names the bounding option."""


class GuaranteeNotMetError(SetanonError):
    """Verification found a violation of the privacy guarantee (exit code 1)."""

    exit_code = 1


class NotPublishableError(SetanonError):
    """A run's output was asked for, but the run did not finish or did not pass verification.

    Exit code 1, like a failed guarantee: nothing leaves a run that was not verified.
    """

    exit_code = 1


class VerificationInconclusiveError(SetanonError):
    """A sampled verification could neither confirm nor refute the guarantee (exit code 4)."""

    exit_code = 4


class DatabaseError(SetanonError):
    """The database refused a statement: carries the driver's SQLSTATE (exit code 3)."""

    exit_code = 3

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class InterruptedRunError(SetanonError):
    """The command was interrupted (Ctrl-C or SIGTERM); exit code 130, nothing published."""

    exit_code = 130


_DRIVER_MODULES = ("duckdb", "_duckdb", "psycopg", "sqlalchemy")


def is_driver_error(error: BaseException) -> bool:
    """True for an exception raised by a database driver (DuckDB, psycopg, SQLAlchemy).

    Decided by the class's module, so that this module imports no driver.
    """
    return any(type(error).__module__.split(".")[0] == module for module in _DRIVER_MODULES)


def one_line(error: BaseException) -> str:
    """The first non-empty line of an error's text (drivers append SQL, hints and carets)."""
    primary = getattr(getattr(error, "diag", None), "message_primary", None)
    text = primary or str(error)
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


def as_database_error(error: BaseException, doing: str = "a setanon statement") -> DatabaseError:
    """A driver error as :class:`DatabaseError`: one line, the driver's SQLSTATE when it has one.

    The last line of defence (the CLI); the backends wrap their own calls more precisely.
    """
    sqlstate = getattr(error, "sqlstate", None)
    return DatabaseError(f"the database failed on {doing}: {one_line(error)}",
                         sqlstate if isinstance(sqlstate, str) else None)
