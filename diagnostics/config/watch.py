"""The early-warning policy: which rules' counters are projected forward, over how much history, how far ahead.

Defaults ship in `data/watch.toml`; FABRICBOT_WATCH names a user file whose keys replace them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .datafiles import DATA_DIR, load_policy

DEFAULT_FILE = DATA_DIR / "watch.toml"
ENV_FILE = "FABRICBOT_WATCH"


class Watched(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: str


class WatchPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    lookback_hours: float = Field(gt=0, le=24 * 60)
    bucket_hours: float = Field(gt=0, le=24)
    horizon_hours: float = Field(gt=0, le=24 * 365)
    min_buckets: int = Field(ge=3)
    min_fit: float = Field(ge=0, le=1)
    min_share: float = Field(ge=0, lt=1)
    watch: list[Watched] = Field(default_factory=list)

    @property
    def lookback(self) -> timedelta:
        return timedelta(hours=self.lookback_hours)

    @property
    def rules(self) -> list[str]:
        return [w.rule for w in self.watch]


def load_watch(path: Path | None = None, **overrides: object) -> WatchPolicy:
    """The defaults, the user's file (argument or $FABRICBOT_WATCH) over them, then `overrides`."""
    return load_policy(WatchPolicy, DEFAULT_FILE, ENV_FILE, "watch policy", path, overrides)
