"""The privacy models ``setanon anonymize --model`` knows, and which of them are implemented.

A model is implemented when its module ``setanon_sql.models.<name>`` exists and defines
``MODEL`` (see :mod:`setanon_sql.models.base`); until then, asking for it says which exist.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from setanon_sql.errors import UsageError

if TYPE_CHECKING:
    from setanon_sql.models.base import Model


@dataclass(frozen=True)
class ModelInfo:
    name: str
    title: str
    paper: str

    @property
    def module(self) -> str:
        return f"{__name__}.{self.name}"

    @property
    def implemented(self) -> bool:
        return importlib.util.find_spec(self.module) is not None


MODELS: dict[str, ModelInfo] = {
    info.name: info
    for info in (
        ModelInfo("km", "k^m-anonymity and sigma-k^m-anonymity by generalization",
                  "Acs et al."),
        ModelInfo("rho", "rho-uncertainty by partial suppression", "Jia et al."),
        ModelInfo("prho", "personalized rho-uncertainty (rho^m, (eps, delta)-rho^m)",
                  "Nakagawa et al."),
        ModelInfo("kanon", "k-anonymity of complex data by top-down specialization", "NEC"),
        ModelInfo("swap", "hiding personal tendency by similarity-based swapping",
                  "Gunawan & Mambo"),
    )
}


def describe_models() -> str:
    """One line per model: its name, what it does and whether it is available yet."""
    return "\n".join(
        f"  {m.name:<6} {m.title} ({m.paper}){'' if m.implemented else ' - not yet available'}"
        for m in MODELS.values()
    )


def require_model(name: str) -> Model:
    """The model called ``name`` if it is implemented, else a UsageError listing the models."""
    info = MODELS.get(name)
    if info is None:
        raise UsageError(f"--model {name!r} is unknown; the models are:\n{describe_models()}")
    if not info.implemented:
        available = [m.name for m in MODELS.values() if m.implemented]
        raise UsageError(
            f"--model {name} ({info.title}) is not implemented yet in this version; "
            f"implemented models: {', '.join(available) or 'none yet'}. All models:\n"
            f"{describe_models()}"
        )
    model: Model = importlib.import_module(info.module).MODEL
    return model


def model_params(model: Model, args: list[str]) -> dict[str, Any]:
    """Parse a model's own options (``--k 5 --m 2``) into the params its ``anonymize`` takes.

    The CLI, the demo and scripts share it, so defaults and checks are the model's own.
    """
    command = click.Command(f"anonymize --model {model.name}", params=list(model.options))
    try:
        with command.make_context(command.name, list(args)) as context:
            return dict(context.params)
    except click.UsageError as error:
        raise UsageError(f"{error.format_message()} (options of --model {model.name}: "
                         f"{', '.join(o.opts[0] for o in model.options) or 'none'})") from None
