"""How ``setanon runs`` shows a run's parameters: as the options that would give them."""

from __future__ import annotations

from setanon_sql.cli import _cli_params


def test_parameters_show_as_options_and_unset_ones_are_left_out() -> None:
    shown = _cli_params({"k": 5, "qi": [], "categorical": (), "numeric": ["age", "zip"],
                         "metrics": False, "in_place": True, "column": None, "beta": 0.0})
    assert shown == "--beta 0.0 --in-place --k 5 --no-metrics --numeric age,zip"
