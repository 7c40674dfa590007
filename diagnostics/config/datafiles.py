"""Reading the TOML data files a user may edit (thresholds, platforms, catalogs, mappings), with one kind of error."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError

# The default data files shipped with the package; a user file overrides each.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The file's tables; a ConfigError naming the file and what it should have been otherwise."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path.name}: not a readable {what}: {exc}") from None
