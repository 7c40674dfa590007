"""Which end of a link counts which error (`data/ends.toml`): receivers count what they detect, transmitters the
replays they send, so the end whose receiver saw the errors is named as evidence (the parts keep the repair
catalog's order: which end received the errors does not say which part failed).

FABRICBOT_ENDS names a user file whose tables replace the defaults.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .datafiles import DATA_DIR, load_policy

DEFAULT_FILE = DATA_DIR / "ends.toml"
ENV_FILE = "FABRICBOT_ENDS"


class Direction(BaseModel):
    """The counters a receiver keeps and those a transmitter keeps, on one kind of link, with their source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(min_length=1)
    received: list[str] = Field(min_length=1)
    sent: list[str] = Field(min_length=1)


class EndsPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pcie: Direction
    nvlink: Direction


def load_ends(path: Path | None = None) -> EndsPolicy:
    """The defaults, or the user's file (argument or $FABRICBOT_ENDS) table by table over them."""
    return load_policy(EndsPolicy, DEFAULT_FILE, ENV_FILE, "link ends", path, {})


@cache
def default_ends() -> EndsPolicy:
    return load_ends()
