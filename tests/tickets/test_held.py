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


def test_a_drafted_summary_may_not_give_a_held_ticket_a_level_without_saying_held() -> None:
    from diagnostics.tickets import ClaudeDrafter
    from tests.tickets.helpers import good_answer, scripted

    d = seed_diagnosis(platform="pcie-8gpu")
    level = RulesDrafter().draft(d).priority.value
    bare = good_answer() | {"summary": f"NVLink 1 between GPU 2 and GPU 3 is failing; priority {level}."}
    ticket = ClaudeDrafter(model=scripted(lambda m, i: bare), retries=1).draft(d)
    assert ticket.drafted_by == "rules" and ticket.tracker_priority == "held"
    said = good_answer() | {"summary": f"NVLink 1 between GPU 2 and GPU 3 is failing; priority {level}, held until "
                                       "the platform is confirmed."}
    ticket = ClaudeDrafter(model=scripted(lambda m, i: said), retries=1).draft(d)
    assert ticket.drafted_by == "scripted-claude" and ticket.tracker_priority == "held"


def test_a_thread_answer_may_not_give_a_held_node_a_level_without_saying_held() -> None:
    from diagnostics.tickets.answers import answer_problems, facts, rules_answer

    d = seed_diagnosis(platform="pcie-8gpu")
    level = d.ticket_priority.value
    assert d.held and facts(d)["priority"] == d.priority_said() != level
    assert "held" in rules_answer(d)
    assert any("held" in p for p in answer_problems(f"GPU 2's NVLink 1 is failing; priority {level}.", d))
    assert not any("held" in p for p in answer_problems(f"GPU 2's NVLink 1 is failing; priority {level} once held "
                                                        "is lifted.", d))
