"""Where the bot gets diagnoses: a small "node source" interface over whatever data the store holds.

`SnapshotNodeSource` diagnoses nodes from snapshot JSON (the seed examples) with the snapshot analyzer.
A store-backed source implements the same protocol over the telemetry store's tables.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from diagnostics import Diagnosis, Snapshot, analyze_snapshot
from diagnostics.errors import InputError
from diagnostics.ingest.snapshot import read_cases
from diagnostics.thresholds import Thresholds, load_thresholds


class UnknownName(InputError):
    """A node or job the source does not hold; carries the close matches for a helpful reply."""

    def __init__(self, kind: str, name: str, matches: list[str], known: int) -> None:
        self.kind = kind
        self.name = name
        self.matches = matches
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        super().__init__(f"no {kind} named {name!r} among {known} known{hint}")


def close_matches(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(name, list(names), n=n, cutoff=0.5)


class NodeSource(Protocol):
    """What the bot asks of the data: diagnose a node, explain a job, rank the fleet."""

    def node_ids(self) -> list[str]: ...

    def job_ids(self) -> list[str]: ...

    def diagnose(self, node_id: str, *, window_hours: float | None = None) -> Diagnosis: ...

    def explain_job(self, job_id: str) -> Diagnosis: ...

    def fleet(self) -> list[Diagnosis]: ...


class SnapshotNodeSource:
    """Nodes from snapshot JSON files; a snapshot carries its own window, so `window_hours` cannot change it."""

    def __init__(self, snapshots: Iterable[Snapshot], thresholds: Thresholds | None = None) -> None:
        self.snapshots = {s.node_id: s for s in snapshots}
        self.thresholds = thresholds or load_thresholds()

    @classmethod
    def from_files(cls, paths: Iterable[Path]) -> SnapshotNodeSource:
        snapshots = []
        for path in paths:
            for case in read_cases(path.read_text(encoding="utf-8"), str(path)):
                if case.snapshot is None:
                    raise case.errors[0]
                snapshots.append(case.snapshot)
        return cls(snapshots)

    def node_ids(self) -> list[str]:
        return sorted(self.snapshots)

    def job_ids(self) -> list[str]:
        return []

    def diagnose(self, node_id: str, *, window_hours: float | None = None) -> Diagnosis:
        snapshot = self.snapshots.get(node_id)
        if snapshot is None:
            raise UnknownName("node", node_id, close_matches(node_id, self.snapshots), len(self.snapshots))
        diagnosis = analyze_snapshot(snapshot, self.thresholds)
        if window_hours is not None and window_hours != diagnosis.window_hours:
            note = (f"the snapshot covers {diagnosis.window_hours:g}h; "
                    f"a {window_hours:g}h window needs time-series data in the store")
            diagnosis = diagnosis.model_copy(update={"warnings": [*diagnosis.warnings, note]})
        return diagnosis

    def explain_job(self, job_id: str) -> Diagnosis:
        raise UnknownName("job", job_id, [], 0)

    def fleet(self) -> list[Diagnosis]:
        return [self.diagnose(n) for n in self.node_ids()]
