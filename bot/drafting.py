"""The bot's view of the ticket drafter and the node picture, found in `diagnostics`.

The bot only needs `draft(diagnosis, component=...)` returning something with `to_markdown()` and a
`priority`; `diagnostics.tickets` supplies the rules and Claude drafters, `diagnostics.render` the PNG over the
platform's graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from diagnostics import Diagnosis
from diagnostics.render import graph_for_platform, render_node, render_rack, wants_rack_view
from diagnostics.tickets import ModelCall, drafter_from_env
from diagnostics.topology import NodeGraph


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


def graph_for(diagnosis: Diagnosis) -> NodeGraph:
    """The platform's template graph (ports assumed), or a generic one when the platform is absent or unknown."""
    graph, _ = graph_for_platform(diagnosis.platform, node_id=diagnosis.node_id)
    return graph


def render_png(diagnosis: Diagnosis) -> bytes:
    """The node picture with the diagnosis drawn on it; a rack's (or a tray's whose fault is outside it) as the
    rack view."""
    if wants_rack_view(diagnosis):
        return render_rack(diagnosis, fmt="png")
    return render_node(graph_for(diagnosis), diagnosis, fmt="png")


def ticket_priority(ticket: DraftedTicket, diagnosis: Diagnosis) -> str:
    value = getattr(ticket, "priority", None) or diagnosis.ticket_priority
    return str(getattr(value, "value", value))
