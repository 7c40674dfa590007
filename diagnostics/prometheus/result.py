"""What a fleet sweep returns: the offending links, whether the view is complete, and what it cost."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from ..enums import LinkType, Severity
from ..model import Diagnosis


class Offender(BaseModel):
    """One link (or GPU, for a missing-links finding; or node, for missing GPUs) that broke one rule at the sweep's
    instant."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    link_type: LinkType
    gpu: int | None = None
    nvswitch: str | None = None
    link: int | None = None
    rule: str
    severity: Severity
    rate_per_hour: float | None = None
    above: float | None = None
    detail: str = ""
    xid: int | None = None  # the Xid code, for an Xid rule
    unit: str = "/h"  # of rate_per_hour and above: a rate, or a gauge rule's unit (lanes, generations, ratio)

    @property
    def key(self) -> tuple[str, str, int | None, str | None, int | None, str]:
        return self.node_id, self.link_type.value, self.gpu, self.nvswitch, self.link, self.rule

    @property
    def component(self) -> str:
        """The link as people say it: `GPU 2 NVLink 5`, `GPU 4 PCIe`, `NVSwitch 1 port 17`, `GPU 3 Xid 79`."""
        if self.xid is not None:
            return f"GPU {self.gpu} Xid {self.xid}"
        if self.gpu is None and self.nvswitch is None:
            return "GPUs"  # the node's GPU count
        if self.link_type is LinkType.PCIE:
            return f"GPU {self.gpu} PCIe"
        if self.link_type is LinkType.NVSWITCH:
            return f"NVSwitch {self.nvswitch} port {self.link}"
        return f"GPU {self.gpu} NVLink {self.link}" if self.link is not None else f"GPU {self.gpu} NVLinks"


class Timings(BaseModel):
    sweep_s: float = 0.0  # the generated queries, evaluated on the server
    fetch_s: float = 0.0  # reading the offending nodes' series back
    analyze_s: float = 0.0  # the local analysis of those nodes


class SweepResult(BaseModel):
    """A fleet sweep. `complete` is False whenever any part could not be read: the list is then a lower bound."""

    at: datetime
    window_hours: float
    offenders: list[Offender] = Field(default_factory=list)
    diagnoses: dict[str, Diagnosis] = Field(default_factory=dict)
    confirmed: dict[str, list[Offender]] = Field(default_factory=dict)  # node -> local analysis of its series
    complete: bool = True
    incomplete_reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    not_pushed_down: list[str] = Field(default_factory=list)  # rules only the local analysis evaluates
    queries: int = 0
    requests: int = 0
    retries: int = 0
    bytes_received: int = 0  # on the wire
    bytes_decoded: int = 0  # JSON after decompression
    timings: Timings = Field(default_factory=Timings)

    @property
    def nodes(self) -> list[str]:
        return sorted({o.node_id for o in self.offenders})

    def headline(self) -> str:
        """One line for a person: never 'healthy' unless every query answered in full."""
        if not self.complete:
            found = f"{len(self.offenders)} offending link(s) found so far" if self.offenders else "nothing found"
            return (f"fleet view INCOMPLETE ({found}; this is not an all-clear): "
                    + "; ".join(self.incomplete_reasons))
        if not self.offenders:
            return f"all links within thresholds over the last {self.window_hours:g} h"
        return f"{len(self.offenders)} offending link(s) on {len(self.nodes)} node(s)"
