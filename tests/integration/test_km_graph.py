"""--model km --graph: connected regions merged along an adjacency graph, checked by the
brute-force oracle (connected parts, labels, k^m or the sampled σ share, errors)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError, UsageError
from setanon_sql.models import require_model
from tests.conftest import write
from tests.oracle import km_oracle


def grid_case(tmp_path: Path, seed: int, side: int = 4) -> tuple[Path, Path, Path]:
    """Items 1..side² on a grid (edges between neighbours, coordinates the cell), records drawn
    with a preference for nearby items; every item occurs."""
    rng = random.Random(seed)
    n = side * side
    cell = {str(i + 1): (i % side, i // side) for i in range(n)}
    edges = [f"{i + 1}\t{i + 2}" for i in range(n) if (i + 1) % side]
    edges += [f"{i + 1}\t{i + 1 + side}" for i in range(n - side)]
    rng.shuffle(edges)
    lines = [str(i) for i in range(1, n + 1)]
    for _ in range(rng.randint(18, 30)):
        x, y = rng.randrange(side), rng.randrange(side)
        near = [k for k, (a, b) in cell.items() if abs(a - x) + abs(b - y) <= 2]
        lines.append(" ".join(sorted(set(rng.sample(near, rng.randint(1, 4))), key=int)))
    rng.shuffle(lines)
    data = write(tmp_path / f"g{seed}.dat", "\n".join(lines) + "\n")
    graph = write(tmp_path / f"e{seed}.txt", "\n".join(edges) + "\n")
    coords = write(tmp_path / f"c{seed}.txt",
                   "".join(f"{k}\t{a}\t{b * 1.5}\n" for k, (a, b) in cell.items()))
    return data, graph, coords


def run_graph(db: Backend, data: Path, tmp_path: Path, **params) -> tuple:
    dataset = api.load_transactions(db, data, f"d{data.stem}")
    run_id = api.anonymize(db, dataset, require_model("km"), params, seed=3)
    run = api.get_run(db, dataset, run_id)
    out, mapping = tmp_path / f"o{run_id}.dat", tmp_path / f"m{run_id}.txt"
    api.export_dataset(db, dataset, out, run=run, mapping=mapping)
    return dataset, run, out, km_oracle.read_mapping(mapping)


@pytest.mark.parametrize(("seed", "error"), [(1, "ncp"), (2, "geo"), (3, "share")])
def test_exact_km_on_a_graph_passes_the_oracle(db: Backend, tmp_path: Path, seed: int,
                                               error: str) -> None:
    data, graph, coords = grid_case(tmp_path, seed)
    k, m = [4, 3], 1 + seed % 2
    dataset, run, out, mapping = run_graph(db, data, tmp_path, k="4,3"[: 2 * m - 1], m=m,
                                           graph=str(graph), coordinates=str(coords),
                                           error=error)
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    order = [str(i) for i in range(1, 17)]
    assert km_oracle.km_violations(published, k, m) == []
    assert km_oracle.region_problems(mapping, km_oracle.read_graph(graph), order) == []
    assert km_oracle.generalization_problems(original, published, mapping) == []
    xy = {line.split("\t")[0]: (float(line.split("\t")[1]), float(line.split("\t")[2]))
          for line in coords.read_text().splitlines()}
    ncp, geo = km_oracle.region_errors(original, mapping, xy)
    assert run.figures["ncp"] == pytest.approx(ncp)
    assert run.figures["geo_error"] == pytest.approx(geo)
    assert run.figures["published_labels"] == len(set(mapping.values())) < 16
    assert api.verify(db, dataset, run).ok


def test_sampled_km_on_a_graph_meets_sigma(db: Backend, tmp_path: Path) -> None:
    data, graph, _ = grid_case(tmp_path, 7)
    k, sigma = 3, 0.85
    _, _, out, mapping = run_graph(db, data, tmp_path, k=str(k), m=2, sigma=str(sigma),
                                   graph=str(graph), trials=2)
    original, published = km_oracle.read_fimi(data), km_oracle.read_fimi(out)
    for ell in (1, 2):
        assert km_oracle.violating_share(original, published, mapping, k, ell) <= 1 - sigma
    order = [str(i) for i in range(1, 17)]
    assert km_oracle.region_problems(mapping, km_oracle.read_graph(graph), order) == []


def _edit(path: Path, drop: str | None = None, add: str = "") -> Path:
    lines = [x for x in path.read_text().splitlines() if drop is None or drop not in x.split()]
    return write(path.with_suffix(".edited"), "\n".join(lines) + "\n" + add)


@pytest.mark.parametrize(("change", "message"), [
    ({"graph": "missing"}, r"misses 1 item\(s\) of the data, first: '16'"),
    ({"graph": "badline"}, r"line\(s\) are not 'item<TAB>item', first on line\(s\) 25"),
    ({"graph": "split"}, r"no merge is allowed; add edges between the components"),
    ({"coordinates": "bad"}, r"are not 'item<TAB>x<TAB>y'"),
    ({"error": "geo", "coordinates": None}, r"--error geo needs --graph FILE and --coordinates"),
    ({"hierarchy": "h.txt"}, r"--graph and --hierarchy both constrain"),
])
def test_bad_graph_input_is_refused_and_nothing_is_published(db: Backend, tmp_path: Path,
                                                             change: dict,
                                                             message: str) -> None:
    data, graph, coords = grid_case(tmp_path, 5)
    params = {"k": "5", "m": 2, "graph": str(graph), "coordinates": str(coords)}
    params.update(change)
    if change.get("graph") == "missing":
        params["graph"] = str(_edit(graph, drop="16"))
    elif change.get("graph") == "badline":
        params["graph"] = str(_edit(graph, add="1\t2\t3\n"))
    elif change.get("graph") == "split":  # items 1..8 and 9..16 unconnected, k needs more
        kept = [x for x in graph.read_text().splitlines()
                if (int(x.split("\t")[0]) <= 8) == (int(x.split("\t")[1]) <= 8)]
        params["graph"] = str(write(tmp_path / "split.txt", "\n".join(kept) + "\n"))
        params["k"] = "40"
    if change.get("coordinates") == "bad":
        params["coordinates"] = str(write(tmp_path / "bad.txt", "1\t0\tnorth\n"))
    dataset = api.load_transactions(db, data, "bad")
    error = UsageError if "hierarchy" in change or "error" in change else InputError
    with pytest.raises(error, match=message):
        api.anonymize(db, dataset, require_model("km"), params, seed=1)
    assert [r for r in db.table_names("r") if not r.startswith("runs")] == []
    assert db.table_names("tmp_") == []
