"""The one interface both drafters share, so the CLI and the bot never care which one drafted."""

from __future__ import annotations

from typing import Protocol

from ..config.thresholds import Thresholds
from ..model import Diagnosis
from ..topology import Inventory, NodeGraph
from .ticket import RepairTicket


class Drafter(Protocol):
    @property
    def name(self) -> str: ...

    def draft(self, diagnosis: Diagnosis, *, component: str | None = None, graph: NodeGraph | None = None,
              inventory: Inventory | None = None, thresholds: Thresholds | None = None) -> RepairTicket:
        """The ticket for `component` (an id, a name or a link id), or for the isolated component when None, its
        priority by `thresholds`, the policy the diagnosis was judged by (default: the thresholds file in force)."""
        ...
