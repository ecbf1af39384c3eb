"""Checks on input and output files, done before any database work starts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from setanon_sql.errors import InputError


def readable_file(path: str | os.PathLike[str], what: str = "input file") -> Path:
    """``path`` as an absolute Path if it is a readable, non-empty regular file, else an
    InputError (an empty file is refused here, by its size, before any loader reads it)."""
    resolved = Path(path).expanduser()
    if not resolved.exists():
        raise InputError(f"{what} {path} does not exist; check the path")
    if not resolved.is_file():
        raise InputError(f"{what} {path} is not a regular file")
    if not os.access(resolved, os.R_OK):
        raise InputError(f"{what} {path} is not readable; check its permissions")
    if resolved.stat().st_size == 0:
        raise InputError(f"{what} {path} is empty (0 bytes): there is nothing to read; check "
                         "that the file was written completely")
    return resolved.resolve()


def writable_target(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """``path`` as an absolute Path if its directory exists and is writable."""
    resolved = Path(path).expanduser().resolve()
    if resolved.is_dir():
        raise InputError(f"{what} {path} is a directory; give a file name")
    if not resolved.parent.is_dir():
        raise InputError(f"{what} {path}: directory {resolved.parent} does not exist")
    if not os.access(resolved.parent, os.W_OK):
        raise InputError(f"{what} {path}: directory {resolved.parent} is not writable")
    return resolved


@contextmanager
def atomic_output(target: Path) -> Iterator[Path]:
    """A temporary name beside ``target``, renamed to it only when the block succeeds.

    An export that fails or is interrupted half-way leaves no file under the requested name
    (and no partial file at all), so a file at that name is always a complete export.
    """
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        yield partial
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
