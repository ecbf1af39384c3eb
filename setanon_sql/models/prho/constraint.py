"""The sensitive constraint E = {(u, E_u)} (Nakagawa et al. Sec. 4.1) and who it protects.

E comes from a FIMI file aligned with the data (line n = E_u of the record at position n), kept
as the run table ``cons(record_id, item_id)``, or from a generator of the paper's Sec. 6.1:

* ``fixed``: the same share f of the item types for everyone (E_u = S);
* ``personalized``: each record protects each item type with probability f, on its own;
* ``personalized+``: S is "tends to be sensitive": an item of S is in E_u with probability
  1 - noise, any other item with probability noise;
* ``fixed+``: E_u = S+ for everyone, S+ the union of all E_u of personalized+ (what the existing
  model must protect to cover every person).

Generated constraints are never materialized per record (E would have n·|I|·f rows: 74 million
for BMS-WebView-2' at 40%): membership is a predicate evaluated in SQL where needed,
``e ∈ E_u  ⇔  substr(md5(seed:position(u):label(e)), 1, 8) < hex(T(e))`` (byte order), with
T(e) = round(p·2^32) and p the probability for e (in S or not). S itself is the first
round(f·|I|) labels ordered by md5(seed:label) (byte-wise, ties by label). Both are
reproducible from ``--seed`` alone, on every backend, and by an independent checker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import col, placeholder
from setanon_sql.sqlrender import with_alias

HASHED = ("personalized", "personalized+")


def threshold(probability: float) -> str:
    """The 8-hex-digit bound of a Bernoulli(p) draw; 'g' sorts after every hex string."""
    bound = round(probability * 2**32)
    return "g" if bound >= 2**32 else format(bound, "08x")


def md5_text(*parts: exp.Expr) -> exp.Expr:
    """md5(p1:p2:...) of the parts cast to text."""
    joined: exp.Expr = exp.cast(parts[0], "TEXT")
    for part in parts[1:]:
        joined = exp.DPipe(this=exp.DPipe(this=joined, expression=exp.Literal.string(":")),
                           expression=exp.cast(part, "TEXT"))
    return exp.func("md5", joined)


def hash8(backend: Backend, *parts: exp.Expr) -> exp.Expr:
    """The first 8 hex digits of md5(p1:p2:...), compared byte-wise on every backend."""
    return backend.binary_sort_key(exp.Substring(this=md5_text(*parts),
                                                 start=exp.Literal.number(1),
                                                 length=exp.Literal.number(8)))


@dataclass(frozen=True)
class Constraint:
    """Where E lives: ``setting`` ('file' or a generator), its tables and its draw thresholds.

    ``common(item_id)`` is S (fixed, fixed+, personalized+); ``cons(record_id, item_id)`` the
    file's rows; ``records``/``dictionary`` give positions and labels to the hash.
    """

    setting: str
    seed: int
    common: exp.Table
    cons: exp.Table
    records: exp.Table
    dictionary: exp.Table
    p_in: float = 0.0
    p_out: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def per_record(self) -> bool:
        """Whether E_u differs between records (else E_u = common for every u)."""
        return self.setting == "file" or self.setting in HASHED

    def params(self) -> dict[str, Any]:
        """The bind parameters :func:`member_filter` uses (DuckDB rejects unused ones)."""
        if self.setting not in HASHED:
            return {}
        return {"cseed": self.seed, "t_in": threshold(self.p_in), "t_out": threshold(self.p_out)}

    def member_filter(self, backend: Backend, query: exp.Select, record: exp.Expr,
                      item: exp.Expr) -> exp.Select:
        """``query`` restricted to rows where item ∈ E_record (adds joins and a WHERE)."""
        if self.setting == "file":
            return query.join(with_alias(self.cons, "cn"), on=exp.and_(
                col("record_id", "cn").eq(record), col("item_id", "cn").eq(item)))
        if self.setting not in HASHED:
            return query.join(with_alias(self.common, "cm"),
                              on=col("item_id", "cm").eq(item))
        query = (query
                 .join(with_alias(self.records, "rp"), on=col("record_id", "rp").eq(record))
                 .join(with_alias(self.dictionary, "dl"), on=col("item_id", "dl").eq(item))
                 .join(with_alias(self.common, "cm"), on=col("item_id", "cm").eq(item),
                       join_type="left"))
        bound = (exp.Case().when(exp.Is(this=col("item_id", "cm"), expression=exp.Null()),
                                 placeholder("t_out"))
                 .else_(placeholder("t_in")))
        draw = hash8(backend, placeholder("cseed"), col("position", "rp"), col("label", "dl"))
        return query.where(draw < bound)

    def consequents(self) -> exp.Select:
        """Item types that are in some E_u: the possible consequents e of a sensitive rule."""
        if self.setting == "file":
            return exp.select(col("item_id")).from_(self.cons.copy()).distinct()
        if self.setting in HASHED:
            return exp.select(col("item_id")).from_(self.dictionary.copy())
        return exp.select(col("item_id")).from_(self.common.copy())
