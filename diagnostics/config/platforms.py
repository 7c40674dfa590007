"""Platform registry: each platform is a TOML file under `data/platforms/`; a user adds one by adding a file.

The topology package reads the same files for the full layout; this module answers the questions every layer
needs cheaply (does the platform exist, how many GPUs, which GPU model).
"""

from __future__ import annotations

import os
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


def platform_data(name: str) -> dict[str, Any]:
    platforms = all_platforms()
    if name not in platforms:
        known = ", ".join(sorted(platforms))
        raise ConfigError(f"unknown platform {name!r}; known platforms: {known}")
    return platforms[name]


def gpu_count(name: str) -> int:
    return int(platform_data(name)["gpu_count"])
