"""Wiring the app's dependencies from settings: store database, audit, tracker, drafter, node source."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypedDict

import sqlite_utils

from diagnostics.store import DB_NAME, TelemetryStore
from diagnostics.tickets import (
    Answerer,
    Drafter,
    ModelCall,
    ModelCheck,
    RulesAnswerer,
    RulesDrafter,
    answerer_from_env,
    model_name,
)

from .audit import AuditLog
from .drafting import Renderer, default_drafter
from .nodes import NodeSource, SnapshotNodeSource, StoreNodeSource
from .services import utc_now
from .settings import Settings
from .storage import db_lock, open_db
from .workflow.tracker import SqliteTracker

BUNDLED_SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "seed_examples.json"


class AppDeps(TypedDict):
    source: NodeSource
    drafter: Drafter
    tracker: SqliteTracker
    audit: AuditLog
    renderer: Renderer | None
    answerer: Answerer


@dataclass
class Runtime:
    """Everything `build_app` takes besides settings, built once per process."""

    db: sqlite_utils.Database
    audit: AuditLog
    tracker: SqliteTracker
    drafter: Drafter
    source: NodeSource
    answerer: Answerer
    notes: list[str] = field(default_factory=list)  # what the start-up checks found, said once

    def deps(self, renderer: Renderer | None) -> AppDeps:
        """The keyword arguments `build_app` and `LocalSlack` take besides settings."""
        return {"source": self.source, "drafter": self.drafter, "tracker": self.tracker, "audit": self.audit,
                "renderer": renderer, "answerer": self.answerer}


def model_call_recorder(audit: AuditLog, clock: Callable[[], datetime] = utc_now) -> Callable[[ModelCall], None]:
    """The drafter's callback: each model call (model, tokens, latency, outcome) goes to the audit trail."""

    def record(call: ModelCall) -> None:
        with db_lock(audit.db):
            audit.record("model_call", actor="fabricbot", subject=call.model, detail=call.model_dump(), at=clock())

    return record


def node_source(settings: Settings, snapshots: Sequence[Path] = ()) -> NodeSource:
    """Snapshot files when given; else the telemetry store when it holds nodes (read per request); else the bundled
    seed examples."""
    if snapshots:
        return SnapshotNodeSource.from_files(snapshots)
    if (settings.store / DB_NAME).exists() and TelemetryStore(settings.store).nodes():
        return StoreNodeSource(settings.store)
    return SnapshotNodeSource.from_files([BUNDLED_SNAPSHOTS])


ModelChecker = Callable[[str, str], ModelCheck]


def build_runtime(settings: Settings, *, source: NodeSource | None = None, db_path: Path | None = None,
                  clock: Callable[[], datetime] = utc_now, tracker_clock: Callable[[], str] | None = None,
                  model_check: ModelChecker | None = None) -> Runtime:
    """The runtime; with `model_check` and a key, Claude is checked once first and left out when unusable."""
    db = open_db(db_path if db_path is not None else settings.store)
    audit = AuditLog(db)
    tracker = SqliteTracker(db, clock=tracker_clock) if tracker_clock else SqliteTracker(db)
    recorder = model_call_recorder(audit, clock)
    rt = Runtime(db, audit, tracker, default_drafter(on_model_call=recorder), source or node_source(settings),
                 answerer_from_env(on_model_call=recorder))
    if model_check is not None and settings.anthropic_api_key:
        found = model_check(model_name(settings.model), settings.anthropic_api_key)
        rt.notes.append(found.note)
        if not found.usable:
            rt.drafter = RulesDrafter(notes=(f"Claude was unusable at start-up: {found.note}",))
            rt.answerer = RulesAnswerer()
    return rt
