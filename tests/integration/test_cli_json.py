"""--json: one JSON document on stdout for scripts, the same facts as the text output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.cli import main
from tests.conftest import DbUrl


def run_json(*args: str) -> tuple[int, Any]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else None


def test_a_script_reads_every_result_as_json(db_url: DbUrl, tmp_path: Path) -> None:
    baskets = str(api.demo_file("baskets"))
    assert CliRunner().invoke(main, ["load", "transactions", baskets, "--name", "b",
                                     *db_url.args]).exit_code == 0
    code, listed = run_json("datasets", "--json", *db_url.args)
    assert code == 0 and [(d["name"], d["kind"]) for d in listed] == [("b", "transactions")]
    assert listed[0]["records"] > 0

    code, made = run_json("anonymize", "b", "--model", "rho", "--rho", "0.7",
                          "--sensitive-fraction", "0.2", "--m", "2", "--seed", "4", "--json",
                          *db_url.args)
    assert code == 0
    assert (made["model"], made["seed"], made["verification"]) == ("rho", 4, "passed")
    assert made["options"] == ("--heuristic mine --m 2 --rho 0.7 "
                               "--sensitive-fraction 0.2")
    assert made["covered"]
    run_id = made["run_id"]

    code, checked = run_json("verify", "b", "--run", str(run_id), "--json", *db_url.args)
    assert code == 0 and checked["run_id"] == run_id and checked["verification"] == "passed"
    assert isinstance(checked["details"], dict)

    code, exported = run_json("export", "b", "--run", str(run_id), "-o",
                              str(tmp_path / "o.dat"), "--json", *db_url.args)
    assert code == 0 and exported["raw"] is False and exported["run"]["run_id"] == run_id
    assert Path(exported["file"]).is_file()
    code, raw = run_json("export", "b", "-o", str(tmp_path / "raw.dat"), "--json",
                         *db_url.args)
    assert code == 0 and raw["raw"] is True and raw["run"] is None

    code, listing = run_json("runs", "--json", *db_url.args)
    assert code == 0 and listing["cleaned_up"] is None
    (row,) = listing["runs"]
    assert (row["run_id"], row["status"], row["verification"]) == (run_id, "finished", "passed")

    code, risk = run_json("risk", "b", "--m", "2", "--epsilon", "0.1", "--delta", "0.1",
                          "--json", *db_url.args)
    assert code == 0 and [s["size"] for s in risk["sizes"]] == [1, 2]
    assert all(0 <= s["unique_share"] <= 1 for s in risk["sizes"])


def test_json_of_a_failed_command_is_no_document(db_url: DbUrl) -> None:
    result = CliRunner().invoke(main, ["verify", "nope", "--json", *db_url.args])
    assert result.exit_code == 2 and result.stdout == ""
    assert "does not exist" in result.stderr or "no dataset named 'nope'" in result.stderr
