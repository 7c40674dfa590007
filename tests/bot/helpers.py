"""Building the real app on the local transport for scenario tests."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.audit import AuditLog
from bot.nodes import SnapshotNodeSource
from bot.settings import Settings
from bot.storage import open_db
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import Message, MockSlack
from bot.workflow.tracker import SqliteTracker
from diagnostics import Diagnosis
from diagnostics.render import Drawable
from diagnostics.store import open_store
from diagnostics.tickets import RepairTicket, RulesDrafter
from tests.analysis.helpers import link_series, links, steady

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "fixtures" / "seed_examples.json"
OPS = "COPS"
LONG_WAIT = 120.0  # seconds a wait for something that must happen may take on a busy machine (it returns at once)
USERS = {"UALICE": "alice", "UBOB": "bob", "UMALLORY": "mallory"}


class SlowDrafter(RulesDrafter):
    """The rules drafter, taking `delay` seconds (as a Claude run with a few tool calls does), or, given a `gate`,
    until the test opens it (a draft still running is then a fact, not a race against the machine's load); counts
    its drafts begun and done."""

    def __init__(self, delay: float, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.delay = delay
        self.gate = gate
        self.drafts = 0
        self.done = 0
        self._lock = threading.Lock()

    def draft(self, diagnosis: Diagnosis, **kwargs: Any) -> RepairTicket:
        with self._lock:
            self.drafts += 1
        if self.gate is not None:
            self.gate.wait(timeout=LONG_WAIT)
        else:
            time.sleep(self.delay)
        ticket = super().draft(diagnosis, **kwargs)
        with self._lock:
            self.done += 1
        return ticket


def png_renderer(drawable: Drawable) -> bytes:
    """A tiny real PNG, standing in for the node picture where a test is not about the picture (it is faster)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1), dpi=20)
    assert drawable.diagnosis is not None
    fig.text(0.1, 0.5, drawable.diagnosis.node_id[-2:])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@contextmanager
def local_bot(settings: Settings | None = None, *, usergroups: dict[str, list[str]] | None = None,
              source: Any = None, drafter: Any = None, renderer: Any = None,
              answerer: Any = None, clock: Any = None) -> Iterator[LocalSlack]:
    db = open_db(None)
    slack = MockSlack(users=dict(USERS), usergroups=usergroups or {})
    # the tracker on the bot's clock, as in a live bot: a ticket is filed and repaired on the same clock
    tracker = SqliteTracker(db, clock=lambda: clock().isoformat(timespec="seconds")) if clock else SqliteTracker(db)
    with LocalSlack(settings=settings or Settings(), source=source or SnapshotNodeSource.from_files([SEEDS]),
                    drafter=drafter or RulesDrafter(), tracker=tracker, audit=AuditLog(db),
                    renderer=renderer or png_renderer, slack=slack,
                    answerer=answerer, **({"clock": clock} if clock else {})) as local:
        yield local


def posted(slack: MockSlack, *, thread: str | None = None) -> list[Message]:
    """Public bot messages (not file shares), top-level or in one thread."""
    def wanted(m: Message) -> bool:
        here = m.thread_ts is None if thread is None else m.thread_ts == thread
        return here and m.user.startswith("UFABRICBOT") and m.ephemeral_to is None and not m.files

    return [m for m in list(slack.messages) if wanted(m)]


def private(slack: MockSlack, user: str | None = None) -> list[Message]:
    """What the bot told one person (or anyone) alone: ephemeral messages and response-URL replies."""
    return [m for m in list(slack.messages) if m.ephemeral_to is not None and (user is None or m.ephemeral_to == user)]


def buttons(message: Message) -> list[dict[str, Any]]:
    return [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


def summary_for(local: LocalSlack, node: str, user: str = "UALICE", timeout: float = LONG_WAIT) -> Message:
    """`/fabric NODE` and its summary; the wait ends as soon as it is posted (a loaded machine may take a while)."""
    before = len(posted(local.slack))
    assert local.injector.command(node, user=user, channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: len(posted(s)) > before, timeout=timeout)
    return posted(local.slack)[-1]


def slash(local: LocalSlack, text: str, user: str = "UALICE") -> str:
    """`/fabric TEXT` in the ops channel, signed as Slack signs it: the text of the bot's reply."""
    before = len(posted(local.slack))
    assert local.injector.command(text, user=user, channel=OPS).status == 200
    assert local.slack.wait_for(lambda s: len(posted(s)) > before, timeout=LONG_WAIT)
    return posted(local.slack)[before].text


def lone_and_cut_store(tmp_path: Path, *, cut: bool) -> tuple[Path, Path | None]:
    """A store a sweep cannot judge whole: node-1 read once (totals only), node-2 read three times and clean, node-3
    likewise with its part cut when `cut` (the part's path returned)."""
    csv = tmp_path / "links.csv"
    links(link_series(steady(24.0, 1), node="node-1", gpu=0, link=0),  # whole counts: a fraction is no count
          link_series(steady(24.0, 3), node="node-2", gpu=0, link=0),
          link_series(steady(24.0, 3), node="node-3", gpu=0, link=0)).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    if not cut:
        return store, None
    part = next(store.glob("link_samples/node=node-3/*/*.parquet"))
    part.write_bytes(part.read_bytes()[:500])
    return store, part
