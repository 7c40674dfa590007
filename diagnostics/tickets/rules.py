"""The deterministic drafter: the offline default, complete on its own."""

from __future__ import annotations

from ..config.thresholds import Thresholds
from ..model import Diagnosis
from ..topology import Inventory, NodeGraph
from .build import assemble, select
from .ticket import RepairTicket


class RulesDrafter:
    """Drafts from the diagnosis and the catalogs alone; the same input always gives the same ticket."""

    name = "rules"

    def __init__(self, *, notes: tuple[str, ...] = ()) -> None:
        self.notes = notes

    def draft(self, diagnosis: Diagnosis, *, component: str | None = None, graph: NodeGraph | None = None,
              inventory: Inventory | None = None, thresholds: Thresholds | None = None) -> RepairTicket:
        chosen, candidates = select(diagnosis, component, graph)
        return assemble(diagnosis, chosen, candidates, inventory=inventory, drafted_by=self.name, notes=self.notes,
                        thresholds=thresholds)
