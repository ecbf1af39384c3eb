"""--in-place on attached tables with every landed model: apply, verify, undo, byte-identical.

The user's tables have a primary key, an index, a foreign key, an extra column with NULLs and
quotes, and duplicate (record, item) rows; on PostgreSQL also a grant and a trigger. Each run
is checked by the brute-force oracle against what the run published, then undone and compared
row by row with the original.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.io.published import published
from setanon_sql.models import require_model
from tests.conftest import DbUrl, write
from tests.oracle import inplace_oracle as oracle

PRODUCTS = [f"p{i}" for i in range(1, 9)]


def make_shop(db: Backend, schema: str, seed: int, n: int = 36, fk: bool = False) -> None:
    """customers(customer PK, birth, sex) and purchases(id PK, customer, product, qty, note).

    With ``fk``, purchases.customer references customers (DuckDB cannot delete a referenced
    row in the transaction that deleted its references: see test_inplace_errors).
    """
    rng = random.Random(seed)
    s = f'"{schema}"'
    references = f" REFERENCES {s}.customers (customer)" if fk else ""
    db.execute(f"CREATE SCHEMA {s}")
    db.execute(f"CREATE TABLE {s}.customers (customer INTEGER PRIMARY KEY, birth TEXT, sex TEXT)")
    db.execute(f"CREATE TABLE {s}.purchases (id INTEGER PRIMARY KEY, customer INTEGER NOT NULL"
               f"{references}, product TEXT NOT NULL, qty INTEGER, note TEXT)")
    db.execute(f"CREATE INDEX purchases_product ON {s}.purchases (product)")
    customers, purchases = [], []
    for c in range(1, n + 1):
        customers.append(f"({c}, '{rng.randint(1960, 1990)}', '{rng.choice('FM')}')")
        for product in rng.sample(PRODUCTS, rng.randint(1, 4)):
            copies = 2 if rng.random() < 0.1 else 1  # duplicate (record, item) rows
            for _ in range(copies):
                note = rng.choice(["NULL", "'gift'", "'it''s; odd'", "' x '"])
                purchases.append(f"({len(purchases) + 1}, {c}, '{product}', "
                                 f"{rng.randint(1, 5)}, {note})")
    db.execute(f"INSERT INTO {s}.customers VALUES {', '.join(customers)}")
    db.execute(f"INSERT INTO {s}.purchases VALUES {', '.join(purchases)}")


def rows(db: Backend, schema: str, table: str) -> list[tuple[Any, ...]]:
    return db.execute(f'SELECT * FROM "{schema}"."{table}"', fetch=True)


def published_pairs(db: Backend, dataset: api.Dataset, run: api.Run) -> dict[str, set[str]]:
    """{key text: labels} of what the run published, read from its tables."""
    out = published(db, dataset, run)
    attr = dataset.set_attributes[0].attr_no
    query = (exp.select(exp.cast(exp.column("c1", table="r"), "TEXT"),
                        exp.column("label", table="d"))
             .from_(out.items[attr].as_("p"))
             .join(out.dicts[attr].as_("d"), on="d.item_id = p.item_id")
             .join(db.table(dataset.records_table, "r"), on="r.record_id = p.record_id"))
    found: dict[str, set[str]] = {}
    for key, label in db.query(query):
        found.setdefault(key, set()).add(label)
    return found


def published_records(db: Backend, dataset: api.Dataset, run: api.Run,
                      columns: list[str]) -> dict[str, dict[int, str]]:
    out = published(db, dataset, run)
    singles = [a for a in dataset.single_attributes if a.role != "id"]
    query = exp.select(exp.cast(exp.column("c1"), "TEXT"),
                       *(exp.cast(exp.column(a.column), "TEXT") for a in singles)).from_(
        out.records)
    return {key: {columns.index(a.name): v for a, v in zip(singles, values, strict=True)}
            for key, *values in db.query(query)}


def generalization(db: Backend, dataset: api.Dataset, run: api.Run) -> dict[str, str] | None:
    out = published(db, dataset, run)
    attr = dataset.set_attributes[0]
    if attr.attr_no not in out.maps:
        return None
    query = (exp.select("d.label", "m.label").from_(out.maps[attr.attr_no].as_("m"))
             .join(db.table(dataset.dict_table(attr), "d"), on="d.item_id = m.item_id"))
    return dict(db.query(query))


def model_case(name: str, tmp_path: Path, db: Backend, dataset: api.Dataset,
               rng: random.Random) -> dict[str, Any]:
    if name == "rho":
        sens = write(tmp_path / "sens.txt", "\n".join(rng.sample(PRODUCTS, 2)) + "\n")
        return {"rho": 0.4, "sensitive": str(sens)}
    if name == "km":
        lines = [f"{p};g{(i // 2) + 1};h{(i // 4) + 1};*" for i, p in enumerate(PRODUCTS)]
        api.load_hierarchy(db, write(tmp_path / "h.txt", "\n".join(lines) + "\n"), dataset)
        return {"k": "4", "m": 2}
    if name == "kanon":
        return {"k": 3, "suppress_budget": 0.1}
    return {"random_categories": 2, "metrics": False}


@pytest.mark.parametrize("model", ["rho", "km", "kanon", "swap"])
def test_in_place_apply_verify_undo(db: Backend, user_schema: str, tmp_path: Path,
                                    backend_name: str, model: str) -> None:
    seed = {"rho": 1, "km": 2, "kanon": 3, "swap": 4}[model]
    make_shop(db, user_schema, seed, fk=backend_name == "postgres")
    if backend_name == "postgres":
        db.execute(f'GRANT SELECT ON "{user_schema}".purchases TO PUBLIC')
        db.execute(f'CREATE FUNCTION "{user_schema}".touch() RETURNS trigger LANGUAGE plpgsql '
                   "AS $$ BEGIN RETURN NEW; END $$")
        db.execute(f'CREATE TRIGGER touch BEFORE UPDATE ON "{user_schema}".purchases '
                   f'FOR EACH ROW EXECUTE FUNCTION "{user_schema}".touch()')
    purchases, customers = rows(db, user_schema, "purchases"), rows(db, user_schema, "customers")
    dataset = api.attach(db, "shop", f"{user_schema}.purchases", "customer", "product",
                         records_table=f"{user_schema}.customers")
    params = model_case(model, tmp_path, db, dataset, random.Random(seed))
    run_id = api.anonymize(db, dataset, require_model(model), params, seed=seed, in_place=True)
    run = api.get_run(db, dataset, run_id)
    assert api.verify(db, dataset, run).ok
    after = rows(db, user_schema, "purchases")
    problems = oracle.check_applied(purchases, after, 1, 2, published_pairs(db, dataset, run),
                                    generalization(db, dataset, run), moves=model == "swap")
    problems += oracle.check_records(customers, rows(db, user_schema, "customers"), 0,
                                     published_records(db, dataset, run,
                                                       ["customer", "birth", "sex"]))
    assert problems == []
    if model != "swap":
        assert after != purchases or model == "kanon"
    logged = db.scalar(exp.select(exp.func("count", exp.Star())).from_(db.table("change_log"))
                       .where(exp.column("run_id").eq(run_id)))
    assert (logged > 0) == (sorted(after) != sorted(purchases)
                            or rows(db, user_schema, "customers") != customers)
    actions = {a for (a,) in db.query(exp.select("action").distinct().from_(
        db.table("change_log")).where(exp.column("run_id").eq(run_id)))}
    assert actions & {"rho": {"suppress"}, "km": {"generalize"}, "swap": {"move_out"},
                      "kanon": {"generalize", "suppress", "delete_record"}}[model]
    api.undo_in_place(db, run_id)
    assert oracle.same_rows(purchases, rows(db, user_schema, "purchases")) == []
    assert oracle.same_rows(customers, rows(db, user_schema, "customers")) == []
    with pytest.raises(api.UsageError, match="already undone"):
        api.undo_in_place(db, run_id)
    if backend_name == "postgres":
        assert db.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = %(s)s AND "
                          "indexname = 'purchases_product'", {"s": user_schema}, fetch=True)[0][0]
        assert db.execute("SELECT count(*) FROM information_schema.role_table_grants WHERE "
                          "table_schema = %(s)s AND grantee = 'PUBLIC'", {"s": user_schema},
                          fetch=True)[0][0]
        assert db.execute("SELECT count(*) FROM information_schema.triggers WHERE "
                          "event_object_schema = %(s)s", {"s": user_schema}, fetch=True)[0][0]
    else:
        assert db.execute("SELECT count(*) FROM duckdb_indexes() WHERE schema_name = $s",
                          {"s": user_schema}, fetch=True)[0][0]


@pytest.fixture
def cli_shop(db_url: DbUrl, user_schema: str) -> Iterator[DbUrl]:
    """A CLI database with the shop tables attached as 'shop' (user schema dropped after)."""
    with api.open_database(db_url.url, db_url.schema) as db:
        make_shop(db, user_schema, 5, n=20)
        api.attach(db, "shop", f"{user_schema}.purchases", "customer", "product")
    yield db_url
    with api.open_database(db_url.url, db_url.schema) as db:
        db.execute(f'DROP SCHEMA "{user_schema}" CASCADE')


def test_cli_dry_run_in_place_and_undo(cli_shop: DbUrl, user_schema: str,
                                       tmp_path: Path) -> None:
    sens = write(tmp_path / "s.txt", "p1\np2\n")
    runner = CliRunner()
    args = ["anonymize", "shop", "--model", "rho", "--rho", "0.3", "--sensitive", str(sens),
            "--seed", "3", *cli_shop.args]
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        before = rows(db, user_schema, "purchases")
    dry = runner.invoke(main, [*args, "--dry-run"])
    assert dry.exit_code == 2 and "--dry-run shows what --in-place would change" in dry.output
    dry = runner.invoke(main, [*args, "--in-place", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run: run 1 would change" in dry.output
    assert "rows deleted (suppressed)" in dry.output and "sample (action" in dry.output
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        assert rows(db, user_schema, "purchases") == before
    applied = runner.invoke(main, [*args, "--in-place"])
    assert applied.exit_code == 0, applied.output
    assert "applied run 2 in place:" in applied.output and "setanon undo 2" in applied.output
    again = runner.invoke(main, [*args, "--in-place"])
    assert again.exit_code == 2 and "run 2 was applied in place" in again.output
    undone = runner.invoke(main, ["undo", "2", *cli_shop.args])
    assert undone.exit_code == 0 and "undid run 2" in undone.output
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        assert oracle.same_rows(before, rows(db, user_schema, "purchases")) == []
    nothing = runner.invoke(main, ["undo", "1", *cli_shop.args])
    assert nothing.exit_code == 2 and "run 1 changed no user table in place" in nothing.output
