"""``--model km``: k^m-anonymity and σ-k^m-anonymity by generalization (Acs et al. 2015).

Global recoding along a cut of an item hierarchy, or by connected regions of an adjacency graph
(``--graph``, :mod:`.graph`). Sizes with σ_ℓ = 1 (or ℓ <= --exact-upto)
are enforced exactly (the apriori-based anonymization, :mod:`.exact`), the others by uniform
samples (:mod:`.sampled`); a sampled size is certified by enumerating the generalizations of its
itemsets instead of γ samples where that is cheaper (``--certify auto``, :mod:`.exactcheck`:
no weaker, the violating share is then computed, not estimated), and such a size is steered
by that enumeration too, without samples, while one pass costs less than a pool
(:mod:`.enumsteer`). The controller keeps only
the cut's version and small counts; every pass over the data is SQL.

Samples come from the exact rejection sampler (:mod:`.sampler`, the default; its ℓ-subset of a
proposed record is drawn as ℓ positions, :mod:`.positions`, so a proposal reads ℓ rows
whatever the record's length) or, with
``--sampler mcmc``, from the paper's Metropolis-Hastings chains (:mod:`.mcmc`). Exact is the
default because it is exactly uniform and, on BMS-WebView-2, the cheaper one: γ = 45,845 draws
of 4-itemsets take 30 s, while MCMC chains stopped by Geweke after 32 steps cost 1.5 M scored
candidates and still over-weight frequent itemsets (unique share 0.88 against 0.97); see
:mod:`.mcmc` for the figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.io.hierarchy import Hierarchy
from setanon_sql.models.base import Model
from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.exact import enforce_exact
from setanon_sql.models.km.generalization import Generalization, resolve_hierarchy
from setanon_sql.models.km.graph import GraphGeneralization
from setanon_sql.models.km.graphfile import load_coordinates, load_graph
from setanon_sql.models.km.mcmc import McmcSampler
from setanon_sql.models.km.params import (
    CERTIFY,
    DEFAULT_BATCH,
    DEFAULT_CERTIFY,
    DEFAULT_MCMC_MIN_STEPS,
    DEFAULT_SAMPLER,
    ERRORS,
    SAMPLERS,
    KmParams,
    parse_params,
)
from setanon_sql.models.km.positions import PositionSampler
from setanon_sql.models.km.sampled import enforce_sampled
from setanon_sql.models.km.sampler import Sampler
from setanon_sql.models.km.verify import verify_run
from setanon_sql.names import staging_table
from setanon_sql.runs import RunContext

_SCORE = {"ncp": "ncp", "share": "generalized_share", "geo": "geo_error"}
_BY_SIZE = ("published_labels", "ncp", "generalized_share", "geo_error")


def anonymize(backend: Backend, dataset: Dataset, params: dict[str, Any],
              context: RunContext) -> None:
    """Find a partition that makes the data (σ-)k^m-anonymous and publish it.

    With sampled sizes, ``--trials`` independent searches run and the least error wins
    (Sec. V-B, A^(r)); an all-exact search is deterministic and runs once. The sizes enforced
    exactly before the first sampled one are enumerated once for all trials (``_ExactStart``),
    and the figures keep every trial's utility after each size (``utility_by_size``).
    """
    chosen = parse_params(params)
    attribute = dataset.set_attribute(chosen.column, "--model km")
    items = backend.table(dataset.items_table(attribute))
    dictionary = backend.table(dataset.dict_table(attribute))
    hierarchy = None if chosen.graph else resolve_hierarchy(backend, dataset, attribute,
                                                            chosen.hierarchy)
    trials = chosen.trials if chosen.sampled else 1
    leading = _leading_exact_sizes(chosen)
    start = _ExactStart(context.table("exactcut"), leading) if trials > 1 and leading else None
    try:
        best = _best_trial(backend, context, chosen, trials, start, items, dictionary,
                           hierarchy)
    finally:
        if start is not None:
            backend.drop_table(start.table)
    _, gen, figures = best
    context.figures.update(figures)
    if hierarchy is not None:
        context.figures["hierarchy"] = hierarchy.name
    context.figures["trials"] = trials
    context.set_phase("publish")
    gen.publish(attribute.attr_no)
    gen.drop_work_tables()


def validate(backend: Backend, dataset: Dataset, params: dict[str, Any]) -> None:
    """Parameters, and the --graph / --coordinates files, before the run is recorded."""
    chosen = parse_params(params)
    attribute = dataset.set_attribute(chosen.column, "--model km")
    if not chosen.graph:
        return
    dictionary = backend.table(dataset.dict_table(attribute))
    made: list[exp.Table] = []

    def staging(purpose: str) -> exp.Table:
        made.append(backend.table(staging_table(purpose)))
        return made[-1]

    try:
        load_graph(backend, chosen.graph, dictionary, staging, staging("kmedge"))
        if chosen.coordinates:
            load_coordinates(backend, chosen.coordinates, dictionary, staging,
                             staging("kmcoord"))
    finally:
        for table in made:
            backend.drop_table(table)


@dataclass
class _ExactStart:
    """The cut after sizes 1..``sizes``, all enforced exactly, kept for the later trials.

    Exact rounds use no randomness (ties go to the smaller ids), so every trial of A^(r)
    (Sec. V-B) reaches the same cut there; the paper's hybrid (exact for ℓ <= 4, Sec. VI-D)
    with r = 10 would otherwise enumerate sizes 1..4 ten times. Once the first trial has made
    ``table``, ``made`` holds those sizes' rounds and the utility after each of them.
    """

    table: exp.Table
    sizes: int
    made: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None


def _leading_exact_sizes(chosen: KmParams) -> int:
    """How many sizes from ℓ = 1 on are enforced exactly."""
    sizes = 0
    while sizes < chosen.m and chosen.exact_at(sizes + 1):
        sizes += 1
    return sizes


def _best_trial(backend: Backend, context: RunContext, chosen: KmParams, trials: int,
                start: _ExactStart | None, items: exp.Table, dictionary: exp.Table,
                hierarchy: Hierarchy | None) -> tuple[float, CutSearch, dict[str, Any]]:
    """A^(r): ``trials`` independent searches, the one of least error kept (its work tables
    stay for publishing; the others' are dropped). The kept figures list every trial's
    utility after each size (``utility_by_size``)."""
    best: tuple[float, CutSearch, dict[str, Any]] | None = None
    by_size: list[dict[str, Any]] = []
    for trial in range(1, trials + 1):
        gen: CutSearch
        if hierarchy is None:
            gen = GraphGeneralization(backend, context, items, dictionary, str(chosen.graph),
                                      chosen.coordinates, prefix=f"t{trial}_")
        else:
            gen = Generalization(backend, context, items, dictionary, hierarchy.hierarchy_id,
                                 prefix=f"t{trial}_")
        # Every table of the search is scratch (the published ones are made below), and its
        # joins are of whole tables: PostgreSQL wrote each prefix level's millions of rows to
        # the write-ahead log and sorted them for merge joins (see working_tables and
        # whole_table_joins).
        with backend.working_tables(), backend.whole_table_joins():
            figures = _search(gen, chosen, context.seed or 0, trial, start)
        by_size.extend(figures["utility_by_size"])
        figures["utility_by_size"] = by_size  # one list: the kept figures get every trial's
        score = figures[_SCORE[chosen.error]]
        if best is None or score < best[0]:
            if best is not None:
                best[1].drop_work_tables()
            best = (score, gen, figures)
        else:
            gen.drop_work_tables()
    assert best is not None
    return best


def _search(gen: CutSearch, chosen: KmParams, seed: int, trial: int,
            start: _ExactStart | None = None) -> dict[str, Any]:
    """One run of Alg. 2 over sizes 1..m: exact sizes enumerated, the others sampled. With
    ``start``, the first trial keeps its cut after the leading exact sizes and the later ones
    begin there.

    The figures include the utility after each size (``utility_by_size``): the cut after size
    ℓ is what ``--m ℓ`` would publish (a size never looks ahead, and the sampler's stream only
    depends on the sizes before), so one run at the largest m gives the paper's curves of
    partitions and error against m (Figs. 4, 5) for every smaller m too.
    """
    gen.prepare()
    history: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    first = 1
    if start is not None and start.made is not None:
        gen.start_from(start.table)
        history = [dict(entry) for entry in start.made[0]]
        after = [{**entry, "trial": trial} for entry in start.made[1]]
        first = start.sizes + 1
    sampler: Sampler | McmcSampler
    if chosen.sampler == "mcmc":
        sampler = McmcSampler(gen.backend, gen.items, gen.table, seed, stream=trial,
                              first_check=chosen.mcmc_min_steps)
    else:
        sampler = PositionSampler(gen.backend, gen.items, gen.table, seed, stream=trial,
                                  first_holder=True)
    figures: dict[str, Any] = {}
    try:
        for ell in range(first, chosen.m + 1):
            k = chosen.k[ell - 1]
            if chosen.exact_at(ell):
                history.extend(enforce_exact(gen, ell, k, chosen.error, chosen.batch))
            else:
                history.extend(enforce_sampled(gen, sampler, ell, k, chosen.sigma[ell - 1],
                                               chosen.error, chosen.batch, chosen.certify))
            figures = dict(gen.figures())
            after.append({"trial": trial, "size": ell,
                          **{key: figures[key] for key in _BY_SIZE if key in figures}})
            if start is not None and start.made is None and ell == start.sizes:
                gen.copy_cut(start.table, whole=True)
                start.made = ([dict(entry) for entry in history],
                              [dict(entry) for entry in after])
    finally:
        sampler.release()
        gen.kept_levels.drop()
    figures["rounds"] = history
    figures["utility_by_size"] = after
    if chosen.sampled:
        figures.update(_certificates(history))
        figures["sample_proposals"] = sampler.proposals
        figures["sampler"] = chosen.sampler
        if isinstance(sampler, McmcSampler):
            figures["mcmc_chains"] = sampler.chains
    return figures


def _certificates(history: list[dict[str, Any]]) -> dict[str, int]:
    """How the sampled sizes were decided: pools certified by enumeration or by γ samples,
    pools failed (always by a violating sample), and the enumeration checks tried."""
    done = [entry for entry in history if "certified_by" in entry]
    return {
        "pools_certified_exactly": sum(e["certified_by"] == "exact" for e in done),
        "pools_certified_by_samples": sum(e["certified_by"] == "samples" for e in done),
        "pools_failed_by_samples": sum(int(e.get("failed_pools", 0)) for e in done),
        "exact_checks": sum(int(e.get("exact_checks", 0)) for e in done),
        "exact_checks_with_violations": sum(int(e.get("exact_checks_with_violations", 0))
                                            for e in done),
        "exact_certificates_by_bound": sum(int(e.get("exact_certificates_by_bound", 0))
                                           for e in done),
    }


def _k_list(ctx: click.Context, param: click.Parameter, value: str) -> str:
    for part in value.split(","):
        if not part.strip().isdigit() or int(part) < 2:
            raise click.BadParameter(f"{value!r}: give k >= 2, or a list such as 20,20,10,10")
    return value


def _sigma_list(ctx: click.Context, param: click.Parameter, value: str) -> str:
    for part in value.split(","):
        try:
            ok = 0.5 < float(part) <= 1
        except ValueError:
            ok = False
        if not ok:
            raise click.BadParameter(f"{value!r}: give sigma in (0.5, 1], or a list per size")
    return value


OPTIONS = (
    click.Option(["--k"], required=True, callback=_k_list,
                 help="anonymity k, one value or one per itemset size (e.g. 20,20,10,10)"),
    click.Option(["--m"], type=int, required=True, help="largest itemset size the adversary "
                                                        "knows"),
    click.Option(["--sigma"], default="1", show_default=True, callback=_sigma_list,
                 help="probability per size that a known itemset is k-anonymous; 1 = exact"),
    click.Option(["--hierarchy"], default=None, type=click.Path(dir_okay=False),
                 help="item hierarchy file (leaf;parent;...;root); default: the loaded one"),
    click.Option(["--column"], default=None, help="the set-valued column to generalize"),
    click.Option(["--graph"], default=None, type=click.Path(dir_okay=False),
                 help="adjacency graph of the items (lines item<TAB>item): parts are connected "
                      "regions merged only with adjacent ones, instead of a hierarchy cut"),
    click.Option(["--coordinates"], default=None, type=click.Path(dir_okay=False),
                 help="item coordinates (lines item<TAB>x<TAB>y) for --error geo"),
    click.Option(["--error"], type=click.Choice(ERRORS), default="ncp", show_default=True,
                 help="error the greedy search minimizes: ncp, geo (average distance to the "
                      "region's centre; --graph, --coordinates) or share of occurrences "
                      "generalized"),
    click.Option(["--batch"], type=click.FloatRange(0, 1, min_open=True),
                 default=DEFAULT_BATCH, show_default=True,
                 help="share of the cheapest proposed merges applied per round (1 = all; "
                      "smaller: less generalization, more rounds)"),
    click.Option(["--trials"], type=int, default=1, show_default=True,
                 help="independent trials of the sampled search, the least error is kept (the "
                      "exact sizes before the first sampled one are searched once for all)"),
    click.Option(["--sampler"], type=click.Choice(SAMPLERS), default=DEFAULT_SAMPLER,
                 show_default=True,
                 help="how sampled sizes draw itemsets: exact (rejection, exactly uniform) or "
                      "mcmc (Metropolis-Hastings of Alg. 1, Geweke-checked)"),
    click.Option(["--mcmc-min-steps", "mcmc_min_steps"], type=click.IntRange(min=1),
                 default=DEFAULT_MCMC_MIN_STEPS, show_default=True,
                 help="--sampler mcmc: steps every chain makes before the Geweke test is first "
                      "applied (a floor on burn-in; the test then doubles the steps)"),
    click.Option(["--certify"], type=click.Choice(CERTIFY), default=DEFAULT_CERTIFY,
                 show_default=True,
                 help="how a sampled size is certified: auto (by enumerating the itemsets' "
                      "generalizations when that is cheaper than gamma samples and none is "
                      "below k: exact, so never weaker) or samples (always gamma samples, "
                      "Alg. 2 as printed)"),
    click.Option(["--exact-upto", "exact_upto"], type=int, default=0, show_default=True,
                 help="enumerate itemsets exactly up to this size, sample above it"),
)

MODEL = Model("km", "k^m-anonymity and sigma-k^m-anonymity by generalization", OPTIONS,
              anonymize, verify_run, validate)
