"""The bot's use of the ticket drafter and the node picture, both found in `diagnostics`.

The drafter is `diagnostics.tickets.Drafter` (rules, or Claude with the rules as its fallback); the picture is
`diagnostics.render` drawing the diagnosis over the graph the service judged the node on.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics.render import Drawable
from diagnostics.tickets import Drafter, ModelCall, RepairTicket, drafter_from_env

Renderer = Callable[[Drawable], bytes]


def default_drafter(on_model_call: Callable[[ModelCall], None] | None = None) -> Drafter:
    """Claude when ANTHROPIC_API_KEY is set, the rules drafter otherwise."""
    drafter: Drafter = drafter_from_env(on_model_call=on_model_call)
    return drafter


def render_png(drawable: Drawable) -> bytes:
    """The picture `fabricbot render` draws for the same diagnosis and graph: the node's fabric on the graph the
    service judged it on, or the rack view for a rack (or a tray whose suspect is its rack's)."""
    return drawable.picture("png")[0]


def ticket_priority(ticket: RepairTicket) -> str:
    """The priority a draft and its filed ticket carry: 'held' for a ticket held until its input is mended."""
    return ticket.tracker_priority
