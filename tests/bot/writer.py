"""One writer of a shared store, working in rounds: the two-writer test's subject.

Run as `python -m tests.bot.writer ROLE STORE N`; prints "ready", then for each line `go K` on its input does round
K and prints `done K {json}` (what it wrote, and every failure by its message). Roles:
- `filer-a`, `filer-b`: save N drafts and file each (`bot.filing.decide`, as the File button does);
- `ingest`: `fabricbot ingest FILE --store STORE` on a file of its own for the round (a cron loop beside the bot);
- `bot`: the real app on the local transport over the store: `/fabric hpc-gpu-node-12`, Draft, File, and the
  ticket closed again (so the next round files a recurrence).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.audit import AuditLog
from bot.cli import main as cli
from bot.nodes import StoreNodeSource
from bot.settings import Settings
from bot.state import BotState
from bot.storage import open_db
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message, MockSlack
from bot.workflow import filing
from bot.workflow.tracker import SqliteTracker
from diagnostics.tickets import RulesDrafter
from tests.bot.helpers import LONG_WAIT, OPS, USERS, buttons, png_renderer, posted

Round = Callable[[int], dict[str, Any]]


def filer(store: Path, role: str, n: int) -> Round:
    db = open_db(store)
    audit, tracker, state = AuditLog(db), SqliteTracker(db), BotState(db)

    def record(kind: str, *, actor: str, subject: str = "", **detail: object) -> int:
        return audit.record(kind, actor=actor, subject=subject, detail=detail)

    def round_(k: int) -> dict[str, Any]:
        filed: dict[str, str] = {}
        failed: list[str] = []
        for i in range(n):
            slug = f"{role}-r{k}-{i}"
            try:
                draft_id = state.save_draft(analysis_id=0, node_id=f"node-{role}", component=f"part {slug}",
                                            slug=slug, markdown=f"# {slug}", priority="high", drafted_by="rules",
                                            channel=OPS)
                decision = filing.decide(state=state, tracker=tracker, record=record, draft_id=draft_id,
                                         actor="UBOB", filing=True, evidence=lambda d: [f"evidence of {d.slug}"])
                assert decision is not None and decision.result is not None
                filed[slug] = decision.result.ticket.id
            except Exception as exc:  # said, not raised: the test names every loss
                failed.append(f"{slug}: {type(exc).__name__}: {exc}")
        return {"filed": filed, "failed": failed}

    return round_


def ingester(store: Path, work: Path) -> Round:
    work.mkdir(parents=True, exist_ok=True)

    def round_(k: int) -> dict[str, Any]:
        node = f"ingest-node-{k:02d}"
        path = work / f"{node}.json"
        path.write_text(json.dumps({"node_id": node, "step_time_ms": 180.0 + k, "baseline_step_time_ms": 180.0,
                                    "fabric_errors": [{"gpu_src": 0, "gpu_dst": 1, "link_id": "nvlink-0",
                                                       "crc_errors": k, "replay_count": 2 * k}]}))
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = cli(["ingest", str(path), "--store", str(store)])
        except Exception:
            return {"node": node, "rc": -1, "failed": [traceback.format_exc(limit=3)]}
        failed = [] if rc == 0 else [f"exit {rc}: {out.getvalue().strip()} {err.getvalue().strip()}"]
        return {"node": node, "rc": rc, "failed": failed}

    return round_


def bot(store: Path) -> tuple[Round, LocalSlack]:
    db = open_db(store)
    tracker = SqliteTracker(db)
    local = LocalSlack(settings=Settings(drafts_per_minute=1000), source=StoreNodeSource(store),
                       drafter=RulesDrafter(), tracker=tracker, audit=AuditLog(db), renderer=png_renderer,
                       slack=MockSlack(users=dict(USERS))).start()

    def newest(thread: str | None = None) -> list[Message]:
        return posted(local.slack, thread=thread)

    def round_(k: int) -> dict[str, Any]:
        slack = local.slack
        before = len(newest())
        assert local.injector.command("hpc-gpu-node-12", user="UALICE", channel=OPS).status == 200
        if not slack.wait_for(lambda s: len(newest()) > before, timeout=LONG_WAIT):
            return {"failed": [f"round {k}: no summary"]}
        summary = newest()[-1]
        draft_buttons = [b for b in buttons(summary) if b["action_id"].startswith("draft")]
        if not draft_buttons:
            return {"failed": [f"round {k}: no draft button: {summary.text}"]}
        shown = len(newest(summary.ts))
        local.injector.action(draft_buttons[0], user="UALICE", channel=OPS, message_ts=summary.ts)
        if not slack.wait_for(lambda s: len(newest(summary.ts)) > shown and newest(summary.ts)[shown].edits > 0,
                              timeout=LONG_WAIT):
            return {"failed": [f"round {k}: no draft preview"]}
        preview = newest(summary.ts)[shown]
        edits = preview.edits
        (file_button,) = [b for b in buttons(preview) if b["action_id"] == "file_ticket"]
        local.injector.action(file_button, user="UBOB", channel=OPS, message_ts=preview.ts, thread_ts=summary.ts)
        if not slack.wait_for(lambda s: (s.find(preview.ts) or preview).edits > edits, timeout=LONG_WAIT):
            return {"failed": [f"round {k}: the filing never updated the preview"]}
        text = (slack.find(preview.ts) or preview).text
        said = [m.text for m in slack.messages if m.ephemeral_to is not None and "ailed" in m.text]
        found = re.search(r"Filed (?:as )?\*([A-Z]+-\d+)\*", text)  # a first filing, or a recurrence's
        if found is None:
            return {"failed": [f"round {k}: {text}", *said]}
        ticket = found.group(1)
        tracker.set_status(ticket, "closed", actor="UBOB", note="closed by the test round")
        return {"ticket": ticket, "failed": said}

    return round_, local


def main(role: str, store: Path, n: int) -> None:
    local: LocalSlack | None = None
    if role == "bot":
        work, local = bot(store)
    elif role == "ingest":
        work = ingester(store, store.parent / "ingest-files")
    else:
        work = filer(store, role, n)
    print("ready", flush=True)
    try:
        for line in sys.stdin:
            k = int(line.split()[1])
            t0 = time.perf_counter()
            result = work(k)
            result["seconds"] = round(time.perf_counter() - t0, 3)
            print(f"done {k} {json.dumps(result)}", flush=True)
    finally:
        if local is not None:
            local.stop()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
