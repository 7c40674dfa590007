"""The thresholds file: detection rules and the priority policy, with user overrides.

Defaults ship in `data/thresholds.toml`; a user file overrides rules by name, `--set RULE=VALUE` changes one
value for a run, and a profile applies a named set of overrides.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..enums import CodeSeverity, Priority, Severity
from ..errors import ConfigError
from ..metrics import METRICS, Kind, Unit, unit_of
from .datafiles import DATA_DIR, read_toml

DEFAULT_FILE = DATA_DIR / "thresholds.toml"

# Rules the analysis applies beyond the file's rows (and the push-down names alike), by name.
LINK_DOWN_RULE = "link_down"  # a link reports a down or inactive state
MISSING_RULE = "link_missing"  # a link's series stopped inside the window (a dead link's series disappears)
BELOW_EXPECTED_RULE = "links_below_expected"  # a GPU reports fewer links than its platform has
GPU_MISSING_RULE = "gpus_missing"  # a node reports fewer GPUs than its platform has
SOFTWARE_RULE = "fabric_software"  # Fabric Manager or the driver: the fabric state, all links inactive at once
WRONG_VALUES_RULE = "nccl_wrong_values"  # an nccl-tests run whose check found wrong values: data corrupted
BUSBW_RULE = "busbw_degraded"  # a one-host all_reduce below its platform's bus bandwidth (busbw_degraded_fraction)
OFF_BUS_RULE = "xid_off_bus"  # the thresholds file's Xid 79 row: the GPU fell off the bus
GPU_LOST_RULES = (OFF_BUS_RULE, GPU_MISSING_RULE)  # a GPU gone: every job on it has stopped
SXID_FATAL_RULE = "sxid_fatal"  # the thresholds file's fatal-SXid row: a switch link stopped
XID_NVLINK_RULE = "xid_nvlink"  # the thresholds file's NVLink-Xid row (74, 144-150)
ENV_FILE = "FABRICBOT_THRESHOLDS"


class Rule(BaseModel):
    """Fires when a link's `counter` (a rate per hour unless `unit` says otherwise) is strictly above `above`.

    `persist = [k, m]` makes a rate rule fire only when k of the last m windows exceed; `codes` lists the
    Xid/SXid numbers an event rule counts, `fatal` whether it counts only the fatal (or the non-fatal) ones,
    `decoded` the catalog severities an Xid rule (after its subcode decode) or an SXid rule (by its code) counts:
    IGNORE codes and subcodes are `info`.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    counter: str
    link_type: str = "any"
    above: float = Field(ge=0)
    severity: Severity
    doc: str = ""
    unit: Unit = Unit.PER_HOUR
    persist: tuple[int, int] | None = None
    codes: list[int] = Field(default_factory=list)
    fatal: bool | None = None  # an event rule counting only fatal (true) or only non-fatal (false) events
    # an Xid rule counting only events the Xid catalog decodes (by subcode, where it decodes) to these severities
    decoded: list[CodeSeverity] | None = None
    # in force only under these profiles (a rule of DCGM's health watch that the default does not apply)
    profiles: list[str] | None = None
    # judged only where the link's GPU is not known to be Blackwell or newer (DCGM reads the field before
    # Blackwell, and falls back to that when it cannot tell the architecture)
    before_nvlink5: bool = False
    # PCIe replays per minute per lane, by link generation (Gen1 first): the link's limit per hour is
    # 60 x ceil(rate x width) from its own generation and width (DCGM's GetExpectedPcieReplayRate); a link whose
    # generation or width was not read is not judged (DCGM returns no verdict without them)
    per_lane_by_gen: list[float] | None = None
    inclusive: bool = False  # fires at `above` too (DCGM's `>=`)

    @model_validator(mode="before")
    @classmethod
    def _metric_unit(cls, data: Any) -> Any:
        """A rule on a metric of the metric table judges it in the table's unit: given or left out, never another;
        a counter's also as its lifetime total (`since reset`, DCGM's rules on totals)."""
        if not isinstance(data, dict) or data.get("counter") not in METRICS:
            return data
        unit = unit_of(str(data["counter"]))
        given = data.get("unit")
        if given is None:
            return {**data, "unit": unit}
        total = given == Unit.TOTAL.value and METRICS[str(data["counter"])].kind in (Kind.COUNTER, Kind.SUM)
        if given != unit.value and not total:
            raise ValueError(f"rule {data.get('name')!r}: {data['counter']} is judged in {unit.value!r}, not {given!r}")
        return data

    def applies_to(self, link_type: str) -> bool:
        return self.link_type in ("any", link_type)

    def limit(self, gen: float | None = None, width: float | None = None) -> float | None:
        """The limit for one link: `above`, or the per-lane figure scaled to the link's generation and width."""
        if self.per_lane_by_gen is None:
            return self.above
        if gen is None or width is None or gen < 1 or width < 1:
            return None
        per_lane = self.per_lane_by_gen[min(int(gen), len(self.per_lane_by_gen)) - 1]  # newer: the last known
        return 60.0 * math.ceil(per_lane * int(width))

    def crosses(self, value: float, limit: float) -> bool:
        return value >= limit if self.inclusive else value > limit


def _floats(value: Any) -> list[float]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"per_lane_by_gen must be a list of numbers, got {value!r}")
    return [float(v) for v in value]


# What a profile may change in a rule, and how each value is read.
def threshold(value: Any) -> float:
    """A rule's `above` as an override gives it: a number of 0 or more, infinity turning the rule off (a NaN would
    silently judge no link healthy or not, a negative every link failing)."""
    above = float(value)
    if math.isnan(above) or above < 0:
        raise ValueError(f"a threshold is a number of 0 or more, not {value!r}")
    return above


_OVERRIDABLE: dict[str, Any] = {"above": threshold, "severity": lambda v: Severity(str(v)),
                                "per_lane_by_gen": _floats}


class PriorityRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    level: Priority
    when: Literal["failing", "down", "gpu_lost", "warning", "none"]
    min_degradation_pct: float | None = None


class Thresholds(BaseModel):
    model_config = ConfigDict(frozen=True)

    rules: list[Rule]
    priority: list[PriorityRow]
    dormant: list[Rule] = Field(default_factory=list, description="Rules of profiles not chosen.")
    profiles: dict[str, dict[str, float | dict[str, Any]]] = Field(default_factory=dict)
    settings: dict[str, float] = Field(default_factory=dict)
    source: str = str(DEFAULT_FILE.name)

    def rule(self, name: str) -> Rule:
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise ConfigError(f"no rule named {name!r}; rules: {', '.join(r.name for r in self.rules)}")

    def with_overrides(self, values: Mapping[str, float | Mapping[str, Any]]) -> Thresholds:
        """A copy with `above` (or, given a table, `above` and `severity`) replaced for the named rules."""
        updates: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            self.rule(name)
            change = dict(value) if isinstance(value, Mapping) else {"above": value}
            unknown = set(change) - set(_OVERRIDABLE)
            if unknown:
                raise ConfigError(f"{self.source}: rule {name!r}: a profile may change {', '.join(_OVERRIDABLE)}, "
                                  f"not {', '.join(sorted(unknown))}")
            try:
                updates[name] = {k: _OVERRIDABLE[k](v) for k, v in change.items()}
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{self.source}: rule {name!r}: {exc}") from None
        rules = [r.model_copy(update=updates[r.name]) if r.name in updates else r for r in self.rules]
        return self.model_copy(update={"rules": rules})

    def with_profile(self, name: str) -> Thresholds:
        """The profile's overrides, and its own rules (those that list it in `profiles`) put in force."""
        if name not in self.profiles:
            raise ConfigError(f"no threshold profile {name!r}; profiles: {', '.join(self.profiles) or 'none'}")
        joining = [r for r in self.dormant if name in (r.profiles or [])]
        chosen = self.model_copy(update={"rules": [*self.rules, *joining],
                                         "dormant": [r for r in self.dormant if r not in joining]})
        return chosen.with_overrides(self.profiles[name])

    def table(self) -> list[dict[str, Any]]:
        """The rules as plain rows, for reports."""
        return [r.model_dump(exclude={"doc"}) for r in self.rules]

    def setting(self, name: str) -> float:
        """A number from the `[settings]` table (load levels, slowdown and stale-series limits)."""
        if name not in self.settings:
            raise ConfigError(f"{self.source}: no setting {name!r} in [settings]")
        return self.settings[name]


def _read(path: Path) -> dict[str, Any]:
    return read_toml(path, "thresholds file")


def _merge(base: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    rules = {r["name"]: dict(r) for r in base.get("rule", [])}
    for i, row in enumerate(user.get("rule", [])):
        if "name" not in row:
            raise ConfigError(f"rule #{i + 1} in the thresholds file has no 'name'")
        rules[row["name"]] = {**rules.get(row["name"], {}), **row}
    profiles = {**base.get("profile", {}), **user.get("profile", {})}
    return {"rule": list(rules.values()), "priority": user.get("priority", base.get("priority", [])),
            "profile": profiles, "settings": {**base.get("settings", {}), **user.get("settings", {})}}


def load_thresholds(
    path: str | Path | None = None,
    *,
    overrides: Mapping[str, float] | None = None,
    profile: str | None = None,
) -> Thresholds:
    """Defaults, then the user's file (argument or $FABRICBOT_THRESHOLDS), then a profile, then overrides."""
    data = _read(DEFAULT_FILE)
    source = DEFAULT_FILE.name
    user_path = path or os.environ.get(ENV_FILE)
    if user_path:
        data = _merge(data, _read(Path(user_path)))
        source = str(user_path)
    rows = data["rule"]
    try:
        thresholds = Thresholds(rules=[r for r in rows if not r.get("profiles")],
                                dormant=[r for r in rows if r.get("profiles")], priority=data["priority"],
                                profiles=data.get("profile", {}), settings=data.get("settings", {}),
                                source=source)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{source}: {loc}: {err['msg']} (got {err.get('input')!r})") from None
    if profile:
        thresholds = thresholds.with_profile(profile)
    if overrides:
        thresholds = thresholds.with_overrides(overrides)
    return thresholds
