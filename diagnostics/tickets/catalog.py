"""The ticket's part (from the repair catalog) and the repair-step catalog keyed by component kind.

Defaults ship in `diagnostics/data/`; a user points FABRICBOT_PARTS or FABRICBOT_TICKET_STEPS at a copy to change them.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from string import Formatter
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..config.datafiles import DATA_DIR, read_toml
from ..config.parts import Part
from ..config.repair_plan import repair_plan
from ..config.repairs import DEFAULT_FAULT
from ..enums import ComponentKind, FaultKind
from ..errors import ConfigError

DATA = DATA_DIR
STEPS_FILE = DATA / "ticket_steps.toml"
ENV_STEPS = "FABRICBOT_TICKET_STEPS"


class StepTemplate(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    command: str | None = None
    when: str | None = None


class StepSet(BaseModel):
    """The isolation and repair ladders for one component kind on one platform (or '*')."""

    model_config = ConfigDict(frozen=True)

    platform: str
    component: ComponentKind
    isolate: list[StepTemplate]
    repair: list[StepTemplate]


def _path(env: str, default: Path) -> Path:
    value = os.environ.get(env)
    return Path(value) if value else default


def part_for(kind: ComponentKind, platform: str | None, path: Path | None = None) -> Part | None:
    """The part the repair catalog names first for this component kind's faults on this platform.

    Transitional: the drafter does not yet know a candidate's fault kind, so a GPU's part is the one of its NVLink
    fault, else of its fall off the bus.
    """
    faults = [DEFAULT_FAULT[kind]] + ([FaultKind.GPU_OFF_BUS] if kind is ComponentKind.GPU else [])
    for fault in faults:
        part = repair_plan(platform, fault).part
        if part is not None:
            return part
    return None


@cache
def _steps(path: Path) -> tuple[tuple[str, ...], tuple[StepSet, ...]]:
    data = read_toml(path, "repair-step catalog")
    capture = tuple(str(c) for c in data.get("capture", []))
    sets = []
    for i, raw in enumerate(data.get("steps", [])):
        try:
            sets.append(StepSet.model_validate(raw))
        except ValidationError as exc:
            raise ConfigError(f"{path.name}: steps[{i}]: {exc.errors()[0]['msg']}") from None
    return capture, tuple(sets)


def capture_commands(path: Path | None = None) -> list[str]:
    return list(_steps(path or _path(ENV_STEPS, STEPS_FILE))[0])


def steps_for(kind: ComponentKind, platform: str | None, path: Path | None = None) -> StepSet:
    where = path or _path(ENV_STEPS, STEPS_FILE)
    for wanted in (platform, "*"):
        for step_set in _steps(where)[1]:
            if step_set.platform == wanted and step_set.component is kind:
                return step_set
    raise ConfigError(f"{where.name}: no steps for component {kind.value!r} (platform {platform!r})")


class _Unknown(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def render(templates: list[StepTemplate], fields: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Fill each step's placeholders; drop a step whose `when` field has no value."""
    present = _Unknown({k: v for k, v in fields.items() if v is not None})
    out = []
    for t in templates:
        if t.when is not None and fields.get(t.when) is None:
            continue
        text = Formatter().vformat(t.text, (), present)
        command = Formatter().vformat(t.command, (), present) if t.command else None
        out.append((text, command))
    return out
