"""A repeat offender's ticket: its steps follow its headline. The part that carries the GPU is replaced first (after
the plan's captures and isolation), with the checks after it; no reset, reseat or swap test of the earlier tickets
again; and the drafter's fact check holds a reworded step to that plan."""

from __future__ import annotations

from datetime import UTC, datetime

from diagnostics.model import Diagnosis
from diagnostics.tickets import Hardware, PartHistory, PastTicket, RulesDrafter, candidates_for, escalate, plan_for
from diagnostics.tickets.escalation import repeat_offender
from diagnostics.tickets.reasoning import DraftReasoning, check
from tests.tickets.helpers import good_answer, seed_diagnosis

GPU = Hardware(serial="1652221000002")


def _history(tickets: int) -> PartHistory:
    """The GPU's earlier tickets on another node, each repaired and failed again."""
    at = [datetime(2026, 12, day, tzinfo=UTC) for day in range(1, tickets + 1)]
    return PartHistory(hardware=GPU, tickets=[
        PastTicket(id=f"FAB-000{i + 1}", node_id="hpc-gpu-node-27", component="GPU 3 NVLink 2", filed_at=t,
                   repaired_at=t, outcome="repair did not hold: reopened") for i, t in enumerate(at)])


def _a100() -> Diagnosis:
    return seed_diagnosis(platform="dgx-a100-8gpu")


def test_an_escalated_ticket_leads_with_the_replacement_and_keeps_the_checks_after_it() -> None:
    d = _a100()
    ticket = RulesDrafter().draft(d)
    escalated = escalate(ticket, _history(2), d)
    assert escalated.escalation is not None and "replace the A100 SXM4 module" in escalated.escalation
    steps = [s.text.lower() for s in escalated.repair_steps]
    assert "replace gpu 2's a100 sxm4 module" in steps[0] and "field service" in steps[0]  # an SXM module: theirs
    assert "powered off" in steps[0] and "drained" in steps[0]
    assert [s.command for s in escalated.repair_steps][1] == "dcgmi diag -r 3"  # verified after the replacement
    assert "dgx a100 gpu baseboard" in steps[-1]  # the slot's part, if the errors stay with it
    for text in steps:  # no reset, reseat or swap test told again
        told = text.replace("not reset, reseated or swap-tested again", "")
        assert "reseat" not in told and "swap" not in told and "nvidia-smi -r" not in told
    assert escalated.capture_first == ticket.capture_first  # the captures stay, before anyone touches the node
    assert [s.text for s in escalated.isolation_steps] == [s.text for s in ticket.isolation_steps]
    assert escalated.isolation_steps[0].text.startswith("Drain node")  # powered off: the node's drain, no exclusion
    text = escalated.to_markdown()
    assert text.index("## Repeat offender") < text.index("## Isolate") < text.index("1. With node")
    assert "not a step of this repeat offender's ticket" in text  # the reset row says it is not this plan's


def test_a_card_platform_replaces_the_card_then_the_part_the_plan_named() -> None:
    d = seed_diagnosis(platform="h100-nvl-8gpu")
    escalated = escalate(RulesDrafter().draft(d), _history(2), d)
    assert escalated.replacement_part is not None and escalated.replacement_part.id == "h100-nvl-card"
    assert escalated.next_part is not None and escalated.next_part.id == "h100-nvl-nvlink-bridge"
    first = escalated.repair_steps[0].text
    assert "replace GPU 2's H100 NVL card (h100-nvl-card)" in first and "field service" not in first
    assert escalated.isolation_steps[0].text.startswith("Drain node") and "exclude" not in \
        escalated.isolation_steps[0].text


def test_the_second_ticket_keeps_its_plan() -> None:
    d = _a100()
    ticket = RulesDrafter().draft(d)
    second = escalate(ticket, _history(1), d)
    assert second.escalation is None and second.history is not None
    assert second.repair_steps == ticket.repair_steps


def _check(wording: list[str], summary: str = "GPU 2's module is replaced: its third ticket.") -> list[str]:
    d = _a100()
    candidates = candidates_for(d)
    chosen = next(c for c in candidates if c.id == "gpu2-nvlink1")
    plan = plan_for(d, chosen, repeat_offender(_history(2), d.platform))
    out = DraftReasoning.model_validate(good_answer() | {
        "summary": summary, "repair_steps": wording, "alternatives": [], "hypotheses": [],
        "why": "GPU 2 NVLink 1 replays 8,900 per hour against a 1,000 limit; its GPU has failed twice before."})
    return check(out, d, candidates, {c.id: d.ticket_priority for c in candidates}, {c.id: plan for c in candidates})


def test_the_fact_check_accepts_the_escalated_plan_and_refuses_a_reseat_again() -> None:
    fine = ["Drain the node and power it off; the vendor's field service replaces GPU 2's A100 SXM4 module. "
            "Do not reseat it again",
            "Run `dcgmi diag -r 3` on the drained node and watch GPU 2's counters",
            "If the errors come back with the new module, replace the DGX A100 GPU baseboard (dgx-a100-baseboard)"]
    assert _check(fine) == []
    assert _check(fine, "The earlier reseats did not hold; GPU 2's module is replaced.") == []
    reseat = [fine[0].replace("Do not reseat it again", "Reseat it first, then replace it if the errors return"),
              *fine[1:]]
    problems = _check(reseat)
    assert any(p.startswith("repair step 1 tells someone to reseat again") for p in problems), problems
    assert any("reseat" in p for p in _check(fine, "Reseat GPU 2's module before replacing it."))
    reset = [fine[0] + ". First reset it: `nvidia-smi -r -i 2`", *fine[1:]]
    assert any("nvidia-smi -r -i 2" in p for p in _check(reset))  # the reset is not this plan's


def test_an_escalation_on_an_unknown_board_still_replaces_the_gpu_first() -> None:
    d = seed_diagnosis()
    escalated = escalate(RulesDrafter().draft(d), _history(2), d)
    assert escalated.repair_steps[0].text.startswith("With node") and "replace" in escalated.repair_steps[0].text
    assert all("reseat" not in s.text or "not reset, reseated" in s.text for s in escalated.repair_steps)
