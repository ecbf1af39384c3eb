"""Every qid size through ``--trim-above``, checked by brute force over every subset.

A trimmed run must publish a table the oracle finds safe for qids of *any* size (every subset
of every record, not only those of up to L - 1 items), in which no record of more than L items
holds a sensitive item; the trim must be what its figures say; and ``setanon verify`` must take
its bound from the published table alone, so that a sensitive item put back into a long
record is caught.
"""

from __future__ import annotations

import hashlib
import random
from fractions import Fraction
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import UsageError
from setanon_sql.models.rho.check import (
    check_shape,
    largest_trim_within_reach,
    length_histogram,
    trimmed_histogram,
)
from setanon_sql.models.rho.longrecords import trim_long_records
from setanon_sql.models.rho.qids import col
from setanon_sql.names import run_table
from tests.conftest import write
from tests.integration.test_rho import published, random_baskets, run_rho
from tests.integration.test_rho_stages import sensitive_labels
from tests.oracle import rho_oracle as oracle


def long_and_short_baskets(rng: random.Random) -> str:
    """Short baskets over few items (shared, so that rules have support) and unique long ones."""
    short = random_baskets(rng, 40, 8, 4)
    long = random_baskets(rng, 8, 14, 11)
    lines = (short + long).splitlines()
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("heuristic", ["mine", "dist"])
@pytest.mark.parametrize("seed", [31, 32, 33])
def test_trimmed_run_is_safe_for_every_qid_of_any_size(db: Backend, tmp_path: Path,
                                                       heuristic: str, seed: int) -> None:
    rng = random.Random(seed)
    source = write(tmp_path / "in.dat", long_and_short_baskets(rng))
    dataset = api.load_transactions(db, source, "d")
    above = 4
    run = run_rho(db, dataset, seed, rho=0.6, sensitive_fraction=0.4, heuristic=heuristic,
                  trim_above=above)
    sensitive = sensitive_labels(db, dataset, run)
    original, output = oracle.read_fimi(source), published(db, dataset, run, tmp_path)
    # The input is unsafe beyond L - 1 items, so the test shows more than the bounded check.
    assert [r for r in oracle.unsafe_rules(original, sensitive, Fraction("0.6"))
            if len(r[0]) >= above]
    assert oracle.unsafe_rules(output, sensitive, Fraction("0.6")) == []
    assert oracle.is_record_subset(original, output)
    assert all(not record & sensitive for record in output if len(record) > above)
    want_records = sum(1 for record in original if len(record) > above and record & sensitive)
    want_occurrences = sum(
        len(record & sensitive) - max(0, min(len(record & sensitive),
                                             above - len(record - sensitive)))
        for record in original if len(record) > above)
    assert run.figures["long_records"] == {"above": above, "records_trimmed": want_records,
                                           "occurrences_trimmed": want_occurrences}
    assert run.figures["largest_qid_checked"] <= above - 1
    assert run.figures["suppressed"] == oracle.suppressed(original, output)
    result = api.verify(db, dataset, run)
    assert result.ok and "every qid (any subset of a record" in result.covered
    assert result.details["largest_qid_checked"] <= above - 1


def test_a_sensitive_item_put_back_into_a_long_record_fails_verify(db: Backend,
                                                                   tmp_path: Path) -> None:
    source = write(tmp_path / "in.dat", long_and_short_baskets(random.Random(34)))
    dataset = api.load_transactions(db, source, "d")
    run = run_rho(db, dataset, 34, rho=0.6, sensitive_fraction=0.4, trim_above=4)
    assert api.verify(db, dataset, run).ok
    attribute = dataset.set_attributes[0]
    items, pub = (db.table(dataset.items_table(attribute)),
                  db.table(run_table(run.run_id, f"items_{attribute.attr_no}")))
    sens = db.table(run_table(run.run_id, "sensitive"))
    longest = db.query(exp.select(col("record_id")).from_(items.copy()).group_by(
        col("record_id")).order_by(exp.func("count", exp.Star()).desc(),
                                   col("record_id")).limit(1))[0][0]
    back = (exp.select(col("record_id"), col("item_id")).from_(items.copy())
            .where(exp.and_(col("record_id").eq(exp.convert(int(longest))),
                            col("item_id").isin(query=exp.select(col("item_id"))
                                                .from_(sens.copy())),
                            col("item_id").isin(query=exp.select(col("item_id"))
                                                .from_(pub.copy())
                                                .where(col("record_id")
                                                       .eq(exp.convert(int(longest))))).not_()))
            .limit(1))
    assert db.query(back), "the longest record lost no sensitive item"
    db.run(exp.insert(back, pub.copy()))
    result = api.verify(db, dataset, run)
    assert not result.ok and result.details["unsafe_rules"] > 0
    assert result.details["largest_qid_checked"] > 3


def test_any_size_check_reaches_only_the_longest_record_holding_a_sensitive_item(
        db: Backend, tmp_path: Path) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "in.dat",
                                              "1 2 3 4 5 6 7 8 9\n1 10\n2 10 3\n1 2\n"), "d")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    words = db.table(dataset.dict_table(dataset.set_attributes[0]))
    sens = db.table("t_sens")

    def shape_with_sensitive(label: str, trim_above: int | None = None) -> tuple[int, int]:
        db.drop_table(sens)
        db.materialize(sens, exp.select(col("item_id")).from_(words.copy()).where(
            col("label").eq(exp.Literal.string(label))))
        shape = check_shape(db, items, None, sens, trim_above=trim_above)
        return shape.width, shape.max_q

    assert shape_with_sensitive("2") == (9, 8)  # the long record holds 2
    assert shape_with_sensitive("10") == (3, 2)  # no record of more than 3 items holds 10
    assert shape_with_sensitive("2", trim_above=3) == (3, 2)  # the long record loses its 2


@pytest.mark.on_spark(seeds=[3], connect=True)
@pytest.mark.parametrize("seed", [3, 4])
def test_trim_keeps_the_sensitive_items_first_by_md5(db: Backend, tmp_path: Path,
                                                     seed: int) -> None:
    """The trim alone, against its definition computed in Python (hashlib's md5)."""
    rng = random.Random(seed)
    dataset = api.load_transactions(db, write(tmp_path / "in.dat",
                                              long_and_short_baskets(rng)), "d")
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    sens, base, trimmed = db.table("t_sens"), db.table("t_base"), db.table("t_trimmed")
    sensitive = set(rng.sample(range(1, 15), 6))
    db.materialize(sens, exp.select(col("item_id")).from_(items.copy()).distinct().where(
        col("item_id").isin(*(exp.convert(i) for i in sorted(sensitive)))))
    db.materialize(base, exp.select(col("record_id"), col("item_id"),
                                    exp.cast(exp.Literal.number(0), "BIGINT").as_("part"))
                   .from_(items.copy()))
    rows = db.query(exp.select(col("record_id"), col("item_id")).from_(items.copy()))
    records: dict[int, set[int]] = {}
    for record_id, item_id in rows:
        records.setdefault(int(record_id), set()).add(int(item_id))
    held = {(r, i) for r, i in rows if int(i) in sensitive}
    above = 4
    figures = trim_long_records(db, trimmed, base, sens, above, seed,
                                length_histogram(db, base, sens))
    want: set[tuple[int, int]] = set()
    for record_id, record in records.items():
        nonsens = record - {i for r, i in held if r == record_id}
        ranked = sorted(record - nonsens, key=lambda i: (
            hashlib.md5(f"{seed}:{record_id}:{i}".encode()).hexdigest(), i))
        keep = ranked if len(record) <= above else ranked[:max(0, above - len(nonsens))]
        want |= {(record_id, i) for i in nonsens | set(keep)}
    got = {(int(r), int(i)) for r, i in db.query(
        exp.select(col("record_id"), col("item_id")).from_(trimmed.copy()))}
    assert got == want
    assert figures["occurrences_trimmed"] == len(rows) - len(want)
    assert figures["records_trimmed"] == sum(
        1 for record_id, record in records.items()
        if len(record) > above and any((record_id, i) in held for i in record))


def test_trimmed_histogram_is_the_trim_of_each_record() -> None:
    rng = random.Random(7)
    records = [(rng.randint(0, 9), rng.randint(0, 6)) for _ in range(200)]  # (non-sens, sens)
    histogram: dict[tuple[int, int], int] = {}
    for nonsens, n_sens in records:
        key = (nonsens + n_sens, n_sens)
        histogram[key] = histogram.get(key, 0) + 1
    for above in range(1, 12):
        want: dict[tuple[int, int], int] = {}
        for nonsens, n_sens in records:
            kept = n_sens
            while nonsens + kept > above and kept > 0:
                kept -= 1
            key = (nonsens + kept, kept)
            want[key] = want.get(key, 0) + 1
        assert trimmed_histogram(histogram, above) == want
    assert largest_trim_within_reach({(5, 1): 10}) == 4
    assert largest_trim_within_reach({(5, 0): 10}) is None


def test_trim_above_with_m_or_tdcontrol_is_refused(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "in.dat", "1 2\n2 3\n"), "d")
    with pytest.raises(UsageError, match=r"--trim-above 4 is for an adversary who knows any "
                                         r"number of items; with --m 2"):
        run_rho(db, dataset, 1, rho=0.7, sensitive_fraction=0.5, m=2, trim_above=4)
    with pytest.raises(UsageError, match=r"--trim-above 4: --heuristic tdcontrol"):
        run_rho(db, dataset, 1, rho=0.7, sensitive_fraction=0.5, heuristic="tdcontrol",
                trim_above=4)
    with pytest.raises(UsageError, match=r"--trim-above 0: give"):
        run_rho(db, dataset, 1, rho=0.7, sensitive_fraction=0.5, trim_above=0)
