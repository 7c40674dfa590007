"""The console over the real bot on the local transport, for the API and browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bot import blocks
from bot.console.topology import analysis_of
from bot.console.web import Console, console_app
from bot.drafting import render_png
from bot.nodes import NodeSource, SnapshotNodeSource
from bot.transport.loopback import LoopbackServer
from bot.transport.mock_slack import Message, MockSlack

from ..helpers import OPS, SEEDS, local_bot, posted

ME = "UALICE"


@contextmanager
def console(*, real_png: bool = False, source: NodeSource | None = None) -> Iterator[Console]:
    """The real app and mock Slack, with a console for alice in #ops (the node picture is a stand-in unless asked).

    The nodes are the seed examples unless `source` says otherwise."""
    source = source or SnapshotNodeSource.from_files([SEEDS])
    with local_bot(source=source, renderer=render_png if real_png else None) as local:
        yield Console(local, user=ME, channel=OPS, channel_name="ops", nodes=source.node_ids())


@contextmanager
def served(*, real_png: bool = False, source: NodeSource | None = None) -> Iterator[tuple[Console, str]]:
    """The console's web app on a loopback port: (console, base URL)."""
    with console(real_png=real_png, source=source) as c, LoopbackServer(console_app(c)) as server:
        try:
            yield c, server.url
        finally:
            c.close()


def wait_feed(c: Console, predicate: Any, timeout: float = 20.0) -> dict[str, Any]:
    """The feed once `predicate(feed)` holds (re-read whenever the mock records something)."""
    found: dict[str, Any] = {}

    def check(_: MockSlack) -> bool:
        found.update(c.feed())
        return bool(predicate(found))

    assert c.slack.wait_for(check, timeout=timeout), f"the channel never got there: {found.get('messages')}"
    return found


def elements(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


def summary(c: Console, command: str) -> Message:
    """`/fabric ...` typed in the console, and the summary it posted."""
    before = len(posted(c.slack))
    assert c.send(f"/fabric {command}")["status"] == 200
    assert c.slack.wait_for(lambda s: len(posted(s)) > before, timeout=60)
    return posted(c.slack)[-1]


def click_draft(c: Console, summary: Message, component: str) -> list[Message]:
    """Draft one part or finding of a summary (as its button or menu option names it) as the console's click does;
    the thread's replies once answered."""
    shown = c.state.analysis(analysis_of(summary) or -1)
    assert shown is not None
    for block in summary.blocks:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            picks = [(str(o["value"]), str(o["value"])) for o in element.get("options", [])]
            picks += [(str(element["value"]), None)] if "value" in element else []
            for value, option in picks:
                try:
                    ref = blocks.DraftTarget.parse(value).ref(shown)
                except ValueError:
                    continue
                if ref is not None and ref.name == component:
                    assert c.act(summary.ts, str(element["action_id"]), option)["status"] == 200
                    assert c.slack.wait_for(lambda s: any(m.edits for m in posted(s, thread=summary.ts)), timeout=60)
                    return posted(c.slack, thread=summary.ts)
    raise AssertionError(f"no draft button or option for {component} on {summary.ts}")
