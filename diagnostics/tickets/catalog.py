"""The parts catalog and the repair-step catalog: data files keyed by platform and component kind.

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
from ..enums import ComponentKind
from ..errors import ConfigError

DATA = DATA_DIR
PARTS_FILE = DATA / "parts.toml"
STEPS_FILE = DATA / "ticket_steps.toml"
ENV_PARTS = "FABRICBOT_PARTS"
ENV_STEPS = "FABRICBOT_TICKET_STEPS"


class Part(BaseModel):
    """One catalog entry: what a technician orders and swaps."""

    model_config = ConfigDict(frozen=True)

    id: str
    platform: str
    component: ComponentKind
    description: str
    fru: str
    part_number: str | None = None


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


@cache
def _parts(path: Path) -> tuple[Part, ...]:
    data = read_toml(path, "parts catalog")
    out = []
    for i, raw in enumerate(data.get("part", [])):
        try:
            part = Part.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"{path.name}: part[{i}]: {exc.errors()[0]['msg']} "
                              f"(field {'.'.join(map(str, exc.errors()[0]['loc']))})") from None
        if part.component is ComponentKind.FABRIC_SOFTWARE:
            raise ConfigError(f"{path.name}: part[{i}] ({part.id}): fabric-software has no replacement part")
        out.append(part)
    return tuple(out)


def parts(path: Path | None = None) -> tuple[Part, ...]:
    return _parts(path or _path(ENV_PARTS, PARTS_FILE))


def part_for(kind: ComponentKind, platform: str | None, path: Path | None = None) -> Part | None:
    """The part for this component kind: the platform's own entry first, then the generic one; none for software."""
    if kind is ComponentKind.FABRIC_SOFTWARE:
        return None
    catalog = parts(path)
    for wanted in (platform, "*"):
        for part in catalog:
            if part.platform == wanted and part.component is kind:
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
