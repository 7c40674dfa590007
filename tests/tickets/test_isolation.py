"""Drafted words (a ticket's rewording, a thread answer) isolate at least what the step they come before stops: a
reboot or reseat the whole node, a switch tray or cable cartridge every compute tray of the rack."""

from __future__ import annotations

import pytest

from diagnostics.config.platforms import all_platforms
from diagnostics.config.racks import rack_of, rack_spec
from diagnostics.enums import FaultKind, PortSource
from diagnostics.repair import PlanFacts, PlanStep, RepairPlan, repair_plan
from diagnostics.tickets import ClaudeAnswerer
from diagnostics.tickets.isolation import isolation_problems, isolation_reach, unsafe_steps
from diagnostics.tickets.reasoning import plan_commands, plan_problems
from tests.tickets.helpers import seed_diagnosis
from tests.tickets.test_answers import answering_model

NODE_STOPPING = ["Drain GPU 2 only and keep the others running, then reboot the node.",
                 "Drain only GPU 2; the other seven GPUs keep their jobs.",
                 "Isolate GPU 2 and leave the other GPUs running while the module is reseated.",
                 "Take GPU 2 out of service and let the remaining GPUs serve jobs.",
                 "Exclude GPU 2 from new jobs, then reboot the node."]
RACK_NARROW = ["Drain compute tray 7 only and keep the other trays running, then reseat switch tray 3.",
               "Drain r7-c07 and keep the others running while switch tray 3 is reseated.",
               "Drain GPU 2 only and keep the others running, then reseat switch tray 3."]
HOSTS = [f"r7-c{i:02d}" for i in range(1, 19)]
RACK_PLATFORMS = sorted({n for n, d in all_platforms().items() if d.get("rack")}
                        | {str(d["rack"]) for d in all_platforms().values() if d.get("rack")})


def _hgx() -> RepairPlan:
    return repair_plan("hgx-h100-8gpu", FaultKind.PCIE_REPLAYS, PlanFacts(node_id="node-02", gpu=2))


def _rack(platform: str = "gb200-nvl72", fault: FaultKind = FaultKind.SWITCH_PORT) -> RepairPlan:
    spec = rack_of(platform) or rack_spec(platform)
    hosts = HOSTS[:spec.compute_trays]
    return repair_plan(platform, fault, PlanFacts(
        node_id="rack-07", rack_id="rack-07", tray="7", gpu=2, link=5, switch_tray="3", switch="Switch tray 3 chip 2",
        switch_port=27, port_source=PortSource.ASSUMED, cartridge="1", hosts=[hosts[6]],
        unit="Switch tray 3 chip 2 port 27", rack_hosts=hosts, jobs=["r7-train"]))


@pytest.mark.parametrize("text", NODE_STOPPING)
def test_one_gpu_drained_before_a_node_wide_step_is_sent_back(text: str) -> None:
    plan = _hgx()
    assert plan.stops_node
    assert any("the only isolation is the node's drain" in p for p in plan_problems(text, plan, plan_commands(plan)))


@pytest.mark.parametrize("text", RACK_NARROW)
def test_a_few_trays_drained_before_a_switch_tray_step_is_sent_back(text: str) -> None:
    plan = _rack()
    rack_step = next(s for s in plan.repair if s.stops == "rack")
    for step in (None, rack_step):
        assert any("every compute tray of the rack is drained first" in p
                   for p in plan_problems(text, plan, plan_commands(plan), None, step)), step


def test_the_progressive_isolation_of_a_rack_plan_still_passes() -> None:
    """The tray drained for the GPU reset, and the whole rack drained before the switch tray, is the plan itself."""
    plan = _rack()
    gpu_step = next(s for s in plan.repair if s.stops == "gpu")
    assert not isolation_problems("Drain compute tray 7 only; the other trays keep running. Reset GPU 2.", plan,
                                  gpu_step)
    assert not isolation_problems("Drain compute tray 7 only and keep the other trays running for the GPU reset; "
                                  "drain every compute tray of rack rack-07 before switch tray 3 is reseated.", plan)


def test_words_that_rule_the_narrow_isolation_out_pass() -> None:
    plan = _hgx()
    for text in ["Excluding GPU 2 alone is not enough: drain the node before the reboot.",
                 "Do not drain GPU 2 alone and keep the others running: the reboot stops them all.",
                 "Drain the node hosting GPU 2, then reboot it."]:
        assert not isolation_problems(text, plan), text


def test_a_plan_that_stops_one_gpu_alone_may_drain_it_alone() -> None:
    plan = _single_gpu_plan()
    assert not plan.stops_node
    assert not isolation_problems("Exclude GPU 2 and keep the other GPUs running, then reset GPU 2.", plan)


def _single_gpu_plan() -> RepairPlan:
    plan = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, link=1))
    return plan.model_copy(update={"repair": [s for s in plan.repair if s.stops in (None, "gpu")]})


PLATFORMS = [*sorted(all_platforms()), None]


@pytest.mark.parametrize("fault", list(FaultKind))
def test_every_plans_own_wording_passes(fault: FaultKind) -> None:
    plans = [repair_plan(p, fault, PlanFacts(node_id="n", gpu=2, link=1)) for p in PLATFORMS]
    plans += [_rack(p, fault) for p in RACK_PLATFORMS]
    for plan in plans:
        assert not isolation_problems(plan.action, plan), plan.action
        for step in [*plan.isolation, *plan.repair]:
            assert not isolation_problems(step.text, plan, step), step.text


def test_a_thread_answer_that_drains_one_gpu_before_a_node_wide_step_is_sent_back() -> None:
    node12 = seed_diagnosis()
    wrong = "GPU 2 -> GPU 3 NVLink 1 is failing: drain GPU 2 only and keep the others running, then reseat the bridge."
    model, _ = answering_model(wrong)
    assert ClaudeAnswerer(model=model, retries=1).answer(node12, "why?").by == "rules"
    fine = "GPU 2 -> GPU 3 NVLink 1 is failing: drain the node, then reseat the bridge."
    model, _ = answering_model(fine)
    assert ClaudeAnswerer(model=model, retries=1).answer(node12, "why?").text == fine


@pytest.mark.parametrize("fault", list(FaultKind))
def test_every_shipped_plan_isolates_what_each_of_its_steps_stops(fault: FaultKind) -> None:
    """What the eval's safety score reads, held for every platform and fault: no step stops more than the isolation
    reaches."""
    plans = [repair_plan(p, fault, PlanFacts(node_id="n", gpu=2, link=1)) for p in PLATFORMS]
    plans += [_rack(p, fault) for p in RACK_PLATFORMS]
    for plan in plans:
        if plan.applies:
            assert not unsafe_steps(plan), (plan.platform, unsafe_steps(plan))


def test_a_plan_reaching_less_than_a_step_stops_names_the_step() -> None:
    switch = _rack(fault=FaultKind.SWITCH_TRAY)
    assert isolation_reach(switch) == "rack" and not unsafe_steps(switch)
    trays = switch.model_copy(update={"isolation": [s for s in switch.isolation if s.drains != "rack"]})
    assert isolation_reach(trays) == "node"
    assert any("stops every GPU of the rack" in p and "reaches the node" in p for p in unsafe_steps(trays))
    node = _hgx()
    assert isolation_reach(node) == "node" and not unsafe_steps(node)
    offer = PlanStep(text="Drain node-02 from the scheduler, or, if the job can run on fewer GPUs, exclude GPU 2 "
                          "from new jobs")  # the catalog's own offer, where nothing in the plan stops the node
    narrowed = node.model_copy(update={"isolation": [offer]})
    assert isolation_reach(narrowed) == "gpu" and unsafe_steps(narrowed)[0].startswith("the reset stops every GPU")
