"""Which platform a GPU model names, and what the engine makes of a node whose platform nobody gave."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics import GPUS, analyze_tables
from diagnostics.config.platforms import platform_for_model
from tests.analysis.helpers import node_links


@pytest.mark.parametrize(("model", "platform"), [
    ("NVIDIA H100 80GB HBM3", "hgx-h100-8gpu"), ("NVIDIA H100 NVL", "h100-nvl-8gpu"),
    ("NVIDIA A100-SXM4-80GB", "dgx-a100-8gpu"), ("NVIDIA H200", "hgx-h200-8gpu"), ("NVIDIA B200", "hgx-b200-8gpu"),
    ("Tesla V100-SXM2-32GB", "dgx1-v100-8gpu"), ("NVIDIA H100 PCIe", None), ("NVIDIA GeForce RTX 4090", None),
    ("NVIDIA A100-PCIE-40GB", None), ("Tesla V100-PCIE-16GB", None),  # nvidia-smi spells it PCIE too
    ("NVIDIA GB200", "gb200-nvl72-compute-tray"),  # a GB200 rack's tray, no HGX B200 board (NVL36x2: inventory)
    ("", None),
])
def test_the_most_specific_model_wins_and_a_pcie_card_is_not_an_sxm_board(model: str, platform: str | None) -> None:
    assert platform_for_model(model) == platform


def test_a_node_without_a_platform_takes_its_gpus_model_and_says_so() -> None:
    links = node_links(node="n1")
    gpus = GPUS.conform(pd.DataFrame({"node_id": ["n1"] * 8, "gpu": range(8), "model": ["NVIDIA H100 80GB HBM3"] * 8}))
    d = analyze_tables({"link_samples": links, "gpus": gpus}, node_id="n1")
    assert d.platform == "hgx-h100-8gpu"
    assert any("taken from the GPU model 'NVIDIA H100 80GB HBM3'" in w for w in d.warnings)
    bare = analyze_tables({"link_samples": links}, node_id="n1")
    assert bare.platform is None and any(w.startswith("platform unknown") for w in bare.warnings)


def test_a_platform_the_gpu_model_contradicts_is_said() -> None:
    links = node_links(node="n1")
    gpus = GPUS.conform(pd.DataFrame({"node_id": ["n1"] * 8, "gpu": range(8), "model": ["Tesla V100-SXM2-32GB"] * 8}))
    d = analyze_tables({"link_samples": links, "gpus": gpus}, node_id="n1", platform="hgx-h100-8gpu")
    assert d.platform == "hgx-h100-8gpu"
    assert any("is not what the GPU model 'Tesla V100-SXM2-32GB' says (dgx1-v100-8gpu)" in w for w in d.warnings)


def test_a_platform_the_gpu_model_contradicts_holds_the_ticket_and_says_why() -> None:
    """An H100 board named as a V100 one (a wrong inventory row, a wrong --platform): the answer said the model did
    not match, but the node read "medium" and its ticket named a V100 part to replace at that priority, with no word
    of the mismatch. The priority is held, as a plan the platform cannot have is, and the ticket says why."""
    from diagnostics.tickets import RulesDrafter

    links = node_links({(3, 7): 3000.0}, node="n1")
    gpus = GPUS.conform(pd.DataFrame({"node_id": ["n1"] * 8, "gpu": range(8), "model": ["NVIDIA H100 80GB HBM3"] * 8}))
    tables = {"link_samples": links, "gpus": gpus}
    wrong = analyze_tables(tables, node_id="n1", platform="dgx1-v100-8gpu")
    right = analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")
    assert right.platform_contradicted is None and right.held_of() is None and right.fault_detected
    assert wrong.platform_contradicted is not None and "(hgx-h100-8gpu)" in wrong.platform_contradicted
    assert wrong.priority_said() == f"held ({wrong.ticket_priority.value} once the input and the platform agree)"
    ticket = RulesDrafter().draft(wrong)
    assert ticket.held is not None and "so the ticket is held" in " ".join(ticket.warnings)
    assert ticket.to_markdown().count("Priority held") == 1
    assert RulesDrafter().draft(right).held is None


def test_a_model_built_into_several_boards_contradicts_none_of_them() -> None:
    """A GB200 tray named gb200-nvl36x2-compute-tray was held as 'not what the GPU model says
    (gb200-nvl72-compute-tray)', its ticket asking to rename a right platform to a wrong one: the GB200 is built
    into both racks' trays, so either fits; another board's model still contradicts."""
    from diagnostics.config.platforms import platforms_for_model

    assert platforms_for_model("NVIDIA GB200") == {"gb200-nvl72-compute-tray", "gb200-nvl36x2-compute-tray"}
    assert platform_for_model("NVIDIA GB200") == "gb200-nvl72-compute-tray"  # the guess where no one names it
    links = node_links({(3, 7): 3000.0}, node="n1", gpus=4)
    gpus = GPUS.conform(pd.DataFrame({"node_id": ["n1"] * 4, "gpu": range(4), "model": ["NVIDIA GB200"] * 4}))
    tables = {"link_samples": links, "gpus": gpus}
    for platform in ("gb200-nvl36x2-compute-tray", "gb200-nvl72-compute-tray"):
        d = analyze_tables(tables, node_id="n1", platform=platform)
        assert d.platform_contradicted is None and not any("is not what the GPU model" in w for w in d.warnings)
    wrong = analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")
    assert wrong.platform_contradicted is not None and "gb200-nvl36x2-compute-tray" in wrong.platform_contradicted
