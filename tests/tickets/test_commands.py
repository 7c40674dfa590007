"""What a model's words may tell a technician to run: the catalog's commands, each step its own, and never a write,
a link taken down or a repair without the drain (what a reviewer slipped past the check, each case here)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
import pytest

from diagnostics.analysis import analyze_fleet
from diagnostics.enums import FaultKind, Priority
from diagnostics.repair import repair_plan
from diagnostics.synth.rack_fleet import build_racks
from diagnostics.tickets import ClaudeDrafter, RulesDrafter
from diagnostics.tickets.build import select
from diagnostics.tickets.catalog import plan_for
from diagnostics.tickets.commands import Command, commands_in, held, plan_commands, step_commands
from diagnostics.tickets.reasoning import contradictions, plan_problems
from tests.repair.test_plan import CASES, _facts
from tests.tickets.helpers import hgx_node, scripted


def test_a_command_is_its_tool_subcommand_and_options_values_aside() -> None:
    assert commands_in("read them with `sudo nvidia-smi nvlink -e -i 2` then `dcgmi diag -r 3`.") == [
        Command("nvidia-smi", "nvlink", frozenset({"-e", "-i"})), Command("dcgmi", "diag", frozenset({"-r"}))]
    assert commands_in("nvidia-smi --query-gpu=driver_version --format=csv") == [
        Command("nvidia-smi", "", frozenset({"--query-gpu", "--format"}))]
    assert commands_in("reset the counters, nv set interface acp71 link state down") == [
        Command("nv", "set", frozenset())]
    assert commands_in("the nv driver and the word reboot") == [Command("reboot", "", frozenset())]
    # a counter reset is another command than a counter read, though both are `nvidia-smi nvlink`
    read = commands_in("nvidia-smi nvlink -e -i 2")
    assert held(commands_in("nvidia-smi nvlink -i 0 -e")[0], read)
    assert not held(commands_in("nvidia-smi nvlink -r 0 -i 2")[0], read)
    assert held(Command("nvidia-smi", "", frozenset()), read)  # the tool named alone


UNSAFE = [
    "reset the NVLink counters with `nvidia-smi nvlink -r 0 -i 2` and read them again",
    "run `nvidia-smi nvlink --resetcounters -i 2` first",
    "zero its error counters with `nvidia-smi nvlink -re -i 2`",
    "reload the driver (`sudo rmmod nvidia && sudo modprobe nvidia`)",
    "clear it with `setpci -s 0000:19:00.0 CAP_EXP+10.w=0x0010`",
    "`echo 1 > /sys/bus/pci/devices/0000:19:00.0/remove` takes the GPU out",
    "take NVLink 2 offline",
    "set its port down with `nv set interface acp71 link state down`",
    "reset GPU 2 now, no need to drain the node",
    "reset GPU 2 without draining: jobs keep running",
    "keep the node in service and reset GPU 2",
    "remove GPU 2 with `echo 1 | sudo tee /sys/bus/pci/devices/0000:19:00.0/remove` then rescan",
    "reset GPU 2 (`nvidia-smi -r -i 2`) while its jobs keep running; it is safe live",
    "there's no need for a drain: reset GPU 2 with `nvidia-smi -r -i 2`",
    "draining is optional here; reset GPU 2 with `nvidia-smi -r -i 2`",
    "reset GPU 2 right away with `nvidia-smi -r -i 2` and drain the node later if it recurs",
    "power off NVLink 1 of GPU 2 until the part arrives",
    "run `ip link set ib0 down` to stop traffic",
    "reset GPU 2 and `scontrol update nodename=gpu-node-7 state=resume` to put it back right away",
    "clear the error counters, then read them with `nvidia-smi nvlink -e -i 2`",
    "reset every GPU with `nvidia-smi -r`",
    # the drain said after what it must come before, or a node still at work
    "reset GPU 2 (`nvidia-smi -r -i 2`) first, then drain the node",
    "Run `dcgmi diag -r 3` now, before draining, and watch GPU 2's counters",
    "reseat GPU 2's module prior to draining the node",
    "drain the node after the reset of GPU 2",
    "reset GPU 2 alone, and drain the node afterwards",
    "reset GPU 2 on the running node",
    "reset GPU 2 while the node is still in service",
    "reset GPU 2 with its jobs still running",
    "reset GPU 2 without waiting for the drain",
    "reset GPU 2 alone right away (`nvidia-smi -r -i 2`) and read its counters again",
    "reseat the module straight away and drain the node when the job ends",
]
# What a careful engineer writes: a safety rule said in the negative, a long option, a narrower read
CAREFUL = [
    "GPU 2's NVLink 2 is failing. Never reset or reseat without draining the node first.",
    "GPU 2's NVLink 2 is failing; do not skip the drain: the reset stops every GPU.",
    "GPU 2's NVLink 2 is failing. Drain the whole node: excluding GPU 2 alone is not enough, the repair reboots it.",
    "Isolate the fault by draining the node, then check GPU 2's NVLink 2 counters again.",
    "Read GPU 2's counters with `nvidia-smi nvlink --errorcounters -i 2` and the kernel log (`dmesg`).",
    "With the node drained, reset only GPU 2 (`nvidia-smi --gpu-reset -i 2`), then read its counters again.",
    "Read GPU 2's counters (`nvidia-smi nvlink -e -i 2`) before draining: the drain does not clear them.",
    "Drain the node, then reset GPU 2 alone (`nvidia-smi -r -i 2`) and read its counters again.",
    "Drain the node right away, then reset GPU 2 (`nvidia-smi -r -i 2`).",
    "Have the replacement GPU module on hand before draining the node.",
    "Book field service for the swap test before draining the node, so the window is short.",
    "Drain after this job, then reset GPU 2 (`nvidia-smi -r -i 2`).",
    "If the fault returns within days of a reseat, replace the part immediately instead of reseating again.",
]


@pytest.mark.parametrize("text", UNSAFE)
def test_an_unsafe_instruction_is_sent_back_whatever_the_plan(text: str) -> None:
    plan = plan_for(*_target(hgx_node()))
    assert plan_problems(text, plan, plan_commands(plan))


@pytest.mark.parametrize("text", CAREFUL)
def test_what_a_careful_engineer_writes_is_not_sent_back(text: str) -> None:
    plan = plan_for(*_target(hgx_node()))
    assert plan_problems(text, plan, plan_commands(plan)) == []


def test_a_reworded_step_may_read_what_the_plans_captures_read_and_do_what_its_words_say() -> None:
    plan = plan_for(*_target(hgx_node()))
    reset, _, reseat = plan.repair[:3]
    for step, text in [(reset, "Once drained, reset GPU 2 alone (`nvidia-smi -r -i 2`) and read `nvidia-smi nvlink "
                                "-e -i 2` again"),
                       (reseat, "Power the node off (`sudo poweroff`), then reseat GPU 2's H100 SXM5 module as the "
                                "vendor's service guide says")]:
        assert plan_problems(text, plan, step_commands(step, plan)) == [], text


def test_a_plan_held_until_the_input_is_mended_excuses_its_own_sentence_only() -> None:
    """Its isolation says "do not drain ... until the input and the platform agree": that sentence passes, another
    that says not to drain does not."""
    held_plan = repair_plan("pcie-8gpu", FaultKind.NVLINK, _facts("pcie-8gpu", FaultKind.NVLINK))
    assert not held_plan.applies
    allowed = plan_commands(held_plan)
    assert plan_problems(held_plan.isolation[0].text, held_plan, allowed) == []
    assert plan_problems("There is no need to drain: reset GPU 2.", held_plan, allowed)


@pytest.mark.parametrize(("platform", "fault"), CASES, ids=[f"{p or 'no-platform'}-{f.value}" for p, f in CASES])
def test_every_catalog_plan_passes_its_own_check(platform: str | None, fault: FaultKind) -> None:
    """The catalog's own words, and each step's words against that step's commands, are never sent back: the check
    refuses the model's additions, not the catalog."""
    plan = repair_plan(platform, fault, _facts(platform, fault))
    allowed = plan_commands(plan)
    texts = [plan.action, *(c.command for c in plan.captures), *(s.text for s in [*plan.isolation, *plan.repair])]
    assert [(t, p) for t in texts for p in plan_problems(t, plan, allowed)] == []
    assert [(s.text, p) for s in plan.repair for p in plan_problems(s.text, plan, step_commands(s, plan))] == []


def _target(diagnosis: Any) -> tuple[Any, Any]:
    target, _ = select(diagnosis, None, None)
    return diagnosis, target


def _drafted(diagnosis: Any, summary: str, steps: list[str] | None = None) -> Any:
    _, target = _target(diagnosis)
    plan = plan_for(diagnosis, target)
    reworded = [] if steps is None else [*steps, *(s.text for s in plan.repair[len(steps):])]
    answer = {"candidate_id": target.id, "why": "its links replay", "summary": summary, "repair_steps": reworded}
    return ClaudeDrafter(model=scripted(lambda m, i: answer), retries=1).draft(diagnosis)


@pytest.mark.parametrize("text", UNSAFE[:3] + UNSAFE[6:9])
def test_a_draft_that_says_it_falls_back_to_the_rules(text: str) -> None:
    node = hgx_node()
    ticket = _drafted(node, f"GPU 2's NVLink 2 is failing; {text}.")
    assert ticket.drafted_by == "rules" and ticket.summary == RulesDrafter().draft(node).summary


def test_a_reworded_step_keeps_to_its_own_catalog_step() -> None:
    """A reboot in place of the step that resets one GPU is another step, though the plan reboots elsewhere."""
    node = hgx_node()
    assert _drafted(node, "GPU 2's NVLink 2 is failing.", ["Reboot the node right away"]).drafted_by == "rules"
    plan = plan_for(*_target(node))
    same = _drafted(node, "GPU 2's NVLink 2 is failing.", [plan.repair[0].text.replace("With the node drained, ",
                                                                                        "Once drained, ")])
    assert same.drafted_by == "scripted-claude"


def test_gpus_named_as_a_list_are_held_to_the_facts() -> None:
    facts = {"GPU": {2}}
    assert contradictions("GPUs 5 and 7 also show errors", facts, "this node", Priority.URGENT, "*")
    assert contradictions("gpu7 too", facts, "this node", Priority.URGENT, "*")
    assert not contradictions("GPUs 2 and 2 again", facts, "this node", Priority.URGENT, "*")


def test_a_racks_trays_and_chips_are_held_to_the_facts() -> None:
    tables, truth, slots, platforms = build_racks(seed=4, racks=1, hours=6, scenarios=["switch_chip"])
    rack = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=platforms,
                         racks=slots).racks["rack-01"]
    _, target = _target(rack)
    assert target.component == "Switch tray 1 chip 1"
    assert _drafted(rack, "Switch tray 2 chip 1 is failing: replace switch tray 2.").drafted_by == "rules"
    assert _drafted(rack, "Switch tray 1 chip 3 is failing.").drafted_by == "rules"
    assert _drafted(rack, "Compute trays 3 and 40 see it.").drafted_by == "rules"
    assert _drafted(rack, "Switch tray 1 chip 1 is failing; compute trays 3 and 4 see it on ports 10 and "
                          "16.").drafted_by == "scripted-claude"


NAMED_ELSEWISE = [  # a GPU, port, switch, link, part or priority the facts do not hold, spelled as people spell them
    ("GPU-6 NVLink 2 to NVSwitch 0 port 10 is failing.", "names GPU 6"),
    ("The GPU at index 6 is failing.", "names GPU 6"),
    ("Device cuda:6 is failing.", "names GPU 6"),
    ("GPU six's NVLink 2 is failing.", "names GPU 6"),
    ("GPU 2 NVLink 2 is failing (NVSwitch 0, port: 12).", "names port 12"),
    ("GPU 2 NVLink 2 to NVSwitch 0 port-12 is failing.", "names port 12"),
    ("GPU 2 NVLink 2 lands on NVSwitch 0 at port number 12.", "names port 12"),
    ("GPU 2 NVLink 2 to switch 3 port 10 is failing.", "names NVSwitch 3"),
    ("GPU 2 NVLink 2 to NVSwitch-3 port 10 is failing.", "names NVSwitch 3"),
    ("GPU 2 link 5 to NVSwitch 0 port 10 is failing.", "names NVLink 5"),
    ("Order NVIDIA part 699-2G520-0200-000.", "names part number 699-2G520-0200-000"),
    ("The priority would be urgent.", "states priority urgent"),
    ("Treat it as P1.", "states a priority as P1"),
    ("Escalate it as P0.", "states a priority as P0"),
]
# What a model writes that names none of those: an address, a generation, a performance state, a number in words
NAMED_NOT = ["GPU 0000:dc:00.0 logged Xid 149; nvidia-smi shows it as GPU 00000000:DC:00.0.",
             "GPU 2 NVLink 2 on the rack's NVLink 5 fabric; fourth-generation NVLink (NVLink 4) bandwidth.",
             "Read LnkSta while GPU 2 is at P0 under load: at P8 idle the link drops to Gen1.",
             "Check the GPU one hour after the reset; reseat the GPU one more time if it returns.",
             "Its upstream root port 0000:17:01.0 reads the same; the training job, a high-priority job, stops."]


@pytest.mark.parametrize(("text", "said"), NAMED_ELSEWISE)
def test_a_fact_spelled_another_way_is_still_held_to_the_facts(text: str, said: str) -> None:
    """A draft named GPU 6 as `GPU-6` or `cuda:6`, port 12 as `port: 12`, an invented part number, a priority as P1,
    and the check let them through to the filed ticket."""
    facts = {"GPU": {2}, "NVLink": {2}, "NVSwitch": {0}, "port": {10}}
    problems = contradictions(text, facts, "candidate c", Priority.HIGH, {"hgx-h100-sxm5-module"})
    assert any(said in p for p in problems), problems
    fine = "GPU 2 (GPU-2, cuda:2) NVLink 2 to NVSwitch 0 port 10 (port: 10) is failing; priority high."
    assert contradictions(fine, facts, "candidate c", Priority.HIGH, {"hgx-h100-sxm5-module"}) == []
    uuid = "GPU-12345678-9abc-def0-1234-56789abcdef0 is GPU 2; an NVLink5 board."  # a UUID, a generation
    assert contradictions(uuid, facts, "candidate c", Priority.HIGH, {"hgx-h100-sxm5-module"}) == []


@pytest.mark.parametrize("text", NAMED_NOT)
def test_what_names_no_gpu_port_link_or_priority_is_not_sent_back(text: str) -> None:
    """A draft citing a GPU by its PCI address was refused as naming GPU 0, "NVLink 5 fabric" as link 5, "at P0" as a
    priority, "the GPU one hour after" as GPU 1: every ticket of that wording fell back to the rules."""
    facts = {"GPU": {2}, "NVLink": {2}, "NVSwitch": {0}, "port": {10}}
    assert contradictions(text, facts, "candidate c", Priority.URGENT, {"hgx-h100-sxm5-module"}) == []


def test_a_draft_may_not_give_the_failing_link_to_the_peer_the_input_named() -> None:
    """The input names GPU 2 NVLink 2's peer GPU 5, which the platform contradicts: the plan's words name GPU 5, so a
    summary saying "GPU 5 NVLink 2 is failing" passed, though the failing link is GPU 2's."""
    from diagnostics.tickets import candidates_for
    from diagnostics.tickets.reasoning import DraftReasoning, check

    d = hgx_node()
    cands = candidates_for(d)
    target, _ = select(d, None, None)
    draft = {"candidate_id": target.id, "why": "GPU 2 NVLink 2 replays over 1,000/h.",
             "summary": "GPU 5 NVLink 2 to NVSwitch 0 port 10 is failing."}
    priorities = {c.id: Priority.HIGH for c in cands}
    plans = {c.id: plan_for(d, c) for c in cands}
    problems = check(DraftReasoning.model_validate(draft), d, cands, priorities, plans)
    assert any("names GPU 5 NVLink 2, but candidate" in p and "GPU 2 NVLink 2" in p for p in problems), problems
    right = draft | {"summary": "GPU 2 NVLink 2 to NVSwitch 0 port 10 is failing (the input named GPU 5 its peer)."}
    assert check(DraftReasoning.model_validate(right), d, cands, priorities, plans) == []
