"""Rack files: each rack platform (GB200 NVL72, NVL36x2) is a TOML file under `data/racks/`, checked on load.

A rack file names its trays, how each GPU link reaches a switch chip and port, the spine's cable cartridges, the
units' FRU names and how much evidence makes a unit the suspect. The hosts of a rack (its compute and switch trays)
have node platforms of their own (`data/platforms/`), whose `rack` key names the rack file.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml
from .platforms import all_platforms

PACKAGE_DIR = DATA_DIR / "racks"
ENV_DIRS = "FABRICBOT_RACKS"  # extra folders of rack files, os.pathsep-separated


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Wiring(_Model):
    """How a GPU link reaches a switch chip and which port it takes there."""

    chip_of_link: Literal["link-index"]  # GPU link L lands on the rack's chip L (switch-tray order)
    port_order: Literal["tray-major"]  # port = first_port + gpus_per_tray * (tray - 1) + gpu
    first_port: int = Field(ge=0)
    source: str = "assumed"


class Cartridge(_Model):
    """A block of the spine's cables: the links of some compute trays, some link indices of every GPU."""

    id: str
    compute_trays: tuple[int, int]
    links: tuple[int, int]

    def holds(self, tray: int, link: int) -> bool:
        return self.compute_trays[0] <= tray <= self.compute_trays[1] and self.links[0] <= link <= self.links[1]


class Localize(_Model):
    """How many failing links of a unit, how spread, make it the suspect rather than a smaller unit inside it."""

    gpu_min_links: int = Field(3, ge=1)
    gpu_min_share: float = Field(0.5, ge=0.0, le=1.0)
    chip_min_gpus: int = Field(2, ge=2)
    tray_min_gpus: int = Field(2, ge=2)
    tray_min_chips: int = Field(3, ge=2)
    tray_min_links: int = Field(3, ge=2)
    switch_tray_min_chips: int = Field(2, ge=2)
    switch_tray_min_links: int = Field(3, ge=2)
    cartridge_min_compute: int = Field(2, ge=2)
    cartridge_min_switch: int = Field(2, ge=2)
    cartridge_min_links: int = Field(3, ge=2)
    fanout_codes: list[int] = Field(default_factory=lambda: [144, 145, 146, 147, 148, 149, 150])
    fanout_min_gpus: int = Field(8, ge=2)
    fanout_within_s: float = Field(120.0, gt=0)
    fanout_lead_s: float = Field(1.0, ge=0)
    fanout_history_max: int = Field(2, ge=1)
    fanout_onset_s: float = Field(900.0, ge=0)
    rack_min_share: float = Field(0.5, gt=0.0, le=1.0)  # a rack-level incident: this share of the compute trays ...
    rack_within_s: float = Field(300.0, gt=0)  # ... start failing within this long, no switch unit common to them


class RackSpec(_Model):
    """One rack platform, as its file states it."""

    name: str
    description: str = ""
    compute_platform: str
    switch_platform: str
    compute_trays: int = Field(ge=1)
    gpus_per_tray: int = Field(ge=1)
    switch_trays: int = Field(ge=1)
    chips_per_switch_tray: int = Field(ge=1)
    nvlinks_per_gpu: int = Field(ge=1)
    ports_per_chip: int = Field(ge=1)
    fabric: Literal["nmx", "fabric-manager"] = "nmx"
    racks_per_domain: int = Field(1, ge=1)  # racks whose GPUs share the switch trays (NVL36x2: two)
    wiring: Wiring
    cartridge: list[Cartridge] = Field(default_factory=list)
    cartridge_source: dict[str, str] = Field(default_factory=dict)
    localize: Localize = Field(default_factory=lambda: Localize.model_validate({}))
    fru: dict[str, str] = Field(default_factory=dict)
    path: str = ""

    @property
    def map_assumed(self) -> bool:
        """Whether which chip and port a GPU link lands on is assumed (no published port map), not stated."""
        return self.wiring.source.lower().startswith("assumed")

    @property
    def cartridges_assumed(self) -> bool:
        return str(self.cartridge_source.get("text", "assumed")).lower().startswith("assumed")

    @model_validator(mode="after")
    def _consistent(self) -> RackSpec:
        chips = self.switch_trays * self.chips_per_switch_tray
        if self.wiring.chip_of_link == "link-index" and chips != self.nvlinks_per_gpu:
            raise ValueError(f"wiring link-index puts GPU link L on chip L: {self.nvlinks_per_gpu} links per GPU need "
                             f"{self.nvlinks_per_gpu} chips, the trays have {chips}")
        last = self.wiring.first_port + self.compute_trays * self.gpus_per_tray - 1
        if last >= self.wiring.first_port + self.ports_per_chip:
            raise ValueError(f"{self.compute_trays * self.gpus_per_tray} GPUs need {last} ports per chip, a chip has "
                             f"{self.ports_per_chip}")
        seen: dict[tuple[int, int], str] = {}
        for c in self.cartridge:
            for tray in range(c.compute_trays[0], c.compute_trays[1] + 1):
                for link in range(c.links[0], c.links[1] + 1):
                    if not (1 <= tray <= self.compute_trays and 0 <= link < self.nvlinks_per_gpu):
                        raise ValueError(f"cartridge {c.id} names compute tray {tray} link {link}, outside the rack")
                    if (tray, link) in seen:
                        raise ValueError(f"compute tray {tray} link {link} is in cartridges {seen[(tray, link)]} "
                                         f"and {c.id}")
                    seen[(tray, link)] = c.id
        return self

    @property
    def chips(self) -> int:
        return self.switch_trays * self.chips_per_switch_tray

    @property
    def gpus(self) -> int:
        return self.compute_trays * self.gpus_per_tray


def rack_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(ENV_DIRS, "").split(os.pathsep) if p]
    return [PACKAGE_DIR, *extra]


def _checked(data: dict[str, Any], path: Path) -> RackSpec:
    data = {**data, "name": data.get("name", path.stem), "path": str(path)}
    try:
        spec = RackSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{path.name}: {loc}: {err['msg']}".rstrip(": ")) from None
    platforms = all_platforms()
    for key, kind in (("compute_platform", "compute"), ("switch_platform", "switch")):
        name = getattr(spec, key)
        node = platforms.get(name)
        if node is None:
            raise ConfigError(f"{path.name}: {key} {name!r} is no platform file")
        if node.get("rack") != spec.name or node.get("tray_kind") != kind:
            raise ConfigError(f"{path.name}: platform {name!r} must say rack = {spec.name!r} and tray_kind = "
                              f"{kind!r}")
    compute = platforms[spec.compute_platform]
    if int(compute.get("gpu_count", 0)) != spec.gpus_per_tray or \
            int(compute.get("nvlinks_per_gpu", 0)) != spec.nvlinks_per_gpu:
        raise ConfigError(f"{path.name}: {spec.compute_platform} has {compute.get('gpu_count')} GPUs of "
                          f"{compute.get('nvlinks_per_gpu')} NVLinks; the rack says {spec.gpus_per_tray} of "
                          f"{spec.nvlinks_per_gpu}")
    return spec


@cache
def _load_all(dirs: tuple[Path, ...]) -> dict[str, RackSpec]:
    found: dict[str, RackSpec] = {}
    for folder in dirs:
        if folder.is_dir():
            for path in sorted(folder.glob("*.toml")):
                spec = _checked(read_toml(path, "rack file"), path)
                found[spec.name] = spec
    return found


def all_racks() -> dict[str, RackSpec]:
    return _load_all(tuple(rack_dirs()))


def rack_spec(name: str) -> RackSpec:
    racks = all_racks()
    if name not in racks:
        raise ConfigError(f"unknown rack platform {name!r}; known: {', '.join(sorted(racks)) or 'none'}")
    return racks[name]


def rack_of(platform: str | None) -> RackSpec | None:
    """The rack a host's platform belongs to (its `rack` key), or None for a node that is a whole board."""
    if not platform:
        return None
    name = all_platforms().get(platform, {}).get("rack")
    return rack_spec(str(name)) if name else None


def tray_kind(platform: str | None) -> str | None:
    """'compute' or 'switch' for a rack host's platform; None for any other."""
    if not platform:
        return None
    kind = all_platforms().get(platform, {}).get("tray_kind")
    return str(kind) if kind else None
