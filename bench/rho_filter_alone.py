"""Stage 3's holder filter of a personalized prho run, captured once and re-run alone.

The filter (``prho/relevance.py``) keeps, of the unsafe rules found at a stage's count from
scratch, those an original holder of Q protects e from. At 1M Quest records it is one
statement of 210-250 s; this script measures it, and rewrites of it, on its own inputs:

  python bench/rho_filter_alone.py capture SNAP.duckdb --backend "duckdb:///…/qN.duckdb?memory_limit=10GB"
        --data questN            (runs bench/profile_rho.py's personalized --m 3 run until the
                                  statement, copies its input tables into SNAP.duckdb, its SQL
                                  and parameters into SNAP.duckdb.json, and stops)
  python bench/rho_filter_alone.py replay SNAP.duckdb
        --variant run|package|ids|semi|xrec|own|multi|trivial|slices4
  python bench/rho_filter_alone.py shape SNAP.duckdb [--kept out_run]
                                 (what the rules are: how many have a qid held by one record,
                                  and how far growing 4-itemsets only from triples held by two
                                  records or more would prune the (record, 4-itemset) rows)

``run`` is the statement as the captured run sent it; ``package`` is the package's filter as it
stands, rendered over the same tables (since stop 69 a rule of one holder is first tested on
its own record: ``own`` is that written by hand, ``multi`` adds a table of the qids two or more
original records hold). All give the same rules (checked against ``run``'s, which must be
replayed first) except ``trivial``, which swaps the md5 draw for an arithmetic predicate to show
what the draws cost. DuckDB only (the snapshot is a DuckDB file).
"""

from __future__ import annotations

import argparse
import json
import re
import runpy
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
MARK = 'found_rules" AS "f" JOIN (SELECT DISTINCT'
NUMBER = """SELECT CAST(o.before + ROW_NUMBER() OVER (PARTITION BY r.part, r.e
  ORDER BY r.x1, r.x2, r.x3, r.x4) AS BIGINT) AS rule_id, r.*
FROM unnumbered AS r JOIN (SELECT part, e, SUM(n) OVER (ORDER BY part, e) - n AS before
  FROM (SELECT part, e, COUNT(*) AS n FROM unnumbered GROUP BY part, e) AS c) AS o
  ON o.part = r.part AND o.e = r.e"""
DRAW = ("SUBSTRING(MD5(CAST($cseed AS TEXT) || ':' || CAST(rp.position AS TEXT) || ':' || "
        "CAST(lb.label AS TEXT)), 1, 8) < lb.bound")


def capture(snap: str, profile_args: list[str]) -> None:
    """Run profile_rho.py until stage 3's filter; keep its inputs and statement, then stop."""
    from setanon_sql.backends import duckdb as backend_module

    original = backend_module.DuckDBBackend.execute

    def execute(self: Any, sql: str, params: Any = None, fetch: bool = False) -> Any:
        if MARK in sql and "olvl3" in sql:
            target = re.match(r'CREATE TABLE (?:"\w+"\.)*"(\w+)"', sql)
            names = sorted({n for n in re.findall(r'"rhoprof"\."(\w+)"', sql)
                            if target is None or n != target.group(1)})
            self._con.execute(f"ATTACH '{snap}' AS snap")
            for name in names:
                self._con.execute(f'CREATE TABLE snap."{name}" AS SELECT * FROM "rhoprof"."{name}"')
            self._con.execute("DETACH snap")
            Path(f"{snap}.json").write_text(json.dumps(
                {"sql": sql, "params": dict(params or {}), "tables": names}))
            print(f"captured {names} into {snap}", file=sys.stderr)
            raise SystemExit(0)
        return original(self, sql, params, fetch)

    backend_module.DuckDBBackend.execute = execute  # type: ignore[method-assign]
    sys.argv = [str(HERE / "profile_rho.py"), *profile_args, "--model", "prho",
                "--setting", "personalized", "--m", "3"]
    runpy.run_path(str(HERE / "profile_rho.py"), run_name="__main__")
    raise SystemExit("the run ended before stage 3's filter: nothing captured")


class Snapshot:
    """The captured tables by role, and the SQL of each variant over them."""

    def __init__(self, snap: str) -> None:
        self.meta = json.loads(Path(f"{snap}.json").read_text())
        names: list[str] = self.meta["tables"]

        def named(suffix: str) -> str:
            return next(n for n in names if re.fullmatch(rf"[rd]\d+_{suffix}", n))

        self.found, self.records = named("found_rules"), named("records")
        self.dictionary, self.common = named(r"dict_\d+"), named("common")
        self.levels = {k: named(f"olvl{k}") for k in (1, 2, 3)}
        self.labels = (f"(SELECT dl.item_id, dl.label, CASE WHEN cm.item_id IS NULL THEN $t_out "
                       f"ELSE $t_in END AS bound FROM {self.dictionary} dl LEFT JOIN "
                       f"{self.common} cm ON cm.item_id = dl.item_id)")

    def run(self) -> str:
        sql = re.sub(r'(?:"[^"]+"\.)?"rhoprof"\.', "", self.meta["sql"])
        return sql[sql.index(" AS WITH ") + 4:]

    def trivial(self) -> str:
        draw = re.search(r"SUBSTRING\(MD5\(.*?\$t_in END", self.run())
        assert draw is not None
        return self.run().replace(draw.group(0), '(("rp"."position" * 7 + "dl"."item_id" + '
                                  "$cseed) % 5 < 2 OR $t_out = $t_in)")

    def _holders(self, k: int, rules: str, keys: str = "r.fid", also: str = "") -> str:
        """The distinct ``keys`` of the rules (``rules``, alias r) with qids of k items that an
        original holder (alias o; ``also``: a further join condition) protects e for."""
        on = " AND ".join(f"o.x{j} = r.q{j}" for j in range(1, k + 1))
        return (f"SELECT DISTINCT {keys} FROM {rules} r JOIN {self.levels[k]} o ON "
                f"o.part = r.part AND {on}{also} JOIN {self.records} rp ON rp.record_id = "
                f"o.record_id JOIN {self.labels} lb ON lb.item_id = r.e WHERE r.size = {k + 1} "
                f"AND {DRAW}")

    def ids(self) -> str:
        """A row id per found rule: DISTINCT ids, a semi-join on the id."""
        ok = " UNION ALL ".join(self._holders(k, "nf") for k in self.levels)
        return (f"WITH nf AS (SELECT row_number() OVER () AS fid, * FROM {self.found}), "
                f"ok AS ({ok}), unnumbered AS (SELECT * EXCLUDE (fid) FROM nf "
                f"WHERE fid IN (SELECT fid FROM ok)) {NUMBER}")

    def xrec(self) -> str:
        """e ∈ E_xrec first (X's first record at the count holds Q), the rest by holders."""
        ok = " UNION ALL ".join(self._holders(k, "rest") for k in self.levels)
        return (f"WITH nf AS (SELECT row_number() OVER () AS fid, f.*, {DRAW} AS xok "
                f"FROM {self.found} f JOIN {self.records} rp ON rp.record_id = f.xrec "
                f"JOIN {self.labels} lb ON lb.item_id = f.e), "
                f"rest AS (SELECT * FROM nf WHERE NOT xok), ok AS ({ok}), "
                f"unnumbered AS (SELECT * EXCLUDE (fid, xok) FROM nf "
                f"WHERE xok OR fid IN (SELECT fid FROM ok)) {NUMBER}")

    def own(self) -> str:
        """A rule of one holder (sx = 1, xrec) is kept outright when e ∈ E_xrec, looked up in
        the input's occurrences that are in their record's E (xrec holds X ⊇ {e} in D' ⊆ D, so
        (xrec, e) is one of them); only the others go to the holders, xrec left out."""
        return self._own_first(lambda k: "SELECT r.* FROM rest r")

    def multi(self) -> list[str]:
        """``own``, and a rule of one holder goes to the holders only if two or more original
        records hold its qid (tables multi1..3, counted once per run from the levels)."""
        made = []
        for k, level in self.levels.items():
            xs = ", ".join(f"x{j}" for j in range(1, k + 1))
            made.append(f"CREATE OR REPLACE TABLE multi{k} AS SELECT part, {xs} FROM {level} "
                        f"GROUP BY part, {xs} HAVING count(*) >= 2")

        def shared(k: int) -> str:
            on = " AND ".join(f"m.x{j} = r.q{j}" for j in range(1, k + 1))
            return (f"SELECT r.* FROM rest r WHERE NOT (r.sx = 1 AND r.xrec IS NOT NULL) OR "
                    f"EXISTS (SELECT 1 FROM multi{k} m WHERE m.part = r.part AND {on})")

        return [*made, self._own_first(shared)]

    def _own_first(self, rest_of_size: Callable[[int], str]) -> str:
        """``own``'s statement; ``rest_of_size(k)`` picks the rules left to the holders (of
        ``rest``, alias r) for qids of k items."""
        owne = (f"SELECT o.record_id, o.x1 AS item_id FROM {self.levels[1]} o JOIN "
                f"{self.records} rp ON rp.record_id = o.record_id JOIN {self.labels} lb "
                f"ON lb.item_id = o.x1 WHERE {DRAW}")
        one = "f.sx = 1 AND f.xrec IS NOT NULL"
        mine = "EXISTS (SELECT 1 FROM owne w WHERE w.record_id = f.xrec AND w.item_id = f.e)"
        others = " AND NOT (r.sx = 1 AND r.xrec IS NOT NULL AND o.record_id = r.xrec)"
        keys = " UNION ALL ".join(
            self._holders(k, f"({rest_of_size(k)})", "r.part, r.q1, r.q2, r.q3, r.e", others)
            for k in self.levels)
        return (f"WITH owne AS ({owne}), "
                f"rest AS (SELECT f.* FROM {self.found} f WHERE NOT ({one} AND {mine})), "
                f"unnumbered AS (SELECT f.* FROM {self.found} f WHERE {one} AND {mine} "
                f"UNION ALL SELECT f.* FROM {self.found} f JOIN ({keys}) k ON k.part = f.part "
                f"AND k.q1 = f.q1 AND k.q2 = f.q2 AND k.q3 = f.q3 AND k.e = f.e) {NUMBER}")

    def package(self) -> list[str]:
        """The package's filter as it stands (``prho/relevance.py``, ``OWN_HOLDER_FIRST``),
        rendered over the snapshot's tables: the protected occurrences, then the rules."""
        from sqlglot import exp

        from setanon_sql.backends.duckdb import DuckDBBackend
        from setanon_sql.models.prho.constraint import Constraint
        from setanon_sql.models.prho.relevance import Relevance, protected_occurrences
        from setanon_sql.models.rho.qids import numbered_rules
        from setanon_sql.sqlrender import render

        setting = "file" if self.meta["params"].get("t_out") is None else "personalized"
        constraint = Constraint(setting, int(self.meta["params"].get("cseed", 0)),
                                exp.to_table(self.common), exp.to_table("cons"),
                                exp.to_table(self.records), exp.to_table(self.dictionary))
        own = exp.to_table("ownsens")
        levels = tuple(exp.to_table(self.levels[k]) for k in (1, 2, 3))
        dialect = DuckDBBackend(":memory:", "main")  # for its SQL only
        keep = Relevance(dialect, constraint, levels, own)
        query = numbered_rules(keep.keep(exp.to_table(self.found), 4), 4)
        occurrences = protected_occurrences(dialect, constraint, levels[0])
        dialect.close()
        return [f"CREATE OR REPLACE TABLE ownsens AS {render(occurrences, 'duckdb')}",
                render(query, "duckdb")]

    def semi(self) -> str:
        """An EXISTS semi-join per qid size instead of DISTINCT and the join back."""
        parts = []
        for k, level in self.levels.items():
            on = " AND ".join(f"o.x{j} = f.q{j}" for j in range(1, k + 1))
            parts.append(
                f"SELECT f.* FROM {self.found} f JOIN {self.labels} lb ON lb.item_id = f.e "
                f"WHERE f.size = {k + 1} AND EXISTS (SELECT 1 FROM {level} o JOIN "
                f"{self.records} rp ON rp.record_id = o.record_id WHERE o.part = f.part "
                f"AND {on} AND {DRAW})")
        return f"WITH unnumbered AS ({' UNION ALL '.join(parts)}) {NUMBER}"


def replay(con: duckdb.DuckDBPyConnection, shot: Snapshot, variant: str) -> str:
    """Build ``out_<variant>``; returns its table name. ``slicesK``: K statements by mod(e, K),
    then one that numbers their union."""
    params = shot.meta["params"]
    out = f"out_{variant}"
    started = time.perf_counter()
    sliced = re.fullmatch(r"slices(\d+)", variant)
    if sliced:
        k = int(sliced.group(1))
        head, tail = shot.run().split(") SELECT CAST(", 1)
        filter_only = head[len('WITH "unnumbered" AS ('):]
        parts = []
        for s in range(k):
            one = filter_only
            for alias in ("f", "r"):
                one = one.replace(f'"{shot.found}" AS "{alias}"',
                                  f'(SELECT * FROM "{shot.found}" WHERE "e" % {k} = {s}) '
                                  f'AS "{alias}"')
            begun = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TABLE kept_{s} AS {one}", params)
            print(f"slice {s}: {time.perf_counter() - begun:.1f} s", flush=True)
            parts.append(f"SELECT * FROM kept_{s}")
        begun = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TABLE {out} AS WITH \"unnumbered\" AS "
                    f"({' UNION ALL '.join(parts)}) SELECT CAST({tail}")
        print(f"numbering: {time.perf_counter() - begun:.1f} s")
        for s in range(k):
            con.execute(f"DROP TABLE kept_{s}")
    else:
        made = getattr(shot, variant)()
        *before, last = [made] if isinstance(made, str) else made
        for sql in before:
            begun = time.perf_counter()
            con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql})
            print(f"  {sql[:60]}: {time.perf_counter() - begun:.1f} s")
        con.execute(f"CREATE OR REPLACE TABLE {out} AS {last}", params)
    print(f"{variant}: {time.perf_counter() - started:.1f} s")
    return out


def shape(con: duckdb.DuckDBPyConnection, shot: Snapshot, kept: str | None) -> None:
    """Print the shape of the captured rules and of the input's triples.

    A rule q -> e with sup(q) = 1 has sup(q + {e}) = 1 and confidence 1 (its one record holds
    both); with rho >= 1/2 a rule with sup(q) >= 2 needs sup(q + {e}) >= 2. So the share of
    one-holder rules says how much of stage 3 a representation by (record, triple) rows would
    spare, and the candidate rows say how much a 4-itemset level grown only from triples held
    by two records or more would enumerate (on the original records, the levels captured).
    """
    def show(label: str, sql: str) -> None:
        started = time.perf_counter()
        rows = con.execute(sql).fetchall()
        print(f"{label} ({time.perf_counter() - started:.1f} s): {rows}", flush=True)

    show("found rules by (size, sup(q) = 1)", f"SELECT size, sq = 1, count(*) FROM {shot.found} "
         "GROUP BY ALL ORDER BY ALL")
    show("distinct one-holder qids of the found rules", "SELECT count(*) FROM (SELECT DISTINCT "
         f"part, q1, q2, q3 FROM {shot.found} WHERE sq = 1)")
    show("of them (and their rules) held by one record in the input too",
         f"WITH o AS (SELECT x1, x2, x3, count(*) AS n FROM {shot.levels[3]} GROUP BY ALL) "
         "SELECT count(DISTINCT (f.q1, f.q2, f.q3)) FILTER (WHERE o.n = 1), "
         f"count(*) FILTER (WHERE o.n = 1) FROM {shot.found} f JOIN o ON o.x1 = f.q1 "
         "AND o.x2 = f.q2 AND o.x3 = f.q3 WHERE f.sq = 1 AND f.size = 4")
    if kept is not None:
        show(f"kept rules ({kept}) by sup(q) = 1",
             f"SELECT sq = 1, count(*) FROM {kept} GROUP BY ALL ORDER BY ALL")
    level1, level3 = shot.levels[1], shot.levels[3]
    con.execute(f"CREATE TEMP TABLE shared AS SELECT x1, x2, x3 FROM {level3} GROUP BY ALL "
                "HAVING count(*) >= 2")
    show("input triples: distinct, held by two records or more",
         f"SELECT (SELECT count(*) FROM (SELECT DISTINCT x1, x2, x3 FROM {level3})), "
         "(SELECT count(*) FROM shared)")
    show("input (record, 4-itemset) rows", "SELECT sum(n * (n - 1) * (n - 2) * (n - 3) // 24) "
         f"FROM (SELECT count(*) AS n FROM {level1} GROUP BY record_id)")
    grown = " ".join(f"SEMI JOIN shared {a} ON {a}.x1 = {f} AND {a}.x2 = {g} AND {a}.x3 = i.x1"
                     for a, f, g in (("b", "o.x1", "o.x2"), ("c", "o.x1", "o.x3"),
                                     ("d", "o.x2", "o.x3")))
    show("of them with every 3-subset held by two records or more",
         f"SELECT count(*) FROM {level3} o JOIN shared a ON a.x1 = o.x1 AND a.x2 = o.x2 AND "
         f"a.x3 = o.x3 JOIN {level1} i ON i.record_id = o.record_id AND i.x1 > o.x3 {grown}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="run until stage 3's filter and keep its inputs")
    cap.add_argument("snap")
    rep = sub.add_parser("replay", help="re-run the filter, or a rewrite of it, alone")
    rep.add_argument("snap")
    rep.add_argument("--variant", default="run")
    rep.add_argument("--memory-limit", default="10GB")
    sha = sub.add_parser("shape", help="the shape of the captured rules and triples")
    sha.add_argument("snap")
    sha.add_argument("--kept", help="a replayed table of the kept rules, e.g. out_run")
    sha.add_argument("--memory-limit", default="10GB")
    args, rest = parser.parse_known_args()
    if args.command == "capture":
        capture(args.snap, rest)
        return
    shot = Snapshot(args.snap)
    con = duckdb.connect(args.snap, read_only=args.command == "shape")
    con.execute(f"SET memory_limit = '{args.memory_limit}'")
    if args.command == "shape":
        shape(con, shot, args.kept)
        return
    out = replay(con, shot, args.variant)
    rows = con.execute(f"SELECT count(*) FROM {out}").fetchone()
    print(f"rules kept: {rows[0] if rows else 0:,}")
    known = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if args.variant not in ("run", "trivial") and "out_run" not in known:
        print("not compared: replay --variant run first")
    elif args.variant not in ("run", "trivial"):
        differ = con.execute(f"SELECT count(*) FROM (SELECT * FROM {out} EXCEPT "
                             "SELECT * FROM out_run)").fetchone()
        print("the same rules as run's" if differ and differ[0] == 0
              else f"DIFFERENT from run's: {differ}")


if __name__ == "__main__":
    main()
