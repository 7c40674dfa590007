"""Block Kit as Slack checks it, so the mock answers `invalid_blocks` where Slack would.

The limits of Slack's Block Kit reference (https://docs.slack.dev/reference/block-kit/blocks), then what slack_sdk's
own models refuse besides (`Block.parse(...).validate_json()`):
at most 50 blocks a message, a text object is never empty, a section holds text (<= 3000) or fields (<= 10 of
<= 2000), an actions block 1-25 elements, a context block 1-10, block ids unique in a message and action ids in
their block (each <= 255), a button's
label <= 75 and value <= 2000, a select's options <= 100 (label <= 75, value <= 150); a header's text, a button's
label, an option's text and a placeholder are `plain_text` only. Each error is worded as Slack words it, with a JSON
pointer: `must be less than 3001 characters [json-pointer:/blocks/0/text/text]`.

Besides each block's limits, Slack caps the text of a whole message's blocks: past it the call fails with
`msg_blocks_too_long`, not `invalid_blocks`. The limit is not documented; Slack's answer in bolt-js #2509 is "12,000
text characters with a buffer for block containers", and bolt-js #2867 reports a refusal at 11,341 characters counted
over the `text` strings alone. `blocks_text_length` counts every `text` string in the blocks (labels, options and
placeholders included) and the mock refuses past `MAX_BLOCKS_TEXT`; the bot keeps its posts under a lower budget
(`bot.blocks.MESSAGE_BUDGET`) for the containers' share, which is assumed.
"""

from __future__ import annotations

import re
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

MAX_BLOCKS = 50
MAX_BLOCKS_TEXT = 12_000  # the whole message's blocks (bolt-js #2509, #2867)
MAX_ID = 255
TEXT_LIMITS = {"section": 3000, "header": 150}
FIELD_LIMIT = 2000
ELEMENTS = {"actions": (1, 25), "context": (1, 10)}
KNOWN = {"section", "header", "context", "actions", "divider", "image", "rich_text", "markdown", "input", "file",
         "video"}


def _too_long(limit: int, pointer: str) -> str:
    return f"must be less than {limit + 1} characters [json-pointer:{pointer}]"


def _text_errors(obj: Any, pointer: str, limit: int | None = None, *, plain: bool = False) -> list[str]:
    if plain and isinstance(obj, dict) and obj.get("type") == "mrkdwn":
        return [f"must provide an object of type plain_text [json-pointer:{pointer}]"]
    if not isinstance(obj, dict) or obj.get("type") not in ("plain_text", "mrkdwn"):
        return [f"must provide an object of type plain_text or mrkdwn [json-pointer:{pointer}]"]
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        return [f"must be more than 0 characters [json-pointer:{pointer}/text]"]
    return [_too_long(limit, f"{pointer}/text")] if limit is not None and len(text) > limit else []


def _element_errors(e: Any, pointer: str, action_ids: list[str]) -> list[str]:
    if not isinstance(e, dict):
        return [f"must be an object [json-pointer:{pointer}]"]
    errors: list[str] = []
    if "action_id" in e:
        action_ids.append(str(e["action_id"]))
        if len(str(e["action_id"])) > MAX_ID:
            errors.append(_too_long(MAX_ID, f"{pointer}/action_id"))
    if e.get("type") == "button":
        errors += _text_errors(e.get("text"), f"{pointer}/text", 75, plain=True)
        if len(str(e.get("value", ""))) > 2000:
            errors.append(_too_long(2000, f"{pointer}/value"))
    elif e.get("type") == "static_select":
        if "placeholder" in e:
            errors += _text_errors(e["placeholder"], f"{pointer}/placeholder", 150, plain=True)
        options = e.get("options") or []
        if not 1 <= len(options) <= 100:
            errors.append(f"must provide between 1 and 100 options [json-pointer:{pointer}/options]")
        for i, o in enumerate(options):
            errors += _text_errors(o.get("text"), f"{pointer}/options/{i}/text", 75, plain=True)
            if len(str(o.get("value", ""))) > 150:
                errors.append(_too_long(150, f"{pointer}/options/{i}/value"))
    return errors


def _block_errors(b: Any, pointer: str, action_ids: list[str]) -> list[str]:
    if not isinstance(b, dict) or b.get("type") not in KNOWN:
        return [f"unsupported type [json-pointer:{pointer}/type]"]
    kind = b["type"]
    errors: list[str] = []
    if kind == "header":
        errors += _text_errors(b.get("text"), f"{pointer}/text", TEXT_LIMITS["header"], plain=True)
    elif kind == "section":
        if "text" in b:
            errors += _text_errors(b["text"], f"{pointer}/text", TEXT_LIMITS["section"])
        fields = b.get("fields") or []
        if "text" not in b and not fields:
            errors.append(f"must provide text or fields [json-pointer:{pointer}]")
        if len(fields) > 10:
            errors.append(f"must provide at most 10 items [json-pointer:{pointer}/fields]")
        for i, f in enumerate(fields):
            errors += _text_errors(f, f"{pointer}/fields/{i}", FIELD_LIMIT)
    elif kind in ELEMENTS:
        low, high = ELEMENTS[kind]
        elements = b.get("elements") or []
        if not low <= len(elements) <= high:
            errors.append(f"must provide between {low} and {high} items [json-pointer:{pointer}/elements]")
        for i, e in enumerate(elements):
            if kind == "context":
                if e.get("type") != "image":
                    errors += _text_errors(e, f"{pointer}/elements/{i}", 3000)
            else:
                errors += _element_errors(e, f"{pointer}/elements/{i}", action_ids)
    return errors or _sdk_errors(b, pointer)


def _sdk_errors(b: dict[str, Any], pointer: str) -> list[str]:
    """What slack_sdk's block models refuse beyond the checks above."""
    try:
        parsed = Block.parse(b)
        if parsed is not None:
            parsed.validate_json()
    except (SlackObjectFormationError, KeyError, TypeError, ValueError) as exc:
        return [f"{exc} [json-pointer:{pointer}]"]
    return []


def block_errors(blocks: Any) -> list[str]:
    """Slack's `errors` for a message's `blocks` (empty when Slack would accept them)."""
    if not isinstance(blocks, list):
        return ["must be an array [json-pointer:/blocks]"]
    if len(blocks) > MAX_BLOCKS:
        return [f"must provide at most {MAX_BLOCKS} items [json-pointer:/blocks]"]
    errors: list[str] = []
    block_ids: list[str] = []
    for i, b in enumerate(blocks):
        action_ids: list[str] = []
        errors += _block_errors(b, f"/blocks/{i}", action_ids)
        if len(action_ids) != len(set(action_ids)):
            errors.append(f"action_id values must be unique in a block [json-pointer:/blocks/{i}/elements]")
        if isinstance(b, dict) and "block_id" in b:
            block_ids.append(str(b["block_id"]))
            if len(block_ids[-1]) > MAX_ID:
                errors.append(_too_long(MAX_ID, f"/blocks/{i}/block_id"))
    if len(block_ids) != len(set(block_ids)):
        errors.append("block_id values must be unique [json-pointer:/blocks]")
    return errors


def blocks_text_length(blocks: Any) -> int:
    """The characters of every `text` string in a message's blocks: what Slack's whole-message limit counts."""
    if isinstance(blocks, dict):
        return sum(len(v) if k == "text" and isinstance(v, str) else blocks_text_length(v) for k, v in blocks.items())
    if isinstance(blocks, list):
        return sum(blocks_text_length(v) for v in blocks)
    return 0


_SPECIAL = re.compile(r"<([^<>\n]+)>")


def mrkdwn_texts(text: str, blocks: list[dict[str, Any]]) -> list[str]:
    """The texts Slack parses as mrkdwn in a message: its `text`, and its blocks' mrkdwn text objects."""
    out = [text] if text else []

    def visit(obj: Any) -> None:
        if isinstance(obj, dict):
            if obj.get("type") == "mrkdwn" and isinstance(obj.get("text"), str):
                out.append(obj["text"])
            for value in obj.values():
                visit(value)
        elif isinstance(obj, list):
            for value in obj:
                visit(value)

    visit(blocks)
    return out


def special_tokens(text: str, blocks: list[dict[str, Any]]) -> list[str]:
    """The `<...>` tokens Slack turns into mentions, pings (`<!channel>`) or links (`<url|label>`) in a message."""
    return [m[1] for t in mrkdwn_texts(text, blocks) for m in _SPECIAL.finditer(t)]


def shown(text: str) -> str:
    """Escaped mrkdwn as a person reads it: Slack shows `&lt;`, `&gt;` and `&amp;` as `<`, `>` and `&`."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
