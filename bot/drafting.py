"""The bot's use of the ticket drafter and the node picture, both found in `diagnostics`.

The drafter is `diagnostics.tickets.Drafter` (rules, or Claude with the rules as its fallback); the picture is
`diagnostics.render` drawing the diagnosis over the platform's graph.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import Diagnosis
from diagnostics.render import graph_for_platform, render_node, render_rack, wants_rack_view
from diagnostics.tickets import Drafter, ModelCall, RepairTicket, drafter_from_env
from diagnostics.topology import NodeGraph

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


def ticket_priority(ticket: RepairTicket) -> str:
    return ticket.priority.value
