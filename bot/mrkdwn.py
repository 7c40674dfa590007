"""Text that did not come from the bot's own templates, made safe for Slack's mrkdwn.

Slack parses `&`, `<` and `>` as control characters (`<!channel>` pings everyone, `<@U1>` mentions, `<url|label>`
is a link whose address the reader cannot see), so every such text is escaped to `&amp;`, `&lt;`, `&gt;`, as
https://docs.slack.dev/messaging/formatting-message-text#escaping says. Node names, link names, warnings, the
model's words, a person's question: all escaped. Only the bot makes mentions (of user ids Slack gave it) and links.
plain_text objects (headers, button labels) are shown as written and need no escaping.
"""

from __future__ import annotations

import re

from diagnostics import inert_links

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def esc(text: object) -> str:
    """`text` with Slack's three control characters escaped."""
    return str(text).translate(_ESCAPES)


def unescape(text: str) -> str:
    """What a person reads for escaped mrkdwn (the transcript and the console show it so)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def mention(user: str) -> str:
    """A mention of a Slack user id; anything that is not one is shown as text, never as a ping."""
    return f"<@{user}>" if _USER_ID.match(user) else esc(user)


def to_mrkdwn(markdown: str) -> str:
    """Markdown (a drafted ticket, the model's words) as Slack shows it: escaped first; headings and bold as *bold*;
    a link (Markdown, an image, an HTML anchor) as its text with the address beside it in code, never as a Slack
    link (the same `inert_links` a stored ticket body went through)."""
    text = _HEADING.sub(r"*\1*", esc(inert_links(markdown)))
    return _BOLD.sub(r"*\1*", text)
