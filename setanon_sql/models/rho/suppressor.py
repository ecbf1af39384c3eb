"""PartialSuppressor (Jia et al. Alg. 1) and SanitizeBuffer (Alg. 2), a few SQL passes per round.

The controller keeps the buffer pointer and a few counts. The supports of every qid are counted
once, then kept up to date by each round's delta (:mod:`.incremental`). A round finds the unsafe
rules q -> e of the current qid buffer, gives each its best item type d and N_s(d) by the
heuristic (H_dist, H_mine), and sanitizes the rules that no admitted rule of higher priority
overtakes (would suppress one of their items from one of their records C(q + {e})), as taking
them one by one in priority order and skipping the overtaken ones would
(:func:`.suppression.blocked_rules_query`, :func:`.suppression.settle`). They are done together
without over-suppressing; the others wait a round. When the kept supports show no unsafe rule,
they are recounted from scratch and compared (the number of itemsets whose supports differ is
reported, and is 0); only when this full recount finds no unsafe rule in any buffer is the
table safe (Alg. 1 l.13). A stage before the last one skips that recount (``recount_at_end``,
:mod:`.stages`): the next stage counts from scratch. A round that takes so many occurrences
that the itemsets its records lose outnumber those every record keeps is followed by a count
from scratch instead of the delta (:meth:`Suppressor._recount_pays`, one qid buffer): the
same supports and rules, ids included, so the same output.
Each round suppresses at least one occurrence (the top rule is always admitted), so the loop
ends.

``--heuristic global`` is the global suppression baseline: every unsafe rule votes for an item
type of q + {e} and every occurrence of the voted types goes. Global suppression never makes a
safe rule unsafe (supports of itemsets without the type do not change), so it ends quickly.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot import exp

from setanon_sql.backends.base import Backend, Params, Statement
from setanon_sql.models.rho.choice import chosen_query, held_by_one_record, scores_query
from setanon_sql.models.rho.incremental import (
    build_lost_levels,
    delta_query,
    gone_query,
    member_level_query,
    member_pair_query,
    member_start_query,
    member_step_query,
    mismatch_query,
    pivot_query,
    recount_pays,
    shrink_histogram_query,
    subtract_statement,
    subtracted_query,
    touched_query,
)
from setanon_sql.models.rho.params import RhoParams
from setanon_sql.models.rho.pickkey import pick_salt
from setanon_sql.models.rho.qids import (
    OneHolder,
    build_supports,
    numbered_rules,
    unnumbered_rules_query,
    unsafe_rules_query,
    xs,
)
from setanon_sql.models.rho.rulekeep import (
    changed_qid_rules_query,
    changed_query,
    kept_rules_query,
)
from setanon_sql.models.rho.suppression import (
    admitted_picks_query,
    blocked_rules_query,
    candidates_query,
    picks_query,
    settle,
)
from setanon_sql.progress import report_shrinking
from setanon_sql.runs import RunContext
from setanon_sql.sqlrender import TableBinding

# A delta of at least 1/REBUILD_SHARE of the support rows rebuilds the table (see _subtract).
# PostgreSQL updates each row through the table's indexes (_index_supports): a 2.6M-row delta
# against 12M supports (whole BMS-WebView-2, --m 3, after round 7) ran for minutes, while the
# rebuild writes 12M rows in seconds; the later rounds' deltas are a few thousand rows.
REBUILD_SHARE = 16
# Settling (suppression.settle) runs in a round that holds back at most this many rules. It pays
# in the long tails of rounds of a few thousand rules, and since its steps read the open rules
# only, in rounds of a million: whole BMS-WebView-1 at --m 3 on DuckDB (the held rows narrowed
# after every step) took 102.0 s with a bound of 100,000 (rounds 4-18, of 100k-1.4M unsafe
# rules, each held back more and suppressed 94-2,740), 84.2 s with 1M and 81.2 s with 3M (35
# rounds instead of 41, every one settled; BENCHMARKS.md, rho). In a round of tens of millions
# a step costs more than the rounds it saves (Quest 200k records, --m 3: the first round of
# stage 3, 23.7M unsafe rules, took 114.5 s with one settling step against 65.8 s without,
# before the steps were narrowed).
SETTLE_MAX_BLOCKED = 3_000_000
# The A/B switch of :meth:`Suppressor._recount_pays` (the same output either way).
RECOUNT_WHEN_CHEAPER = True
# A round that takes fewer than 1/RECOUNT_PROBE_SHARE of the occurrences keeps the supports up
# to date without reading the records' lengths (:meth:`Suppressor._recount_pays`).
RECOUNT_PROBE_SHARE = 8
# The A/B switch of :meth:`Suppressor._chosen` (the same output either way; tests compare).
COLLAPSE_ONE_HOLDER_RULES = True
# The A/B switch of :meth:`Suppressor._members`' pair route (the same output either way).
MEMBER_PAIR_ROUTE = True
# Bytes per integer column of a working table, for the sizes passed to short_lived_tables.
INTEGER_BYTES = 8
WORK_TABLES = ("win", "istat", "cand", "scores", "chosen", "pivots", "found0", "found1",
               "picks", "blocked", "held", "held0", "held1", "open0", "open1", "rejected",
               "waiting0", "waiting1", "dels", "changed", "gone", "found_rules")


class RuleFilter(Protocol):
    """Which of the unsafe rules found afresh need sanitizing (personalized ρ^m-uncertainty:
    only those some adversary can use, :class:`..prho.relevance.Relevance`).

    Whether a rule needs it may depend only on the rule, not on the current data: the rules
    kept from the round before were filtered when they were found.
    """

    def keep(self, found: exp.Table, width: int, counted: bool = False) -> exp.Select:
        """The rows of ``found`` (rules without rule_id) that need sanitizing. ``counted``:
        they come from a count from scratch, so ``xrec`` names X's one holder where sx = 1
        (:func:`.qids.rules_for_position`); otherwise it is NULL throughout."""

    def params(self) -> dict[str, Any]:
        """The bind parameters :meth:`keep`'s query uses."""


@dataclass
class Suppressor:
    """One run of the partial suppressor over ``base`` (record_id, item_id, part).

    ``rule_filter``: sanitize only the unsafe rules it keeps (None: every unsafe rule, Jia et
    al.'s model). ``prune_levels``: the levels above ``max_q`` keep only the itemsets holding
    an item of ``sens``; False where every item is in it (:func:`.qids.every_item_sensitive`).
    """

    backend: Backend
    context: RunContext
    params: RhoParams
    sens: exp.Table
    width: int
    max_q: int
    stage: int = 0
    round_offset: int = 0
    mismatches: int = 0
    counts: int = 0
    rule_tables: int = 0
    levels: tuple[exp.Table, ...] = ()
    level_rows: int = 0
    pair_rows: int = 0
    support_rows: int = 0
    rebuilds: int = 0
    indexed: str = ""
    recount_at_end: bool = True
    rule_filter: RuleFilter | None = None
    prune_levels: bool = True

    def _table(self, purpose: str) -> exp.Table:
        return self.context.table(purpose)

    def _level_sens(self) -> exp.Table | None:
        """The sensitive items the levels above ``max_q`` are pruned by (None: not pruned)."""
        return self.sens if self.prune_levels else None

    def _rho(self) -> dict[str, int]:
        return {"num": self.params.rho.numerator, "den": self.params.rho.denominator}

    def run(self, base: exp.Table, start: exp.Table | None, rows: int
            ) -> tuple[exp.Table, list[dict[str, Any]]]:
        """Suppress until safe; returns the final table and one history entry per round.

        ``base`` is T0 (leftover and H_dist compare with it); the rounds start from ``start``
        (an earlier stage's output, dropped once replaced) or from ``base``. ``rows``: the
        (record, itemset) rows a count of ``start`` enumerates (:func:`.check.check_stage`).
        Every table of the rounds is dropped within a round or two, and the largest are
        about as big as the levels (:meth:`_stage_bytes`, :meth:`.Backend.short_lived_tables`);
        a round's choice of occurrences is sized by its rules (:meth:`_round_bytes`).
        """
        with self.backend.short_lived_tables(self._stage_bytes(rows)):
            return self._rounds(base, start)

    def _stage_bytes(self, rows: int) -> int:
        """About the bytes of the stage's largest tables, its levels: ``rows`` (record,
        itemset) rows of at most ``width`` + 2 integers (part, record_id, x1..)."""
        return rows * (self.width + 2) * INTEGER_BYTES

    def _round_bytes(self, rules: int) -> int:
        """About the bytes of the largest tables :meth:`_sanitize` builds for ``rules``
        unsafe rules: one row of 2 * ``width`` + 6 integers per rule (``scores``: rule_id,
        part, sx, xrec, the items d of X, their N_s and H). The records of the chosen rules
        may hold more rows; a table beyond its place's room spills, it is not lost.

        On 1M Quest records (personalized prho, ``--m 3``, ``memory_limit=10GB``) every
        stage's tables belong in the file (levels of 7.1 and 12.7 GB), but a round of stage 2
        ranks at most 227k rules: with its own tables in memory, stage 2 took 394.6 s against
        417.0 s, its members (``found``) 71.2 s against 96.4 s (one run each, the same day,
        BENCHMARKS.md, prho). Stage 3's first round (82M rules) keeps its tables in the file.
        """
        return rules * (2 * self.width + 6) * INTEGER_BYTES

    def _rounds(self, base: exp.Table, start: exp.Table | None
                ) -> tuple[exp.Table, list[dict[str, Any]]]:
        backend = self.backend
        istat0 = self._fresh("istat0")
        self._build(istat0, "rho_istat0", tables={"base": base})
        cur = start if start is not None else base
        occurrences = int(backend.scalar("rho_count_rows", tables={"t": cur}))
        supx, win, rules = self._count_all(cur, None, None)
        pointer, fresh = 0, True
        history: list[dict[str, Any]] = []
        first_unsafe = 0
        for round_no in range(self.round_offset + 1, 10**9):
            started = time.perf_counter()
            n_unsafe, at_or_after, first = backend.query("rho_rule_summary", {"w": pointer},
                                                         {"rules": rules})[0]
            first_unsafe = first_unsafe if history else int(n_unsafe)
            report_shrinking("search", "unsafe rules", first_unsafe, int(n_unsafe), round_no)
            if int(n_unsafe) == 0 and not fresh and self.recount_at_end:
                # Alg. 1 l.13 on supports counted from scratch: the kept ones must agree.
                supx, win, rules = self._count_all(cur, supx, rules)
                fresh = True
                history.append({"round": round_no, "recount": True, "support_mismatches":
                                self.mismatches,
                                "seconds": round(time.perf_counter() - started, 3)})
                continue
            if int(n_unsafe) == 0:
                history.append({"round": round_no, "unsafe_rules": 0,
                                "seconds": round(time.perf_counter() - started, 3)})
                break
            fresh = False
            pointer = int(at_or_after if at_or_after is not None else first)
            with backend.short_lived_tables(self._round_bytes(int(n_unsafe))):
                dels, settle_steps, collapsed = self._sanitize(cur, istat0, rules, pointer,
                                                               round_no)
            n_dels = int(backend.scalar("rho_count_rows", tables={"t": dels}))
            if n_dels == 0:
                raise RuntimeError(f"round {round_no} suppressed nothing although "
                                   f"{n_unsafe} rules are unsafe")
            recounted = self._recount_pays(cur, dels, n_dels, occurrences)
            occurrences -= n_dels
            if not recounted:
                supx, delta = self._subtract(supx, cur, dels)
                changed = self._fresh("changed")
                self._build(changed, changed_query(supx, delta, self.width))
                self._index_delta(delta)
                # Without indexes (after a large delta) every join here should hash: see
                # Backend.hash_joins_only.
                with backend.hash_joins_only() if not self.indexed else nullcontext():
                    rules = self._kept_rules(rules, supx, delta, changed, win)
            following = self._fresh(f"cur{self.stage}x{round_no % 2}")
            self._build(following, "rho_apply", tables={"cur": cur, "dels": dels})
            if cur is not base:
                backend.drop_table(cur)
            cur = following
            if recounted:
                # Counted from scratch: the rules are those of the new table, ids included
                # (:mod:`.rulekeep`), and a count that finds none ends the run (l.13).
                backend.drop_table(supx)
                supx, win, rules = self._count_all(cur, None, rules)
                fresh = True
            history.append({"round": round_no, "buffer": pointer, "unsafe_rules": int(n_unsafe),
                            "suppressed": n_dels, "settle_steps": settle_steps,
                            "rules_collapsed": collapsed, "recounted": recounted,
                            "seconds": round(time.perf_counter() - started, 3)})
        for table in (supx, rules, *self.levels,
                      *(self._table(p) for p in (*WORK_TABLES, "istat0", "tcur", "delta"))):
            backend.drop_table(table)
        return cur, history

    def _count_all(self, cur: exp.Table, kept: exp.Table | None, stale: exp.Table | None
                   ) -> tuple[exp.Table, exp.Table, exp.Table]:
        """Supports, qid buffers and unsafe rules from scratch; compared with ``kept`` if any.
        ``stale``: the rules they replace, dropped first (before the count: at 1M records the
        two would not share the disk)."""
        backend = self.backend
        if stale is not None:
            backend.drop_table(stale)
        supx = self._recount(cur)
        if kept is not None:
            self.mismatches = int(backend.scalar(mismatch_query(kept, supx, self.width)))
            backend.drop_table(kept)
        win = self._fresh("win")
        # No b_max: one buffer, as wide as the qids just counted (each support row is at most
        # one qid, so every qid lands in buffer 0).
        b_max = self.params.b_max or max(1, self.support_rows)
        self._build(win, "rho_windows", {"m": self.max_q, "b_max": b_max}, {"supx": supx})
        holders = OneHolder(cur, self.params.rho)
        if self.rule_filter is None:
            rules = self._rules(unsafe_rules_query(
                supx, self.sens, win, self.width, self.max_q,
                self.backend.split_rules_by_holders, holders), None)
            return supx, win, rules
        found = self._found(unnumbered_rules_query(supx, self.sens, win, self.width,
                                                   self.max_q,
                                                   self.backend.split_rules_by_holders,
                                                   holders))
        rules = self._rules(numbered_rules(self.rule_filter.keep(found, self.width, counted=True),
                                           self.width), None, self.rule_filter.params())
        self.backend.drop_table(found)
        return supx, win, rules

    def _recount_pays(self, cur: exp.Table, dels: exp.Table, n_dels: int,
                      occurrences: int) -> bool:
        """Whether the round's ``dels`` are followed by a count from scratch of the next
        table instead of the delta's subtraction (:func:`.incremental.recount_pays`: the
        itemsets the touched records lose outnumber those of every record after the round).

        The first round of qids of 3 items on 1M Quest records (personalized, ``--m 3``)
        takes 3.4M of 8.3M occurrences: the lost levels, deltas, rebuilt supports and kept
        rules (82M rules scanned against the delta) of it and the next two rounds took 194 s
        of their 299 s; with a count from scratch the three rounds took 131 s (BENCHMARKS.md,
        prho). The records' lengths
        are read only when the round takes at least 1/RECOUNT_PROBE_SHARE of the
        occurrences: below that the lost itemsets are fewer than the kept ones unless records
        lose most of their items at once. Only with one qid buffer (no ``b_max``): a qid
        keeps the buffer of its first record at the last count from scratch, and a count
        between would deal the buffers afresh, in another order (``rho_windows``).
        """
        if (not RECOUNT_WHEN_CHEAPER or self.params.b_max is not None
                or n_dels * RECOUNT_PROBE_SHARE < occurrences):
            return False
        rows = self.backend.query(shrink_histogram_query(cur, dels))
        return recount_pays([(int(a), int(b), int(c)) for a, b, c in rows], self.width)

    def _kept_rules(self, rules: exp.Table, supx: exp.Table, delta: exp.Table,
                    changed: exp.Table, win: exp.Table) -> exp.Table:
        """The unsafe rules after a round (:func:`.rulekeep.kept_rules_query`); with a
        ``rule_filter``, the ones found afresh are filtered first."""
        if self.rule_filter is None:
            return self._rules(kept_rules_query(rules, supx, delta, changed, self.sens, win,
                                                self.width, self.max_q), rules)
        found = self._found(changed_qid_rules_query(supx, changed, self.sens, win, self.width,
                                                    self.max_q))
        kept = self._rules(kept_rules_query(rules, supx, delta, changed, self.sens, win,
                                            self.width, self.max_q,
                                            fresh=self.rule_filter.keep(found, self.width)),
                           rules, {**self._rho(), **self.rule_filter.params()})
        self.backend.drop_table(found)
        return kept

    def _found(self, query: exp.Query) -> exp.Table:
        """The unsafe rules of ``query`` before the ``rule_filter`` (a work table)."""
        found = self._fresh("found_rules")
        self._build(found, query, self._rho())
        return found

    def _rules(self, query: exp.Select, previous: exp.Table | None,
               params: Params = None) -> exp.Table:
        """Materialize the unsafe rules (alternating tables; the previous one is dropped).
        ``params``: the query's bind parameters (default :num, :den)."""
        self.rule_tables += 1
        rules = self._fresh(f"rules{self.rule_tables % 2}")
        self._build(rules, query, self._rho() if params is None else params)
        if previous is not None:
            self.backend.drop_table(previous)
        return rules

    def _recount(self, cur: exp.Table) -> exp.Table:
        """Every itemset's support counted from scratch, beside the kept ones.

        The level tables (every (record, itemset) of ``cur``) are kept until the next count:
        :meth:`_members` may read C(X) from them.
        """
        self.counts += 1
        generation = f"supx{self.counts % 2}"

        def table(purpose: str) -> exp.Table:
            return self._table(generation if purpose == "supx" else purpose)

        for level in self.levels:
            self.backend.drop_table(level)
        levels, counted = build_supports(self.backend, table, cur, self.width,
                                         self._level_sens(), self.max_q)
        self.levels = tuple(levels)
        sizes = [int(self.backend.scalar("rho_count_rows", tables={"t": level}))
                 for level in levels[1:]]
        self.level_rows = sum(sizes)
        # Level 2 holds every (record, pair) of cur where pairs are not pruned by S
        # (build_levels prunes above max_q), and a step is left for x3 (width >= 3).
        complete = self._level_sens() is None or self.max_q >= 2
        self.pair_rows = sizes[0] if self.width >= 3 and complete else 0
        self.support_rows = int(self.backend.scalar("rho_count_rows", tables={"t": counted}))
        self.indexed = ""  # a new table, perhaps of an old one's name
        return counted

    def _subtract(self, supx: exp.Table, cur: exp.Table, dels: exp.Table
                  ) -> tuple[exp.Table, exp.Table]:
        """Subtract ``dels`` from the supports; returns the supports and the changed itemsets
        (delta).

        Only the itemsets the touched records lose are enumerated. A small delta is subtracted
        in place; one of at least 1/REBUILD_SHARE of the support rows rebuilds the table by a
        query instead (:func:`.incremental.subtracted_query`): on PostgreSQL an UPDATE writes a
        new version of every row it touches, and the first subtraction of stage 2 of whole
        BMS-WebView-2 at ``--m 3`` (a 9.6M-row delta against 16M supports) ran for over 14
        minutes (BENCHMARKS.md, rho on PostgreSQL), while every later round's delta is a few
        thousand rows that the update reaches through an index (:meth:`_index_supports`).
        """
        backend = self.backend
        tcur = self._fresh("tcur")
        self._build(tcur, touched_query(cur, dels))
        levels = build_lost_levels(backend, self._table, tcur, self.width,
                                   self._level_sens(), self.max_q)
        delta = self._fresh("delta")
        self._build(delta, delta_query(levels, self.width))
        for level in levels:
            backend.drop_table(level)
        delta_rows = int(backend.scalar("rho_count_rows", tables={"t": delta}))
        if delta_rows * REBUILD_SHARE < self.support_rows:
            self._index_supports(supx)
            backend.run(subtract_statement(supx, delta, self.width))
            return supx, delta
        # supx<g> -> supx<g>r1 -> supx<g>r0 -> ...: never the table it reads, nor the other
        # generation (kept until the next recount compares with it).
        self.rebuilds += 1
        rebuilt = self._fresh(f"supx{self.counts % 2}r{self.rebuilds % 2}")
        self._build(rebuilt, subtracted_query(supx, delta, self.width))
        self.indexed = ""
        # Emptied itemsets are dropped: the next rounds' threshold is the table they read.
        self.support_rows = int(backend.scalar("rho_count_rows", tables={"t": rebuilt}))
        backend.drop_table(supx)
        return rebuilt, delta

    def _build(self, target: exp.Table, query: Statement, params: Params = None,
               tables: TableBinding | None = None) -> None:
        """A working table of the run (no crash safety: the run drops it, and never
        publishes it; see :meth:`Backend.working_table_properties`)."""
        self.backend.materialize(target, query, params, tables, working=True)

    def _index_supports(self, supx: exp.Table) -> None:
        """Index the support table for the lookups of a round with a small delta (once per
        table; a no-op where the engine scans instead, :meth:`Backend.create_access_index`).

        The round reads supx only at the delta's itemsets (the update, ``changed``) and at the
        itemsets X = q + {e} of the changed qids q, one lookup per position j of e
        (:func:`.rulekeep.kept_rules_query`). On PostgreSQL each of these was a scan of the
        whole table (4M rows in stage 3 of whole BMS-WebView-2 at ``--m 3``, 5 s per position,
        and the planner hashed the big side); through an index, 51 ms. One index per position,
        its key X without x_j and then x_j: every index holds the whole key. With x_j left
        out, PostgreSQL took (part, x2, x3) for a full-key lookup of 211k delta rows (it
        multiplies the columns' selectivities, while x3 is the 0 that pads every pair), and
        ``changed`` ran for minutes instead of 2.2 s.
        """
        if supx.name == self.indexed:
            return
        key = xs(self.width)
        for j in range(1, self.width + 1):
            position = f"x{j}"
            self.backend.create_access_index(
                supx, ["part", *(x for x in key if x != position), position])
        self.indexed = supx.name

    def _index_delta(self, delta: exp.Table) -> None:
        """Index the delta for the rules' lookups in it (:func:`.rulekeep.kept_rules_query`'s
        NOT EXISTS on X and on q, and its join on X); a no-op where the engine scans instead.

        PostgreSQL estimated that 1 of 10k rules had no q in a 55k-row delta (6,764 had), so it
        joined the delta by a nested loop without an index: 374M row comparisons, 108 s under
        EXPLAIN ANALYZE (auto_explain, BMS-WebView-2 25k records, ``--m 3``). Through an index
        that misestimate costs one lookup per rule. Built only after the subtraction and
        ``changed``: with it, PostgreSQL probed the index once per support row in those two
        (4M rows) and took 3.6x as long as by hashing the delta. Only for a small delta, like
        the supports' indexes (:meth:`_subtract`): after a large one (2.3M rules, millions of
        delta rows) PostgreSQL probed the index once per rule where it had hashed the delta.
        """
        if self.indexed:
            self.backend.create_access_index(delta, ["part", *xs(self.width)])

    def _fresh(self, purpose: str) -> exp.Table:
        table = self._table(purpose)
        self.backend.drop_table(table)
        return table

    def _members(self, chosen: exp.Table, istat: exp.Table, cur: exp.Table) -> exp.Table:
        """The records C(X) of every chosen rule, (rule_id, rnk, x1..x_width, record_id): the
        picks order them (:func:`.suppression.picks_query`), and the rules held back read X
        from them (``x_in_members``). ``by_pivot`` (the records of each rule's
        rarest item, summed) picks the route:

        * above the rows of the levels: the records that held X at the last full count and
          lost none of it since (:func:`.incremental.member_level_query`, one read of them);
        * else above the rows of level 2, where it holds every pair (``pair_rows``): the
          records that held X's first pair then and lost neither item since
          (:func:`.incremental.member_pair_query`), then a semi-join per item x3..; a pair is
          held by no more records than its rarer item (``MEMBER_PAIR_ROUTE``);
        * else: the records of X's rarest item, then one materialized semi-join per item of
          X (:func:`.incremental.member_step_query`).

        On 200k Quest records, personalized, ``--m 3``, the pair route took 4 of stage 2's
        rounds (and one of stage 3's), and stage 2's member statements took 16.3 s against
        19.8 s (one run each, BENCHMARKS.md, prho).
        Every route gives the same set, so the same output."""
        backend = self.backend
        pivots = self._fresh("pivots")
        self._build(pivots, pivot_query(chosen, istat, self.width))
        by_pivot = int(backend.scalar(exp.select(exp.func("coalesce", exp.func(
            "sum", exp.column("n", quoted=True)), exp.Literal.number(0))).from_(pivots.copy())))
        found = self._fresh("found0")
        by_level = by_pivot > self.level_rows
        by_pair = MEMBER_PAIR_ROUTE and 0 < self.pair_rows < by_pivot and not by_level
        if self.levels and (by_pair or by_level):
            gone = self._fresh("gone")
            self._build(gone, gone_query(self.levels[0], cur))
            # No nested loops: the level rows' anti-joins with ``gone`` (no index on either)
            # look to PostgreSQL as if they left one row, once ``gone`` covers most records
            # and items, and it joined that "row" to every chosen rule by a scan of the rules
            # per level row. 50k Quest records, personalized prho, ``--m 3``, round 9: 31,826
            # rules, 2.5M pair rows, 352k gone; 263 s for the pair route's statement
            # (auto_explain's plan; BENCHMARKS.md, prho). See Backend.hash_joins_only.
            with self.backend.hash_joins_only():
                if not by_pair:
                    self._build(found, member_level_query(chosen, list(self.levels), gone,
                                                          self.width))
                    return found
                self._build(found, member_pair_query(chosen, self.levels[1], gone,
                                                     self.width))
            return self._stepped(found, cur, first=3)
        self._build(found, member_start_query(chosen, pivots, cur, self.width))
        return self._stepped(found, cur, first=1)

    def _stepped(self, found: exp.Table, cur: exp.Table, first: int) -> exp.Table:
        """``found`` narrowed to the records that hold x_first.. x_width now (one
        materialized semi-join per item, :func:`.incremental.member_step_query`)."""
        backend = self.backend
        for j in range(first, self.width + 1):
            following = self._fresh(f"found{j % 2}")
            self._build(following, member_step_query(found, cur, self.width, j))
            backend.drop_table(found)
            found = following
        return found

    def _chosen(self, scores: exp.Table, rules: exp.Table) -> tuple[exp.Table, int]:
        """Each rule's choice and rank (:func:`.choice.chosen_query`), and how many rules were
        left out by collapsing the rules of one known holder to one per (holder, d)
        (:func:`.choice.collapsed_rules`; 0: not collapsed).

        They are collapsed when that leaves out more than SETTLE_MAX_BLOCKED rules: each left
        out is held back in the round, so without the collapse more rules than that would be
        held back and the round would not be settled either; the output is the same. A round
        that leaves out fewer is ranked in full, so that settling sees every rule.
        """
        backend = self.backend
        chosen = self._fresh("chosen")
        one = exp.Case(ifs=[exp.If(this=held_by_one_record(), true=exp.Literal.number(1))],
                       default=exp.Literal.number(0))
        scored, held_alone = (int(n or 0) for n in backend.query(exp.select(
            exp.func("count", exp.Star()), exp.func("sum", one)).from_(scores.copy()))[0])
        if COLLAPSE_ONE_HOLDER_RULES and held_alone > SETTLE_MAX_BLOCKED:
            self._build(chosen, chosen_query(scores, rules, self.width, collapse=True))
            ranked = int(backend.scalar("rho_count_rows", tables={"t": chosen}))
            if scored - ranked > SETTLE_MAX_BLOCKED:
                return chosen, scored - ranked
            chosen = self._fresh("chosen")
        self._build(chosen, chosen_query(scores, rules, self.width))
        return chosen, 0

    def _sanitize(self, cur: exp.Table, istat0: exp.Table, rules: exp.Table, buffer: int,
                  round_no: int) -> tuple[exp.Table, int, int]:
        """Alg. 2 for the rules of qid buffer ``buffer``: the occurrences to suppress, the
        settling steps it took (:func:`.suppression.settle`) and the rules left out by the
        collapse (:meth:`_chosen`)."""
        istat = self._fresh("istat")
        self._build(istat, "rho_istat", tables={"istat0": istat0, "cur": cur})
        dels = self._fresh("dels")
        if self.params.heuristic == "global":
            cand = self._fresh("cand")
            self._build(cand, candidates_query(rules, self.width), {"w": buffer, **self._rho()})
            self._build(dels, "rho_global_choose",
                        tables={"cand": cand, "istat": istat, "cur": cur})
            return dels, 0, 0
        scores = self._fresh("scores")
        self._build(scores, scores_query(rules, istat, self.width, self.params.heuristic),
                    {"w": buffer, **self._rho()})
        chosen, collapsed = self._chosen(scores, rules)
        members = self._members(chosen, istat, cur)
        picks = self._fresh("picks")
        self._build(picks, picks_query(chosen, members),
                    {"salt": pick_salt(self.context.seed or 0, round_no)})
        blocked = self._fresh("blocked")
        self._build(blocked, blocked_rules_query(chosen, members, picks, self.width,
                                                 x_in_members=True))
        waiting, steps = settle(self.backend, self._fresh, chosen, members, picks, blocked,
                                self.width, 0 if collapsed else SETTLE_MAX_BLOCKED,
                                x_in_members=True)
        self._build(dels, admitted_picks_query(picks, waiting))
        return dels, steps, collapsed
