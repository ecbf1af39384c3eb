"""The random order of a rule's records (:mod:`setanon_sql.models.rho.pickkey`): the first pick
of a rule shows no relation to the records' ids, nor to the pick of another rule or round
over the same records. Consecutive ids are the hard case for an arithmetic hash."""

from __future__ import annotations

from setanon_sql.models.rho.pickkey import pick_key_int, pick_salt

HOLDERS = 40  # records 1000..1039 hold every rule below
RULES = 4_000
CHI2_39_P001 = 72.05  # chi-square, 39 degrees of freedom, p = 0.001


def _first_pick(rule: int, salt: int) -> int:
    """The index of the record a rule picks first (least key, then least id)."""
    keys = [(pick_key_int(rule, 1000 + i, salt), i) for i in range(HOLDERS)]
    return min(keys)[1]


def _chi2(picks: list[int]) -> float:
    counts = [0] * HOLDERS
    for pick in picks:
        counts[pick] += 1
    expected = len(picks) / HOLDERS
    return sum((c - expected) ** 2 / expected for c in counts)


def test_first_picks_are_uniform_over_consecutive_ids() -> None:
    for seed, round_no in ((0, 1), (7, 3)):
        salt = pick_salt(seed, round_no)
        assert _chi2([_first_pick(rule, salt) for rule in range(1, RULES + 1)]) < CHI2_39_P001


def _same_pick_share_within_bounds(pairs: list[tuple[int, int]]) -> None:
    """Independent picks coincide with probability 1/HOLDERS: 100 of 4,000, sd 9.9."""
    same = sum(a == b for a, b in pairs)
    expected = len(pairs) / HOLDERS
    assert abs(same - expected) < 4.5 * (expected * (1 - 1 / HOLDERS)) ** 0.5


def test_neighbouring_rules_pick_independently() -> None:
    salt = pick_salt(3, 2)
    _same_pick_share_within_bounds([(_first_pick(rule, salt), _first_pick(rule + 1, salt))
                                    for rule in range(1, RULES + 1)])


def test_rounds_and_seeds_pick_independently() -> None:
    one, two, other_seed = pick_salt(3, 1), pick_salt(3, 2), pick_salt(4, 1)
    _same_pick_share_within_bounds([(_first_pick(rule, one), _first_pick(rule, two))
                                    for rule in range(1, RULES + 1)])
    _same_pick_share_within_bounds([(_first_pick(rule, one), _first_pick(rule, other_seed))
                                    for rule in range(1, RULES + 1)])


def test_keys_stay_below_the_prime_and_overflow_nothing() -> None:
    for rule, record in ((0, 0), (2**31 - 2, 2**31 - 2), (2**40, 150_000_000)):
        for salt in (0, pick_salt(1, 1), 2**31 - 2):
            key = pick_key_int(rule, record, salt)
            assert 0 <= key < 2**31 - 1
