"""The snapshot JSON format: one object, a list of them, or the seed list of {"input", "expected_output"} cases.

Each case is validated on its own, so one bad case never hides the good ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from ..model import Snapshot


@dataclass
class Case:
    """One snapshot from a file: the parsed snapshot or the error that stopped it, and any expectations."""

    index: int
    label: str
    snapshot: Snapshot | None = None
    expected: dict[str, Any] | None = None
    errors: list[InputError] = field(default_factory=list)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_errors(exc: ValidationError, source: str) -> list[InputError]:
    """Each pydantic error as an InputError naming the source, field and value."""
    errors = []
    for err in exc.errors():
        field_name = _loc(tuple(err["loc"])) or None
        message = err["msg"].removeprefix("Value error, ")
        value = err.get("input") if err["type"] not in ("missing",) and field_name else None
        if isinstance(value, dict):
            value = None  # the whole object is not a useful value to quote
        errors.append(InputError(message, source=source, field=field_name, value=value))
    return errors


def parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=source, line=exc.lineno) from None


def _node_label(raw: Any) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("node_id"), str):
        return raw["node_id"]
    return "?"


def read_cases(text: str, source: str = "<input>") -> list[Case]:
    """Parse a snapshot file into cases. Raises InputError only when nothing in it can be a case."""
    data = parse_json(text, source)
    items = data if isinstance(data, list) else [data]
    if isinstance(data, list) and not data:
        raise InputError("the list of snapshots is empty", source=source)
    cases = []
    for i, item in enumerate(items):
        expected = None
        raw = item
        if isinstance(item, dict) and "input" in item:
            raw = item["input"]
            expected = item.get("expected_output")
        label = f"case {i + 1} ({_node_label(raw)})" if isinstance(data, list) else _node_label(raw)
        case = Case(index=i, label=label, expected=expected)
        if not isinstance(raw, dict):
            case.errors.append(InputError("a snapshot must be a JSON object", source=f"{source} {label}",
                                          value=type(raw).__name__))
        else:
            try:
                case.snapshot = Snapshot.model_validate(raw)
            except ValidationError as exc:
                case.errors.extend(validation_errors(exc, f"{source} {label}"))
        cases.append(case)
    return cases
