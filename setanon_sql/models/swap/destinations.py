"""Destination selection (Alg. 2 for partial, Alg. 4 for full swapping) as a matching in SQL.

The paper compares every source with every candidate by Jaccard similarity (quadratic) and
notes that the database "should not be too large". Here a record takes part in at most one
swap, so destinations form a matching between records of the same kind, and it is found in
three stages, each a few set-based statements over all unmatched records at once:

1. Randomized rounds: the pool is ordered by (tendency category, seeded random key) and
   position i is paired with i + ceil(n/2), so two records of one category meet only when that
   category holds more than half of the pool. A pair is kept when the categories differ and the
   two records share no item (found through the item postings). Such a pair has Jaccard
   similarity 0, the least possible, so every destination chosen here is a minimum-Jaccard
   destination, exactly; among the (usually many) candidates with similarity 0 the choice is
   random rather than the paper's first-found. Collisions are impossible: nothing is shared.
   Rounds repeat (new random keys) while they pair at least a tenth of the pool.
2. Window rounds, while the pool is larger than ``exact_limit``: every record is compared
   with the next ``WINDOW`` records of a random cyclic order; pairs with different categories
   and no collision are ranked by (Jaccard, seeded random key) and matched greedily. Here a
   destination has the least similarity among the candidates it was compared with, not
   among all: this is the approximation that keeps the work linear.
3. Exact stage, once the pool has at most ``exact_limit`` records: the same greedy matching
   over every pair of the pool ("best live edge at both ends" rounds, which equals the
   sequential greedy matching taking pairs in increasing (Jaccard, random) order). Pairs with
   positive similarity are taken here and in stage 2, smallest first.

Records left unmatched (no valid partner, or a large pool where window rounds stopped making
progress) keep their items; they are counted in the figures with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from setanon_sql.backends.base import Backend

WINDOW = 16
PAIRS_DDL = ("record_id BIGINT", "partner_id BIGINT", "kind TEXT", "jc DOUBLE PRECISION",
             "round INT")


@dataclass
class MatchHistory:
    """One entry per round: (stage, pool size, categories in the pool, pairs accepted)."""

    kind: str
    rounds: list[tuple[str, int, int, int]] = field(default_factory=list)
    stopped: str = ""

    @property
    def pairs(self) -> int:
        return sum(r[3] for r in self.rounds)


def create_pairs_table(backend: Backend, pairs: exp.Table) -> None:
    """The empty ``pairs`` table (both directions of every pair)."""
    schema = exp.Schema(this=pairs.copy(), expressions=[
        exp.ColumnDef(this=exp.to_identifier(column.split()[0], quoted=True),
                      kind=exp.DataType.build(column.split(maxsplit=1)[1]))
        for column in PAIRS_DDL
    ])
    backend.run(exp.Create(this=schema, kind="TABLE"))
    backend.create_access_index(pairs, ["record_id"])


@dataclass
class Matcher:
    """Finds pairs for one kind of record ('partial' or 'full'), writing them to ``pairs``."""

    backend: Backend
    tables: dict[str, exp.Table]
    seed: int
    exact_limit: int
    max_rounds: int

    def _t(self, *names: str) -> dict[str, exp.Table]:
        return {name: self.tables[name] for name in names}

    def _pool(self, kind: str, round_no: int) -> tuple[int, int]:
        pool = self.tables["pool"]
        self.backend.drop_table(pool)
        self.backend.materialize(pool, "swap_pool",
                                 {"seed": self.seed, "kind": kind, "round": round_no},
                                 self._t("tend", "pairs"))
        size, n_categories = self.backend.query("swap_pool_shape", tables=self._t("pool"))[0]
        return int(size), int(n_categories)

    def _insert(self, kind: str, round_no: int) -> int:
        accepted = int(self.backend.scalar("swap_count_rows",
                                           tables={"t": self.tables["accepted"]}))
        if accepted:
            self.backend.run("swap_insert_pairs", {"kind": kind, "round": round_no},
                             self._t("pairs", "accepted"))
            # Fresh statistics: with a stale row count PostgreSQL probed ``pairs`` by nested
            # loops in the next anti-join (BMS1: 211 s instead of 1.5 s).
            self.backend.analyze(self.tables["pairs"])
        return accepted

    def _shuffle_round(self, kind: str, round_no: int, size: int) -> int:
        b = self.backend
        for name in ("cand", "overlap", "accepted"):
            b.drop_table(self.tables[name])
        b.materialize(self.tables["cand"], "swap_shuffle_candidates", {"half": (size + 1) // 2},
                      self._t("pool"))
        b.materialize(self.tables["overlap"], "swap_candidate_overlap",
                      tables=self._t("cand", "items"))
        b.materialize(self.tables["accepted"], "swap_accept_disjoint",
                      tables=self._t("cand", "overlap"))
        return self._insert(kind, round_no)

    def _greedy(self, kind: str, round_no: int, history: MatchHistory, stage: str,
                size: int, n_categories: int) -> tuple[int, int]:
        """Score the candidate pairs in ``cand`` and match them greedily by (Jaccard, random).

        Returns the last round number used and the pairs accepted.
        """
        b = self.backend
        edges, spare = self.tables["edges"], self.tables["live"]
        b.drop_table(edges)
        b.materialize(edges, "swap_score_candidates", {"seed": self.seed},
                      self._t("cand", "pool", "items", "cats"))
        total = 0
        while round_no < self.max_rounds:
            round_no += 1
            b.drop_table(self.tables["accepted"])
            b.materialize(self.tables["accepted"], "swap_greedy_accept",
                          tables={"edges": edges})
            accepted = self._insert(kind, round_no)
            history.rounds.append((stage, size, n_categories, accepted))
            size -= 2 * accepted
            total += accepted
            if not accepted:
                break
            # Keep only the edges whose two records are still free: the next round needs no
            # anti-join on every pair, and it reads fewer edges as the pool empties.
            b.drop_table(spare)
            b.materialize(spare, "swap_live_edges",
                          tables={"edges": edges, "accepted": self.tables["accepted"]})
            b.drop_table(edges)
            edges, spare = spare, edges
        b.drop_table(spare)
        return round_no, total

    def _candidates(self, statement: str, params: dict[str, int]) -> None:
        self.backend.drop_table(self.tables["cand"])
        self.backend.materialize(self.tables["cand"], statement, params, self._t("pool"))

    def match(self, kind: str) -> MatchHistory:
        """Pair the records of ``kind``; returns the round history.

        Randomized rounds run while they pair at least a tenth of the pool; then window rounds
        (each record against ``WINDOW`` random others, greedy by Jaccard) while they pair at
        least a hundredth; the exact stage finishes any pool of at most ``exact_limit`` records.
        """
        history = MatchHistory(kind)
        stage = "shuffle"
        round_no = 0
        while round_no < self.max_rounds:
            round_no += 1
            size, n_categories = self._pool(kind, round_no)
            if size < 2 or n_categories < 2:
                history.stopped = (f"{size} unmatched record(s) in {n_categories} "
                                   "tendency categor(ies): no valid pair left")
                return history
            if stage != "shuffle" and size <= self.exact_limit:
                self._candidates("swap_all_candidates", {})
                self._greedy(kind, round_no - 1, history, "exact", size, n_categories)
                history.stopped = "no valid pair left (exact stage)"
                return history
            if stage == "shuffle":
                accepted = self._shuffle_round(kind, round_no, size)
                history.rounds.append(("shuffle", size, n_categories, accepted))
                if accepted * 10 < size:
                    stage = "window"
                continue
            self._candidates("swap_window_candidates", {
                "seed": self.seed, "round": round_no, "window": WINDOW, "n": size})
            round_no, accepted = self._greedy(kind, round_no, history, "window", size,
                                              n_categories)
            if accepted * 100 < size:
                history.stopped = ("window rounds paired under 1% of a pool larger than "
                                   "--exact-limit")
                return history
        history.stopped = "max rounds reached"
        return history
