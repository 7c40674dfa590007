"""The snapshot input: one node's link counters over one window and its job's step time against the baseline, as
a snapshot file states them; every field checked where it is read (`values`, `data/limits.toml`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, model_validator

from . import values
from .config.platforms import gpu_count
from .enums import LinkState, LinkType
from .errors import ConfigError


def _held(check: Callable[[float], float], value: float) -> float:
    """A value `values` accepts; its refusal as the ValueError pydantic reports with the field and the value."""
    try:
        return check(value)
    except values.Refused as why:
        raise ValueError(str(why)) from None


def _no_comma(name: str) -> str:
    if "," in name:  # a job's step samples list its nodes separated by commas; no host name holds one (RFC 1123)
        raise ValueError(f"a node name holds no comma: {name[:60]!r}")
    return name


NonNegInt = Annotated[StrictInt, Field(ge=0)]
# A count accumulated over the window: a whole number a counter holds (0 to 2^64 - 1, `data/limits.toml`).
Count = Annotated[StrictInt, Field(ge=0), AfterValidator(lambda v: int(_held(lambda x: values.counter(str(x), "table"),
                                                                          v)))]
PositiveNumber = Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False)]
# A step time in milliseconds: finite, above zero and at most the limits' bound (11.6 days).
StepTime = Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False),
                     AfterValidator(lambda v: _held(lambda x: values.gauge(x, "step_time_ms"), v))]
# The window the counts were accumulated over: one minute to a year (`data/limits.toml` [window]).
WindowHours = Annotated[StrictFloat | StrictInt, Field(gt=0, allow_inf_nan=False),
                        AfterValidator(lambda v: _held(values.window_hours, v))]

_LINK_ID = re.compile(r"^(?P<kind>nvlink|pcie)[-_ ]?(?P<num>\d+)?$", re.IGNORECASE)

# GPUs per node when a snapshot names no platform.
DEFAULT_GPU_COUNT = 8


class LinkReading(BaseModel):
    """One link's counters as a snapshot states them, accumulated over the snapshot's window."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_src: NonNegInt
    gpu_dst: NonNegInt | None = None
    link_id: Annotated[str, Field(min_length=1)]
    crc_errors: Count
    replay_count: Count
    recovery_count: Count = 0
    link_type: LinkType | None = None
    link_state: LinkState = LinkState.UP

    @model_validator(mode="after")
    def _check(self) -> Self:
        kind = self.kind
        if kind is LinkType.NVSWITCH:
            raise ValueError("link_type must be 'nvlink' or 'pcie' in a snapshot")
        if self.link_state not in (LinkState.UP, LinkState.DOWN, LinkState.DEGRADED):
            raise ValueError(f"link_state must be up, down or degraded, not {self.link_state.value!r}")
        if kind is LinkType.NVLINK and self.gpu_dst is None:
            raise ValueError("gpu_dst is required for an NVLink (only a PCIe link may leave it null)")
        if self.gpu_dst is not None and self.gpu_dst == self.gpu_src:
            raise ValueError(f"gpu_src and gpu_dst are both {self.gpu_src}: a link joins two different GPUs")
        match = _LINK_ID.match(self.link_id.strip())
        if match and match["num"] is not None:
            try:
                values.index(match["num"], "link")
            except values.Refused as why:
                raise ValueError(f"link_id {self.link_id[:40]!r}: {why}") from None
        return self

    @property
    def kind(self) -> LinkType:
        """The link type, stated or read from the `link_id` prefix."""
        if self.link_type is not None:
            return self.link_type
        match = _LINK_ID.match(self.link_id.strip())
        if not match:
            raise ValueError(
                f"cannot tell the link type from link_id {self.link_id!r}: "
                "use an 'nvlink-N' or 'pcie' id, or set link_type"
            )
        return LinkType(match["kind"].lower())

    @property
    def link_number(self) -> int | None:
        match = _LINK_ID.match(self.link_id.strip())
        return int(match["num"]) if match and match["num"] is not None else None


class Snapshot(BaseModel):
    """One node's interconnect counters over one window, with the job's step time against its baseline."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_id: Annotated[str, Field(min_length=1), AfterValidator(_no_comma)]
    fabric_errors: Annotated[list[LinkReading], Field(min_length=1)]
    step_time_ms: StepTime
    baseline_step_time_ms: StepTime
    window_hours: WindowHours = 1.0
    platform: str | None = None

    @model_validator(mode="after")
    def _gpus_in_node(self) -> Self:
        try:
            count = gpu_count(self.platform) if self.platform else DEFAULT_GPU_COUNT
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        for i, link in enumerate(self.fabric_errors):
            for name in ("gpu_src", "gpu_dst"):
                gpu = getattr(link, name)
                if gpu is not None and gpu >= count:
                    where = f"platform {self.platform!r}" if self.platform else "a node with no platform"
                    raise ValueError(
                        f"fabric_errors[{i}].{name} = {gpu} is outside the node: "
                        f"{where} has GPUs 0-{count - 1}"
                    )
        return self
