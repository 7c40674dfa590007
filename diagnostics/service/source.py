"""Where the service reads telemetry: one interface over snapshot files, tables in memory, the store and Prometheus.

A source answers for the nodes, jobs and racks it knows and reads a window of the normalized tables the way the
store does (each node's link samples in (end - span, end], their events to the end, the step samples of jobs on
them, their GPUs, topology and node records), so the engine gets the same rows whichever source holds them.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import pandas as pd

from ..analysis.jobs import History
from ..errors import InputError, shown_value
from ..model import RackSlot
from ..names import case_matches, resolve_name, unpadded
from ..store.database import connect
from ..store.maintenance import Maintenance, MaintenanceLog


@dataclass
class Window:
    """What a source read for one question: the tables, the window's end, and what the read could not show."""

    tables: dict[str, pd.DataFrame]
    end: datetime | None
    platforms: dict[str, str] = field(default_factory=dict)  # node -> platform, as the source's inventory says
    racks: dict[str, RackSlot] = field(default_factory=dict)  # host -> rack and tray slot
    newest: dict[str, datetime] = field(default_factory=dict)  # each asked node's newest link reading, at any time
    undated: dict[str, int] = field(default_factory=dict)  # per asked node, readings no window can place
    maintenance: dict[str, list[Maintenance]] = field(default_factory=dict)  # per asked node, its planned work
    history: History | None = None  # more link samples, for a job's correlation beyond the window
    warnings: list[str] = field(default_factory=list)  # what reading it said (a server's partial answer)
    expected_gpus: dict[str, list[int]] | None = None  # a read narrowed to some GPUs of a node
    listed: set[str] = field(default_factory=set)  # nodes whose readings list only some links (snapshots)
    cut: set[str] = field(default_factory=set)  # nodes whose input stops short: what it does not reach is unknown
    cut_off: set[str] = field(default_factory=set)  # ... of those, cut inside its text: no fault found is no all-clear
    unreadable: dict[str, str] = field(default_factory=dict)  # node -> why its stored readings could not be read
    said: dict[str, list[str]] = field(default_factory=dict)  # per node, what reading its stored files said
    later: dict[str, datetime] = field(default_factory=dict)  # nodes with only events, newer than the end: the newest
    late: dict[str, datetime] = field(default_factory=dict)  # nodes with link readings whose events run past the end
    oldest: dict[str, datetime] = field(default_factory=dict)  # each asked node's oldest link reading, at any time
    undated_events: dict[str, int] = field(default_factory=dict)  # per asked node, stored events no window places


def marked_nodes(records: pd.DataFrame | None, reading: str) -> set[str]:
    """The nodes whose records carry this mark of how they were read: LISTED, their readings list only the links a
    person chose (a snapshot's); CUT_SHORT, their newest input stops short (CUT_OFF: cut inside its text)."""
    if records is None or not len(records) or "reading" not in records.columns:
        return set()
    return {str(n) for n, r in zip(records["node_id"], records["reading"], strict=True) if r == reading}


class Source(Protocol):
    """What the service asks of the data. `window_of` is the window a source's readings fix (a snapshot's), or None
    when any window can be read."""

    name: str

    def nodes(self) -> list[str]: ...

    def jobs(self) -> list[str]: ...

    def job_nodes(self, job_id: str) -> list[str]: ...

    def racks(self) -> dict[str, RackSlot]: ...

    def newest(self, nodes: Collection[str] | None = None) -> datetime | None: ...

    def window_of(self, node: str) -> timedelta | None: ...

    def read(self, *, nodes: Collection[str] | None, end: datetime | None, span: timedelta, peers: bool = False,
             steps: timedelta | None = None) -> Window: ...

    def maintenance(self) -> MaintenanceLog: ...


def memory_log() -> MaintenanceLog:
    """Planned work kept for this process only (a source with no store), shared by listener threads."""
    return MaintenanceLog(connect(None))


class Unstored:
    """What a source with no store of its own answers: planned work kept for this process, and any window."""

    _log: MaintenanceLog | None = None

    def window_of(self, node: str) -> timedelta | None:
        return None

    def maintenance(self) -> MaintenanceLog:
        if self._log is None:
            self._log = memory_log()
        return self._log

    def hold(self, log: MaintenanceLog) -> None:
        """Judge with these planned-work windows from now on (a worker's copy, given its asker's)."""
        self._log = log

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its planned work: that belongs to this process (a copy is given it with `hold`)."""
        return {**self.__dict__, "_log": None}


class UnknownName(InputError):
    """A node, job or rack the source does not hold; carries the close matches for a helpful reply, and names a few
    it does hold."""

    def __init__(self, kind: str, name: str, matches: list[str], known: int, *, listed: Sequence[str] = (),
                 where: str | None = None, field: str | None = None, note: str | None = None) -> None:
        self.kind = kind
        self.name = name
        self.matches = matches
        self.note = note  # what to do when none is known (a rack: the inventory that names racks)
        shown = ", ".join(listed[:10]) + (" ..." if len(listed) > 10 else "")
        place = f" in the {where}" if where else ""
        among = f" ({known} known: {shown})" if shown else f" among {known} known"
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        said = f"; {note}" if note and not known else ""
        super().__init__(f"no {kind} {shown_value(name)}{place}{among}{hint}{said}", field=field)


def close_matches(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """The names most like `name`, compared without regard to case (host names are case-insensitive, RFC 4343:
    `HPC-GPU-NODE-12` is most like `hpc-gpu-node-12`), each as the source holds it."""
    held: dict[str, str] = {}
    for other in names:
        held.setdefault(other.casefold(), other)
    mine = unpadded(name)
    same = sorted(other for other in held.values() if unpadded(other) == mine)  # node-1 for node-01
    close = [held[m] for m in difflib.get_close_matches(name.casefold(), list(held), n=n, cutoff=0.5)]
    return list(dict.fromkeys([*same, *close]))[:n]


def known(kind: str, name: str, names: list[str], *, where: str | None = None, field: str | None = None,
          note: str | None = None) -> str:
    """`name` when the source holds it, or the one name it is once Unicode-normalised (NFKC: a full-width name
    typed in Slack); else UnknownName with its close matches (and `note`, said when the source holds none)."""
    found = resolve_name(name, names)
    if found is None:
        cased = case_matches(name, names)  # several: each offered
        raise UnknownName(kind, name, cased if len(cased) > 1 else close_matches(name, names), len(names),
                          listed=names, where=where, field=field, note=note)
    return found
