"""Outputs fabricbot knows and does not read (data/unread_outputs.toml): a paste of one is refused as what it is, with
what to give instead, not as an unknown format."""

from __future__ import annotations

import re
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .datafiles import DATA_DIR, load_policy


class UnreadOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    pattern: str
    instead: str


class UnreadOutputs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    output: list[UnreadOutput] = Field(default_factory=list)
    read_beside: list[str] = Field(default_factory=list)  # lines a reader reads in other outputs: no refusal by name

    def said(self, head: str) -> str | None:
        """Why the input is refused, where a line of its head starts as one of these outputs does; none where it
        also names a GPU nvidia-smi could not reach (`... GPU is lost`), which the readers read in its other outputs:
        a refusal by name would steer the engineer away from it (`read_beside`)."""
        lines = [line.strip() for line in head.splitlines()]
        if any(_compiled(p).match(line) for p in self.read_beside for line in lines):
            return None
        for out in self.output:
            form = _compiled(out.pattern)
            if any(form.match(line) for line in lines):
                return f"it is {out.name}, which fabricbot does not read: give {out.instead}"
        return None


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def unread_outputs() -> UnreadOutputs:
    """The shipped list, with the entries of the user's file ($FABRICBOT_UNREAD_OUTPUTS) in its place where set."""
    return load_policy(UnreadOutputs, DATA_DIR / "unread_outputs.toml", "FABRICBOT_UNREAD_OUTPUTS",
                       "list of outputs not read", None, {})
