"""A non-linear integer hash of (seed, key, column), the same in SQL on every engine.

The earlier generators mixed with multiply-add rounds modulo powers of two, which compose to
one affine map of the key with the same slope for every column: every column was a function of
one number, so the data had a few thousand distinct QI combinations at any size. Here the key is
first spread (an affine step that differs per seed and column), then passed twice through a
32-bit avalanche finalizer (xor-shift, multiply, xor-shift; "lowbias32", whose multiplier keeps
every product below 2^59, so BIGINT never overflows on DuckDB or PostgreSQL), with the column's
salt xor-ed in between. The xor-shift steps are not linear modulo 2^32, so columns drawn with
different salts behave as independent. ``mix_int`` is the same function in Python, for tests
and oracles.
"""

from __future__ import annotations

from sqlglot import exp

BIGINT = exp.DataType.build("BIGINT")
DOUBLE = exp.DataType.build("DOUBLE")
_MASK = 1 << 32
_MULTIPLIER = 0x45D9F3B  # 73,244,475: lowbias32's multiplier (< 2^27)


def _num(value: int | float) -> exp.Expr:
    return exp.Literal.number(value)


def _spread(seed: int, salt: int) -> tuple[int, int]:
    """Slope and offset of the first, key-spreading step (odd slope: a bijection mod 2^32)."""
    slope = (2654435761 + 2 * (salt * 40503 + seed * 9973)) % _MASK | 1
    offset = (seed * 1000003 + salt * 7919 + 12345) % _MASK
    return slope % (1 << 27) | 1, offset  # slope < 2^27 and key < 2^36: key * slope < 2^63


def _salt_word(seed: int, salt: int) -> int:
    return mix_int_round((seed << 16) ^ (salt * 2246822519 % _MASK))


def mix_int_round(x: int) -> int:
    """One lowbias32 round in Python."""
    x = ((x >> 16) ^ x) * _MULTIPLIER % _MASK
    x = ((x >> 16) ^ x) * _MULTIPLIER % _MASK
    return (x >> 16) ^ x


def mix_int(key: int, seed: int, salt: int) -> int:
    """The hash in Python: an integer in [0, 2^32)."""
    slope, offset = _spread(seed, salt)
    x = (key * slope + offset) % _MASK
    return mix_int_round(mix_int_round(x) ^ _salt_word(seed, salt))


def _round(x: exp.Expr) -> exp.Expr:
    def shift_xor(value: exp.Expr) -> exp.Expr:
        return exp.paren(exp.BitwiseXor(
            this=exp.paren(exp.BitwiseRightShift(this=value.copy(), expression=_num(16))),
            expression=value.copy()))

    def times(value: exp.Expr) -> exp.Expr:
        return exp.func("mod", exp.Mul(this=value, expression=_num(_MULTIPLIER)), _num(_MASK))

    return shift_xor(times(shift_xor(times(shift_xor(x)))))


def mix(key: exp.Expr, seed: int, salt: int) -> exp.Expr:
    """The hash in SQL: a BIGINT in [0, 2^32) from a non-negative BIGINT key below 2^36."""
    slope, offset = _spread(seed, salt)
    x = exp.func("mod", exp.Add(this=exp.Mul(this=exp.cast(key, BIGINT), expression=_num(slope)),
                                expression=_num(offset)), _num(_MASK))
    return _round(exp.paren(exp.BitwiseXor(this=_round(x), expression=_num(
        _salt_word(seed, salt)))))


def uniform(key: exp.Expr, seed: int, salt: int) -> exp.Expr:
    """A double in [0, 1)."""
    return exp.Div(this=exp.cast(mix(key, seed, salt), DOUBLE), expression=_num(float(_MASK)))


def below(key: exp.Expr, seed: int, salt: int, n: int, skew: float = 1.0) -> exp.Expr:
    """An integer in [0, n), skewed towards 0 for skew > 1 (u^skew)."""
    u = uniform(key, seed, salt)
    if skew != 1.0:
        u = exp.func("power", u, _num(skew))
    return exp.cast(exp.func("floor", exp.Mul(this=u, expression=_num(n))), BIGINT)


def below_int(key: int, seed: int, salt: int, n: int, skew: float = 1.0) -> int:
    """:func:`below` in Python."""
    return int((mix_int(key, seed, salt) / float(_MASK)) ** skew * n)
