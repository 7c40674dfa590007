"""Reading the TOML data files a user may edit (thresholds, platforms, catalogs, mappings), with one kind of error."""

from __future__ import annotations

import copy
import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError

M = TypeVar("M", bound=BaseModel)

# The default data files shipped with the package; a user file overrides each.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The file's tables; a ConfigError naming the file and what it should have been otherwise. A text is parsed
    once: the engine loads the default thresholds at each call not given any, and parsing them cost more than many a
    small node's analysis (the file is still read each time, so an edit is seen at once)."""
    try:
        return copy.deepcopy(_parsed(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path.name}: not a readable {what}: {exc}") from None


@lru_cache(maxsize=64)
def _parsed(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def load_policy(model: type[M], default: Path, env: str, what: str, path: Path | None,
                overrides: dict[str, object]) -> M:
    """A small policy file: the defaults, the user's file (argument or $`env`) key by key over them, then
    `overrides` (None: not given); a ConfigError names the file, the field and the value otherwise."""
    values = read_toml(default, what)
    named = os.environ.get(env)
    user = path or (Path(named) if named else None)
    said = f"{env}: " if path is None and named else ""  # a file the variable names: the variable is said
    if user is not None:
        try:
            values |= read_toml(user, what)
        except ConfigError as exc:
            raise ConfigError(f"{said}{exc}") from None
    values |= {k: v for k, v in overrides.items() if v is not None}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(map(str, err["loc"]))
        raise ConfigError(f"{said}{(user or default).name}: {field}: {err['msg']} "
                          f"(got {err.get('input')!r})") from None
