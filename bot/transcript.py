"""The conversation in the mock Slack, written as Markdown a person can read (with the PNGs beside it)."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .mrkdwn import unescape
from .transport.mock_slack import Message, MockSlack


def mrkdwn_to_markdown(text: str, names: Mapping[str, str]) -> str:
    """Slack's mrkdwn as Markdown: *bold* -> **bold**, <@U1> and <!subteam^S1> -> @name, <url|text> ->
    [text](url), and Slack's escapes (&lt; &gt; &amp;) as the characters a person reads."""
    text = re.sub(r"<@([A-Z0-9]+)>", lambda m: "@" + names.get(m[1], m[1]), text)
    text = re.sub(r"<!subteam\^([A-Z0-9]+)(?:\|[^>]*)?>", lambda m: "@" + names.get(m[1], m[1]), text)
    text = re.sub(r"<(\S+?)\|([^>]+)>", r"[\2](\1)", text)
    return unescape(re.sub(r"(?<![\w*])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])", r"**\1**", text))


def blocks_to_markdown(blocks: list[dict[str, Any]], names: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            lines.append(f"**{block['text']['text']}**")
        elif kind == "section":
            if "text" in block:
                lines.extend(mrkdwn_to_markdown(block["text"]["text"], names).rstrip().splitlines())
            for field in block.get("fields", []):
                head, _, body = mrkdwn_to_markdown(field["text"], names).partition("\n")
                lines.append(f"- {head}: {body}")
        elif kind == "context":
            lines.append("_" + " ".join(mrkdwn_to_markdown(e.get("text", ""), names) for e in block["elements"])
                         + "_")
        elif kind == "actions":
            shown = []
            for e in block["elements"]:
                if e["type"] == "button":
                    shown.append(f"`[{e['text']['text']}]`")
                elif e["type"] == "static_select":
                    shown.append(f"`[{e['placeholder']['text']} ▾]` ({len(e.get('options', []))} options)")
            lines.append(" ".join(shown))
    return lines


def quote(lines: list[str]) -> str:
    return "\n".join("> " + line if line.strip() else ">" for line in lines)


class Transcript:
    """Collects turns as the scripted conversation runs; new and edited bot messages are read from the mock."""

    def __init__(self, slack: MockSlack, names: Mapping[str, str], images: Path, image_prefix: str) -> None:
        self.slack = slack
        self.names = dict(names)
        self.images = images
        self.image_prefix = image_prefix
        self.parts: list[str] = []
        self.pictures: list[Path] = []
        self._seen: dict[str, int] = {}  # ts -> edits already shown
        self._blocks: dict[str, list[dict[str, Any]]] = {}  # ts -> its blocks as last shown

    def heading(self, text: str) -> None:
        self.parts.append(f"## {text}\n")

    def person(self, user: str, text: str, how: str = "") -> None:
        self.parts.append(f"**{self.names.get(user, user)}**{how}: {text}\n")

    def note(self, text: str) -> None:
        self.parts.append(f"_{text}_\n")

    def _render(self, m: Message, blocks: list[dict[str, Any]] | None = None) -> str:
        where = " (in the thread)" if m.thread_ts else ""
        if m.ephemeral_to:
            where = f" (only {self.names.get(m.ephemeral_to, m.ephemeral_to)} sees this)"
        shown = m.blocks if blocks is None else blocks
        lines = blocks_to_markdown(shown, self.names) or mrkdwn_to_markdown(m.text, self.names).splitlines()
        for file_id in m.files:
            f = self.slack.files[file_id]
            if f.content is not None and not f.name.endswith(".png"):  # a snippet: linked, not shown
                self.images.mkdir(parents=True, exist_ok=True)
                (self.images / f.name).write_bytes(f.content)
                lines = [mrkdwn_to_markdown(m.text, self.names)] if m.text else lines
                lines.append(f"[{f.title}]({self.image_prefix}/{f.name})")
            elif f.content is not None:
                self.images.mkdir(parents=True, exist_ok=True)
                name = f"{len(self.pictures) + 1:02d}-{f.name}"
                (self.images / name).write_bytes(f.content)
                self.pictures.append(self.images / name)
                if m.text:
                    lines = [mrkdwn_to_markdown(m.text, self.names)]
                lines.append(f"![{f.title}]({self.image_prefix}/{name})")
        return f"**fabricbot**{where}:\n\n{quote(lines)}\n"

    def collect(self) -> None:
        """Append the bot's messages posted or edited since the last call, in the order Slack shows them."""
        for m in list(self.slack.messages):
            if not m.user.startswith("UFABRICBOT"):
                self._seen.setdefault(m.ts, m.edits)
                continue
            if m.ts not in self._seen:
                self.parts.append(self._render(m))
            elif m.edits > self._seen[m.ts]:  # show what changed: the blocks the message did not have before
                before = self._blocks.get(m.ts, [])
                new = [b for b in m.blocks if b not in before] or m.blocks[-1:]
                self.parts.append("_fabricbot updated the message above:_\n\n" + self._render(m, new))
            self._seen[m.ts] = m.edits
            self._blocks[m.ts] = copy.deepcopy(m.blocks)

    def text(self, title: str, intro: str) -> str:
        return f"# {title}\n\n{intro}\n\n" + "\n".join(self.parts)
