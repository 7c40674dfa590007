"""Repair actions from the catalog file, keyed by platform and component class."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Formatter
from typing import Any

from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml

DEFAULT_FILE = DATA_DIR / "repairs.toml"


@cache
def _actions(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(read_toml(path, "repair catalog").get("action", []))


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def repair_action(component: str, *, platform: str | None = None, path: Path = DEFAULT_FILE,
                  **fields: Any) -> str:
    """The catalog's text for this component class on this platform (exact platform first, then '*')."""
    actions = _actions(path)
    for wanted in (platform, "*"):
        for action in actions:
            if action.get("platform") == wanted and action.get("component") == component:
                text: str = action["text"]
                return Formatter().vformat(text, (), _Blank(fields))
    raise ConfigError(f"{path.name}: no repair action for component {component!r} (platform {platform!r})")
