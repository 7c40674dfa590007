"""Deciding a draft is all or nothing, and start-up mends what a crash left: unit cases and a kill -9 loop."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from bot.audit import AuditLog
from bot.state import DRAFTS, BotState, Draft
from bot.storage import open_db
from bot.workflow import filing
from bot.workflow.tracker import FilingResult, SqliteTracker

ROOT = Path(__file__).resolve().parents[2]


class Parts:
    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db, self.audit, self.tracker, self.state = db, AuditLog(db), SqliteTracker(db), BotState(db)

    def record(self, kind: str, *, actor: str, subject: str = "", **detail: Any) -> int:
        return self.audit.record(kind, actor=actor, subject=subject, detail=detail)

    def draft(self, slug: str = "gpu2-link1") -> int:
        return self.state.save_draft(analysis_id=0, node_id="node-12", component=f"part {slug}", slug=slug,
                                     markdown="# draft", priority="high", drafted_by="rules", channel="COPS")

    def decide(self, draft_id: int, *, filing_: bool = True) -> filing.Decision | None:
        return filing.decide(state=self.state, tracker=self.tracker, record=self.record, draft_id=draft_id,
                             actor="UBOB", filing=filing_, evidence=lambda d: [f"evidence {d.id}"])

    def recover(self) -> filing.Recovered:
        return filing.recover(state=self.state, tracker=self.tracker, audit=self.audit, record=self.record)


@pytest.fixture
def parts() -> Parts:
    return Parts(open_db(None))


def _kinds(parts: Parts) -> list[str]:
    return [e["kind"] for e in parts.audit.entries()]


def test_filing_writes_the_ticket_its_history_the_draft_and_both_audit_entries(parts: Parts) -> None:
    decision = parts.decide(parts.draft())
    assert decision is not None and decision.result is not None and decision.result.created
    ticket = decision.result.ticket
    draft = parts.state.draft(decision.draft.id)
    assert draft is not None and (draft.status, draft.ticket_id) == ("filed", ticket.id)
    assert [h["note"] for h in parts.tracker.history(ticket.id)] == ["filed"]
    assert _kinds(parts) == ["approval", "filing"]
    assert parts.decide(decision.draft.id) is None  # a second click decides nothing


def test_the_ticket_keeps_the_parts_its_repair_will_be_verified_on(parts: Parts) -> None:
    draft_id = parts.draft("nvswitch-1")
    decision = filing.decide(state=parts.state, tracker=parts.tracker, record=parts.record, draft_id=draft_id,
                             actor="UBOB", filing=True, evidence=lambda d: [],
                             parts=lambda d: [d.slug, "gpu0-nvlink3", "gpu1-nvlink3"])
    assert decision is not None and decision.result is not None
    assert decision.result.ticket.parts == ("gpu0-nvlink3", "gpu1-nvlink3", "nvswitch-1")


def test_a_tracker_that_fails_after_writing_leaves_nothing_behind(parts: Parts) -> None:
    draft_id = parts.draft()
    real = parts.tracker.file

    def file_then_fail(**kwargs: Any) -> FilingResult:
        real(**kwargs)
        raise RuntimeError("tracker fell over")

    parts.tracker.file = file_then_fail  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        parts.decide(draft_id)
    draft = parts.state.draft(draft_id)
    assert draft is not None and (draft.status, draft.ticket_id) == ("pending", None)
    assert parts.tracker.tickets() == [] and _kinds(parts) == []
    parts.tracker.file = real  # type: ignore[method-assign]
    decision = parts.decide(draft_id)  # the next click files it, once
    assert decision is not None and decision.result is not None and decision.result.ticket.id == "FAB-0001"


def test_a_discard_is_one_state_change_and_one_entry(parts: Parts) -> None:
    decision = parts.decide(parts.draft(), filing_=False)
    assert decision is not None and decision.result is None
    assert parts.state.draft(decision.draft.id).status == "discarded"  # type: ignore[union-attr]
    assert _kinds(parts) == ["discard"] and parts.tracker.tickets() == []


def test_recovery_mends_a_stuck_draft_a_ticket_without_history_and_one_without_its_audit_entry(parts: Parts) -> None:
    lone, covered = parts.draft("gpu0-link0"), parts.draft("gpu5-link2")
    parts.state.update_draft(lone, status=filing.FILING)
    parts.state.update_draft(covered, status=filing.FILING)
    # as the old, non-atomic filing could leave them: a ticket whose history and audit rows never came
    for slug in ("gpu5-link2", "gpu7-link4"):
        parts.tracker.file(node_id="node-12", component=f"part {slug}", slug=slug, title="t", body="b",
                           priority="high", actor="UBOB", evidence=[])
    parts.db.execute("delete from ticket_history")
    mended = parts.recover()
    assert mended.drafts_pending == (lone,) and mended.drafts_filed == (covered,)
    # FAB-0001's recovery entry names it through its draft; FAB-0002 had no trace in the trail at all
    assert mended.tickets_with_history == ("FAB-0001", "FAB-0002") and mended.tickets_audited == ("FAB-0002",)
    assert parts.state.draft(lone).status == "pending"  # type: ignore[union-attr]
    assert parts.state.draft(covered).ticket_id == "FAB-0001"  # type: ignore[union-attr]
    assert parts.tracker.history("FAB-0001")[0]["note"].startswith("filed (history row restored")
    assert _kinds(parts).count("recovery") == 5
    assert not parts.recover()  # nothing is mended twice


def _consistent(store: Path) -> filing.Recovered:
    """Check every invariant a crash must not break, then run start-up recovery (which must find nothing)."""
    db = open_db(store)
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    parts = Parts(db)
    drafts = [Draft(**r) for r in db[DRAFTS].rows]
    entries = list(parts.audit.entries())
    by_kind = {k: [e for e in entries if e["kind"] == k] for k in ("approval", "filing", "discard")}
    tickets = {t.id: t for t in parts.tracker.tickets()}
    assert {d.status for d in drafts} <= {"pending", "filed", "discarded"}
    filed = [d for d in drafts if d.status == "filed"]
    assert all(d.ticket_id in tickets for d in filed)
    assert all(d.ticket_id is None for d in drafts if d.status != "filed")
    assert sorted(e["detail"]["draft"] for e in by_kind["approval"]) == sorted(d.id for d in filed)
    assert sorted(e["detail"]["draft"] for e in by_kind["discard"]) == sorted(
        d.id for d in drafts if d.status == "discarded")
    assert len(by_kind["filing"]) == len(filed)
    assert {e["detail"]["ticket"] for e in by_kind["filing"]} == set(tickets)
    assert all(parts.tracker.history(t) for t in tickets)
    mended = parts.recover()
    db.conn.close()
    return mended


def test_killing_the_filer_at_random_points_never_leaves_a_state_between(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed_midway = 0
    server = subprocess.Popen([sys.executable, "-m", "tests.bot.filer"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        assert server.stdout.readline().strip() == "ready"
        for run in range(20):
            store = tmp_path / f"store-{run}"
            server.stdin.write(f"{store} 2000\n")  # enough that a kill lands mid-way on a fast machine
            server.stdin.flush()
            said, pid = server.stdout.readline().split()
            assert said == "filing", said
            time.sleep(rng.uniform(0.0, 0.25))
            with contextlib.suppress(ProcessLookupError):  # it finished and was reaped first
                os.kill(int(pid), signal.SIGKILL)
            while (line := server.stdout.readline().split())[:1] != ["exited"]:  # "done PID" if it finished first
                assert line, "the filer server stopped"
            assert line[1] == pid
            mended = _consistent(store)
            assert not mended, f"run {run}: a kill left states between: {mended}"
            drafts = list(open_db(store)[DRAFTS].rows)
            killed_midway += any(d["status"] == "pending" for d in drafts) and any(
                d["status"] != "pending" for d in drafts)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    assert killed_midway >= 15  # the kills really landed while it was filing
