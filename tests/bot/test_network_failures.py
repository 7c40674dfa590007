"""Slack not answering in time, and a connection dropped mid-answer, at the bot's job boundaries: the person who
asked hears which, and "Drafting..." never stays."""

from __future__ import annotations

import pytest

from bot.transport.local import LocalSlack
from bot.transport.slack_faults import Failure
from bot.workflow.states import DraftState

from .helpers import OPS, buttons, local_bot, posted, private, summary_for

pytestmark = pytest.mark.slack_realism

NODE = "hpc-gpu-node-12"
CLIENT_TIMEOUT_S = 1  # the app's Web API timeout in these tests (slack_sdk's default is 30 s)


def _told(local: LocalSlack, user: str = "UALICE") -> list[str]:
    assert local.slack.wait_for(lambda s: private(s, user)), local.slack.errors()
    return [m.shown for m in private(local.slack, user)]


def test_a_picture_upload_slack_does_not_answer_in_time_is_said() -> None:
    with local_bot() as local:
        assert local.app is not None
        local.app.client.timeout = CLIENT_TIMEOUT_S  # Bolt copies it into each request's client
        local.slack.faults.queue("files.getUploadURLExternal", Failure.stall(CLIENT_TIMEOUT_S + 2.0), 1)
        summary = summary_for(local, NODE)
        (said,) = _told(local)
        assert "node picture" in said and "Slack did not answer in time (`timeout`)" in said
        assert summary.blocks and not any(m.files for m in local.slack.messages)  # the summary stands, no picture


def test_a_preview_whose_connection_drops_is_said_and_replaces_drafting() -> None:
    with local_bot() as local:
        summary = summary_for(local, NODE)
        local.slack.faults.queue("chat.update", Failure.dropped(), 1)
        local.injector.action(buttons(summary)[0], user="UALICE", channel=OPS, message_ts=summary.ts)
        (said,) = _told(local)
        assert said.startswith("Posting a ticket draft did not finish. I could not reach Slack (`network_error`")
        assert local.slack.wait_for(lambda s: all(m.edits for m in posted(s, thread=summary.ts)))
        (left,) = posted(local.slack, thread=summary.ts)
        assert "Drafting" not in left.text and "could not be shown (`network_error`)" in left.text
        assert "click Draft ticket again" in left.text and not buttons(left)
        (draft,) = local.audit.db["bot_drafts"].rows
        assert draft["status"] == DraftState.UNPOSTED  # never shown, so never to be filed


def test_a_refused_picture_upload_says_it_was_the_picture_under_a_posted_summary() -> None:
    """The summary is posted before its picture: a refusal of the upload alone says the picture is what is missing,
    not as if the whole answer had failed."""
    with local_bot() as local:
        local.slack.faults.rate_limit("files.getUploadURLExternal", times=3, retry_after=0)  # past both retries
        summary = summary_for(local, NODE)
        (said,) = _told(local)
        assert buttons(summary) and not any(m.files for m in local.slack.messages)
        assert "node picture" in said and "rate-limiting" in said
