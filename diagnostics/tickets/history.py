"""A GPU's history as a repeat offender: every ticket filed on it by serial or UUID (on any node, on any of its links
or its PCIe), the repairs reported, the failures that came back after one, and the time between them.

The tracker keeps the tickets; it hands their records here as `PastTicket`s. A GPU on its `replace_at_ticket`th
ticket (verification.toml, the third by default) is a repeat offender: the new ticket says so, names what came
before, and escalates to replacing the part that carries the GPU (its module, card or tray), not another reseat
of the link (`escalation.escalate`). A GPU moved to another node keeps its history; a GPU replaced in the same slot
starts a new one.
"""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise

from pydantic import BaseModel, ConfigDict, Field

from .. import format as fmt


class Hardware(BaseModel):
    """The GPU a history follows: its board serial, else its UUID."""

    model_config = ConfigDict(frozen=True)

    serial: str | None = None
    uuid: str | None = None

    def __str__(self) -> str:
        return f"GPU serial {self.serial}" if self.serial else f"GPU {self.uuid}"


class PastTicket(BaseModel):
    """One earlier ticket on the same GPU, as the tracker holds it."""

    model_config = ConfigDict(frozen=True)

    id: str
    node_id: str
    component: str
    filed_at: datetime
    repaired_at: datetime | None = None
    outcome: str = Field(description="open, verifying, repair held, or repair did not hold")


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _days(seconds: float) -> str:
    return fmt.hours(seconds / 3600) if seconds < 2 * 86400 else f"{seconds / 86400:.0f} days"


class PartHistory(BaseModel):
    """A GPU's earlier tickets (oldest first), as the next ticket on it sees them."""

    model_config = ConfigDict(frozen=True)

    hardware: Hardware
    tickets: list[PastTicket] = Field(default_factory=list)
    replace_at: int = Field(default=3, description="The ticket number at which the GPU is replaced.")

    @property
    def ordinal(self) -> int:
        """This ticket's number on the GPU: 1 for its first."""
        return len(self.tickets) + 1

    @property
    def repeat_offender(self) -> bool:
        return self.ordinal >= self.replace_at

    def recurrences(self, now: datetime | None = None) -> list[tuple[PastTicket, float]]:
        """Each repair the GPU failed again after, with the seconds from the repair to the next failure (the next
        ticket's filing, or `now` for this one)."""
        out = []
        later = [t.filed_at for t in self.tickets[1:]] + ([now] if now is not None else [])
        for ticket, back in zip(self.tickets, later, strict=False):
            if ticket.repaired_at is not None and back is not None:
                out.append((ticket, (back - ticket.repaired_at).total_seconds()))
        return out

    def lines(self, now: datetime | None = None, *, drafting: bool = True) -> list[str]:
        """The history in words: each earlier ticket, then the repairs, the recurrences and the time between.
        `drafting`: as the next ticket on the GPU says it (else as asked of the GPU: its tickets so far)."""
        if drafting:
            head = f"{self.hardware}: this is its {ordinal(self.ordinal)} ticket" + (
                f" (a repeat offender from the {ordinal(self.replace_at)})" if self.repeat_offender else "")
        else:
            count = len(self.tickets)
            head = f"{self.hardware}: {count} ticket{'s' * (count != 1)}" + (
                " (a repeat offender: its next ticket replaces it)" if count + 1 >= self.replace_at and count else "")
        out = [head]
        for t in self.tickets:
            repaired = f", repaired {t.repaired_at:%Y-%m-%d}" if t.repaired_at else ""
            out.append(f"{t.id} ({t.filed_at:%Y-%m-%d}): {t.component} on {t.node_id}{repaired}: {t.outcome}")
        filed = [t.filed_at for t in self.tickets] + ([now] if now is not None else [])
        gaps = [(b - a).total_seconds() for a, b in pairwise(filed)]
        if gaps:
            out.append("time between tickets: " + ", ".join(_days(g) for g in gaps))
        back = self.recurrences(now)
        repairs = sum(t.repaired_at is not None for t in self.tickets)
        if repairs:
            out.append(f"repairs: {repairs}; failed again after {len(back)} of them"
                       + (" (" + ", ".join(f"{_days(s)} after {t.id}'s repair" for t, s in back) + ")" if back
                          else ""))
        return out
