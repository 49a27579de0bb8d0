"""Which responder answers a request: the one its ``model`` field names.

A request naming a model the server does not serve is refused with OpenAI's 404
``model_not_found`` error, which lists the served models, however many there are;
``default_model`` opts in to answering such requests with one responder instead. A
request with no ``model`` field (Atropos' ``/generate`` client removes it) goes to
``default_model``, or to the only responder when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_loop.server._responders import Responder, Script
from hermes_loop.server._turns import Turn
from hermes_loop.server._wire import Rejected

__all__ = ["DEFAULT_NAME", "ModelRouter", "ResponderSpec"]

#: The model name of a responder given without one.
DEFAULT_NAME = "scripted"

ResponderSpec = Responder | Mapping[str, Responder] | Sequence[Turn | str | Mapping[str, Any]]


def _named(spec: ResponderSpec) -> dict[str, Responder]:
    if isinstance(spec, Responder):
        name = getattr(spec, "name", "") or DEFAULT_NAME
        return {name: spec}
    if isinstance(spec, Mapping):
        found: dict[str, Responder] = {}
        for name, responder in spec.items():
            if not isinstance(responder, Responder):
                raise TypeError(
                    f"responder {name!r} is a {type(responder).__name__}, not a Responder"
                )
            found[str(name)] = responder
        if not found:
            raise ValueError("ModelServer needs at least one responder")
        return found
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        return {DEFAULT_NAME: Script(spec, name=DEFAULT_NAME)}
    raise TypeError(
        "ModelServer takes a Responder, a mapping of model name -> Responder, "
        f"or a list of turns; got {type(spec).__name__}"
    )


class ModelRouter:
    """The served models by name, and the choice of one for each request.

    Args:
        spec: a ``Responder`` (served under its ``name``, else ``"scripted"``), a
            mapping of model name -> responder, or a list of turns (a ``Script`` named
            ``"scripted"``).
        default_model: answers requests naming a model not served (``None``: refuse
            them).

    Raises:
        TypeError: for a ``spec`` of the wrong type.
        ValueError: for an empty mapping or a ``default_model`` not served.
    """

    def __init__(self, spec: ResponderSpec, default_model: str | None = None) -> None:
        self.responders = _named(spec)
        if default_model is not None and default_model not in self.responders:
            raise ValueError(
                f"default_model {default_model!r} is not one of {sorted(self.responders)}"
            )
        self.default_model = default_model

    @property
    def models(self) -> list[str]:
        """The model names served."""
        return list(self.responders)

    def pick(self, requested: object) -> tuple[str, Responder]:
        """The model name and responder for a request whose ``model`` field is ``requested``.

        Raises:
            Rejected: 404 ``model_not_found`` for a model not served (without a
                ``default_model``); 400 for a request with no model when several are
                served and none is the default.
        """
        if isinstance(requested, str) and requested in self.responders:
            return requested, self.responders[requested]
        if self.default_model is not None:
            return self.default_model, self.responders[self.default_model]
        served = ", ".join(self.responders)
        if requested is None:
            if len(self.responders) == 1:
                return next(iter(self.responders.items()))
            raise Rejected(
                400,
                f"the request names no model; this server serves several: {served}",
                param="model",
                code="model_not_specified",
            )
        raise Rejected(
            404,
            f"the model {requested!r} is not served here; served models: {served}",
            param="model",
            code="model_not_found",
        )
