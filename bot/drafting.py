"""The bot's view of the ticket drafter and the node picture, and how it finds them in `diagnostics`.

The bot only needs `draft(diagnosis, component=...)` returning something with `to_markdown()` and a
`priority`; `diagnostics.tickets` supplies the rules and Claude drafters, `diagnostics.render` the PNG.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from diagnostics import Diagnosis


class DraftedTicket(Protocol):
    def to_markdown(self) -> str: ...


class Drafter(Protocol):
    def draft(self, diagnosis: Diagnosis, *, component: str | None = None, graph: Any = None,
              inventory: Any = None) -> DraftedTicket: ...


Renderer = Callable[[Diagnosis], bytes]


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def default_drafter(on_model_call: Callable[[Any], None] | None = None) -> Drafter | None:
    """Claude when configured, rules otherwise (`diagnostics.tickets.drafter_from_env`); None if not installed."""
    tickets = _optional("diagnostics.tickets")
    if tickets is None:
        return None
    drafter: Drafter = tickets.drafter_from_env(on_model_call=on_model_call)
    return drafter


def default_renderer() -> Renderer | None:
    """The node picture as PNG from `diagnostics.render`; None if not installed."""
    render = _optional("diagnostics.render")
    topology = _optional("diagnostics.topology")
    if render is None or topology is None:
        return None

    def png(diagnosis: Diagnosis) -> bytes:
        graph = topology.platform_graph(diagnosis.platform) if diagnosis.platform else None
        out: bytes = render.render_node(graph, diagnosis, fmt="png")
        return out

    return png


def ticket_priority(ticket: DraftedTicket, diagnosis: Diagnosis) -> str:
    value = getattr(ticket, "priority", None) or diagnosis.ticket_priority
    return str(getattr(value, "value", value))
