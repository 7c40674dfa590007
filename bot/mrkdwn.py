"""Text that did not come from the bot's own templates, made safe for Slack's mrkdwn.

Slack parses `&`, `<` and `>` as control characters (`<!channel>` pings everyone, `<@U1>` mentions, `<url|label>`
is a link whose address the reader cannot see), so every such text is escaped to `&amp;`, `&lt;`, `&gt;`, as
https://docs.slack.dev/messaging/formatting-message-text#escaping says. Node names, link names, warnings, the
model's words, a person's question: all escaped. Only the bot makes mentions (of user ids Slack gave it) and links.
plain_text objects (headers, button labels) are shown as written and need no escaping.

mrkdwn has no tables (the same page lists what it formats: bold, italic, strikethrough, code, quotes, lists), so a
Markdown table (a drafted ticket's component and identity tables) would show as raw `|` rows: each row is said as a
`*first cell*: column: cell` line instead; the Markdown itself (the snippet, the tracker) keeps its tables.
"""

from __future__ import annotations

import re

from diagnostics import inert_links

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")  # a table's header/body separator
_CELL = re.compile(r"(?<!\\)\|")  # a cell border; `\|` is a pipe inside a cell


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
    link (the same `inert_links` a stored ticket body went through); a table as one line per row (`_untabled`)."""
    text = _HEADING.sub(r"*\1*", esc(_untabled(inert_links(markdown))))
    return _BOLD.sub(r"*\1*", text)


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|")
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL.split(inner)]


def _untabled(markdown: str) -> str:
    """Each Markdown table as lines Slack can show: a row's first cell in bold, then each other cell after its
    column's name (a `value` column's cell alone, so a field/value table reads `*kind*: nvlink`)."""
    lines = markdown.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not (lines[i].lstrip().startswith("|") and i + 1 < len(lines) and _RULE.match(lines[i + 1])):
            out.append(lines[i])
            i += 1
            continue
        header = _cells(lines[i])
        i += 2
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            row = _cells(lines[i])
            said = [cell if name.lower() == "value" or not name else f"{name}: {cell}"
                    for name, cell in zip(header[1:], row[1:], strict=False)]
            out.append(f"*{row[0] or '-'}*: " + " · ".join(said))
            i += 1
    return "\n".join(out)
