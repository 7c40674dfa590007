"""Graph invariants of every platform template, and the port / FRU answers tickets quote."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from diagnostics.config.platforms import all_platforms
from diagnostics.enums import PortSource
from diagnostics.errors import ConfigError
from diagnostics.topology import platform_graph

# Whole boards; a rack's hosts (GB200 trays) are laid out by their rack file and checked in test_rack.py.
PLATFORMS = sorted(n for n, d in all_platforms().items() if not d.get("rack"))

# Per platform: NVLinks per GPU, NVSwitch chips, links from each GPU to each switch (sorted).
EXPECTED = {
    "hgx-h100-8gpu": (18, 4, [4, 4, 5, 5]),
    "hgx-h200-8gpu": (18, 4, [4, 4, 5, 5]),
    "hgx-b200-8gpu": (18, 2, [9, 9]),
    "dgx-a100-8gpu": (12, 6, [2, 2, 2, 2, 2, 2]),
    "dgx1-v100-8gpu": (6, 0, []),
    "pcie-8gpu": (0, 0, []),
    "h100-nvl-8gpu": (12, 0, []),
}


def test_every_shipped_platform_is_checked() -> None:
    assert set(PLATFORMS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_links_per_gpu_and_switch(name: str) -> None:
    per_gpu, switches, spread = EXPECTED[name]
    graph = platform_graph(name)
    assert graph.gpus == list(range(8))
    assert len(graph.switches("nvswitch")) == switches
    for gpu in graph.gpus:
        links = [p for p in graph.links_of(gpu) if p.link_type == "nvlink"]
        assert len(links) == per_gpu == graph.expected_links(gpu)
        numbers = all_platforms()[name].get("nvlink", {}).get("links", list(range(per_gpu)))  # a card's own gaps
        assert sorted(p.link for p in links) == numbers  # every link index once
        by_switch = Counter(p.switch for p in links if p.switch)
        assert sorted(by_switch.values()) == spread
        assert [p.link_type for p in graph.links_of(gpu)].count("pcie") == 1
    for switch in graph.switches("nvswitch"):
        ports = [d["switch_port"] for *_, d in graph.graph.edges(switch, data=True)]
        assert len(ports) == len(set(ports)), f"{switch} has a port used twice"
        assert max(ports) < graph.graph.nodes[switch]["ports"]


@pytest.mark.parametrize("name", PLATFORMS)
def test_no_dangling_ports(name: str) -> None:
    graph = platform_graph(name)
    g = graph.graph
    for u, v, data in g.edges(data=True):
        assert u in g and v in g and g.nodes[u].get("kind") and g.nodes[v].get("kind")
        assert data["link_type"] in ("nvlink", "pcie")
    for node, data in g.nodes(data=True):
        assert g.degree(node) > 0, f"{node} is not connected"
        if data["kind"] == "pcie_switch":
            kinds = {g.nodes[n]["kind"] for n in graph.neighbours(node)}
            assert "cpu" in kinds  # every PCIe switch hangs under a CPU socket
    for gpu in graph.gpus:
        for port in graph.links_of(gpu):
            assert port.source is PortSource.ASSUMED
            assert port.find_with  # an assumed port says how to confirm it


def test_direct_mesh_matches_the_dgx1_matrix() -> None:
    graph = platform_graph("dgx1-v100-8gpu")
    peers = Counter(p.peer for p in graph.links_of(0) if p.link_type == "nvlink")
    assert peers == {"GPU 1": 1, "GPU 2": 1, "GPU 3": 2, "GPU 4": 2}
    port = graph.port_of(0, 2)
    assert port.component == "GPU 0 -> GPU 3 NVLink 2"
    assert port.switch is None and port.peer_kind == "gpu" and port.peer_link is not None


def test_switched_link_names_its_physical_path() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    port = graph.port_of(2, 1)
    assert port.switch == "NVSwitch 0" and port.switch_port == 9
    assert port.component == "GPU 2 NVLink 1 -> NVSwitch 0 port 9"
    assert port.fru == "GPU 2 module (HGX baseboard slot)"
    assert port.fru_next == "HGX baseboard (NVSwitch 0)"
    assert port.find_with == "nvidia-smi nvlink -R -i 2"
    # links 4-8 go to the second switch
    assert {graph.port_of(5, link).switch for link in range(4, 9)} == {"NVSwitch 1"}


def test_pcie_port_carries_generation_and_width() -> None:
    port = platform_graph("dgx-a100-8gpu").port_of(3, None, "pcie")
    assert port.component == "GPU 3 PCIe"
    assert port.peer == "PCIe switch 1" and port.peer_kind == "pcie_switch"
    assert (port.expected_gen, port.expected_width) == (4, 16)


def test_sku_with_12_of_18_links_expects_12() -> None:
    nvl = platform_graph("h100-nvl-8gpu")
    assert all_platforms()["h100-nvl-8gpu"]["die_nvlinks"] == 18
    assert nvl.expected_links(0) == 12
    assert {p.peer for p in nvl.links_of(0) if p.link_type == "nvlink"} == {"GPU 1"}
    assert nvl.port_of(0, 3).fru == "NVLink bridge between GPU 0 and GPU 1"


def test_unknown_gpu_or_link_is_an_honest_unknown() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    missing = graph.port_of(9, 1)
    assert missing.source is PortSource.UNKNOWN and missing.switch is None
    assert "not in the node" in (missing.note or "")
    absent = graph.port_of(2, 20)
    assert absent.source is PortSource.UNKNOWN and "no nvlink link 20" in (absent.note or "")


def test_user_adds_a_platform_by_adding_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "quad.toml").write_text(
        'name = "quad-mesh"\ngpu_count = 4\nnvlinks_per_gpu = 3\ngpu_model = "X"\n'
        '[nvlink]\ndirect = [{gpus = [0, 1]}, {gpus = [0, 2]}, {gpus = [0, 3]}, {gpus = [1, 2]},'
        ' {gpus = [1, 3]}, {gpus = [2, 3]}]\n'
    )
    monkeypatch.setenv("FABRICBOT_PLATFORMS", str(tmp_path))
    graph = platform_graph("quad-mesh")
    assert graph.gpus == [0, 1, 2, 3]
    assert [graph.expected_links(g) for g in graph.gpus] == [3, 3, 3, 3]
    assert graph.port_of(1, 0).peer == "GPU 0"


def test_a_layout_that_contradicts_its_link_count_is_a_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.toml").write_text(
        'name = "bad"\ngpu_count = 2\nnvlinks_per_gpu = 4\n[nvlink]\ndirect = [{gpus = [0, 1], count = 2}]\n'
    )
    monkeypatch.setenv("FABRICBOT_PLATFORMS", str(tmp_path))
    with pytest.raises(ConfigError, match="GPU 0 gets 2 NVLinks"):
        platform_graph("bad")
