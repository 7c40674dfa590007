"""A process that files drafts one after another until it is killed: the kill loop's subject.

Run as `python -m tests.bot.filer`: it imports the bot once and prints "ready"; then each line `STORE N` on its
input forks a filer that makes N drafts in STORE, prints `filing PID` and files them (prints `done PID` if it
lives that long); the server prints `exited PID STATUS` when that filer ends. Forking spares each run the imports
(a second or more of a fresh interpreter's start), so the loop's runs cost the filing, not the start-up.
"""

from __future__ import annotations

import os
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
    print(f"filing {os.getpid()}", flush=True)
    for i, draft_id in enumerate(ids):
        filing.decide(state=state, tracker=tracker, record=record, draft_id=draft_id, actor="UBOB",
                      filing=i % 7 != 6, evidence=lambda d: [f"evidence of draft {d.id}"])
    print(f"done {os.getpid()}", flush=True)


def serve() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        store, n = line.split()
        pid = os.fork()
        if pid == 0:  # the filer
            try:
                main(Path(store), int(n))
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(f"exited {pid} {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    serve()
