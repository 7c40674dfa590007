"""The mock Slack fails as Slack does: 429 with Retry-After, channel errors, invalid_blocks, msg_too_long, auth."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from bot.transport.blockkit import block_errors
from bot.transport.loopback import LoopbackServer
from bot.transport.mock_slack import MockSlack

from .helpers import OPS


@pytest.fixture
def slack() -> Iterator[MockSlack]:
    mock = MockSlack(scopes=frozenset({"chat:write", "files:write"}))
    with LoopbackServer(mock.app) as server:
        mock.base_url = server.url
        yield mock


def _error(call: object) -> tuple[str, int]:
    with pytest.raises(SlackApiError) as caught:
        call()  # type: ignore[operator]
    return caught.value.response["error"], caught.value.response.status_code


def test_a_rate_limit_is_a_429_with_retry_after_that_the_sdk_handler_waits_out(slack: MockSlack) -> None:
    plain = WebClient(token=slack.token, base_url=slack.api_url)
    slack.faults.rate_limit("chat.postMessage", retry_after=1)
    with pytest.raises(SlackApiError) as caught:
        plain.chat_postMessage(channel=OPS, text="hi")
    assert caught.value.response.status_code == 429 and caught.value.response.headers["Retry-After"] == "1"
    assert caught.value.response["error"] == "ratelimited"
    patient = WebClient(token=slack.token, base_url=slack.api_url,
                        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2)])
    slack.faults.rate_limit("chat.postMessage", retry_after=1)
    start = time.monotonic()
    assert patient.chat_postMessage(channel=OPS, text="hi")["ok"]
    assert time.monotonic() - start >= 1.0  # it waited the second Slack asked for, then posted
    assert slack.errors("chat.postMessage") == ["ratelimited", "ratelimited"]


def test_channels_the_bot_cannot_post_in(slack: MockSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    slack.faults.outside.add("CPRIVATE")
    slack.faults.missing.add("CGONE")
    slack.faults.archived.add("COLD")
    assert _error(lambda: client.chat_postMessage(channel="CPRIVATE", text="x")) == ("not_in_channel", 200)
    assert _error(lambda: client.chat_postEphemeral(channel="CPRIVATE", user="U1", text="x"))[0] == "not_in_channel"
    assert _error(lambda: client.chat_postMessage(channel="CGONE", text="x"))[0] == "channel_not_found"
    assert _error(lambda: client.chat_postMessage(channel="COLD", text="x"))[0] == "is_archived"
    assert client.chat_postMessage(channel=OPS, text="x")["ok"]
    assert not [m for m in slack.messages if m.channel != OPS]


def test_blocks_slack_would_refuse_are_invalid_blocks_with_a_pointer(slack: MockSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel=OPS, text="t", blocks=long)
    assert caught.value.response["error"] == "invalid_blocks"
    assert caught.value.response["errors"] == ["must be less than 3001 characters [json-pointer:/blocks/0/text/text]"]
    assert not slack.messages
    assert block_errors([{"type": "section", "text": {"type": "mrkdwn", "text": ""}}]) == [
        "must be more than 0 characters [json-pointer:/blocks/0/text/text]"]
    assert block_errors([{"type": "divider"}] * 51) == ["must provide at most 50 items [json-pointer:/blocks]"]
    assert block_errors([{"type": "divider", "block_id": "a"}, {"type": "divider", "block_id": "a"}])
    button = {"type": "button", "text": {"type": "plain_text", "text": "b"}, "action_id": "a", "value": "v" * 2001}
    assert block_errors([{"type": "actions", "elements": [button]}]) == [
        "must be less than 2001 characters [json-pointer:/blocks/0/elements/0/value]"]
    assert block_errors([{"type": "actions", "elements": []}])
    assert block_errors([{"type": "bogus"}])
    fine = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3000}}, {"type": "actions", "elements": [
        {**button, "value": "v"}]}]
    assert block_errors(fine) == []


def test_text_over_forty_thousand_characters_is_msg_too_long(slack: MockSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    assert _error(lambda: client.chat_postMessage(channel=OPS, text="x" * 40_001))[0] == "msg_too_long"
    assert client.chat_postMessage(channel=OPS, text="x" * 40_000)["ok"]


def test_tokens_and_scopes(slack: MockSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    wrong = WebClient(token="xoxb-wrong", base_url=slack.api_url)
    assert _error(lambda: wrong.chat_postMessage(channel=OPS, text="x"))[0] == "invalid_auth"
    with pytest.raises(SlackApiError) as caught:
        client.usergroups_users_list(usergroup="SOPS")
    assert caught.value.response["error"] == "missing_scope" and caught.value.response["needed"] == "usergroups:read"
    slack.faults.fail("chat.update", "message_not_found")
    assert _error(lambda: client.chat_update(channel=OPS, ts="1.0", text="x"))[0] == "message_not_found"
    slack.faults.revoked = True
    assert _error(lambda: client.chat_postMessage(channel=OPS, text="x"))[0] == "token_revoked"


def test_the_mock_reads_back_what_slack_would_parse_as_pings_and_links(slack: MockSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    client.chat_postMessage(channel=OPS, text="hi <!channel> &lt;!here&gt;", blocks=[
        {"type": "header", "text": {"type": "plain_text", "text": "<@U0ADMIN> in plain text is not parsed"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "see <https://evil.example|the runbook>"}}])
    assert slack.specials() == ["!channel", "https://evil.example|the runbook"]
