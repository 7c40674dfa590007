"""Did a repair hold? The repaired part judged window by window, by the rules that found it, on readings since.

Only what the store holds from the repair on is read, so the errors that opened the ticket can never count against
the repair; a window in which the part has no reading proves nothing either way and is not counted as clean. Nor
does an idle part: the soak holds only with traffic on the part (a job stepping on the node, or its links carrying
load) or a post-repair diagnostic (`dcgmi diag -r 3`) that passed; one that failed reopens the ticket. The part is
followed by its GPU's UUID: after a swap test the module that was at GPU 2 may be GPU 5, and its errors there are
the module's, so they reopen its ticket too.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from datetime import datetime
from enum import StrEnum

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from .. import format as fmt
from ..config.thresholds import Thresholds, load_thresholds
from ..config.verification import VerificationPolicy, load_verification
from ..enums import Severity, severity_rank
from ..model import Diagnosis, Finding
from .node import analyze_tables


class RepairVerdict(StrEnum):
    HOLDING = "holding"  # clean so far, the soak not yet over (or too few readings to say)
    HELD = "held"  # the whole soak clean: close the ticket
    FAILED = "failed"  # the errors came back: reopen, escalated to replacement


# The diagnostic a ticket's repair steps run on the drained node (repairs.toml's `diag` step): its result is the one
# a technician reports, so the verification names the same level.
DIAGNOSTIC = "dcgmi diag -r 3"


class Diagnostic(BaseModel):
    """A post-repair diagnostic's result, as the technician reports it (`DIAGNOSTIC`)."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    passed: bool
    command: str = DIAGNOSTIC


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
    loaded: int = Field(default=0, description="Of those, windows with traffic on the part (a job or link load).")
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


def uuids(tables: Mapping[str, pd.DataFrame], node_id: str, before: datetime | None = None) -> dict[int, str]:
    """GPU index -> UUID on the node, as its GPU table or link readings name them (the newest reading wins; only
    readings before `before` where given)."""
    out: dict[int, str] = {}
    for name, column in (("link_samples", "gpu_uuid"), ("gpus", "uuid")):
        frame = tables.get(name)
        if frame is None or frame.empty or column not in frame.columns:
            continue
        rows = frame[(frame["node_id"].astype("string") == node_id).fillna(False).to_numpy(bool)
                     & frame[column].notna().to_numpy(bool) & frame["gpu"].notna().to_numpy(bool)]
        if "timestamp" in rows.columns:
            if before is not None:
                rows = rows[(rows["timestamp"] < pd.Timestamp(before)).to_numpy(bool, na_value=False)]
            rows = rows.sort_values("timestamp", kind="stable")
        out.update({int(g): str(u) for g, u in zip(rows["gpu"], rows[column], strict=True)})
    return out


def _gpu_of(slug: str) -> int | None:
    match = re.match(r"^gpu(\d+)(?:-|$)", slug)
    return int(match[1]) if match else None


def moved_parts(parts: Collection[str], before: Mapping[int, str], after: Mapping[int, str]) -> dict[str, str]:
    """The ticket's GPU parts whose module now sits at another index (its UUID found there): slug -> its slug now."""
    where = {u: g for g, u in after.items()}
    out = {}
    for slug in parts:
        gpu = _gpu_of(slug)
        uuid = before.get(gpu) if gpu is not None else None
        now = where.get(uuid) if uuid is not None else None
        if now is not None and now != gpu:
            out[slug] = re.sub(r"^gpu\d+", f"gpu{now}", slug)
    return out


def _loaded(tables: Mapping[str, pd.DataFrame], node_id: str, gpus: set[int] | None, start: datetime, end: datetime,
            thresholds: Thresholds) -> bool:
    """Whether the part carried traffic in (start, end]: a job logged steps on the node, or its GPUs' links (every
    link of the node for a switch) carried at least the busy setting in either direction."""
    lo, hi = pd.Timestamp(start), pd.Timestamp(end)
    steps = tables.get("step_samples")
    if steps is not None and len(steps) and "node_ids" in steps.columns:
        when = steps["timestamp"]
        named = steps["node_ids"].astype("string").fillna("").str.split(",").apply(
            lambda ids: node_id in [i.strip() for i in ids])
        if bool((named & (when > lo) & (when <= hi)).any()):
            return True
    links = tables.get("link_samples")
    if links is None or links.empty or not {"tx_bytes_per_s", "rx_bytes_per_s"} & set(links.columns):
        return False
    rows = links[(links["node_id"].astype("string") == node_id).fillna(False).to_numpy(bool)
                 & (links["timestamp"] > lo).to_numpy(bool) & (links["timestamp"] <= hi).to_numpy(bool)]
    if gpus is not None:
        rows = rows[rows["gpu"].isin(list(gpus)).to_numpy(bool, na_value=False)]
    busy = {"nvlink": thresholds.setting("nvlink_busy_bytes_per_s"), "nvswitch": thresholds.setting(
        "nvlink_busy_bytes_per_s"), "pcie": thresholds.setting("pcie_busy_bytes_per_s")}
    limit = rows["link_type"].astype("string").map(busy).astype("float64").to_numpy()
    traffic = pd.concat([rows.get(c, pd.Series(dtype="float64")) for c in ("tx_bytes_per_s", "rx_bytes_per_s")],
                        axis=1).max(axis=1).to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        return bool((traffic >= limit).any())


def check_repair(tables: Mapping[str, pd.DataFrame], *, node_id: str, parts: Collection[str],
                 repaired_at: datetime, now: datetime | None, policy: VerificationPolicy | None = None,
                 thresholds: Thresholds | None = None, platform: str | None = None,
                 platforms: Mapping[str, str] | None = None, uuids_before: Mapping[int, str] | None = None,
                 diagnostic: Diagnostic | None = None) -> RepairCheck:
    """Judge `parts` of `node_id` in each window from `repaired_at` to `now` (tables hold only readings since).
    `uuids_before` (GPU index -> UUID before the repair) follows a module that a swap test moved; `diagnostic` is a
    post-repair diagnostic's result, which proves the part under load as traffic does."""
    policy = policy or load_verification()
    thresholds = thresholds or load_thresholds()
    worst = Severity.WARNING if policy.reopen_at == "warning" else Severity.FAILING
    step = policy.window
    soak_windows = max(1, round(policy.soak / step))
    windows = covered = loaded = 0
    end = repaired_at + step
    checked_to: datetime | None = None
    notes: list[str] = []
    moved = moved_parts(parts, uuids_before or {}, uuids(tables, node_id)) if uuids_before else {}
    judged = set(parts) | set(moved.values())
    gpus = {g for s in judged if (g := _gpu_of(s)) is not None} if all(_gpu_of(s) is not None for s in judged) \
        else None

    def done(verdict: RepairVerdict, evidence: list[str]) -> RepairCheck:
        return RepairCheck(node_id=node_id, parts=sorted(judged), repaired_at=repaired_at,
                           soak_hours=policy.soak_hours, checked_to=checked_to, windows=windows, covered=covered,
                           loaded=loaded, verdict=verdict, evidence=evidence)

    if diagnostic is not None and not diagnostic.passed and diagnostic.at >= repaired_at:
        return done(RepairVerdict.FAILED, [f"`{diagnostic.command}` failed at {fmt.when(diagnostic.at)}, after the "
                                           "repair"])
    while now is not None and end <= now and windows < soak_windows:
        diagnosis = analyze_tables(tables, node_id=node_id, window=step, end=end, thresholds=thresholds,
                                   platform=platform, platforms=platforms)
        windows += 1
        checked_to = end
        seen = [f for f in diagnosis.findings if f.ref.slug in judged and (f.counts or f.crossed)]
        covered += bool(seen)
        loaded += _loaded(tables, node_id, gpus, end - step, end, thresholds)
        hits = _hits(diagnosis, judged, worst)
        if hits:
            return done(RepairVerdict.FAILED, [*_moved_said(hits, moved), *(_line(f, end) for f in hits)])
        notes += [_line(f, end) for f in _hits(diagnosis, judged, Severity.WARNING)][:3 - len(notes)]
        end += step
    since = end - step  # the readings after the last full window: errors there fail the repair now, not in an hour
    if now is not None and since < now and windows < soak_windows:
        diagnosis = analyze_tables(tables, node_id=node_id, window=now - since, end=now, thresholds=thresholds,
                                   platform=platform, platforms=platforms)
        hits = _hits(diagnosis, judged, worst)
        if hits:
            checked_to = now
            return done(RepairVerdict.FAILED, [*_moved_said(hits, moved), *(_line(f, now) for f in hits)])
    tested = diagnostic is not None and diagnostic.passed and diagnostic.at >= repaired_at
    covered_enough = windows >= soak_windows and covered >= policy.min_coverage * soak_windows
    held = covered_enough and (loaded > 0 or tested)
    if windows >= soak_windows and not covered_enough:
        notes.insert(0, f"only {covered} of {windows} windows hold a reading of the part "
                        f"(at least {policy.min_coverage:.0%} needed)")
    elif covered_enough and not held:
        notes.insert(0, "no traffic on the part in the soak and no post-repair diagnostic: an idle part proves "
                        "nothing (run `dcgmi diag -r 3` on the drained node and report its result, or return it to "
                        "service)")
    elif windows == 0:
        notes.insert(0, f"no full {fmt.hours(policy.window_hours)} window of readings since the repair")
    if tested and diagnostic is not None:
        notes.append(f"`{diagnostic.command}` passed at {fmt.when(diagnostic.at)}")
    if moved:
        notes.append("; ".join(f"{a}'s module (by its UUID) is now {b}" for a, b in sorted(moved.items())))
    return done(RepairVerdict.HELD if held else RepairVerdict.HOLDING, notes)


def _moved_said(hits: list[Finding], moved: Mapping[str, str]) -> list[str]:
    """Errors on a moved module's new place: they followed the module (the swap test's answer)."""
    back = {b: a for a, b in moved.items()}
    return [f"the errors followed the module: {back[f.ref.slug]} moved to {f.ref.slug} (the same GPU UUID) and its "
            "errors came with it: replace the module" for f in hits if f.ref.slug in back]
