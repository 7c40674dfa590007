"""Secrets stay out of logs and the audit trail, even with debug logging on."""

from __future__ import annotations

import logging

import pytest

from bot.settings import Settings

from .helpers import OPS, buttons, local_bot, posted, summary_for

SIGNING = "signing-secret-do-not-log"


def test_tokens_and_secrets_never_reach_the_logs_or_the_audit(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with local_bot(Settings(signing_secret=SIGNING)) as local:
        summary = summary_for(local, "hpc-gpu-node-12")
        (button,) = buttons(summary)
        local.injector.action(button, user="UALICE", channel=OPS, message_ts=summary.ts)
        assert local.slack.wait_for(lambda s: posted(s, thread=summary.ts))
        token = local.slack.token
        audit = local.audit.to_markdown()
    assert "Sending a request" in caplog.text  # the Web API calls were logged at debug level
    for secret in (token, SIGNING):
        assert secret not in caplog.text
        assert secret not in audit
