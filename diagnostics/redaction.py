"""Secrets out of every text a person or a log will see: by the shapes keys and tokens have, not only exact match.

An API error may echo a key cut short ("invalid x-api-key: sk-ant-api03-Xy..."), so an exact replacement of the
configured value is not enough. Shapes: Slack tokens start `xox` and a letter (`xoxb-` bot, `xoxp-` user,
`xoxe-` refresh, `xoxc-`/`xoxd-` browser sessions) and app-level tokens `xapp-`
(https://api.slack.com/authentication/token-types); Anthropic keys start `sk-ant-` (assumed from the keys the
console issues, `sk-ant-api03-...`; no published grammar found); HTTP credentials follow `Bearer`,
`Authorization:` or `x-api-key:`. A configured secret is also caught by its first characters, so a cut copy goes too.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from typing import Any

# The environment variables whose values are secrets wherever they appear.
SECRET_ENV = ("ANTHROPIC_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")
REDACTED = "[redacted]"
PREFIX_CHARS = 10  # a configured secret's first characters that mark a (possibly cut) copy of it

_SHAPES = re.compile(
    r"sk-ant-[\w-]*"
    r"|\bx(?:ox[a-z]|app)-[\w-]*"
    r"|(?i:\bbearer\s+)[\w.~+/=-]+"
    r"|(?i:\b(?:authorization|x-api-key|api[_-]?key)\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+)?)[\w.~+/=-]+"
)

_LABEL = re.compile(r"(?i)bearer\s+|(?:authorization|x-api-key|api[_-]?key)\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+)?")


def _known(extra: Iterable[str]) -> list[str]:
    values = [os.environ.get(name, "") for name in SECRET_ENV] + list(extra)
    return sorted({v for v in values if len(v) >= PREFIX_CHARS}, key=len, reverse=True)


def redact(text: str, *secrets: str) -> str:
    """`text` with every key- or token-shaped run and every copy of a configured secret (or its start) replaced."""
    for secret in _known(secrets):
        text = re.sub(re.escape(secret[:PREFIX_CHARS]) + r"[^\s\"'<>|]*", REDACTED, text)
    return _SHAPES.sub(_keep_label, text)


def _keep_label(match: re.Match[str]) -> str:
    """Keep the label of `Authorization: ...` / `Bearer ...` so the message still says what was refused."""
    found = match.group(0)
    label = _LABEL.match(found)
    return (label.group(0) if label else "") + REDACTED


def redact_values(value: Any) -> Any:
    """`redact` applied to every string inside a JSON-like value (an audit entry's detail)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_values(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (its arguments merged in first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
