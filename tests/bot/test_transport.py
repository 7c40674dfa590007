"""The local transport itself: the mock Web API speaks slack_sdk, and the app checks Slack's signatures."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.transport.loopback import LoopbackServer
from bot.transport.mock_slack import MockSlack

from .helpers import OPS, local_bot, posted


def test_the_mock_serves_slack_sdk_calls_and_records_them() -> None:
    slack = MockSlack(users={"UALICE": "alice"}, usergroups={"SOPS": ["UALICE"]})
    with LoopbackServer(slack.app) as server:
        slack.base_url = server.url
        client = WebClient(token=slack.token, base_url=slack.api_url)
        assert client.auth_test()["user_id"] == "UFABRICBOT"
        root = client.chat_postMessage(channel=OPS, text="root")["ts"]
        client.chat_postMessage(channel=OPS, text="reply", thread_ts=root)
        client.chat_update(channel=OPS, ts=root, text="edited")
        assert [m["text"] for m in client.conversations_replies(channel=OPS, ts=root)["messages"]] == [
            "edited", "reply"]
        assert client.users_info(user="UALICE")["user"]["name"] == "alice"
        assert client.usergroups_users_list(usergroup="SOPS")["users"] == ["UALICE"]
        upload = client.files_upload_v2(channel=OPS, thread_ts=root, content=b"\x89PNG-bytes", filename="n.png")
        url = upload["files"][0]["url_private"]
        assert httpx.get(url, headers={"Authorization": f"Bearer {slack.token}"}).content == b"\x89PNG-bytes"
        for headers in ({}, {"Authorization": "Bearer xoxb-wrong"}):  # as Slack: its sign-in page, not a 403
            refused = httpx.get(url, headers=headers)
            assert refused.status_code == 302 and "/signin?redir=" in refused.headers["location"]
            page = httpx.get(url, headers=headers, follow_redirects=True)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        bad = WebClient(token="xoxb-wrong", base_url=slack.api_url)
        try:
            bad.auth_test()
            raise AssertionError("a wrong token was accepted")
        except SlackApiError as exc:
            assert exc.response["error"] == "invalid_auth"
    methods = [c.method for c in slack.calls]
    assert methods[:4] == ["auth.test", "chat.postMessage", "chat.postMessage", "chat.update"]
    assert "files.getUploadURLExternal" in methods and "files.completeUploadExternal" in methods


def test_signed_requests_are_accepted_and_unsigned_or_stale_ones_rejected() -> None:
    with local_bot() as local:
        inj = local.injector
        body = inj.command_body("help", user="UALICE", channel=OPS)
        form = "application/x-www-form-urlencoded"
        assert inj.send(body, form).status == 200
        assert inj.send(body, form, sign=False).status == 401
        assert inj.send(body, form, timestamp=int(time.time()) - 600).status == 401
        assert inj.send(body, form, signature="v0=" + "0" * 64).status == 401
        # a signature is bound to the body: the same signature over a changed body fails
        ts = int(time.time())
        sig = inj.verifier.generate_signature(timestamp=str(ts), body=body)
        assert inj.send(body.replace("help", "fleet"), form, timestamp=ts, signature=sig).status == 401
        challenge = inj.url_verification("c-123")
        assert challenge.status == 200 and challenge.json() == {"challenge": "c-123"}
        # Slack's check of a slash command URL's certificate: answered as Bolt's SslCheck answers it, before any
        # signature check (401 made Slack's check fail), and nothing done
        checked = inj.send("ssl_check=1&token=legacy-token", form, sign=False)
        assert checked.status == 200 and checked.body == ""
        assert inj.send("ssl_check=0&token=x", form, sign=False).status == 401
        time.sleep(0.2)
        assert not posted(local.slack)  # none of the rejected requests did any work


def test_a_stopped_loopback_server_refuses_connections_and_its_thread_has_ended() -> None:
    slack = MockSlack()
    server = LoopbackServer(slack.app).start()
    slack.base_url = server.url
    assert WebClient(token=slack.token, base_url=slack.api_url).auth_test()["ok"]
    server.stop()
    assert not server.thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/api/auth.test")


def test_a_request_in_flight_when_the_server_stops_still_gets_its_answer() -> None:
    started, answered = threading.Event(), []

    async def slow(scope: dict[str, Any], receive: Any, send: Any) -> None:
        started.set()
        await asyncio.sleep(0.3)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"done"})

    server = LoopbackServer(slow).start()
    asker = threading.Thread(target=lambda: answered.append(httpx.get(server.url, timeout=10).text))
    asker.start()
    assert started.wait(10)
    server.stop()  # the graceful path: a connection is open
    asker.join(10)
    assert answered == ["done"] and not server.thread.is_alive()
