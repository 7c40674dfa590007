"""One question to the diagnosis service: what is asked about (a node, a job, a rack or the fleet) and how."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from .. import format as fmt
from ..config.thresholds import Thresholds, load_thresholds
from ..errors import InputError

DEFAULT_WINDOW = timedelta(hours=1)
CORRELATION_SPAN = timedelta(days=1)  # how much step-time history a job's correlation wants


class Asked(StrEnum):
    NODE = "node"
    JOB = "job"
    RACK = "rack"
    FLEET = "fleet"


@dataclass(frozen=True, kw_only=True)
class Request:
    """What every door asks. `node` with `job` is the node judged against that job; `rack` stands alone; none of the
    three is the fleet. `window` None is the source's own (a snapshot's), else an hour. `end` None is the source's
    newest reading. `platform` names the asked node's platform over what the source says (`--platform`).
    `end_option` is how the door lets the person give readings with no time their time (`--end TIME`), named in
    the warning on them; None where the door has no option (a paste answered in a chat thread)."""

    node: str | None = None
    job: str | None = None
    rack: str | None = None
    window: timedelta | None = None
    end: datetime | None = None
    thresholds: Thresholds = field(default_factory=load_thresholds)
    platform: str | None = None
    history: timedelta = CORRELATION_SPAN
    end_option: str | None = None

    def __post_init__(self) -> None:
        if self.rack is not None and (self.node is not None or self.job is not None):
            raise InputError("ask about a rack, or a node and its job, not both", field="--rack", value=self.rack)
        if self.window is not None and self.window <= timedelta(0):
            raise InputError("the window must be longer than zero", field="--window",
                             value=fmt.hours(self.window.total_seconds() / 3600))

    @property
    def asked(self) -> Asked:
        if self.rack is not None:
            return Asked.RACK
        if self.node is not None:
            return Asked.NODE
        return Asked.JOB if self.job is not None else Asked.FLEET

    @property
    def length(self) -> timedelta:
        """The window's length: the one asked for, else an hour."""
        return self.window or DEFAULT_WINDOW
