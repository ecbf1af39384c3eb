"""The sampler's rejection step on CDR-like users: by support against by first holder.

km's sampled sizes draw proposals (a record by C(|r|, ℓ), an ℓ-subset of it) and keep each with
probability 1 / supp(C), or, since stop 92, when its record is the itemset's first holder
(records longest first; ``setanon_sql/models/km/sampler.py``). Both rules give exactly uniform,
independent samples; this script times what each costs on the same data: for each size ℓ of
``--sizes`` and each rule, one part of about ``--proposals`` proposals is drawn and kept, then
``Sampler.accept_kept`` (the one pass a passing pool makes) is timed. The proposals are the same
records and subsets under both rules (the same seed and stream); only the accepted ones differ.

Prints the data's shape (users, item rows, distinct towers, towers per user, the share of the top
10% of towers, distinct sets), then a table. Figures only: no assertions.

Usage (from the repository root)::

    python bench/bench_km_accept.py --workdir /tmp/kmacc --users 1000000 --sizes 5,7,11
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlglot
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.km.positions import PositionSampler
from setanon_sql.synth.cdr import format_cdr_shape, write_cdr

SHAPE = """
WITH lengths AS (SELECT record_id, count(*) AS len FROM items GROUP BY record_id),
towers AS (SELECT item_id, count(*) AS n,
                  row_number() OVER (ORDER BY count(*) DESC) AS r FROM items GROUP BY item_id),
sets AS (SELECT string_agg(CAST(item_id AS TEXT), ',' ORDER BY item_id) AS k
         FROM items GROUP BY record_id)
SELECT (SELECT count(*) FROM lengths), (SELECT count(*) FROM items),
       (SELECT count(*) FROM towers), (SELECT avg(len) FROM lengths),
       (SELECT stddev_samp(len) FROM lengths), (SELECT max(len) FROM lengths),
       (SELECT sum(CASE WHEN r <= (SELECT count(*) FROM towers) / 10 THEN n END) * 1.0 / sum(n)
        FROM towers),
       (SELECT count(DISTINCT k) FROM sets)
"""


def print_shape(backend: Backend, items: exp.Table) -> None:
    users, rows, towers, mean, sd, longest, top, distinct = backend.query(
        sqlglot.parse_one(SHAPE, read="duckdb"), None, {"items": items})[0]
    print(f"# shape: {users:,} users, {rows:,} (user, tower) rows, {towers:,} towers; towers per "
          f"user mean {mean:.2f}, sd {sd:.2f}, max {longest}; top 10% of towers hold "
          f"{top:.0%} of occurrences; {distinct:,} distinct sets", flush=True)


def accept_once(backend: Backend, items: exp.Table, ell: int, proposals: int, seed: int,
                first_holder: bool) -> tuple[int, int, float]:
    """(proposals, accepted, seconds of accept_kept) for one kept part of about ``proposals``."""
    sampler = PositionSampler(backend, items, lambda p: backend.table(f"bacc_{p}"), seed,
                              stream=7, first_holder=first_holder)
    target = backend.table("bacc_target")
    try:
        sampler.draw(ell, 1_000, target)  # measures the acceptance that sizes a part
        sampler.acceptance[ell] = 1.0  # one part of exactly ``proposals``, under both rules
        backend.drop_table(target)
        drawn = sampler.propose(ell, proposals, target)
        sampler.keep()
        start = time.perf_counter()
        accepted = sampler.accept_kept()
        return drawn, accepted, time.perf_counter() - start
    finally:
        sampler.release()
        backend.drop_table(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="5,7,11")
    parser.add_argument("--proposals", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    data = args.workdir / f"cdr_{args.users}" / "cdr.dat"
    if not data.exists():
        print(f"# CDR-like data: {format_cdr_shape(write_cdr(data.parent, args.users, 1))}")
    backend = api.open_database(
        f"duckdb:///{args.workdir / 'accept.duckdb'}?memory_limit=12GB&threads=2", "km_accept")
    dataset = api.find_dataset(backend, "cdr") or api.load_transactions(backend, data, "cdr")
    items = backend.table(dataset.items_table(dataset.set_attributes[0]))
    print_shape(backend, items)
    print("| ℓ | rule | proposals | accepted | accept_kept s |")
    print("|---|---|---|---|---|")
    for ell in (int(s) for s in args.sizes.split(",")):
        for first_holder in (False, True):
            drawn, accepted, seconds = accept_once(backend, items, ell, args.proposals,
                                                   args.seed, first_holder)
            rule = "first holder" if first_holder else "support"
            print(f"| {ell} | {rule} | {drawn:,} | {accepted:,} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
