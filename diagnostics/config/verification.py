"""The repair-verification policy: how long a repaired part must stay clean, judged how, before its ticket closes.

Defaults ship in `data/verification.toml`; FABRICBOT_VERIFICATION names a user file whose keys replace them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .datafiles import DATA_DIR, load_policy

DEFAULT_FILE = DATA_DIR / "verification.toml"
ENV_FILE = "FABRICBOT_VERIFICATION"


class VerificationPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    soak_hours: float = Field(gt=0, le=24 * 90)
    window_hours: float = Field(gt=0, le=24)
    reopen_at: Literal["warning", "failing"] = "failing"
    min_coverage: float = Field(ge=0, le=1)
    replace_at_ticket: int = Field(default=3, ge=2)

    @property
    def soak(self) -> timedelta:
        return timedelta(hours=self.soak_hours)

    @property
    def window(self) -> timedelta:
        return timedelta(hours=self.window_hours)


def load_verification(path: Path | None = None, **overrides: object) -> VerificationPolicy:
    """The defaults, the user's file (argument or $FABRICBOT_VERIFICATION) over them, then `overrides`."""
    return load_policy(VerificationPolicy, DEFAULT_FILE, ENV_FILE, "verification policy", path, overrides)
