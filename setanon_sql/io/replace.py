"""Remove a dataset (its tables, runs and catalog rows), for ``--replace`` and ``setanon drop``."""

from __future__ import annotations

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, find_dataset
from setanon_sql.errors import UsageError
from setanon_sql.names import dataset_table, run_table


def drop_dataset(backend: Backend, dataset: Dataset, force: bool = False) -> None:
    """Drop every table of ``dataset`` and of its runs, and their catalog rows (one transaction).

    A run applied in place keeps the backup ``setanon undo`` needs among the run's tables, so
    dropping its dataset would make the user's change permanent: refused unless ``force``.
    """
    tables = backend.catalog_tables("datasets", "attributes", "runs", "change_log",
                                    "inplace_applies")
    applied = backend.scalar("inplace_applied_of_dataset", {"dataset_id": dataset.dataset_id},
                             tables)
    if applied is not None and not force:
        raise UsageError(
            f"run {applied} of dataset {dataset.name!r} was applied in place, and dropping the "
            f"dataset would drop the backup that undoes it; run 'setanon undo {applied}' first, "
            "or drop with --force to keep the anonymized tables as they are"
        )
    with backend.transaction():
        run_ids = [int(r) for (r,) in backend.query(
            "runs_of_dataset", {"dataset_id": dataset.dataset_id}, tables)]
        prefixes = [dataset_table(dataset.dataset_id, "x")[:-1]]
        prefixes += [run_table(run_id, "x")[:-1] for run_id in run_ids]
        for prefix in prefixes:
            for name in backend.table_names(prefix):
                backend.drop_table(backend.table(name))
        for run_id in run_ids:
            backend.run("change_log_delete", {"run_id": run_id}, tables)
            backend.run("inplace_delete", {"run_id": run_id}, tables)
        backend.run("runs_delete", {"dataset_id": dataset.dataset_id}, tables)
        backend.run("attributes_delete", {"dataset_id": dataset.dataset_id}, tables)
        backend.run("dataset_delete", {"dataset_id": dataset.dataset_id}, tables)


def drop_existing(backend: Backend, name: str, replace: bool) -> None:
    """Before a load: refuse an existing name, or drop it when ``replace`` is set."""
    existing = find_dataset(backend, name)
    if existing is None:
        return
    if not replace:
        raise UsageError(
            f"a dataset named {name!r} already exists ({existing.n_records} records from "
            f"{existing.source}); choose another --name, or pass --replace to load over it"
        )
    drop_dataset(backend, existing)
