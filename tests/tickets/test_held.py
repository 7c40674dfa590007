"""A ticket held until its input and platform agree says so where a priority is read: its markdown, its summary,
its JSON and the value a tracker's priority field takes."""

from __future__ import annotations

from diagnostics.tickets import RulesDrafter
from tests.tickets.helpers import seed_diagnosis


def test_a_held_tickets_priority_says_it_is_held() -> None:
    ticket = RulesDrafter().draft(seed_diagnosis(platform="pcie-8gpu"))  # NVLink errors on a server with none
    assert "do not drain" in ticket.isolation_steps[0].text.lower()
    level = ticket.priority.value
    assert ticket.held and ticket.tracker_priority == "held"
    markdown = ticket.to_markdown()
    assert f"**Priority:** held ({level} once the input and the platform agree)" in markdown
    assert f"**Priority:** {level} ·" not in markdown and f"Priority {level}." not in ticket.summary
    assert "Priority held" in ticket.summary
    assert ticket.model_dump(mode="json")["tracker_priority"] == "held"


def test_a_ticket_that_is_not_held_carries_the_analysis_priority() -> None:
    ticket = RulesDrafter().draft(seed_diagnosis())
    assert ticket.held is None and ticket.tracker_priority == ticket.priority.value
    assert f"**Priority:** {ticket.priority.value} ·" in ticket.to_markdown()
