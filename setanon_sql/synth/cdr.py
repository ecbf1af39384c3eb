"""Call-detail-like set-valued data: the shape of Acs et al.'s CDR dataset (Sec. VI-A, Table II).

Their data (not public): 4,427,486 users, each the set of the 1,303 cell towers of a city
(128 km²) they were seen at over six weeks; mean 11.42 towers per user, standard deviation
17.23, at most 422; towers carry 38,817 users on average with a standard deviation of 50,911
(a skewed popularity); partitions may only merge Voronoi-adjacent towers. This generator makes
data of that shape, so the paper's experiment (m = 5..11, --graph and --coordinates, --error
geo) can be run on something like it:

- **towers** on a square of ``area_km2``: a dense centre and a few denser sub-centres over a
  sparse background (Gaussian clusters), as towers follow population;
- **adjacency**: Voronoi neighbours = edges of the Delaunay triangulation (matplotlib's qhull;
  two cells share a boundary exactly when their towers are Delaunay neighbours);
- **popularity**: a tower's weight is Zipf-like in a random rank (exponent ``zipf``) times
  the local tower density, so central towers are busy and a long tail is quiet;
- **users**: a home tower (by popularity) and a work tower a few adjacent towers away; each
  visit starts at home (55%), work (35%) or a popular tower anywhere (10%) and walks a
  geometric number of steps to adjacent towers, so a user's towers are near each other; the
  number of visits is log-normal, calibrated so that once repeated towers merge the sets come
  near Table II (see VISIT_MEAN).

Everything is drawn from one numpy Generator seeded by ``seed``: the same seed gives the same
files. Files: FIMI transactions (tower numbers 1..n), ``graph.tsv`` (tower<TAB>tower) and
``coordinates.tsv`` (tower<TAB>x<TAB>y, metres), as ``--graph`` / ``--coordinates`` read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.tri import Triangulation
from numpy.typing import NDArray

TOWERS = 1303
AREA_KM2 = 128.1
PAPER_MEAN_SET, PAPER_SD_SET, PAPER_MAX_SET = 11.42, 17.23, 422  # Table II
# Visits before repeated towers merge: calibrated (seed 1, 20,000 users) so that the merged
# sets come near Table II: mean 11.1 (11.42), sd 12.6 (17.23); users per tower sd / mean 1.29
# (50,911 / 38,817 = 1.31) with ZIPF = 0.9.
VISIT_MEAN, VISIT_SD, ZIPF, WALK_STOP = 24.0, 64.0, 0.9, 0.3
WORK_STOP = 0.15  # the work tower: a walk of about 6 adjacent towers from home


@dataclass(frozen=True)
class Towers:
    """Tower coordinates (metres), Voronoi adjacency as CSR arrays, and popularity weights."""

    xy: NDArray[np.float64]
    indptr: NDArray[np.int64]
    neighbours: NDArray[np.int64]
    popularity: NDArray[np.float64]

    @property
    def count(self) -> int:
        return int(self.xy.shape[0])

    def edges(self) -> list[tuple[int, int]]:
        """Each adjacent pair once, (a, b) with a < b, 0-based."""
        return [(a, int(b)) for a in range(self.count)
                for b in self.neighbours[self.indptr[a]:self.indptr[a + 1]] if a < b]


def make_towers(rng: np.random.Generator, count: int = TOWERS,
                area_km2: float = AREA_KM2, zipf: float = ZIPF) -> Towers:
    """Clustered towers on a square, their Delaunay (= Voronoi) neighbours and popularity."""
    side = math.sqrt(area_km2) * 1000.0
    centres = np.vstack([[side / 2, side / 2], rng.uniform(0.15 * side, 0.85 * side, (5, 2))])
    spreads = np.array([0.12] + [0.06] * 5) * side
    shares = np.array([0.35] + [0.08] * 5 + [0.25])  # the rest: uniform background
    which = rng.choice(len(shares), size=count, p=shares / shares.sum())
    xy = np.empty((count, 2))
    for c in range(len(shares)):
        chosen = which == c
        n = int(chosen.sum())
        xy[chosen] = (rng.uniform(0, side, (n, 2)) if c == len(centres)
                      else rng.normal(centres[c], spreads[c], (n, 2)))
    xy = np.clip(xy, 0, side)
    xy += rng.uniform(-1.0, 1.0, xy.shape)  # no two towers on one point (clipped corners)
    triangulation = Triangulation(xy[:, 0], xy[:, 1])
    pairs = np.asarray(triangulation.edges, dtype=np.int64)
    both = np.vstack([pairs, pairs[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    indptr = np.searchsorted(both[:, 0], np.arange(count + 1)).astype(np.int64)
    # density: towers within 600 m; popularity: Zipf in a random rank times density
    distance = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1])
    density = (distance < 600.0).sum(axis=1).astype(np.float64)
    rank = rng.permutation(count) + 1
    popularity = density / rank.astype(np.float64) ** zipf
    return Towers(xy, indptr, both[:, 1].copy(), popularity / popularity.sum())


def _visit_counts(rng: np.random.Generator, users: int) -> NDArray[np.int64]:
    """Log-normal visits per user (VISIT_MEAN, VISIT_SD), 1..Table II's largest set."""
    mean, sd = VISIT_MEAN, VISIT_SD
    sigma2 = math.log(1 + (sd / mean) ** 2)
    mu = math.log(mean) - sigma2 / 2
    counts = np.ceil(rng.lognormal(mu, math.sqrt(sigma2), users)).astype(np.int64)
    return np.clip(counts, 1, PAPER_MAX_SET)


def _walk(rng: np.random.Generator, towers: Towers, start: NDArray[np.int64],
          stop: float) -> NDArray[np.int64]:
    """From each start tower, a geometric number of steps (success ``stop``) to adjacent
    towers, each step to a neighbour chosen uniformly."""
    current = start.copy()
    steps = rng.geometric(stop, current.size) - 1
    degree = towers.indptr[1:] - towers.indptr[:-1]
    for step in range(int(steps.max(initial=0))):
        moving = steps > step
        here = current[moving]
        pick = (rng.random(here.size) * degree[here]).astype(np.int64)
        current[moving] = towers.neighbours[towers.indptr[here] + pick]
    return current


def make_users(rng: np.random.Generator, towers: Towers, users: int,
               walk_stop: float = WALK_STOP) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(user, tower) pairs, distinct, sorted by user then tower (0-based numbers)."""
    home = rng.choice(towers.count, size=users, p=towers.popularity)
    work = _walk(rng, towers, home, WORK_STOP)  # commutes: a few towers away, not anywhere
    visits = _visit_counts(rng, users)
    user = np.repeat(np.arange(users, dtype=np.int64), visits)
    start = rng.random(user.size)
    anywhere = rng.choice(towers.count, size=user.size, p=towers.popularity)
    current = np.where(start < 0.55, home[user],
                       np.where(start < 0.9, work[user], anywhere))
    current = _walk(rng, towers, current, walk_stop)
    key = np.unique(user * towers.count + current)
    return key // towers.count, key % towers.count


def write_cdr(directory: Path, users: int, seed: int = 1,
              towers: int = TOWERS) -> dict[str, Any]:
    """Write ``cdr.dat``, ``graph.tsv`` and ``coordinates.tsv`` into ``directory``; returns
    their paths and the shape of the data (users, towers, set sizes, popularity skew)."""
    rng = np.random.default_rng(seed)
    made = make_towers(rng, towers)
    user, tower = make_users(rng, made, users)
    directory.mkdir(parents=True, exist_ok=True)
    data, graph, coords = (directory / name for name in ("cdr.dat", "graph.tsv",
                                                         "coordinates.tsv"))
    bounds = np.searchsorted(user, np.arange(users + 1))
    labels = (tower + 1).astype(str)
    with data.open("w") as out:
        for u in range(users):
            out.write(" ".join(labels[bounds[u]:bounds[u + 1]]) + "\n")
    graph.write_text("".join(f"{a + 1}\t{b + 1}\n" for a, b in made.edges()))
    coords.write_text("".join(f"{t + 1}\t{x:.1f}\t{y:.1f}\n"
                              for t, (x, y) in enumerate(made.xy)))
    sizes = np.diff(bounds)
    per_tower = np.bincount(tower, minlength=made.count)
    top = np.sort(per_tower)[::-1]
    return {"data": data, "graph": graph, "coordinates": coords, "users": users,
            "towers": made.count, "edges": len(made.edges()),
            "mean_set": float(sizes.mean()), "sd_set": float(sizes.std()),
            "max_set": int(sizes.max()), "min_set": int(sizes.min()),
            "users_per_tower_mean": float(per_tower.mean()),
            "users_per_tower_sd": float(per_tower.std()),
            "top10pct_tower_share": float(top[:max(1, made.count // 10)].sum() / top.sum()),
            "distinct_sets": len({tuple(labels[bounds[u]:bounds[u + 1]])
                                  for u in range(min(users, 200_000))}),
            "distinct_sets_of_first": min(users, 200_000)}


def format_cdr_shape(shape: dict[str, Any]) -> str:
    """One line for beside a figure: the shape against Table II's."""
    return (f"{shape['users']:,} users, {shape['towers']:,} towers ({shape['edges']:,} "
            f"Voronoi edges); towers per user mean {shape['mean_set']:.2f} (paper 11.42), sd "
            f"{shape['sd_set']:.2f} (17.23), max {shape['max_set']} (422), min "
            f"{shape['min_set']} (1); users per tower mean {shape['users_per_tower_mean']:,.0f}, "
            f"sd {shape['users_per_tower_sd']:,.0f} (paper 38,817 / 50,911 at 4.4 M users); "
            f"top 10% of towers hold {shape['top10pct_tower_share']:.0%} of occurrences; "
            f"{shape['distinct_sets']:,} distinct sets among the first "
            f"{shape['distinct_sets_of_first']:,} users")


def main() -> None:  # pragma: no cover - a command-line helper
    import argparse

    parser = argparse.ArgumentParser(description="write CDR-like data (Acs et al. shape)")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(format_cdr_shape(write_cdr(args.directory, args.users, args.seed)))


if __name__ == "__main__":  # pragma: no cover
    main()
