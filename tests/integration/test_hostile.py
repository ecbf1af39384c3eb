"""Hostile and odd input through --in-place and undo, on both backends.

Schema, table and column names with quotes, semicolons, backslashes and an injection attempt;
keys and labels with quotes, backslashes, unicode, leading/trailing blanks and 10,000
characters; empty records; k larger than the data. Every case either works (checked by the
oracle, then undone byte-identically) or fails with a clear message and changes nothing.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models import require_model
from setanon_sql.sqlrender import qualified_table
from tests.conftest import write
from tests.oracle import inplace_oracle as oracle

LABELS = ["o'neil", 'say "hi"', "a;b", "back\\slash", "ünï 字", " lead", "trail ", "x" * 10000,
          "DROP TABLE t; --", "%s %(x)s $1 ?"]
KEYS = [f"{prefix}{n}" for n in range(5) for prefix in ("c'", " c", "c;", "c\\", "ç", 'c"', "")]
TABLE = 'pur"chases; DROP TABLE keep; --'
COLUMNS = ('cu"st', "pro;duct", "no\\te")


def literal(db: Backend, value: Any) -> str:
    return exp.convert(value).sql(dialect=db.dialect)


def name(db: Backend, schema: str, table: str) -> str:
    return qualified_table(schema, table).sql(dialect=db.dialect)


def ident(db: Backend, column: str) -> str:
    return exp.to_identifier(column, quoted=True).sql(dialect=db.dialect)


@pytest.fixture
def hostile(db: Backend, user_schema: str) -> str:
    """A user schema with the hostile item table and a table 'keep' that must survive."""
    schema = user_schema + ' "é; x'
    db.execute(f"CREATE SCHEMA {ident(db, schema)}")
    db.execute(f"CREATE TABLE {name(db, schema, 'keep')} (a INTEGER)")
    db.execute(f"INSERT INTO {name(db, schema, 'keep')} VALUES (1)")
    k, i, n = (ident(db, c) for c in COLUMNS)
    db.execute(f"CREATE TABLE {name(db, schema, TABLE)} ({k} TEXT, {i} TEXT, {n} TEXT)")
    rng = random.Random(5)
    values = []
    for key in KEYS:
        for label in rng.sample(LABELS, rng.randint(2, 6)):
            note = rng.choice([None, "it's", "\\n", " "])
            values.append(f"({literal(db, key)}, {literal(db, label)}, {literal(db, note)})")
    values.append(f"({literal(db, KEYS[0])}, {literal(db, LABELS[0])}, NULL)")  # duplicate
    db.execute(f"INSERT INTO {name(db, schema, TABLE)} VALUES {', '.join(values)}")
    yield schema
    db.execute(f"DROP SCHEMA IF EXISTS {ident(db, schema)} CASCADE")


def table_rows(db: Backend, schema: str) -> list[tuple[Any, ...]]:
    return db.execute(f"SELECT * FROM {name(db, schema, TABLE)}", fetch=True)


def published_pairs(db: Backend, dataset: api.Dataset, run: api.Run) -> dict[str, set[str]]:
    attr = dataset.set_attributes[0]
    items = db.table(f"r{run.run_id}_items_{attr.attr_no}")
    query = (exp.select("r.c1", "d.label").from_(items.as_("p"))
             .join(db.table(dataset.dict_table(attr), "d"), on="d.item_id = p.item_id")
             .join(db.table(dataset.records_table, "r"), on="r.record_id = p.record_id"))
    found: dict[str, set[str]] = {}
    for key, label in db.query(query):
        found.setdefault(str(key), set()).add(label)
    return found


@pytest.mark.parametrize(("model", "params"), [
    ("rho", {"rho": 0.1, "sensitive": "SENSITIVE"}),
    ("swap", {"random_categories": 2, "metrics": False}),
])
def test_hostile_names_and_labels_apply_and_undo(db: Backend, hostile: str, model: str,
                                                 params: dict[str, Any], tmp_path: Path) -> None:
    if params.get("sensitive"):
        params["sensitive"] = str(write(tmp_path / "s.txt", "o'neil\na;b\nback\\slash\n"))
    before = table_rows(db, hostile)
    dataset = api.attach(db, "h", f"{hostile}.{TABLE}", COLUMNS[0], COLUMNS[1])
    run_id = api.anonymize(db, dataset, require_model(model), params, seed=2, in_place=True)
    run = api.get_run(db, dataset, run_id)
    after = table_rows(db, hostile)
    assert oracle.check_applied(before, after, 0, 1, published_pairs(db, dataset, run),
                                moves=model == "swap") == []
    assert sorted(after, key=repr) != sorted(before, key=repr)
    api.undo_in_place(db, run_id)
    assert oracle.same_rows(before, table_rows(db, hostile)) == []
    assert db.execute(f"SELECT a FROM {name(db, hostile, 'keep')}", fetch=True) == [(1,)]


def test_empty_records_and_k_larger_than_the_data(db: Backend, user_schema: str) -> None:
    s = ident(db, user_schema)
    db.execute(f"CREATE SCHEMA {s}")
    db.execute(f"CREATE TABLE {s}.people (pid INTEGER PRIMARY KEY, sex TEXT)")
    db.execute(f"CREATE TABLE {s}.dx (pid INTEGER, code TEXT)")
    db.execute(f"INSERT INTO {s}.people VALUES (1, 'F'), (2, 'M'), (3, 'F'), (4, 'M')")
    db.execute(f"INSERT INTO {s}.dx VALUES (1, 'a'), (1, 'b'), (2, 'a'), (3, 'c')")  # 4: none
    people, dx = (db.execute(f"SELECT * FROM {s}.{t}", fetch=True) for t in ("people", "dx"))
    dataset = api.attach(db, "p", f"{user_schema}.dx", "pid", "code",
                         records_table=f"{user_schema}.people")
    assert dataset.n_records == 4
    with pytest.raises(api.UsageError, match=r"--k 10 is larger than the 4 records"):
        api.anonymize(db, dataset, require_model("kanon"), {"k": 10}, seed=1, in_place=True)
    assert api.list_runs(db) == []
    run_id = api.anonymize(db, dataset, require_model("kanon"), {"k": 3, "suppress_budget": 0.5},
                           seed=1, in_place=True)
    run = api.get_run(db, dataset, run_id)
    assert api.verify(db, dataset, run).ok
    deleted = run.figures["records_deleted"]
    assert len(db.execute(f"SELECT * FROM {s}.people", fetch=True)) == 4 - deleted
    api.undo_in_place(db, run_id)
    assert oracle.same_rows(people, db.execute(f"SELECT * FROM {s}.people", fetch=True)) == []
    assert oracle.same_rows(dx, db.execute(f"SELECT * FROM {s}.dx", fetch=True)) == []
