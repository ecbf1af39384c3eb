"""``--model rho --heuristic tdcontrol``: TDControl of Cao et al. (PVLDB 3(1), 2010).

TDControl is the generalization baseline Jia et al. compare Mine and Dist with (their Sec. 4,
Table 3, Figs. 1-3): non-sensitive items are generalized along a cut of an item hierarchy
(global recoding), sensitive items are never generalized, only suppressed globally (every
occurrence of the item type). The published table is ρ-uncertain over the published labels: an
adversary who knows an original item knows its generalized label, so every itemset of a
published record is a qid.

What is taken from the papers and what is reconstructed. Jia et al. (Sec. 4 and related work)
state only: "a top-down generalization-driven global suppression method", generalizing
non-sensitive items and globally suppressing sensitive ones, assuming "that data exhibits some
monotonic property under a generalization hierarchy". Cao et al.'s text could not be consulted
(the search found only its abstract), so the steps below are a RECONSTRUCTION of its outline:

1. Start from the most general cut: every non-sensitive item under the root (``tdc_start_cut``).
2. SuppressControl (:meth:`TDControl.suppress_control`): count every qid of up to m items of
   the generalized table and list its unsafe rules q -> e; then, for antecedent sizes 1, 2, ...
   m in turn, suppress globally the sensitive item type in the most unsafe rules of that size
   per occurrence it costs, until no rule of that size is left (:mod:`.tdcgreedy`; reconstructed
   score: rules removed / occurrences lost). Global suppression of s deletes exactly the
   itemsets holding s and changes no other support, so it makes no rule unsafe and the rules
   to remove are known from the one count: the greedy is a weighted set cover, run in SQL.
3. Information loss (reconstructed; the NCP of Terrovitis et al. restricted to the
   non-sensitive items, plus 1 per suppressed occurrence): (n - 1) / (N - 1) per non-sensitive
   occurrence published as a node with n non-sensitive data items below (N of them in all;
   the root costs 1, as much as suppression), plus the occurrences suppressed.
4. Specialize top-down: try the cut node whose specialization removes the most generalization
   loss (``tdc_candidates``; reconstructed order); replace it by its children, rerun
   SuppressControl, and keep the specialization only if the total loss falls. A rejected node
   is never tried again and its subtree never reached: the monotonicity assumption Jia et al.
   criticize. Stop when no node of the cut is left to try.

The controller holds only the cut's version, the ids of rejected nodes and a few counts; every
pass over the data is SQL. Each trial recounts the qids of the generalized table from scratch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.generalization import Generalization
from setanon_sql.models.rho.check import CheckShape
from setanon_sql.models.rho.params import RhoParams
from setanon_sql.models.rho.qids import OneHolder, build_supports, col, unsafe_rules_query
from setanon_sql.models.rho.tdcgreedy import (
    rules_left_query,
    signatures_query,
    suppress_greedy,
)
from setanon_sql.progress import report
from setanon_sql.runs import RunContext


@dataclass(frozen=True)
class Outcome:
    """One SuppressControl result: the suppressed types' table and the loss in integers."""

    supp: exp.Table
    generalization: int  # sum over non-sensitive occurrences of (n - 1)
    suppressed: int  # occurrences of the suppressed sensitive types
    unsafe_rules: int  # unsafe rules of the generalized table before suppression
    rounds: int

    def total(self, n_minus_1: int) -> int:
        """The information loss x (N - 1): comparable between cuts without rounding."""
        return self.generalization + self.suppressed * n_minus_1


class TDControl:
    """The search: the cut as a table (version ``n``), the rejected nodes as a set of ids."""

    def __init__(self, backend: Backend, context: RunContext, params: RhoParams,
                 sens: exp.Table, items: exp.Table, dictionary: exp.Table, hierarchy_id: int,
                 shape: CheckShape) -> None:
        self.b, self.context, self.params, self.sens = backend, context, params, sens
        self.items, self.dictionary, self.shape = items, dictionary, shape
        self.gen = Generalization(backend, context, items, dictionary, hierarchy_id,
                                  prefix="tdc_")
        self.names = 0
        self.offset = 0
        self.n_minus_1 = 1

    def table(self, purpose: str) -> exp.Table:
        return self.context.table(f"tdc_{purpose}")

    def fresh(self, purpose: str) -> exp.Table:
        """A work table of a new name (trial tables live beside the current ones)."""
        self.names += 1
        return self.table(f"{purpose}{self.names}")

    def count(self, table: exp.Table) -> int:
        return int(self.b.scalar(exp.select(exp.func("count", exp.Star())).from_(table.copy())))

    @property
    def bound(self) -> dict[str, exp.Table]:
        return {**self.gen.fixed, "sens": self.sens, "nsl": self.table("nsl")}

    def prepare(self) -> exp.Table:
        """km's node, ancestor and occurrence tables; the non-sensitive leaf counts; the most
        general cut (step 1)."""
        self.gen.prepare()
        self.b.drop_table(self.gen.cut)  # km's identity cut: TDControl starts at the root
        self.b.materialize(self.table("nsl"), "tdc_nonsensitive_leaves", None,
                           {"anc": self.gen.fixed["anc"], "sens": self.sens})
        self.offset = int(self.b.scalar(exp.select(exp.func("max", col("item_id"))).from_(
            self.dictionary.copy())) or 0)
        cut = self.fresh("cut")
        self.b.materialize(cut, "tdc_start_cut", None, self.bound)
        row = self.b.query("tdc_figures", None, {"cut": cut, **self.bound})
        self.n_minus_1 = max(int(row[0][3] or 0) - 1, 1)
        return cut

    def suppress_control(self, cut: exp.Table) -> Outcome:
        """Step 2: the sensitive types to suppress globally so that ``cut`` is ρ-uncertain."""
        b, width, max_q = self.b, self.shape.width, self.shape.max_q
        supp = self.fresh("supp")
        b.materialize(supp, exp.select(col("item_id")).from_(self.sens.copy())
                      .where(exp.false()))
        unsafe = rounds = 0
        if width >= 2:
            g = self.table("g")
            b.materialize(g, "tdc_generalized", {"offset": self.offset},
                          {"items": self.items, "cut": cut, "sens": self.sens})
            levels, supx = build_supports(b, self.table, g, width, self.sens, max_q)
            rules = self.table("rules")
            b.materialize(rules, unsafe_rules_query(supx, self.sens, None, width, max_q,
                                                    b.split_rules_by_holders,
                                                    OneHolder(g, self.params.rho)),
                          {"num": self.params.rho.numerator, "den": self.params.rho.denominator})
            for table in (*levels, supx, g):
                b.drop_table(table)
            sig = self.fresh("sig")
            b.materialize(sig, signatures_query(rules, self.sens, width))
            unsafe = self.count(rules)
            b.drop_table(rules)
            supp, rounds = suppress_greedy(b, self.fresh, supp, sig, self.gen.fixed["occ"],
                                           width, max_q)
            left = int(b.scalar(rules_left_query(sig, supp, width)))
            b.drop_table(sig)
            if left:  # every rule holds a sensitive item of its own size: cannot happen
                raise AssertionError(f"SuppressControl left {left} unsafe rule(s)")
        generalization, suppressed = b.query("tdc_loss", None,
                                             {"cut": cut, "supp": supp, **self.bound})[0]
        return Outcome(supp, int(generalization), int(suppressed), unsafe, rounds)

    def search(self) -> tuple[exp.Table, Outcome, dict[str, Any]]:
        """Steps 1-4: the final cut, its SuppressControl outcome and the search's figures."""
        b = self.b
        cut = self.prepare()
        best = self.suppress_control(cut)
        rejected: set[int] = set()
        trials = accepted = 0
        history: list[dict[str, Any]] = []
        while True:
            candidates = b.query("tdc_candidates", None, {"cut": cut, **self.bound})
            chosen = next(((int(node), int(depth)) for node, depth, _ in candidates
                           if int(node) not in rejected), None)
            if chosen is None:
                break
            node, depth = chosen
            started = time.monotonic()
            trial = self.fresh("cut")
            b.materialize(trial, "tdc_specialize", {"node_id": node, "depth": depth},
                          {"cut": cut, "anc": self.gen.fixed["anc"]})
            outcome = self.suppress_control(trial)
            trials += 1
            keep = outcome.total(self.n_minus_1) < best.total(self.n_minus_1)
            if keep:
                accepted += 1
                b.drop_table(cut)
                b.drop_table(best.supp)
                cut, best = trial, outcome
            else:
                rejected.add(node)
                b.drop_table(trial)
                b.drop_table(outcome.supp)
            history.append({"node": node, "depth": depth, "kept": keep,
                            "loss": round(outcome.total(self.n_minus_1) / self.n_minus_1, 2),
                            "seconds": round(time.monotonic() - started, 2)})
            report("search", f"trial {trials}: node {node} (depth {depth}) "
                             f"{'kept' if keep else 'rejected'}; {accepted} kept")
        figures = {"trials": trials, "specializations_kept": accepted,
                   "specializations_rejected": len(rejected),
                   "unsafe_rules_of_final_cut": best.unsafe_rules,
                   "suppress_rounds_of_final_cut": best.rounds,
                   "history": history[:200]}
        return cut, best, figures

    def publish(self, cut: exp.Table, best: Outcome, attr_no: int) -> dict[str, Any]:
        """map_, dict_ and items_ through km's publication of a cut; the run's figures."""
        b = self.b
        total, nonsens, generalized, n_nonsens = b.query(
            "tdc_figures", None, {"cut": cut, **self.bound})[0]
        self.gen.version = 1
        b.materialize(self.gen.cut, "tdc_published_cut", None, {"cut": cut, "supp": best.supp})
        self.gen.publish(attr_no)
        types = self.count(best.supp)
        occurrences = int(total or 0)
        pub, pdict = self.context.table(f"items_{attr_no}"), self.context.table(f"dict_{attr_no}")
        kl = b.scalar("tdc_distribution", None, {"items": self.items, "dict": self.dictionary,
                                                 "pub": pub, "pdict": pdict})
        labels = self.count(pdict)
        for table in (cut, best.supp, self.table("nsl")):
            b.drop_table(table)
        self.gen.drop_work_tables()
        return {
            "occurrences": occurrences, "suppressed": best.suppressed,
            "suppressed_share": best.suppressed / occurrences if occurrences else 0.0,
            "suppressed_item_types": types,
            "generalized_share": int(generalized or 0) / occurrences if occurrences else 0.0,
            "ncp_nonsensitive": (best.generalization / (self.n_minus_1 * int(nonsens))
                                 if nonsens else 0.0),
            "information_loss": (best.total(self.n_minus_1) / self.n_minus_1 / occurrences
                                 if occurrences else 0.0),
            "nonsensitive_items": int(n_nonsens or 0), "published_labels": labels,
            "symmetric_kl": float(kl or 0.0),
        }
