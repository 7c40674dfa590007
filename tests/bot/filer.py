"""A process that files drafts one after another until it is killed: the kill loop's subject.

Run as `python -m tests.bot.filer STORE N`; prints "ready" once its drafts exist, then files them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bot.audit import AuditLog
from bot.state import BotState
from bot.storage import open_db
from bot.workflow import filing
from bot.workflow.tracker import SqliteTracker


def main(store: Path, n: int) -> None:
    db = open_db(store)
    audit, tracker, state = AuditLog(db), SqliteTracker(db), BotState(db)

    def record(kind: str, *, actor: str, subject: str = "", **detail: object) -> int:
        return audit.record(kind, actor=actor, subject=subject, detail=detail)

    ids = [state.save_draft(analysis_id=0, node_id="node-12", component=f"GPU {i % 8} NVLink {i % 5}",
                            slug=f"gpu{i % 8}-link{i % 5}", markdown=f"# draft {i}", priority="high",
                            drafted_by="rules", channel="COPS") for i in range(n)]
    print("ready", flush=True)
    for i, draft_id in enumerate(ids):
        filing.decide(state=state, tracker=tracker, record=record, draft_id=draft_id, actor="UBOB",
                      filing=i % 7 != 6, evidence=lambda d: [f"evidence of draft {d.id}"])
    print("done", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
