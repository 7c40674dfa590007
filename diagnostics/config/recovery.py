"""The driver's recovery actions (`data/recovery.toml`): each NVML value, the words a line writes for it and what it
takes (none, drain, a GPU reset, the node's reboot), so a plan's reset can follow what the driver asks."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError
from .datafiles import DATA_DIR, read_toml

RECOVERY_FILE = DATA_DIR / "recovery.toml"
ENV_RECOVERY = "FABRICBOT_RECOVERY"
Scope = Literal["none", "drain", "gpu", "node"]
RANK: dict[str, int] = {"none": 0, "drain": 1, "gpu": 2, "node": 3}
# `... recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)`: the value after "to", and its words
_CHANGED = re.compile(r"to\s+(0x[0-9a-f]+|\d+)\s*(?:\(([^)]*)\))?", re.IGNORECASE)


class RecoveryAction(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    value: int = Field(ge=0)
    name: str = Field(min_length=1)
    said: list[str] = Field(default_factory=list)
    scope: Scope
    assumed: bool = False
    source: str = Field(min_length=1)

    @property
    def words(self) -> str:
        return self.said[0] if self.said else self.name.replace("_", " ").title()

    @property
    def rank(self) -> int:
        return RANK[self.scope]


class RecoveryTable(BaseModel):
    model_config = ConfigDict(frozen=True)

    actions: dict[int, RecoveryAction]

    def of(self, value: int) -> RecoveryAction:
        """The action of a value; one no file names is taken as the node's reboot (the strongest), and says so."""
        return self.actions.get(value) or RecoveryAction(
            value=value, name=f"UNKNOWN_{value}", said=[f"unknown action {value}"], scope="node", assumed=True,
            source="not in data/recovery.toml: taken as the node's reboot until its meaning is known")

    def from_line(self, text: str) -> RecoveryAction | None:
        """The action an Xid 154 line changes to: its number, else its words; None when the line names neither."""
        found = _CHANGED.search(text or "")
        if found is None:
            return None
        number, words = found.group(1), (found.group(2) or "").strip().lower()
        try:
            return self.of(int(number, 16) if number.lower().startswith("0x") else int(number))
        except ValueError:
            pass
        return next((a for a in self.actions.values() if words in (w.lower() for w in a.said)), None)


@cache
def _load(default: Path, user: Path | None) -> RecoveryTable:
    rows = list(read_toml(default, "recovery action table").get("action", []))
    if user is not None:
        rows += list(read_toml(user, "recovery action table").get("action", []))
    actions: dict[int, RecoveryAction] = {}
    for i, row in enumerate(rows):
        try:
            action = RecoveryAction.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"]))
            raise ConfigError(f"{(user or default).name}: action[{i}].{where}: {err['msg']} "
                              f"(got {err.get('input')!r})") from None
        actions[action.value] = action
    return RecoveryTable(actions=actions)


def load_recovery(path: str | Path | None = None) -> RecoveryTable:
    """The defaults, with the rows of the user's file (argument or $FABRICBOT_RECOVERY) replacing them by value."""
    env = os.environ.get(ENV_RECOVERY)
    user = Path(path) if path else (Path(env) if env else None)
    return _load(RECOVERY_FILE, user)
