"""The snapshot JSON format: one object, a list of them, or the seed list of {"input", "expected_output"} cases.

Each case is validated on its own, so one bad case never hides the good ones. As the "snapshot" reader, a
snapshot becomes link_samples and step_samples (see `snapshot_tables` for how its window is kept).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
from pydantic import ValidationError

from ..enums import LinkType
from ..errors import InputError
from ..snapshots import Snapshot
from ..tables import LINK_SAMPLES, STEP_SAMPLES
from .base import IngestResult, IngestWarning, Source


@dataclass
class Case:
    """One snapshot from a file: the parsed snapshot or the error that stopped it, and any expectations."""

    index: int
    label: str
    snapshot: Snapshot | None = None
    expected: dict[str, Any] | None = None
    errors: list[InputError] = field(default_factory=list)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_errors(exc: ValidationError, source: str) -> list[InputError]:
    """Each pydantic error as an InputError naming the source, field and value."""
    errors = []
    for err in exc.errors():
        field_name = _loc(tuple(err["loc"])) or None
        message = err["msg"].removeprefix("Value error, ")
        value = err.get("input") if err["type"] not in ("missing",) and field_name else None
        if isinstance(value, dict):
            value = None  # the whole object is not a useful value to quote
        errors.append(InputError(message, source=source, field=field_name, value=value))
    return errors


# What JSON's first characters are: `[` then a value (an object, a list, a string, a number) or its end, `{` then
# a key or its end; a shell prompt in brackets (`[root@host ~]#`) or a kernel log's `[   5.123456]` stamp is none.
_JSON_START = re.compile(r'\s*(?:\[\s*(?:[\[{"\]\-0-9]|\Z)|\{\s*(?:["}]|\Z))')
_KERNEL_STAMP = re.compile(r"\s*\[\s*\d+\.\d+\]")


def looks_like_json(text: str) -> bool:
    """Whether a text that failed to parse is told JSON's error: only where it plausibly is JSON. Text that starts
    with `[` or `{` for another reason gets the refusal every other door gives (its format, --format)."""
    return bool(_JSON_START.match(text)) and not _KERNEL_STAMP.match(text)


def parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # json's msg stops where its own message would go on ("Unterminated string starting at"): give the place
        where = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
        if not text[exc.pos:].strip() or exc.msg.startswith("Unterminated string"):
            where += ": the file ends inside it (cut off?)"
        raise InputError(f"not valid JSON: {where}", source=source, line=exc.lineno) from None


def _node_label(raw: Any) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("node_id"), str):
        return raw["node_id"]
    return "?"


def read_cases(text: str, source: str = "<input>") -> list[Case]:
    """Parse a snapshot file into cases. Raises InputError only when nothing in it can be a case."""
    data = parse_json(text, source)
    items = data if isinstance(data, list) else [data]
    if isinstance(data, list) and not data:
        raise InputError("the list of snapshots is empty", source=source)
    cases = []
    for i, item in enumerate(items):
        expected = None
        raw = item
        if isinstance(item, dict) and "input" in item:
            raw = item["input"]
            expected = item.get("expected_output")
        label = f"case {i + 1} ({_node_label(raw)})" if isinstance(data, list) else _node_label(raw)
        case = Case(index=i, label=label, expected=expected)
        if not isinstance(raw, dict):
            case.errors.append(InputError("a snapshot must be a JSON object", source=f"{source} {label}",
                                          value=type(raw).__name__))
        else:
            try:
                case.snapshot = Snapshot.model_validate(raw)
            except ValidationError as exc:
                case.errors.extend(validation_errors(exc, f"{source} {label}"))
        cases.append(case)
    return cases


# ---- the snapshot as a reader of normalized tables ----
#
# A snapshot states counts accumulated over `window_hours`, not lifetime totals. It becomes two readings of
# each link, one window apart: zero at the window's start and the stated counts at its end, so that a rate
# computed from link_samples (difference / elapsed time) gives back exactly count / window_hours. The step time
# becomes two step_samples of job `snapshot:<node>`: the baseline at the window's start, the current step time
# at its end. A snapshot carries no clock time: the window ends at `at` when the caller gives one, else at
# SNAPSHOT_EPOCH + window_hours (1970-01-01, plainly not a real time).

SNAPSHOT_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_COUNTS = {"crc_errors": "crc_flit", "replay_count": "replay", "recovery_count": "recovery"}
# A PCIe link keeps replays (and AER's kinds per end, which a snapshot does not give): no CRC flit or recovery
# counter, so a PCIe reading's `crc_errors` and `recovery_count` are not read (PCIe r4.0 sec. 6.2.7: an LCRC failure
# is a Bad TLP, counted by the receiving end's AER, and a snapshot names no end).
_PCIE_COUNTS = {"replay_count": "replay"}
# A node record's `reading`: its link readings list only the links a person chose, so a link or GPU they leave out
# is not missing (kept with the node, so the store's answer is the file's).
LISTED = "snapshot"
# ... or: its newest input stops short (a file cut inside a line, a paste its author elided with `[...]`), so a link
# or GPU it does not reach is not missing either; the links it holds are the tool's own, not a person's choice
CUT_SHORT = "cut short"
# ... and of those, an input cut off inside its text (not one of some GPUs alone, as `nvidia-smi -i` reads): what
# follows the cut (a GPU, a link, a dcgm-exporter scrape's later metric families) is not read, so no fault found in
# it is no all-clear
CUT_OFF = "cut off"


def snapshot_record(snapshot: Snapshot) -> dict[str, str]:
    """What a snapshot says of its node: its platform when it names one, and that it lists only some links."""
    return {"node_id": snapshot.node_id, "reading": LISTED, **({"platform": snapshot.platform}
                                                              if snapshot.platform else {})}


def unread_counts(snapshot: Snapshot) -> list[str]:
    """What a snapshot states that its link type does not count: said, never stored as another link's counter."""
    out = []
    for i, reading in enumerate(snapshot.fabric_errors):
        if reading.kind is not LinkType.PCIE:
            continue
        extra = {k: getattr(reading, k) for k in _COUNTS if k not in _PCIE_COUNTS and getattr(reading, k)}
        if extra:
            said = ", ".join(f"{k}={v}" for k, v in extra.items())
            out.append(f"fabric_errors[{i}] (GPU {reading.gpu_src} PCIe): {said} not read: a PCIe link counts replays "
                       "and AER's Bad TLP/Bad DLLP/receiver errors per end (lspci -vvv, sysfs aer_dev_correctable), "
                       "not NVLink's CRC and recovery counters")
    return out


def snapshot_tables(snapshot: Snapshot, source: str, at: datetime | None = None) -> dict[str, pd.DataFrame]:
    end = at or SNAPSHOT_EPOCH + timedelta(hours=snapshot.window_hours)
    start = end - timedelta(hours=snapshot.window_hours)
    links: list[dict[str, Any]] = []
    for i, reading in enumerate(snapshot.fabric_errors):
        kind = reading.kind
        base = {
            "node_id": snapshot.node_id, "gpu": reading.gpu_src, "link_type": kind.value,
            "link": reading.link_number, "gpu_total": False, "link_state": reading.link_state.value,
            "peer": f"GPU {reading.gpu_dst}" if reading.gpu_dst is not None else "unknown",
            "saturated": False, "source": f"{source} fabric_errors[{i}]",
        }
        counts = _PCIE_COUNTS if kind is LinkType.PCIE else _COUNTS
        links.append({**base, "timestamp": start, **dict.fromkeys(counts.values(), 0.0)})
        links.append({**base, "timestamp": end, **{c: float(getattr(reading, k)) for k, c in counts.items()}})
    job = f"snapshot:{snapshot.node_id}"
    steps = [
        {"timestamp": start, "job_id": job, "node_ids": snapshot.node_id,
         "step_time_ms": float(snapshot.baseline_step_time_ms), "source": f"{source} baseline_step_time_ms",
         "baseline": True},
        {"timestamp": end, "job_id": job, "node_ids": snapshot.node_id,
         "step_time_ms": float(snapshot.step_time_ms), "source": f"{source} step_time_ms",
         "baseline": False},
    ]
    return {"link_samples": LINK_SAMPLES.conform(pd.DataFrame(links)),
            "step_samples": STEP_SAMPLES.conform(pd.DataFrame(steps))}


class SnapshotReader:
    name = "snapshot"

    def sniff(self, head: str) -> float:
        text = head.lstrip()
        return 0.95 if text[:1] in "{[" and '"fabric_errors"' in head else 0.0

    def read(self, source: Source, *, node_id: str | None = None, at: datetime | None = None) -> IngestResult:
        with source.open_text(keep_tail=True) as fh:  # JSON shows its own end: a cut document does not parse
            cases = read_cases(fh.read(), source.name)
        warnings: list[IngestWarning] = []
        results: list[IngestResult] = []
        for case in cases:
            for err in case.errors:
                warnings.append(IngestWarning(source.name, err.line, str(err)))
            if case.snapshot is not None:
                warnings.extend(IngestWarning(source.name, None, f"{case.label}: {w}")
                                for w in unread_counts(case.snapshot))
                snap = _links_once(case.snapshot, f"{source.name} {case.label}", warnings)
                snap = snap if node_id is None else snap.model_copy(update={"node_id": node_id})
                tables = snapshot_tables(snap, f"{source.name} {case.label}", at)
                result = IngestResult.of([], link_samples=tables["link_samples"],
                                         step_samples=tables["step_samples"])
                result.nodes = pd.DataFrame([snapshot_record(snap)])
                results.append(result)
        if not results:
            raise InputError("no valid snapshot in the file", source=source.name,
                             value="; ".join(w.message for w in warnings[:3]) or None)
        combined = IngestResult.combine(results)
        combined.warnings = warnings
        return combined


def _links_once(snapshot: Snapshot, where: str, warnings: list[IngestWarning]) -> Snapshot:
    """A link listed twice in one snapshot is read once (its first listing), and said: two readings of one link
    over one window cannot both be its counts."""
    seen: dict[tuple[Any, ...], int] = {}
    kept = []
    for i, link in enumerate(snapshot.fabric_errors):
        key = (link.gpu_src, link.gpu_dst, link.kind, link.link_number)
        if key in seen:
            warnings.append(IngestWarning(where, None, f"fabric_errors[{i}] is the link of fabric_errors[{seen[key]}] "
                                                       f"({link.link_id}) again; the first listing is read"))
            continue
        seen[key] = i
        kept.append(link)
    return snapshot if len(kept) == len(snapshot.fabric_errors) else snapshot.model_copy(
        update={"fabric_errors": kept})


READER = SnapshotReader()


def with_platform(snapshot: Snapshot, platform: str | None) -> Snapshot:
    """The snapshot on the platform a person named (`--platform` wins over the file's), checked as a file's is."""
    if not platform or platform == snapshot.platform:
        return snapshot
    try:
        return Snapshot.model_validate({**snapshot.model_dump(), "platform": platform})
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise InputError(reason, source=snapshot.node_id, field="--platform", value=platform) from None
