"""Secrets are redacted by shape and by their first characters, not only when they appear whole."""

from __future__ import annotations

import json
import logging

import pytest

from diagnostics import redact, redact_values
from diagnostics.redaction import REDACTED, RedactingFilter

KEY = "sk-ant-api03-" + "Q" * 40 + "-abcdAA"
SLACK = "xoxb-1234567890-0987654321-" + "z" * 24
SIGNING = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


@pytest.mark.parametrize(("text", "kept"), [
    (f"AuthenticationError: invalid x-api-key: {KEY[:20]}...", "invalid x-api-key: "),
    (f"status 401: {{'error': 'bad key {KEY}'}}", "status 401"),
    (f"token_revoked for {SLACK}", "token_revoked for "),
    (f"app token xapp-1-A0123-456-{'f' * 20} rejected", " rejected"),
    ("Authorization: Bearer abc.def-ghi/jkl=", "Authorization: Bearer "),
    ("header Authorization=Basic dXNlcjpwYXNz was sent", " was sent"),
    (f"refresh xoxe-1-{'m' * 30}, session xoxc-{'n' * 20}", "refresh "),
])
def test_keys_and_tokens_are_redacted_by_their_shape_even_cut(text: str, kept: str) -> None:
    out = redact(text)
    assert REDACTED in out and kept in out
    for secret in (KEY, KEY[:20], SLACK, "abc.def", "dXNlcjpwYXNz", "m" * 30, "n" * 20, "f" * 20):
        assert secret not in out


def test_a_configured_secret_is_caught_by_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING)
    out = redact(f"signature base built with {SIGNING[:14]}... failed; <{SIGNING}|link>")
    assert SIGNING[:10] not in out and out.count(REDACTED) == 2 and "|link>" in out
    plain = "nothing secret: GPU 2 -> GPU 3 NVLink 1, 45,120/h, api_key not set"
    assert redact(plain) == plain


def test_values_inside_json_stay_json() -> None:
    detail = {"error": f"invalid_auth {SLACK}", "calls": [{"detail": f"key {KEY}"}], "n": 3}
    dumped = json.dumps(redact_values(detail))
    assert SLACK not in dumped and KEY not in dumped and json.loads(dumped)["n"] == 3


def test_the_log_filter_redacts_merged_arguments(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("fabricbot.test-redaction")
    logger.addFilter(RedactingFilter())
    with caplog.at_level(logging.WARNING, logger=logger.name):
        logger.warning("slack said %s for %s", "invalid_auth", SLACK)
    assert SLACK not in caplog.text and "invalid_auth" in caplog.text and REDACTED in caplog.text
