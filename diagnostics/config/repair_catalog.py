"""The repair catalog file (`data/repairs.toml`), typed and checked: platforms, fault kinds and the step library.

A user file ($FABRICBOT_REPAIRS) is merged into the defaults table by table, key by key (a list replaces the list it
names). Loading checks what a typo would otherwise hide until a ticket reads it: every fault kind has a plan, every
id a list names exists, every part exists on its platform, every placeholder is one the plan can fill.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..enums import FaultKind, ResetScope
from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml
from .parts import UNKNOWN_PLATFORM, parts
from .platforms import all_platforms
from .repair_text import PLACEHOLDERS, Text, placeholders

CATALOG_FILE = DATA_DIR / "repairs.toml"
ENV_REPAIRS = "FABRICBOT_REPAIRS"
ENV_OLD_STEPS = "FABRICBOT_TICKET_STEPS"  # the step file the catalog replaced
RESET_MARK = "reset"  # in a repair list: where the reset step goes

Need = Literal["nvlink", "nvswitch", "fabric-info", "fabric-manager", "nvlsm"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CaptureEntry(_Model):
    """A command run before anyone touches the node, and what its output shows."""

    command: Text
    why: Text
    needs: Need | None = None
    source: str = "assumed"


class StepEntry(_Model):
    """One step; `down_text` is its wording for a link that is down: the link counts no errors, so what the step
    reads of it is its state (`nvidia-smi nvlink -s`), not its counters."""

    text: Text
    down_text: Text | None = None
    command: Text | None = None
    source: str = "assumed"
    stops: Literal["gpu", "node", "rack"] | None = Field(
        default=None, description="What the step takes out of service: one GPU, every GPU of the node, or every "
                                  "GPU of the rack (a switch tray or cartridge touched: every GPU has links there).")
    drains: Literal["trays", "rack"] | None = Field(
        default=None, description="An isolation step's reach: the trays on the failing links, or every tray of "
                                  "the rack (before a step that stops the rack).")
    if_node_stops: str | None = Field(
        default=None, description="An isolation step's replacement (a [step] id) when the plan stops the node: "
                                  "excluding one GPU is no isolation for a reboot.")


StepRef = str | StepEntry  # an id in [step], the reset mark, or a step written out


class ResetEntry(StepEntry):
    """A scope's reset step (its `down_text`: whether the down link came back is read from its state)."""


class FaultEntry(_Model):
    """The default plan of one fault kind."""

    reset: ResetScope
    reset_text: Text | None = None
    reset_stops: Literal["gpu", "node", "rack"] | None = None  # what the reset takes, where not the scope's own
    capture: list[str]
    isolate: list[StepRef]
    repair: list[StepRef]
    action: Text
    down_action: Text | None = None
    # a link down counts no errors: the steps that name it read the link states, not the error counters
    down_repair: list[StepRef] | None = None
    # an NVLink Xid the catalog's decode does not make fatal: its own action, and no reset unless the decode or the
    # driver's Xid 154 asks for one (the steps carry the reset's condition, so no reset step is added)
    nonfatal_action: Text | None = None
    nonfatal_isolate: list[StepRef] | None = None
    nonfatal_repair: list[StepRef] | None = None


class FaultOverride(_Model):
    """One platform's entry for one fault kind: its parts, or `applies = false` and why; may replace lists."""

    applies: bool = True
    why: str | None = None
    part: str | None = None
    next_part: str | None = None
    # with the platform unknown: the part when the link's far end is an NVSwitch (the baseboard's, not a bridge's)
    switch_part: str | None = None
    switch_module: str | None = None  # ... and the GPU's own part there (an NVSwitch board's GPUs are SXM modules)
    rack_part: str | None = None  # ... and when it is a chip of a rack's NVLink switch tray (a GB200 compute tray's)
    reset_text: Text | None = None
    capture: list[str] | None = None
    isolate: list[StepRef] | None = None
    repair: list[StepRef] | None = None
    action: Text | None = None
    down_action: Text | None = None
    down_repair: list[StepRef] | None = None
    nonfatal_action: Text | None = None
    nonfatal_isolate: list[StepRef] | None = None
    nonfatal_repair: list[StepRef] | None = None


class PlatformEntry(_Model):
    rack: bool = False  # a rack platform (data/racks/) or a rack's host: its units are named in the rack
    nvlink: Literal["nvswitch", "direct", "bridge", "none"]
    gpu_reset: Literal["single", "nvlink-peers"]
    fabric: list[Literal["fabric-manager", "nvlsm"]] = Field(default_factory=list)
    board: str
    reset_note: str | None = None
    fm_note: str | None = None
    # the driver reports each GPU's fabric state (nvmlDeviceGetGpuFabricInfo, the Fabric section of nvidia-smi -q):
    # Hopper and newer; an Ampere NVSwitch system shows its fabric in Fabric Manager's log and nvidia-smi nvlink -s
    fabric_info: bool = True
    # SXM modules on a baseboard: moving a module between sockets is the server vendor's service procedure (its
    # tools, torque and thermal interface), not a site step (assumed: no NVIDIA document lists it as customer work)
    sxm: bool = False
    source: str = "assumed"
    fault: dict[FaultKind, FaultOverride] = Field(default_factory=dict)

    def has(self, need: Need) -> bool:
        if need == "fabric-info":
            return self.fabric_info and self.has("nvswitch")
        if self.rack and need in ("nvlink", "nvswitch"):
            return True  # a rack's host, a switch tray too: its rack's GPUs reach its switch chips over NVLink
        if need == "nvlink":
            return self.nvlink != "none"
        if need == "nvswitch":
            return self.nvlink == "nvswitch"
        return need in self.fabric


class UnknownEntry(_Model):
    board: str = "board"
    reset_note: str | None = None
    fault: dict[FaultKind, FaultOverride] = Field(default_factory=dict)


class NotApplicable(_Model):
    isolate: list[StepEntry]
    repair: list[StepEntry]
    action: Text


class Wording(_Model):
    """A contradiction between input and platform: said in full as a warning, and short before the action."""

    warning: Text
    action: Text


class Contradiction(_Model):
    peer_on_switch_board: Wording
    no_switch_on_platform: Wording
    peer_not_joined: Wording
    not_applicable: Wording


class Warnings(_Model):
    unknown_platform: Text
    unknown_platform_alike: Text
    unlisted_platform: Text
    assumed_port: Text
    assumed_pcie_port: Text | None = None  # a PCIe switch's port from the template, confirmed with lspci
    unknown_port: Text
    no_part_unknown: Text
    no_part_software: Text
    no_part_rack: Text
    no_part_shared: Text
    assumed_rack_map: Text  # a rack unit found through the rack file's assumed port map
    assumed_cartridge: Text  # ... through its assumed cartridge split
    recovery_said: Text  # the driver's recovery action, said on every plan that has one
    recovery_reboot: Text  # the reset step when that action is a reboot and the fault's own reset a GPU's
    recovery_action: Text  # the one-line action's first words then


BOARD_PLACEHOLDERS = frozenset({"board"})
BoardKind = Literal["nvswitch", "direct", "bridge", "sxm", "any"]


class BoardWords(_Model):
    """What the steps say of the board itself, each by the board's kind: where a GPU's NVLinks reach, which end its
    failing links share, how its GPU is reseated, and why moving or fitting an SXM module is no site step."""

    nvlinks_reach: dict[BoardKind, str] = Field(default_factory=dict)
    gpu_common_end: dict[BoardKind, str] = Field(default_factory=dict)
    module_reseat: dict[BoardKind, str] = Field(default_factory=dict)
    swap_note: dict[BoardKind, str] = Field(default_factory=dict)
    sxm_note: dict[BoardKind, str] = Field(default_factory=dict)

    def said(self, kinds: list[BoardKind]) -> dict[str, str]:
        """Each value for a board of these kinds (most particular first, "any" last), where one is given."""
        out = {}
        for name in type(self).model_fields:
            words: dict[BoardKind, str] = getattr(self, name)
            text = next((words[k] for k in [*kinds, "any"] if k in words), None)
            if text is not None:
                out[name] = text
        return out


class Status(_Model):
    healthy: str
    warning: str
    silent: str  # a node gone silent on a fault: {node}, {since}, {repair} (the fault's own action)


class Escalation(_Model):
    """A repeat offender's repairs: the part that carries the GPU replaced first, then the checks after it (its
    earlier tickets' reset, reseat and swap test are not repeated). The plan's captures and isolation stay."""

    repair: list[StepRef]
    rack_repair: list[StepRef]  # a rack's compute tray: its replacement drains the rack
    rack_isolate: str  # the rack's drain, added where the plan's isolation drains less
    action: Text


class Catalog(_Model):
    status: Status
    platform: dict[str, PlatformEntry]
    unknown: UnknownEntry = Field(default_factory=UnknownEntry)
    board: BoardWords = Field(default_factory=BoardWords)
    fault: dict[FaultKind, FaultEntry]
    rack_fault: dict[FaultKind, FaultEntry] = Field(default_factory=dict)  # a rack's plans, where they differ
    capture: dict[str, CaptureEntry]
    step: dict[str, StepEntry]
    reset: dict[ResetScope, ResetEntry]
    not_applicable: NotApplicable
    escalation: Escalation
    contradiction: Contradiction
    warning: Warnings
    source: str = CATALOG_FILE.name


def _merge(base: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in user.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _inherit(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Platform entries with `same_as = "NAME"`: NAME's entry, with their own keys merged over it (a rack's hosts
    repair as their rack does)."""
    platforms = dict(data.get("platform", {}))
    for name, entry in list(platforms.items()):
        base = entry.get("same_as") if isinstance(entry, dict) else None
        if base is None:
            continue
        if base not in platforms or "same_as" in platforms[base]:
            raise ConfigError(f"{source}: platform.{name}.same_as names {base!r}, which is no platform entry of its "
                              "own")
        own = {k: v for k, v in entry.items() if k != "same_as"}
        platforms[name] = _merge(platforms[base], own)
    return {**data, "platform": platforms}


_NOT_TEXT = ("source", "needs", "stops", "drains", "if_node_stops", "reset_stops")


def _texts(value: Any, where: str) -> list[tuple[str, str]]:
    """Every template string inside a parsed value, with where it sits."""
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in _texts(v, f"{where}[{i}]")]
    if isinstance(value, BaseModel):
        fields = {k: getattr(value, k) for k in type(value).model_fields if k not in _NOT_TEXT}
        return [t for k, v in fields.items() for t in _texts(v, f"{where}.{k}")]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _texts(v, f"{where}.{k}")]
    return []


def _check_templates(cat: Catalog) -> None:
    scopes: dict[str, Any] = {"fault": cat.fault, "rack_fault": cat.rack_fault, "capture": cat.capture,
                              "step": cat.step, "reset": cat.reset,
                              "not_applicable": cat.not_applicable, "escalation": cat.escalation,
                              "contradiction": cat.contradiction,
                              "warning": cat.warning, "unknown": cat.unknown.fault, "board": cat.board,
                              **{f"platform.{n}": p.fault for n, p in cat.platform.items()}}
    for scope, value in scopes.items():
        for where, text in _texts(value, scope):
            try:
                names = placeholders(text)
            except ValueError as exc:
                raise ConfigError(f"{cat.source}: {where}: malformed template {text!r}: {exc}") from None
            unknown = names - (BOARD_PLACEHOLDERS if scope == "board" else PLACEHOLDERS)
            if unknown and scope == "board":  # a value filled into other texts: only the board's name is known
                raise ConfigError(f"{cat.source}: {where}: a board's words may name only {{board}}, not "
                                  f"{{{sorted(unknown)[0]}}}, in {text!r}")
            if unknown:
                raise ConfigError(f"{cat.source}: {where}: unknown placeholder {{{sorted(unknown)[0]}}} in {text!r}; "
                                  f"known: {', '.join(sorted(PLACEHOLDERS))}")


def _check_refs(cat: Catalog) -> None:
    lists: list[tuple[str, FaultEntry | FaultOverride]] = [(f"fault.{k}", f) for k, f in cat.fault.items()]
    lists += [(f"rack_fault.{k}", f) for k, f in cat.rack_fault.items()]
    lists += [(f"unknown.fault.{k}", f) for k, f in cat.unknown.fault.items()]
    lists += [(f"platform.{n}.fault.{k}", f) for n, p in cat.platform.items() for k, f in p.fault.items()]
    for where, entry in lists:
        for cid in entry.capture or []:
            if cid not in cat.capture:
                raise ConfigError(f"{cat.source}: {where}.capture names {cid!r}, which is not a [capture] entry")
        for name in ("isolate", "repair", "down_repair", "nonfatal_isolate", "nonfatal_repair"):
            for ref in getattr(entry, name) or []:
                if isinstance(ref, str) and ref != RESET_MARK and ref not in cat.step:
                    raise ConfigError(f"{cat.source}: {where}.{name} names {ref!r}, which is not a [step] entry")
    esc = cat.escalation
    for name, refs in (("repair", esc.repair), ("rack_repair", esc.rack_repair), ("rack_isolate", [esc.rack_isolate])):
        for ref in refs:
            if isinstance(ref, str) and (ref == RESET_MARK or ref not in cat.step):
                raise ConfigError(f"{cat.source}: escalation.{name} names {ref!r}, which is not a [step] entry")
    for sid, step in cat.step.items():
        if step.if_node_stops is not None and step.if_node_stops not in cat.step:
            raise ConfigError(f"{cat.source}: step.{sid}.if_node_stops names {step.if_node_stops!r}, which is not a "
                              "[step] entry")
    missing = [k.value for k in FaultKind if k not in cat.fault]
    if missing:
        raise ConfigError(f"{cat.source}: no [fault.{missing[0]}] plan (every fault kind needs one)")
    for scope in ResetScope:
        if scope is not ResetScope.NONE and scope not in cat.reset:
            raise ConfigError(f"{cat.source}: no [reset.{scope.value}] step")


def _check_parts(cat: Catalog) -> None:
    by_id = {p.id: p for p in parts()}
    for kind, entry in cat.unknown.fault.items():
        for pid in (entry.part, entry.next_part, entry.switch_part, entry.switch_module, entry.rack_part):
            if pid is not None and (pid not in by_id or by_id[pid].platform != UNKNOWN_PLATFORM):
                raise ConfigError(f"{cat.source}: unknown.fault.{kind.value}: part {pid!r} is not a part of the "
                                  f"parts catalog's platform {UNKNOWN_PLATFORM!r}")
    for name, plat in cat.platform.items():
        rack = all_platforms().get(name, {}).get("rack")  # a rack's host may name its rack's parts
        for kind, entry in plat.fault.items():
            where = f"{cat.source}: platform.{name}.fault.{kind.value}"
            if not entry.applies and not entry.why:
                raise ConfigError(f"{where}: applies = false needs a `why` (it is what the ticket tells the user)")
            for pid in (entry.part, entry.next_part):
                if pid is None:
                    continue
                if pid not in by_id:
                    raise ConfigError(f"{where}: part {pid!r} is not in the parts catalog")
                if by_id[pid].platform not in (name, rack):
                    raise ConfigError(f"{where}: part {pid!r} belongs to platform {by_id[pid].platform!r}")


def _validated(data: dict[str, Any], source: str) -> Catalog:
    data = _inherit(data, source)
    try:
        cat = Catalog.model_validate({**data, "source": source})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{source}: {loc}: {err['msg']} (got {err.get('input')!r})"[:500]) from None
    _check_templates(cat)
    _check_refs(cat)
    _check_parts(cat)
    return cat


@cache
def _load(default: Path, user: Path | None) -> Catalog:
    data = read_toml(default, "repair catalog")
    source = default.name
    if user is not None:
        data = _merge(data, read_toml(user, "repair catalog"))
        source = str(user)
    return _validated(data, source)


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The defaults with the user's file (argument or $FABRICBOT_REPAIRS) merged in, checked."""
    if os.environ.get(ENV_OLD_STEPS):
        raise ConfigError(f"{ENV_OLD_STEPS} is no longer read: the capture lists and repair steps moved to the repair "
                          f"catalog; point {ENV_REPAIRS} at a file of your changes to diagnostics/data/repairs.toml")
    env = os.environ.get(ENV_REPAIRS)
    user = Path(path) if path else (Path(env) if env else None)
    return _load(CATALOG_FILE, user)

