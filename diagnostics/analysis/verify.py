"""Did a repair hold? The repaired part judged window by window, by the rules that found it, on readings since.

Only what the store holds from the repair on is read, so the errors that opened the ticket can never count against
the repair; a window in which the part has no reading proves nothing either way and is not counted as clean.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from enum import StrEnum

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from .. import format as fmt
from ..config.thresholds import Thresholds
from ..config.verification import VerificationPolicy, load_verification
from ..enums import Severity, severity_rank
from ..model import Diagnosis, Finding
from .node import analyze_tables


class RepairVerdict(StrEnum):
    HOLDING = "holding"  # clean so far, the soak not yet over (or too few readings to say)
    HELD = "held"  # the whole soak clean: close the ticket
    FAILED = "failed"  # the errors came back: reopen, escalated to replacement


class RepairCheck(BaseModel):
    """One verification of a repaired part: the verdict, how much of the soak the readings cover, and why."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    parts: list[str] = Field(description="The slugs judged: the ticket's part and the links it stands for.")
    repaired_at: datetime
    checked_to: datetime | None = Field(description="The end of the last window judged; None with no reading.")
    soak_hours: float
    windows: int = Field(description="Windows judged since the repair.")
    covered: int = Field(description="Of those, windows holding a reading of the part.")
    verdict: RepairVerdict
    evidence: list[str] = Field(default_factory=list)

    @property
    def summary(self) -> str:
        if self.verdict is RepairVerdict.FAILED:
            return f"the repair did not hold: {self.evidence[0]}" if self.evidence else "the repair did not hold"
        clean = fmt.hours(float(self.covered))
        if self.verdict is RepairVerdict.HELD:
            return f"the repair held: {clean} of readings clean since {fmt.when(self.repaired_at)}"
        return (f"{clean} clean of the {fmt.hours(self.soak_hours)} soak since {fmt.when(self.repaired_at)}"
                + (f" ({self.evidence[0]})" if self.evidence else ""))


def _hits(diagnosis: Diagnosis, parts: Collection[str], worst: Severity) -> list[Finding]:
    floor = severity_rank(worst)
    return [f for f in diagnosis.findings if f.ref.slug in parts and severity_rank(f.severity) >= floor]


def _line(finding: Finding, end: datetime | None) -> str:
    said = "; ".join(c.message for c in finding.crossed) or f"{finding.severity.value}"
    return f"{finding.component} in the window to {fmt.when(end)}: {said}"


def check_repair(tables: Mapping[str, pd.DataFrame], *, node_id: str, parts: Collection[str],
                 repaired_at: datetime, now: datetime | None, policy: VerificationPolicy | None = None,
                 thresholds: Thresholds | None = None, platform: str | None = None,
                 platforms: Mapping[str, str] | None = None) -> RepairCheck:
    """Judge `parts` of `node_id` in each window from `repaired_at` to `now` (tables hold only readings since)."""
    policy = policy or load_verification()
    worst = Severity.WARNING if policy.reopen_at == "warning" else Severity.FAILING
    step = policy.window
    soak_windows = max(1, round(policy.soak / step))
    windows = covered = 0
    end = repaired_at + step
    checked_to: datetime | None = None
    notes: list[str] = []

    def done(verdict: RepairVerdict, evidence: list[str]) -> RepairCheck:
        return RepairCheck(node_id=node_id, parts=sorted(parts), repaired_at=repaired_at, soak_hours=policy.soak_hours,
                           checked_to=checked_to, windows=windows, covered=covered, verdict=verdict,
                           evidence=evidence)

    while now is not None and end <= now and windows < soak_windows:
        diagnosis = analyze_tables(tables, node_id=node_id, window=step, end=end, thresholds=thresholds,
                                   platform=platform, platforms=platforms)
        windows += 1
        checked_to = end
        seen = [f for f in diagnosis.findings if f.ref.slug in parts and (f.counts or f.crossed)]
        covered += bool(seen)
        hits = _hits(diagnosis, parts, worst)
        if hits:
            return done(RepairVerdict.FAILED, [_line(f, end) for f in hits])
        notes += [_line(f, end) for f in _hits(diagnosis, parts, Severity.WARNING)][:3 - len(notes)]
        end += step
    held = windows >= soak_windows and covered >= policy.min_coverage * soak_windows
    if windows >= soak_windows and not held:
        notes.insert(0, f"only {covered} of {windows} windows hold a reading of the part "
                        f"(at least {policy.min_coverage:.0%} needed)")
    elif windows == 0:
        notes.insert(0, f"no full {fmt.hours(policy.window_hours)} window of readings since the repair")
    return done(RepairVerdict.HELD if held else RepairVerdict.HOLDING, notes)
