"""The states a draft and a ticket move through, as the tracker and the bot's state keep them (their values are what
the database holds)."""

from __future__ import annotations

from enum import StrEnum


class TicketState(StrEnum):
    """open -> verifying (a repair reported; the part soaks) -> closed, or back to open, escalated."""

    OPEN = "open"
    IN_PROGRESS = "in_progress"
    VERIFYING = "verifying"
    CLOSED = "closed"


# a part with a ticket in one of these gets no second one
OPEN_STATES = (TicketState.OPEN, TicketState.IN_PROGRESS, TicketState.VERIFYING)


class DraftState(StrEnum):
    """pending (shown, waiting for a person) -> filed or discarded; `filing` only inside a filing transaction (or
    left by a crash, mended at start-up); `unposted` when the preview never reached Slack."""

    PENDING = "pending"
    FILING = "filing"
    FILED = "filed"
    DISCARDED = "discarded"
    UNPOSTED = "unposted"
