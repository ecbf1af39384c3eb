"""Locate the files that ship beside the code: ``sql/``, ``migrations/`` and the demo data.

In a wheel, ``sql/`` and ``migrations/`` are force-included as ``setanon_sql/_sql`` and
``setanon_sql/_migrations``; in a source checkout (or an editable install) they sit at the
repository's top level, as the design card fixes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _find(installed_name: str, checkout_name: str) -> Path:
    for candidate in (_PACKAGE_DIR / installed_name, _PACKAGE_DIR.parent / checkout_name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"setanon_sql is installed without its {checkout_name}/ directory "
        f"(looked in {_PACKAGE_DIR / installed_name} and {_PACKAGE_DIR.parent / checkout_name}); "
        "reinstall the package"
    )


@cache
def sql_dir() -> Path:
    """Directory of the canonical named SQL statements."""
    return _find("_sql", "sql")


@cache
def migrations_dir() -> Path:
    """Directory of the numbered schema migrations."""
    return _find("_migrations", "migrations")


def demo_data_dir() -> Path:
    """Small demo datasets that ship inside the package."""
    return _PACKAGE_DIR / "data"
