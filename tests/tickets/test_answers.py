"""Answers to questions: Claude words them from the facts (checked), the rules answer stands in on failure."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from diagnostics.enums import Severity
from diagnostics.ingest import Source
from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets import ClaudeAnswerer, ModelCall, rules_answer
from tests.conftest import FIXTURES
from tests.tickets.helpers import seed_diagnosis

NODE12 = seed_diagnosis()


def answering_model(*answers: str) -> tuple[FunctionModel, list[str]]:
    prompts: list[str] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(str(messages[-1]))
        retries = sum(isinstance(m, ModelResponse) for m in messages)  # earlier answers sent back
        return ModelResponse(parts=[TextPart(answers[min(retries, len(answers) - 1)])])

    return FunctionModel(reply, model_name="test-claude"), prompts


def test_the_model_answers_from_the_facts_and_its_calls_are_reported() -> None:
    model, prompts = answering_model("GPU 2's NVLink 1 to GPU 3 is failing; file the urgent ticket.")
    calls: list[ModelCall] = []
    answer = ClaudeAnswerer(model=model, on_model_call=calls.append).answer(NODE12, "why is it slow?")
    assert answer.by == "test-claude" and answer.text.startswith("GPU 2's NVLink 1")
    assert "hpc-gpu-node-12" in prompts[0] and "GPU 2 -> GPU 3 NVLink 1" in prompts[0]
    assert [(c.model, c.outcome) for c in calls] == [("test-claude", "ok")]


def test_an_answer_naming_a_gpu_outside_the_facts_is_retried_then_replaced_by_the_rules() -> None:
    model, _ = answering_model("GPU 7 is the culprit.", "GPU 6 then.")
    calls: list[ModelCall] = []
    answer = ClaudeAnswerer(model=model, on_model_call=calls.append, retries=1).answer(NODE12, "why?")
    assert answer.by == "rules" and answer.text == rules_answer(NODE12)
    assert calls[-1].outcome == "fallback"
    fixed, _ = answering_model("GPU 7 is the culprit.", "GPU 2 -> GPU 3 NVLink 1 is failing.")
    assert ClaudeAnswerer(model=fixed, retries=1).answer(NODE12, "why?").text.startswith("GPU 2 -> GPU 3")


def test_an_answer_is_held_to_the_facts_as_a_tickets_words_are() -> None:
    """Not only a GPU: whatever the answer names (a switch the board lacks, another priority, a counter reset, a
    module unloaded, no drain) is sent back, in whatever case it is written."""
    for wrong in ["gpu 7 is the culprit.", "GPU 2 -> GPU 3 NVLink 1 lands on NVSwitch 5 port 40.",
                  "GPU 2 -> GPU 3 NVLink 1 is failing; priority low.",
                  "GPU 2 -> GPU 3 NVLink 1: clear it with `nvidia-smi nvlink -r 0 -i 2`.",
                  "GPU 2 -> GPU 3 NVLink 1: reload the driver (`rmmod nvidia`).",
                  "GPU 2 -> GPU 3 NVLink 1: reset GPU 2 now, no need to drain."]:
        model, _ = answering_model(wrong)
        calls: list[ModelCall] = []
        answer = ClaudeAnswerer(model=model, on_model_call=calls.append, retries=1).answer(NODE12, "why?")
        assert answer.by == "rules", wrong
        assert calls[0].outcome == "retry" and calls[0].detail
    # the node's own plan's commands and the analysis's priority are the facts
    fine = ("GPU 2 -> GPU 3 NVLink 1 is failing, priority urgent: drain the node, read its counters with "
            "`nvidia-smi nvlink -e -i 2`, then reseat the bridge.")
    model, _ = answering_model(fine)
    assert ClaudeAnswerer(model=model, retries=1).answer(NODE12, "why?").text == fine


def test_an_answer_naming_a_part_the_board_lacks_is_sent_back() -> None:
    """On an H100 NVL pair the NVLink runs through the bridge: an answer ordering an HGX board's SXM module, or a
    part of another GPU, is another board's part, named by the words a technician orders by."""
    nvl = seed_diagnosis(platform="h100-nvl-8gpu")
    for wrong in ["GPU 2 -> GPU 3 NVLink 1 is failing: replace GPU 2's H100 SXM5 module.",
                  "GPU 2 -> GPU 3 NVLink 1 is failing: order an H200 NVLink bridge."]:
        model, _ = answering_model(wrong)
        assert ClaudeAnswerer(model=model, retries=1).answer(nvl, "why?").by == "rules", wrong
    fine = "GPU 2 -> GPU 3 NVLink 1 is failing: reseat the NVLink bridge, then replace the H100 NVL card it follows."
    model, _ = answering_model(fine)
    assert ClaudeAnswerer(model=model, retries=1).answer(nvl, "why?").text == fine


def test_a_gpu_known_by_its_pci_address_alone_is_said_as_a_failing_gpu() -> None:
    """A kernel log names a GPU by its PCI address: the answer read 'has a failing the GPU at PCI 0000:18:00.0'."""
    d = seed_diagnosis().model_copy(update={"isolated_component": "the GPU at PCI 0000:18:00.0"})
    assert "has a failing GPU at PCI 0000:18:00.0" in rules_answer(d)


def test_a_node_with_no_link_read_is_not_answered_as_within_thresholds() -> None:
    """A node of the inventory never read: the answer said 'no fabric fault ... the interconnect counters are within
    thresholds', counters no one had read."""
    seed = seed_diagnosis()
    unread = seed.model_copy(update={"findings": [], "fault_detected": False, "lists_every_link": True,
                                     "localization": None, "localizations": [], "verdict": None})
    assert unread.health_unknown()
    said = rules_answer(unread)
    assert "fabric health is unknown" in said and "within thresholds" not in said and "no fabric fault" not in said
    model, prompts = answering_model("Its fabric health is unknown: no link was read.")
    ClaudeAnswerer(model=model, retries=1).answer(unread, "is it healthy?")
    assert '"fault_detected": "unknown"' in prompts[0], prompts[0]  # the model is told unknown, not no


def test_the_evidence_quoted_is_the_isolated_parts_own() -> None:
    """A kernel log of one Xid 149 and the Xid 145 it set off on three other GPUs isolates the Xid 149's GPU: the
    answer quoted the Xid 145 of another GPU as its evidence (the first failing row by address)."""
    log = (FIXTURES / "real" / "xid_145_149_log_1.txt").read_text()
    source, node, _ = files_source([Source.from_text(log)], node="g")
    d = diagnose(source, Request(node=node, end=datetime(2026, 5, 18, tzinfo=UTC))).diagnosis
    assert d.isolated_component == "the GPU at PCI 0000:dc:00.0"
    said = rules_answer(d)
    evidence = said.split("Evidence: ")[1].split(". Priority")[0]
    assert "Xid 149 on the GPU at PCI 0000:dc:00.0" in evidence, said


def test_a_nodes_answer_names_the_node_once_and_ends_its_verdict() -> None:
    """A paste's answer read "`n1`: `n1` has a failing ...", and a verdict ending on its score ran into the next
    sentence ("score 0.84) Evidence: ...")."""
    job = rules_answer(NODE12)
    node = rules_answer(NODE12.model_copy(update={"job_id": None}))
    assert job.startswith(f"Job {NODE12.job_id}: `hpc-gpu-node-12` has a failing GPU 2 -> GPU 3 NVLink 1"), job
    assert node.startswith("`hpc-gpu-node-12` has a failing GPU 2 -> GPU 3 NVLink 1"), node
    assert node.count("`hpc-gpu-node-12`") == 1, node
    assert ") Evidence" not in job and ". Evidence: " in job, job
    unread = NODE12.model_copy(update={"job_id": None, "findings": [], "fault_detected": False,
                                       "localization": None, "localizations": [], "verdict": None})
    assert rules_answer(unread).startswith("No link reading of `hpc-gpu-node-12` in the window"), rules_answer(unread)


def test_a_warning_on_a_reading_whose_other_links_were_read_once_is_no_all_clear(tmp_path: Path) -> None:
    """A dated `nvlink -e` cut near its end: five links read once, one warning on a link read twice. `analyze` and
    the node's summary said "fabric health unknown", while the thread's answer to the paste said "No failing link"."""
    text = (FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt").read_bytes()
    cut = tmp_path / "cut.txt"
    cut.write_bytes(text[:-30])
    source, _, _ = files_source([cut], node="v")
    d = diagnose(source, Request(node="v")).diagnosis
    assert d.unrated() and not d.fault_detected and any(f.severity.value == "warning" for f in d.findings)
    said = rules_answer(d)
    assert said.startswith(f"`v`: {d.unrated_said()}, so no error rate is known and its fabric health is unknown"), \
        said
    assert "No failing link" not in said and " warns: " in said


def test_a_verdict_that_follows_a_full_stop_opens_its_sentence_capitalized() -> None:
    """"... (step time +22.6%). job 4401 is +22.6% slower": the verdict opened its sentence in lower case. A verdict
    that opens with a name keeps the name as written."""
    seed = seed_diagnosis()
    calm = [f.model_copy(update={"severity": Severity.OK, "crossed": []}) for f in seed.findings]
    healthy = seed.model_copy(update={"fault_detected": False, "findings": calm, "job_id": None})
    said = rules_answer(healthy.model_copy(update={"verdict": "job 4401 is +22.6% slower and no link's errors track "
                                                              "it: not the fabric"}))
    assert ". Job 4401 is +22.6% slower" in said, said
    named = rules_answer(healthy.model_copy(update={"verdict": "hpc-gpu-node-01 carries it"}))
    assert ". hpc-gpu-node-01 carries it." in named, named
