"""The parts catalog: each field-replaceable unit a platform really has, by id, with the user's overrides merged in.

Defaults ship in `data/parts.toml`; FABRICBOT_PARTS names a user file whose entries change the default of the same
id field by field (a vendor part number, say) or add new parts.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml

PARTS_FILE = DATA_DIR / "parts.toml"
ENV_PARTS = "FABRICBOT_PARTS"


UNKNOWN_PLATFORM = "unknown"  # the platform of the parts a ticket names when nobody said which board it is


class Candidate(BaseModel):
    """One board a part may be on, and what the part is there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    board: str
    fru: str


class Part(BaseModel):
    """One catalog entry: what a technician orders and swaps, on one platform. With the platform unknown, the part
    the observed link implies: its candidates (one per kind of board) and the read that decides between them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    platform: str
    description: str
    fru: str
    part_number: str | None = None
    candidates: list[Candidate] = Field(default_factory=list)
    decided_by: str | None = Field(default=None, description="The command whose output decides the candidate.")
    decide: str | None = Field(default=None, description="How to read that output.")
    source: str = "assumed"
    carries_gpu: bool = False  # the unit the GPU itself is swapped in: a repeat offender's replacement


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = read_toml(path, "parts catalog").get("part", [])
    if not isinstance(rows, list):
        raise ConfigError(f"{path.name}: 'part' must be an array of tables ([[part]])")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise ConfigError(f"{path.name}: part[{i}] has no 'id'")
    return rows


@cache
def _load(default: Path, user: Path | None) -> tuple[Part, ...]:
    merged: dict[str, dict[str, Any]] = {row["id"]: dict(row) for row in _rows(default)}
    sources = {key: default for key in merged}
    for row in _rows(user) if user else []:
        merged[row["id"]] = {**merged.get(row["id"], {}), **row}
        sources[row["id"]] = user  # type: ignore[assignment]
    out = []
    for key, row in merged.items():
        try:
            out.append(Part.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(map(str, err["loc"]))
            raise ConfigError(f"{sources[key].name}: part {key!r}: {field}: {err['msg']}") from None
    return tuple(out)


def parts(path: Path | None = None) -> tuple[Part, ...]:
    """Every part: the defaults with the user's file (argument or $FABRICBOT_PARTS) merged in by id."""
    env = os.environ.get(ENV_PARTS)
    user = path or (Path(env) if env else None)
    return _load(PARTS_FILE, user)


def part_by_id(part_id: str, path: Path | None = None) -> Part:
    for part in parts(path):
        if part.id == part_id:
            return part
    raise ConfigError(f"no part {part_id!r} in the parts catalog")
