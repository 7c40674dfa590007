"""The console's web API over the real bot: what the page shows is what the bot posted; what it sends is signed."""

from __future__ import annotations

import re
from typing import Any

from starlette.testclient import TestClient

from bot.console.feed import Echo, channel_feed
from bot.console.web import console_app
from bot.transport.mock_slack import BOT_USER, Message, MockSlack

from .helpers import ME, console, elements, wait_feed

NODE = "hpc-gpu-node-12"


def _diagnosed(feed: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of NODE once its picture is in its thread."""
    for m in feed["messages"]:
        if m["bot"] and not m["ephemeral"] and elements(m) and any(r["files"] for r in m["replies"]):
            return m
    return None


def test_a_slash_command_shows_its_ack_then_the_summary_and_picture_the_bot_posted() -> None:
    with console() as c:
        client = TestClient(console_app(c))
        assert client.post("/api/send", json={"text": f"/fabric {NODE}"}).json() == {"status": 200}
        feed = wait_feed(c, _diagnosed)
        summary = _diagnosed(feed)
        assert summary is not None
        # the person's command and the app's ack, seen by the person alone, before the summary
        mine = [m for m in feed["messages"] if m["ephemeral"]]
        assert [m["text"] for m in mine][:1] == [f"/fabric {NODE}"]
        assert any(m["bot"] and "Looking at" in m["text"] for m in mine)
        assert feed["messages"].index(mine[0]) < feed["messages"].index(summary)
        # the blocks are exactly those the mock received in chat.postMessage
        sent = [call.params for call in c.slack.calls_to("chat.postMessage") if call.params.get("blocks")]
        assert summary["blocks"] == sent[0]["blocks"]
        assert any(e["text"]["text"].startswith("Draft ticket") for e in elements(summary) if e["type"] == "button")
        picture = next(f for r in summary["replies"] for f in r["files"])
        body = client.get(picture["url"])
        assert body.status_code == 200 and body.content.startswith(b"\x89PNG")
        assert client.get("/").text.count("console.js") == 1


def test_clicking_a_degraded_link_drafts_its_ticket_and_filing_shows_the_ticket_id() -> None:
    with console() as c:
        client = TestClient(console_app(c))
        client.post("/api/send", json={"text": f"/fabric {NODE}"})
        summary = _diagnosed(wait_feed(c, _diagnosed))
        assert summary is not None
        file_id = next(f["id"] for r in summary["replies"] for f in r["files"])
        view = client.get(f"/api/topology/{file_id}").json()
        assert view["node"] == NODE and view["summary_ts"] == summary["ts"]
        assert view["links"], "a faulty node has degraded links to click"
        for link in view["links"]:
            assert f'id="{link["gid"]}"' in view["svg"]  # the SVG element the page makes clickable
            assert link["severity"] in ("warning", "failing", "down") and link["rates"]
        link = view["links"][0]
        # the click is the action of an element the bot really posted in that summary
        assert link["action"]["action_id"] in {e["action_id"] for e in elements(summary)}
        assert client.post("/api/action", json=link["action"]).json() == {"status": 200}

        def preview(feed: dict[str, Any]) -> dict[str, Any] | None:
            thread = next(m for m in feed["messages"] if m["ts"] == summary["ts"])["replies"]
            return next((r for r in thread if any(e["action_id"] == "file_ticket" for e in elements(r))), None)

        draft = preview(wait_feed(c, preview))
        assert draft is not None and link["component"] in draft["blocks"][0]["text"]["text"]
        decision = {"message_ts": draft["ts"], "action_id": "file_ticket"}
        assert client.post("/api/action", json=decision).status_code == 200

        def filed(feed: dict[str, Any]) -> str | None:
            thread = next(m for m in feed["messages"] if m["ts"] == summary["ts"])["replies"]
            done = next((r for r in thread if r["ts"] == draft["ts"]), {"text": ""})
            match = re.search(r"Filed as \*(\S+?)\*", done["text"])
            return match[1] if match else None

        ticket = filed(wait_feed(c, filed))
        tickets = list(c.local.tracker.db["tickets"].rows)  # type: ignore[attr-defined]
        assert [(t["id"], t["component"], t["filed_by"]) for t in tickets] == [(ticket, link["component"], ME)]
        # the page reads the ticket from the feed's decision, not from the reply's words
        done = next(r for m in c.feed()["messages"] for r in m["replies"] if r["ts"] == draft["ts"])
        assert done["decision"] == {"outcome": "filed", "ticket": ticket}
        assert all(r.get("decision") is None for m in c.feed()["messages"] for r in m["replies"]
                   if r["ts"] != draft["ts"])
        # the decided preview has no buttons left, so a second click has nothing to send
        again = client.post("/api/action", json=decision)
        assert again.status_code == 400 and "no element" in again.json()["error"]


def test_approving_a_second_preview_of_a_filed_part_gives_the_page_the_open_ticket() -> None:
    """Three previews of one link (from three `/fabric` answers), two approved: the first files the ticket, the
    second joins it; the feed says which, with the ticket's id, however the reply words it; a discarded preview names
    no ticket."""
    with console() as c:
        client = TestClient(console_app(c))

        def diagnosed(count: int) -> dict[str, Any]:
            client.post("/api/send", json={"text": f"/fabric {NODE}"})

            def nth(feed: dict[str, Any]) -> dict[str, Any] | None:
                shown = [m for m in feed["messages"] if m["bot"] and not m["ephemeral"] and elements(m)
                         and any(r["files"] for r in m["replies"])]
                return shown[count - 1] if len(shown) >= count else None
            summary = nth(wait_feed(c, nth))
            assert summary is not None
            return summary

        def links(summary: dict[str, Any]) -> list[dict[str, Any]]:
            file_id = next(f["id"] for r in summary["replies"] for f in r["files"])
            return list(client.get(f"/api/topology/{file_id}").json()["links"])

        def previews(summary: dict[str, Any], feed: dict[str, Any]) -> list[dict[str, Any]]:
            thread = next(m for m in feed["messages"] if m["ts"] == summary["ts"])["replies"]
            return [r for r in thread if any(e["action_id"] == "file_ticket" for e in elements(r))]

        def drafted(summary: dict[str, Any], link: dict[str, Any], count: int) -> dict[str, Any]:
            client.post("/api/action", json=link["action"])
            return previews(summary, wait_feed(c, lambda f: len(previews(summary, f)) >= count))[count - 1]

        one, two, other = (drafted(summary, links(summary)[0], 1) for summary in (diagnosed(n) for n in (1, 2, 3)))
        for preview, action in ((one, "file_ticket"), (two, "file_ticket"), (other, "discard_draft")):
            client.post("/api/action", json={"message_ts": preview["ts"], "action_id": action})
            wait_feed(c, lambda f, ts=preview["ts"]: any(r["ts"] == ts and r["decision"]
                                                         for m in f["messages"] for r in m["replies"]))
        decided = {r["ts"]: r["decision"] for m in c.feed()["messages"] for r in m["replies"]}
        (ticket,) = c.local.tracker.tickets()  # type: ignore[attr-defined]
        assert decided[one["ts"]] == {"outcome": "filed", "ticket": ticket.id}
        assert decided[two["ts"]] == {"outcome": "joined", "ticket": ticket.id}
        assert decided[other["ts"]] == {"outcome": "discarded", "ticket": None}


def test_bad_input_gets_a_clear_answer_not_a_request() -> None:
    with console() as c:
        client = TestClient(console_app(c))
        calls = len(c.slack.calls)
        assert client.post("/api/send", json={"text": "/deploy prod"}).json() == {"status": 404}
        assert "is not a command here" in c.feed()["messages"][-1]["text"]
        assert client.post("/api/send", json={"text": "  "}).status_code == 400
        assert client.post("/api/send", content=b"not json").status_code == 400
        assert client.post("/api/action", json={"message_ts": "1.2", "action_id": "x"}).status_code == 400
        assert "no message shares file" in client.get("/api/topology/F404").json()["error"]
        assert len(c.slack.calls) == calls  # nothing reached the bot


def test_the_feed_shows_ephemerals_to_their_person_and_threads_under_their_root() -> None:
    slack = MockSlack(users={"UALICE": "alice", "UBOB": "bob"})
    slack.messages += [
        Message("COPS", "1800000000.000001", "root", BOT_USER),
        Message("COPS", "1800000000.000002", "reply", "UBOB", thread_ts="1800000000.000001"),
        Message("COPS", "1800000000.000003", "for bob", BOT_USER, ephemeral_to="UBOB"),
        Message("COTHER", "1800000000.000004", "elsewhere", "UBOB"),
    ]
    echo = Echo("1800000000.0000021", "/fabric help", "UALICE")
    feed = channel_feed(slack, "COPS", "UALICE", [echo])
    assert [(m["text"], [r["text"] for r in m["replies"]]) for m in feed["messages"]] == [
        ("root", ["reply"]), ("/fabric help", [])]
    assert feed["messages"][1]["ephemeral"] and feed["messages"][1]["name"] == "alice"
    assert [m["text"] for m in channel_feed(slack, "COPS", "UBOB", [])["messages"]] == ["root", "for bob"]


def test_a_mention_is_the_persons_message_and_the_bot_answers_in_its_thread() -> None:
    with console() as c:
        client = TestClient(console_app(c))
        assert client.post("/api/send", json={"text": "@fabricbot what is wrong with hpc-gpu-node-03?"}).json() == {
            "status": 200}

        def answered(feed: dict[str, Any]) -> bool:
            mine = [m for m in feed["messages"] if m["user"] == ME]
            return bool(mine) and any(r["bot"] and "hpc-gpu-node-03" in r["text"] for r in mine[0]["replies"])

        feed = wait_feed(c, answered)
        mine = next(m for m in feed["messages"] if m["user"] == ME)
        assert mine["text"] == f"<@{BOT_USER}> what is wrong with hpc-gpu-node-03?" and not mine["ephemeral"]
        # the bot heard it as an app_mention from this person (its audit trail records each one)
        mentions = list(c.local.audit.db["audit"].rows_where("kind = ?", ["mention"]))
        assert [r["actor"] for r in mentions] == [ME]
