"""The tickets package's one surface: every name it exports resolves, and the model stack loads only when asked."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import diagnostics.tickets as tickets


def test_every_exported_name_resolves() -> None:
    for name in tickets.__all__:
        assert getattr(tickets, name) is not None, name
    assert tickets.ClaudeDrafter is import_module("diagnostics.tickets.claude").ClaudeDrafter


def test_an_unknown_name_is_refused_by_name() -> None:
    try:
        tickets.NoSuchDrafter  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchDrafter" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_reading_plans_and_rules_drafts_loads_no_model_stack_until_a_claude_name_is_asked_for() -> None:
    code = ("import sys; from diagnostics.tickets import RulesDrafter, plan_for, Hardware; "
            "before = [m for m in ('pydantic_ai', 'anthropic') if m in sys.modules]; "
            "from diagnostics.tickets import ClaudeDrafter; "
            "after = [m for m in ('pydantic_ai', 'anthropic') if m in sys.modules]; "
            "print(','.join(before) + '|' + ','.join(after) + '|' + ClaudeDrafter.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "|pydantic_ai,anthropic|diagnostics.tickets.claude"
