"""Slack's limits on a message and its blocks, and text and layouts fitted to them: about 12,000 characters of text
in a whole message (kept under `MESSAGE_BUDGET`), 50 blocks a message, 25 elements an actions block, 3000 characters
a section text, 75 a button or option label, 150 a header, 100 options a select
(https://docs.slack.dev/reference/block-kit/blocks), 1000 characters a picture's alt text.

Every message's blocks pass through `fit`: a builder offers its layouts, most shown first, and the first within the
budget is posted; `fitted` gives the smaller ones after it too, for a post Slack refuses as too long anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import partial

from slack_sdk.models.blocks import Block, MarkdownTextObject, SectionBlock

from .transport.blockkit import blocks_text_length

MAX_BLOCKS = 50
MAX_ACTIONS = 25
MAX_TEXT = 3000
MAX_LABEL = 75
MAX_OPTIONS = 100
MAX_HEADER = 150
MAX_ALT_TEXT = 1000  # a picture's alt text: files.getUploadURLExternal refuses more (`alt_txt_too_large`)
# Slack refuses a message whose blocks hold more than about 12,000 characters of text (`msg_blocks_too_long`; bolt-js
# #2509, #2867; undocumented, the containers count too): every message the bot posts stays under this budget.
MESSAGE_BUDGET = 10_000


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_WORD = re.compile(r"[A-Za-z]+\.?")  # a word, or one already cut to its first letters and a dot


def _short(keep: int, word: re.Match[str]) -> str:
    """A word cut to its first `keep` letters and a dot, when that is shorter."""
    return word[0] if len(word[0].rstrip(".")) <= keep + 1 else word[0][:keep] + "."


def label(text: str, limit: int = MAX_LABEL) -> str:
    """A button's or option's plain_text within `limit`: its words shortened, never its identifiers, since a clipped
    label can cut a number ('port 6…' of port 63) and a person would click the wrong part. A word holding a digit
    (GPU 3, port 63, a PCI address) stays whole; the words around them are cut longest first, to four letters and a
    dot, then one, the word naming a number (the 'port' of 'port 63') last. Clipped only when its identifiers alone
    are longer."""
    if len(text) <= limit:
        return text
    words = text.split(" ")
    names = {i for i in range(len(words) - 1) if any(c.isdigit() for c in words[i + 1])}
    for keep, spare in ((4, False), (1, False), (1, True)):
        cuttable = [i for i, w in enumerate(words) if not any(c.isdigit() for c in w) and (spare or i not in names)]
        for i in sorted(cuttable, key=lambda i: -len(words[i])):
            words[i] = _WORD.sub(partial(_short, keep), words[i])
            if len(" ".join(words)) <= limit:
                return " ".join(words)
    return clip(" ".join(words), limit)


def alt_text(text: str) -> str:
    """A picture's alt text as every upload gives it: plain words, clipped to what Slack takes."""
    return clip(text, MAX_ALT_TEXT)


def _cut(line: str, limit: int) -> int:
    """Where to cut mrkdwn at most `limit` characters in, never inside an escape like `&amp;`, a `<...>` token (a
    mention, a user group's ping, a link) or a code span, whose halves Slack would show as broken text."""
    cut = limit
    amp = line.rfind("&", cut - 5, cut)
    if amp != -1 and ";" not in line[amp:cut]:
        cut = amp
    token = line.rfind("<", 0, cut)
    if token != -1 and ">" not in line[token:cut]:
        cut = token
    if line.count("`", 0, cut) % 2:
        cut = line.rfind("`", 0, cut)
    return cut if cut > 0 else limit  # a token longer than the limit itself is cut: a line is always shortened


def clip_mrkdwn(text: str, limit: int) -> str:
    """mrkdwn within `limit` characters, cut where `_cut` allows, with an ellipsis."""
    return text if len(text) <= limit else text[: _cut(text, limit - 1)] + "…"


def headed(name: str, rest: str, limit: int = MAX_HEADER) -> str:
    """A header of a name and what follows it (`: fault detected`, ` / GPU 3 NVLink 2`) within `limit`: the name is
    shortened, never what follows it, which says what the message is about."""
    if len(name) + len(rest) <= limit:
        return name + rest
    room = limit - len(rest)
    return clip(name, room) + rest if room >= 8 else clip(name + rest, limit)


def section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=clip_mrkdwn(text, MAX_TEXT)))


def _pieces(line: str) -> list[str]:
    """A line cut into pieces under the text limit, never inside an escape like `&amp;`."""
    out = []
    while len(line) > MAX_TEXT:
        cut = _cut(line, MAX_TEXT)
        out.append(line[:cut])
        line = line[cut:]
    return [*out, line]


def sections(text: str) -> list[SectionBlock]:
    """Long mrkdwn split at line ends into sections under the text limit, in order, none of them empty."""
    out: list[SectionBlock] = []
    chunk = ""
    for line in text.splitlines():
        for piece in _pieces(line):
            if chunk and len(chunk) + len(piece) + 1 > MAX_TEXT:
                out.append(section(chunk))
                chunk = ""
            chunk = f"{chunk}\n{piece}" if chunk else piece
    if chunk.strip():
        out.append(section(chunk))
    return [b for b in out if b.text is not None and b.text.text.strip()]


def text_length(built: Sequence[Block]) -> int:
    """The characters of text in a message's blocks, as Slack's whole-message limit counts them."""
    return blocks_text_length([b.to_dict() for b in built])


def fit(layouts: Iterable[Sequence[Block]], budget: int = MESSAGE_BUDGET) -> list[Block]:
    """The first of a message's layouts, offered most shown first, whose blocks (at most `MAX_BLOCKS`) hold no more
    than `budget` characters of text; when none does, the last with its longest mrkdwn texts cut until it does.
    Every message the bot builds passes here, so none is refused as too long (`msg_blocks_too_long`)."""
    return next(fitted(layouts, budget))


def fitted(layouts: Iterable[Sequence[Block]], budget: int = MESSAGE_BUDGET) -> Iterator[list[Block]]:
    """`fit`'s choice, then each smaller layout after it that shows less: what a post Slack still refuses for its
    size (a limit it counts otherwise than `blockkit`) is tried again with. Lazy: a post Slack takes builds no
    more."""
    last: list[Block] = []
    shown: list[dict[str, object]] | None = None
    for layout in layouts:
        last = list(layout)[:MAX_BLOCKS]
        as_dicts = [b.to_dict() for b in last]
        if blocks_text_length(as_dicts) <= budget and as_dicts != shown:
            shown = as_dicts
            yield last
    if shown is None:
        yield _cut_to(last, budget)


def _cut_to(last: list[Block], budget: int) -> list[Block]:
    """A layout with its longest mrkdwn texts cut until it holds no more than `budget` characters of text."""
    as_dicts = [b.to_dict() for b in last]
    over = blocks_text_length(as_dicts) - budget
    texts = [t for b in as_dicts for t in [b.get("text"), *b.get("fields", []), *b.get("elements", [])]
             if b["type"] in ("section", "context") and isinstance(t, dict) and t.get("type") == "mrkdwn"]
    for t in sorted(texts, key=lambda t: len(t["text"]), reverse=True):
        if over <= 0:
            break
        before = len(t["text"])
        t["text"] = clip_mrkdwn(t["text"], max(before - over, 100))
        over -= before - len(t["text"])
    return Block.parse_all(as_dicts)


def text_blocks(text: str, budget: int = MESSAGE_BUDGET) -> list[Block]:
    """A reply's mrkdwn as sections within the budget: its lines in order while they fit, then how many more
    there were."""
    lines = text.splitlines()
    if sum(len(line) + 1 for line in lines) > budget:
        room, kept = budget - 100, []  # 100: the line that counts the rest
        for line in lines:
            room -= len(line) + 1
            if room < 0:
                break
            kept.append(line)
        kept = kept or [clip_mrkdwn(lines[0], budget - 100)]
        lines = [*kept, f"…and {len(lines) - len(kept)} more lines"]
    return fit([sections("\n".join(lines))], budget)
