"""The alert policy: when a part's alert is closed as recovered, and when many failures at once are one incident.

Defaults ship in `data/alerts.toml`; FABRICBOT_ALERTS names a user file whose keys replace them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .datafiles import DATA_DIR, load_policy

DEFAULT_FILE = DATA_DIR / "alerts.toml"
ENV_FILE = "FABRICBOT_ALERTS"


class AlertPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    recovered_after_hours: float = Field(gt=0, le=24 * 90)
    storm_share: float = Field(gt=0, le=1)
    storm_racks: int = Field(ge=1)
    storm_min_nodes: int = Field(ge=1)
    signature_min_nodes: int = Field(ge=2)
    first_pass: Literal["summary", "alert"] = "summary"

    @property
    def soak(self) -> timedelta:
        return timedelta(hours=self.recovered_after_hours)


def load_alerts(path: Path | None = None, **overrides: object) -> AlertPolicy:
    """The defaults, the user's file (argument or $FABRICBOT_ALERTS) over them, then `overrides`."""
    return load_policy(AlertPolicy, DEFAULT_FILE, ENV_FILE, "alert policy", path, overrides)
