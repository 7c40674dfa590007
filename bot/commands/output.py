"""How a command prints JSON: serialised by pydantic-core in one pass and written once, not a write per token
(Python's `json.dump` with an indent writes each token to the stream: 800k writes for a 256-node sweep)."""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

# The exit status of an answer that is not the whole one: stored readings it could not read (analyze), nodes it could
# not read or judge (sweep, watch, digest), files refused (ingest). One number, so a script tells "nothing wrong" from
# "not all seen" the same way whichever command it ran.
INCOMPLETE = 3
# The exit status of `ticket` on a fault that names no part (a collective's results corrupted): nothing drafted, but
# not "nothing to repair", so a script never takes it for a healthy node.
NO_PART = 4


def said_incomplete(lines: list[str]) -> int:
    """Why an answer is not the whole one (stored readings it could not read, none of the node's in the span a sweep
    reads), said on stderr, and its exit status: INCOMPLETE when there is anything to say, else 0."""
    for line in lines:
        print(f"fabricbot: answer INCOMPLETE (its health is unknown, not healthy): {line}", file=sys.stderr)
    return INCOMPLETE if lines else 0


def print_json(value: BaseModel | Any) -> None:
    """`value` (a model, or lists and dicts of plain values and models) as indented JSON on stdout, then a newline.
    Non-ASCII text is written as UTF-8, and a float that is not finite as null (RFC 8259 has no NaN). The bytes go
    to stdout's own buffer as they are made: a sweep's 34 MB is not decoded into text to be encoded back."""
    if isinstance(value, BaseModel):
        data = value.__pydantic_serializer__.to_json(value, indent=2)
    else:
        data = to_json(value, indent=2, inf_nan_mode="null")
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    if raw is None:  # a text stream alone (a caller's StringIO)
        out.write(data.decode() + "\n")
        return
    out.flush()  # what was printed before comes first
    raw.write(data)
    raw.write(b"\n")
    raw.flush()

