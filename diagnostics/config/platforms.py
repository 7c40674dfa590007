"""Platform registry: each platform is a TOML file under `data/platforms/`; a user adds one by adding a file.

The topology package reads the same files for the full layout; this module answers the questions every layer
needs cheaply (does the platform exist, how many GPUs, which GPU model).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml

PACKAGE_DIR = DATA_DIR / "platforms"
ENV_DIRS = "FABRICBOT_PLATFORMS"  # extra folders of platform files, os.pathsep-separated


def platform_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(ENV_DIRS, "").split(os.pathsep) if p]
    return [PACKAGE_DIR, *extra]


@cache
def _load_all(dirs: tuple[Path, ...]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            data = read_toml(path, "platform file")
            name = data.get("name", path.stem)
            data["name"] = name
            data["_path"] = str(path)
            found[name] = data
    return found


def all_platforms() -> dict[str, dict[str, Any]]:
    return _load_all(tuple(platform_dirs()))


def platform_name(text: str) -> str:
    """A platform as a person types it (`DGX-A100-8GPU` in a spreadsheet's nodes.csv): the known platform it names,
    matched without case or the spaces around it; the text itself when it names none (refused where it is used)."""
    wanted = text.strip().lower()
    return next((name for name in all_platforms() if name.lower() == wanted), text.strip())


def platform_data(name: str) -> dict[str, Any]:
    platforms = all_platforms()
    if name not in platforms:
        known = ", ".join(sorted(platforms))
        raise ConfigError(f"unknown platform {name!r}; known platforms: {known}")
    return platforms[name]


def gpu_count(name: str) -> int:
    return int(platform_data(name)["gpu_count"])


def model_boards(name: str) -> tuple[int, ...]:
    """The GPU counts of the boards the platform's GPU model is built into (`model_boards`; default: its own count):
    a platform told only from the model does not tell which of them a node is."""
    data = all_platforms().get(name)
    if not data:
        return ()
    return tuple(int(n) for n in data.get("model_boards", [data.get("gpu_count", 0)]))


def has_nvswitch(name: str) -> bool:
    """Whether the platform's GPUs are joined through NVSwitches (an `[nvswitch]` table): only then does a Fabric
    Manager (or a rack's domain software) run."""
    return bool(all_platforms().get(name, {}).get("nvswitch"))


def gpu_names(name: str) -> list[str]:
    """The names a platform's GPUs go by in a ticket (`gpu_names`: a GB200 tray's are GB200 and B200, its
    superchip's GPUs), else its GPU model's product word (`H100` of `H100 NVL`); none for a model with no product
    number (`generic PCIe GPU`)."""
    data = platform_data(name)
    named = data.get("gpu_names")
    if named:
        return [str(n) for n in named]
    words = str(data.get("gpu_model", "")).split()
    return [words[0]] if words and any(ch.isdigit() for ch in words[0]) else []


def platform_for_model(model: str | None) -> str | None:
    """The platform a GPU model label names (`NVIDIA H100 80GB HBM3` -> hgx-h100-8gpu), the most specific model
    first (`H100 NVL` before `H100`); None for a model no platform file claims, or for a PCIe card of an SXM model
    (an `H100 PCIe` is not on an HGX board)."""
    found = platforms_for_model(model)
    return max(found) if found else None


def platforms_for_model(model: str | None) -> set[str]:
    """Every platform a GPU model label names, as specifically as any does: a model built into several boards (a
    GB200 in an NVL72 rack's tray and an NVL36x2's) names each, and only the inventory tells which."""
    if not model:
        return set()
    named = [(str(d.get("gpu_model", "")), n) for n, d in all_platforms().items()
             if d.get("gpu_model") and int(d.get("nvlinks_per_gpu", 0)) > 0]
    hits = [(m, n) for m, n in named if re.search(rf"(?<![A-Za-z0-9]){re.escape(m)}(?![A-Za-z0-9])", model)
            and ("pcie" not in model.lower() or "pcie" in m.lower())]  # a whole word: a GB200 is no B200 board
    longest = max((len(m) for m, _ in hits), default=0)
    return {n for m, n in hits if len(m) == longest}
