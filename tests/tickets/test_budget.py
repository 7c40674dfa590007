"""A draft's input stays under the budget the README states, on a node that reads every one of its 144 NVLinks."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from diagnostics.analysis import analyze_fleet
from diagnostics.enums import LinkEnd
from diagnostics.synth.fleet import load
from diagnostics.tickets import ClaudeDrafter, candidates_for
from diagnostics.tickets.facts import port_for, resolve_graph
from diagnostics.tickets.pages import PAGE, detail, find, line, same_switch, unhealthy_page
from tests.tickets.helpers import TOOLS, hgx_node, request_tokens

DRAFT_INPUT_BUDGET = 12_000  # tokens over all requests of one draft (README: "Cost and bounds")


def _every_tool_once(cid: str, link: str, sizes: list[int]) -> FunctionModel:
    args: dict[str, dict[str, Any]] = {"topology_neighbours": {"gpu": 2}, "parts_catalog": {"candidate_id": cid},
                                       "repair_steps_for": {"candidate_id": cid}, "link_detail": {"link": link},
                                       "same_switch": {"link": link}}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sizes.append(request_tokens(messages, info))
        if len(sizes) == 1:
            return ModelResponse(parts=[ToolCallPart(t, args.get(t, {}), tool_call_id=t) for t in TOOLS])
        answer = {"candidate_id": cid, "why": "three failing links share GPU 2", "summary": "GPU 2 module."}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    return FunctionModel(respond, model_name="scripted")


def test_a_draft_reading_every_tool_stays_under_the_budget() -> None:
    d = hgx_node()
    assert len(d.findings) == 144
    cid = candidates_for(d)[0].id
    sizes: list[int] = []
    ticket = ClaudeDrafter(model=_every_tool_once(cid, "gpu2-nvlink0", sizes)).draft(d)
    assert ticket.drafted_by == "scripted" and len(sizes) == 2
    assert sum(sizes) < DRAFT_INPUT_BUDGET, sizes


def test_healthy_links_are_counted_not_listed() -> None:
    d = hgx_node()
    page = unhealthy_page(d, None, 0)
    assert page["healthy_links"] == {"nvlink": 141} and page["unhealthy_links"] == 3
    assert len(page["links"]) == 3 and page["links"][0].startswith("gpu2-nvlink2 | ")  # worst first
    assert "failing" in page["links"][0] and "replay=1522/h" in page["links"][0]


def test_unhealthy_links_page_when_there_are_many() -> None:
    d = hgx_node(failing=5, gpus=tuple(range(8)))
    first, second = unhealthy_page(d, None, 0), unhealthy_page(d, None, 1)
    assert first["unhealthy_links"] == 40 and first["page"] == "1 of 2" and second["page"] == "2 of 2"
    assert len(first["links"]) == PAGE and len(second["links"]) == 40 - PAGE
    assert first["links"][0].startswith("gpu7-nvlink4 | ")  # the worst of all, on the first page
    refs = [line.split(" | ")[0] for line in first["links"] + second["links"]]
    assert len(set(refs)) == 40


def test_link_detail_gives_lanes_the_end_and_the_far_end() -> None:
    d = hgx_node()
    f = find(d, "gpu2-nvlink2")
    assert f is not None and find(d, "GPU 2 NVLink 2 -> NVSwitch 0 port 10") is f
    seen = f.model_copy(update={"lanes": [6], "end": LinkEnd.NVSWITCH})
    out = detail(seen, d, resolve_graph(d, None))
    assert out["lanes"] == [6] and out["end"] == "nvswitch"
    assert out["far_end"] == {"peer": "GPU 5", "switch": "NVSwitch 0", "switch_port": 10, "port_source": "assumed"}
    assert out["rates_per_hour"]["replay"] == 1522 and "nvlink_replay" in out["crossed"][0]
    assert "lanes 6 | end nvswitch" in line(seen, d, None)


def test_same_switch_lists_the_other_bad_links_and_counts_the_rest() -> None:
    d = hgx_node()
    f = find(d, "gpu5-nvlink3")
    assert f is not None
    graph = resolve_graph(d, None)
    out = same_switch(f, d, graph)
    assert out["switch"] == "NVSwitch 0" and out["gpus_on_it"] == list(range(8))
    assert {f"GPU {g}" for g in range(8)} <= set(out["attached_per_topology"])
    assert [line.split(" | ")[0] for line in out["unhealthy_links"]] == ["gpu2-nvlink0", "gpu2-nvlink1", "gpu2-nvlink2"]
    landing = [g for g in d.findings if port_for(g, d, graph).switch == "NVSwitch 0"]
    assert sum(out["healthy_links"].values()) + len(out["unhealthy_links"]) + 1 == len(landing)


def test_a_pcie_switch_shows_what_hangs_off_it_though_unread() -> None:
    fleet = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"
    truth = json.loads((fleet / "ground_truth.json").read_text())
    tables, inventory = load(fleet)
    node = "hpc-gpu-node-02"  # the PCIe riser scenario: GPU 2's PCIe link replays
    d = analyze_fleet(tables, window=timedelta(hours=1), end=pd.Timestamp(truth["end"]), platforms=inventory,
                      nodes=[node]).diagnoses[node]
    f = find(d, "gpu2-pcie")
    assert f is not None
    out = same_switch(f, d, resolve_graph(d, None))
    assert out["switch"] == "PCIe switch 2" and out["unhealthy_links"] == []
    assert "GPU 2" in out["attached_per_topology"] and any(n.startswith("NIC") for n in out["attached_per_topology"])
