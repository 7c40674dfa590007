"""What a repair plan is, as every door shows it: the facts it is filled from, what to capture, its steps and what
each stops, the reset the platform allows (typed and frozen: a plan is built once, in `plan.repair_plan`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config.parts import Part
from ..enums import FaultKind, ResetScope
from ..model import ComponentFacts


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class PlanFacts(ComponentFacts):
    """What the localization knows about the faulty component, and its node; None where it does not know."""

    node_id: str | None = None
    link_down: bool = Field(default=False, description="The link is down, not counting errors.")
    unit: str | None = Field(default=None, description="The component as people say it (a rack's unit).")
    bus: str | None = Field(default=None, description="A GPU's PCI address, where the input names it by that alone "
                                                      "(a kernel log): nvidia-smi's -i takes it as it takes an index.")
    stated_pair: bool = Field(default=False, description="The input itself names the link's GPU pair (the product's "
                                                         "snapshot form, the seed examples): its canonical wording.")
    rack_hosts: list[str] = Field(default_factory=list, description="In a rack: every compute tray's host, in slot "
                                                                    "order (what a step on a shared unit stops).")
    jobs: list[str] = Field(default_factory=list, description="The jobs running there.")
    nmx: str | None = Field(default=None, description="In a rack: where NMX-Controller runs, as the inventory says.")
    rack_id: str | None = Field(default=None, description="In a rack: its name (else node_id names it).")
    boards: list[str] = Field(default_factory=list, description="With no platform: those the node's topology fits "
                                                                "alike, one of which it is.")


class Capture(_Model):
    command: str
    why: str


Stops = Literal["gpu", "node", "rack"]


class PlanStep(_Model):
    text: str
    command: str | None = None
    stops: Stops | None = Field(
        default=None, description="What the step takes out of service: one GPU, every GPU of the node, or every GPU "
                                  "of the rack (a switch tray or cable cartridge touched).")
    drains: Literal["trays", "rack"] | None = Field(
        default=None, description="An isolation step's reach: the trays on the failing links, or the whole rack.")


class Reset(_Model):
    scope: ResetScope
    gpus: list[int] = Field(default_factory=list, description="The GPUs one reset command must name together.")
    command: str | None = None
    stops: Stops | None = None


class RepeatOffender(_Model):
    """A GPU on its `replace_at_ticket`th ticket: its plan replaces the part that carries it (None: the platform's
    catalog names none) before anything else, and says why."""

    why: str
    carrier: Part | None = None


class RepairPlan(_Model):
    """Everything a ticket and the Diagnosis' action say about repairing one fault, in the order a person acts."""

    platform: str | None
    fault: FaultKind
    applies: bool = Field(description="False when the platform cannot have this fault: the input contradicts it.")
    part: Part | None = None
    next_part: Part | None = None
    part_note: str | None = Field(None, description="Why no part is named, when none is.")
    captures: list[Capture]
    isolation: list[PlanStep]
    reset: Reset
    repair: list[PlanStep]
    action: str
    warnings: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    escalation: str | None = Field(default=None, description="A repeat offender's plan: why it replaces the part "
                                                             "carrying the GPU, with no reset, reseat or swap test "
                                                             "first.")

    @property
    def held(self) -> str | None:
        """Why a ticket on this plan is held (no one acts on the part until the input and the platform agree); None
        while the plan applies. The one reason the part's ticket and every door saying its priority give."""
        return None if self.applies else (self.part_note or "the input contradicts the platform")

    @property
    def stops_node(self) -> bool:
        """Whether anything in the plan stops every GPU of the node (a reboot, a power-off, a full diagnostic)."""
        return self.reset.stops in ("node", "rack") or any(s.stops in ("node", "rack") for s in self.repair)

    @property
    def stops_rack(self) -> bool:
        """Whether a step touches a unit every GPU of the rack has links through (a switch tray, a cartridge)."""
        return self.reset.stops == "rack" or any(s.stops == "rack" for s in self.repair)

    def commands(self) -> list[str]:
        """Every command of the plan in the order a person runs them: captures, isolation, repairs."""
        steps = [*self.isolation, *self.repair]
        return [c.command for c in self.captures] + [s.command for s in steps if s.command]
