"""The random order of a rule's records: which holders of X lose the chosen item.

Alg. 2 l.13 of Jia et al. (and Alg. 1 l.14 of Nakagawa et al.) picks records of C(X) at random.
The pick must be reproducible from the run's seed and the same on every backend, so it is a
hash of (seed, round, rule, record) ordered ascending, ties (two records of one rule with the
same key) by record id.

Why not md5 of the four as text, as before: one rule's records are millions of rows a round on
the large files, and md5 over a concatenated text cost PostgreSQL about 1.6 us a row (5M rows:
7.7 s over the plain scan, against 0.6 s for a two-multiplication integer key of this kind; this
one, with a square and a third multiplication, was not timed apart; DuckDB 0.7 s against
0.05 s), and the 32-character text then had to be sorted byte-wise (``COLLATE "C"``). This
key is integer arithmetic modulo the Mersenne prime p = 2^31 - 1, every product below 2^62
(BIGINT never overflows on DuckDB, PostgreSQL or Spark), and each step names its input once or
twice, so the expression stays small on engines that do not share common subexpressions:

    a = rule mod p,  b = record mod p,  s = the salt of (seed, round), drawn in Python
    h1 = ((a + s) mod p) * A1 mod p            (the rule's offset)
    h2 = ((h1 + b) mod p) * A2 mod p           (a bijection of the record within the rule)
    key = ((h2 * h2 + h1) mod p) * A3 mod p    (squaring: not affine in the record)

A1-A3 are L'Ecuyer's multipliers for p (Math. Comp. 1999). Within a rule the records' order is
that of a quadratic polynomial of their ids modulo p under a scrambling permutation; between
rules the offsets differ by a pseudo-random shift of the salt. That is not a cryptographic
hash, and need not be: the greedy only needs the choice of a rule's holders to show no
relation to their ids or to another rule's choice (``tests/unit/test_pick_key.py`` measures
both). ``pick_key_int`` is the same function in Python.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.models.rho.qids import placeholder
from setanon_sql.synth.mixing import mix_int

P = 2_147_483_647  # 2^31 - 1
A1, A2, A3 = 1_226_874_159, 742_938_285, 950_706_376
_SALT_STREAM = 71  # mixing.mix_int's salt: a stream of its own


def pick_salt(seed: int, round_no: int) -> int:
    """The salt of one round's picks, in [0, p): bound as the parameter ``:salt``."""
    return mix_int(round_no, seed, _SALT_STREAM) % P


def pick_key_int(rule_id: int, record_id: int, salt: int) -> int:
    """:func:`pick_key` in Python."""
    h1 = (rule_id % P + salt) % P * A1 % P
    h2 = (h1 + record_id % P) % P * A2 % P
    return (h2 * h2 + h1) % P * A3 % P


def _mod(value: exp.Expr) -> exp.Expr:
    return exp.Mod(this=exp.paren(value, copy=False), expression=exp.Literal.number(P))


def _times(value: exp.Expr, multiplier: int) -> exp.Expr:
    return _mod(exp.Mul(this=_mod(value), expression=exp.Literal.number(multiplier)))


def pick_key(rule_id: exp.Expr, record_id: exp.Expr) -> exp.Expr:
    """The key of ``record_id`` among ``rule_id``'s records (BIGINT in [0, p)), salted by the
    parameter ``:salt`` (:func:`pick_salt`). Ids are non-negative."""
    salt = exp.cast(placeholder("salt"), "BIGINT")
    rule = _mod(exp.cast(rule_id, "BIGINT"))
    record = _mod(exp.cast(record_id, "BIGINT"))
    h1 = _times(exp.Add(this=rule, expression=salt), A1)
    h2 = _times(exp.Add(this=h1, expression=record), A2)
    square = exp.Mul(this=exp.paren(h2, copy=True), expression=exp.paren(h2, copy=True))
    return _times(exp.Add(this=square, expression=h1.copy()), A3)
