"""The all_reduce bus bandwidth each platform's GPUs reach in one node (`data/busbw.toml`): what an nccl-tests run
is judged against. FABRICBOT_BUSBW names a user file whose tables replace the defaults."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .datafiles import DATA_DIR, load_policy

DEFAULT_FILE = DATA_DIR / "busbw.toml"
ENV_FILE = "FABRICBOT_BUSBW"


class ExpectedBusbw(BaseModel):
    """One platform's figure, with where it comes from, or why it is assumed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    busbw_gbps: float = Field(gt=0)
    source: str | None = None
    assumed: bool = False
    why: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _sourced(self) -> ExpectedBusbw:
        if not self.source and not (self.assumed and self.why):
            raise ValueError(f"{self.name}: a figure names its source, or says `assumed = true` and `why`")
        return self


class BusbwPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    judged_from_bytes: int = Field(gt=0)  # a run that stopped below this message size is not judged
    judged_from_source: str = Field(min_length=1)
    platform: list[ExpectedBusbw]

    def of(self, platform: str | None) -> ExpectedBusbw | None:
        """The platform's figure; None for a platform with none (or none named)."""
        return next((e for e in self.platform if e.name == platform), None) if platform else None


def load_busbw(path: Path | None = None) -> BusbwPolicy:
    """The defaults, or the user's file (argument or $FABRICBOT_BUSBW) table by table over them."""
    return load_policy(BusbwPolicy, DEFAULT_FILE, ENV_FILE, "expected bus bandwidth file", path, {})


@cache
def default_busbw() -> BusbwPolicy:
    return load_busbw()
