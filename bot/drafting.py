"""The bot's view of the ticket drafter and the node picture, found in `diagnostics`.

The bot only needs `draft(diagnosis, component=...)` returning something with `to_markdown()` and a
`priority`; `diagnostics.tickets` supplies the rules and Claude drafters, `diagnostics.render` the PNG.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from diagnostics import Diagnosis
from diagnostics.errors import FabricbotError
from diagnostics.tickets import ModelCall, drafter_from_env
from diagnostics.topology import NodeGraph, platform_graph


class DraftedTicket(Protocol):
    def to_markdown(self) -> str: ...


class Drafter(Protocol):
    def draft(self, diagnosis: Diagnosis, *, component: str | None = None, graph: Any = None,
              inventory: Any = None) -> DraftedTicket: ...


Renderer = Callable[[Diagnosis], bytes]


def default_drafter(on_model_call: Callable[[ModelCall], None] | None = None) -> Drafter:
    """Claude when ANTHROPIC_API_KEY is set, the rules drafter otherwise."""
    drafter: Drafter = drafter_from_env(on_model_call=on_model_call)
    return drafter


def graph_for(diagnosis: Diagnosis) -> NodeGraph | None:
    """The platform's template graph (ports marked assumed), when the diagnosis names a platform."""
    if not diagnosis.platform:
        return None
    try:
        return platform_graph(diagnosis.platform)
    except FabricbotError:
        return None


def default_renderer() -> Renderer | None:
    """The node picture as PNG from `diagnostics.render`; None where this install has no renderer."""
    try:
        render = importlib.import_module("diagnostics.render")
    except ImportError:
        return None

    def png(diagnosis: Diagnosis) -> bytes:
        out: bytes = render.render_node(graph_for(diagnosis), diagnosis, fmt="png")
        return out

    return png


def ticket_priority(ticket: DraftedTicket, diagnosis: Diagnosis) -> str:
    value = getattr(ticket, "priority", None) or diagnosis.ticket_priority
    return str(getattr(value, "value", value))
