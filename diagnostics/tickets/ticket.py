"""The repair ticket: facts from the diagnosis, plan from the repair catalog, words from the drafter; for review."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from .. import format as fmt
from ..enums import ComponentKind, FaultKind, LinkEnd, PortSource, Priority, ResetScope
from .catalog import Capture, Part, Reset
from .history import PartHistory
from .markdown import ticket_markdown

UNKNOWN = "unknown"
NO_FABRIC_MANAGER = "none: a rack's hosts run no Fabric Manager (NMX-Controller manages the NVLink domain)"
NO_SWITCH_FABRIC_MANAGER = "none: the platform has no NVSwitch, so runs no Fabric Manager"


class Step(BaseModel):
    model_config = ConfigDict(frozen=True)

    order: int
    text: str
    command: str | None = Field(None, description="The command a person runs for this step, if any.")


class Identity(BaseModel):
    """The physical hardware behind the component; `unknown` fields say in `where` how to read them."""

    model_config = ConfigDict(frozen=True)

    slot_label: str = UNKNOWN
    gpu_serial: str = UNKNOWN
    gpu_uuid: str = UNKNOWN
    pci_bus_id: str = UNKNOWN
    node_serial: str = UNKNOWN
    rack: str = UNKNOWN
    driver_version: str = UNKNOWN
    vbios_version: str = UNKNOWN
    fabric_manager_version: str = UNKNOWN
    where: dict[str, str] = Field(default_factory=dict, description="For each unknown field, where to read it.")

    @property
    def on_rack(self) -> bool:
        """Whether the ticket is a rack's or a rack host's, which runs no Fabric Manager; a node's rack location from
        an inventory is not that."""
        return self.fabric_manager_version == NO_FABRIC_MANAGER


class Evidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    window: str | None = Field(default=None, description="The window the analysis judged, its end dated: a ticket "
                                                         "drafted from old readings says when they were taken.")
    rates_per_hour: dict[str, dict[str, float]] = Field(default_factory=dict, description="Per link, per counter.")
    thresholds_crossed: list[str] = Field(default_factory=list)
    degradation_pct: float | None = None
    step_time_ms: float | None = None
    baseline_step_time_ms: float | None = None
    correlation_score: float | None = None
    explains_slowdown: bool | None = None
    localization: str | None = None
    localization_confidence: float | None = None
    notes: list[str] = Field(default_factory=list)


class Cost(BaseModel):
    """GPU-hours lost per day: the share of GPU time a slower step loses, d / (1 + d) for a step d slower, times
    every GPU of the job (every rank waits) times 24; None when the job's GPU count is not known."""

    model_config = ConfigDict(frozen=True)

    gpu_hours_per_day: float | None
    slowdown_fraction: float | None = Field(description="How much slower the step is: 0.88 for +88%.")
    lost_fraction: float | None = Field(default=None, description="The GPU time lost: d / (1 + d), at most all.")
    job_gpus: int | None = Field(description="Every GPU of the job, from its nodes and their platforms; None: "
                                             "unknown.")
    assumptions: list[str] = Field(default_factory=list)
    not_charged: str | None = Field(default=None, description="Why none of the job's slowdown is counted as this "
                                                              "part's: the part it is charged to, or that its links "
                                                              "do not explain it.")


class Choice(BaseModel):
    """The rules' choice beside the model's, and which one the ticket carries, with why."""

    model_config = ConfigDict(frozen=True)

    rules: str
    model: str
    carried: Literal["rules", "model"]
    why: str
    cited: list[str]


class Hypothesis(BaseModel):
    """One explanation of the node's failures, ranked, with its evidence."""

    model_config = ConfigDict(frozen=True)

    rank: int
    kind: ComponentKind
    candidate_id: str | None = None
    component: str
    evidence: list[str] = Field(default_factory=list)
    agrees_with_analysis: bool = False


class RepairTicket(BaseModel):
    """A drafted repair ticket. Every fact comes from the diagnosis; a person approves it before anyone acts."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    component_kind: ComponentKind
    fault: FaultKind = Field(description="The fault kind the repair catalog was read for.")
    component: str
    candidate_id: str
    gpu_index: int | None = None
    gpu_on: str | None = Field(None, description="Where the GPU is when the ticket is filed on another than its host "
                                                 "(a rack's): `compute tray 14, rack-12-c14`; a rack has 18 GPU 0s.")
    peer: str | None = None
    link_id: str | None = None
    link: int | None = None
    link_named: str | None = Field(None, description="What the link row says where the link id is a counter's or a "
                                                     "kind's (`xid`, `nvswitch`, `gpu`): the link the analysis "
                                                     "saw, or that none is known and why.")
    lanes: list[int] = Field(default_factory=list)
    end: LinkEnd | None = Field(None, description="The end of the link whose receiver saw the errors, where both "
                                                  "ends were read.")
    switch: str | None = None
    switch_port: int | None = None
    port_source: PortSource = PortSource.UNKNOWN
    port_find_with: str | None = Field(None, description="The command that finds the port when it is unknown.")
    switched: bool | None = Field(None, description="Whether the board's NVLinks land on NVSwitches: False on a "
                                                    "board of direct or bridged links, which has no switch port to "
                                                    "name; None where the platform is unknown.")
    identity: Identity = Field(default_factory=Identity)
    replacement_part: Part | None = None
    next_part: Part | None = Field(None, description="What to replace when the first part is not at fault.")
    part_note: str | None = Field(None, description="Why no part is named, when none is.")
    warnings: list[str] = Field(default_factory=list, description="An input that contradicts the platform, an "
                                                                  "unknown platform, an assumed port.")
    capture_first: list[Capture] = Field(default_factory=list, description="Before anyone touches the node.")
    isolation_steps: list[Step] = Field(default_factory=list)
    reset: Reset = Field(default_factory=lambda: Reset(scope=ResetScope.NONE))
    repair_steps: list[Step] = Field(default_factory=list)
    priority: Priority = Field(description="The analysis's priority for this part (once a held ticket is released).")
    held: str | None = Field(None, description="Why no one acts on the ticket yet (the input contradicts the "
                                               "platform): its priority field says held, not the analysis's.")
    evidence: Evidence = Field(default_factory=Evidence)
    estimated_cost: Cost
    summary: str
    reasoning: str | None = None
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    disagreement: str | None = Field(None, description="Where the drafter's view differs from the analysis; "
                                                       "the facts stay the analysis's.")
    choice: Choice | None = Field(None, description="Where the model chose another component than the rules: both, "
                                                    "and which one the ticket carries, with why.")
    history: PartHistory | None = Field(
        default=None, description="The GPU's earlier tickets by serial or UUID, where the tracker was asked.")
    escalation: str | None = Field(
        default=None, description="Why a repeat offender's ticket replaces the part carrying the GPU.")
    human_review_required: Literal[True] = True
    drafted_by: str
    fallback_notes: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tracker_priority(self) -> str:
        """What a tracker's priority field carries: 'held' while the ticket is held (no one drains or touches the
        node, so no queue should rank it urgent), else the analysis's priority."""
        return "held" if self.held else self.priority.value

    @property
    def priority_line(self) -> str:
        """The priority as the ticket's words say it: a held ticket's with what it becomes once released."""
        return fmt.priority(self.priority.value, held=bool(self.held))

    def to_markdown(self) -> str:
        return ticket_markdown(self)
