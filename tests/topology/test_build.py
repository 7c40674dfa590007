"""Graphs from TOPOLOGY rows: platform detection, the generic fallback, observed ports, inventory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.enums import PortSource
from diagnostics.errors import InputError
from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from diagnostics.tables import TOPOLOGY
from diagnostics.topology import generic_graph, graph_from_topology, load_inventory, platform_graph
from diagnostics.topology.observed import with_observed_ports


def nv_matrix(gpus: int, count: int, node: str = "n1") -> pd.DataFrame:
    rows = [{"node_id": node, "a": f"GPU{i}", "relation": "gpu"} for i in range(gpus)]
    rows += [{"node_id": node, "a": f"GPU{i}", "b": f"GPU{j}", "relation": "NV", "nvlinks": count}
             for i in range(gpus) for j in range(gpus) if i != j]
    return TOPOLOGY.conform(pd.DataFrame(rows))


@pytest.mark.parametrize("gpus", [4, 16])
def test_4_or_16_gpus_give_a_generic_graph_that_works(gpus: int) -> None:
    graph = graph_from_topology(nv_matrix(gpus, 18))
    assert graph.platform is None and graph.gpus == list(range(gpus)) and graph.node_id == "n1"
    assert any(f"no platform template fits {gpus} GPUs with NVLink counts NV18" in w for w in graph.warnings)
    assert graph.switches("nvswitch") == ["NVSwitch fabric"]
    assert graph.expected_links(0) == 18
    port = graph.port_of(1, 5)
    assert port.source is PortSource.UNKNOWN and port.switch_port is None
    assert port.find_with == "nvidia-smi nvlink -R -i 1"


def test_a_mesh_of_unequal_pairs_stays_pairs() -> None:
    rows = nv_matrix(4, 2)
    rows.loc[(rows["a"] == "GPU0") & (rows["b"] == "GPU1"), "nvlinks"] = 4
    graph = graph_from_topology(rows)
    assert graph.platform is None and graph.switches() == []
    assert graph.expected_links(0) == 4 + 2 + 2
    assert graph.port_of(0, None).peer == "unknown"  # three peers: which one is not known


def test_a_missing_link_is_told_not_hidden() -> None:
    rows = nv_matrix(8, 18)
    gpu3 = (rows["a"] == "GPU3") | (rows["b"] == "GPU3")
    rows.loc[gpu3 & (rows["relation"] == "NV"), "nvlinks"] = 17
    graph = graph_from_topology(rows)
    assert graph.platform == "hgx-h100-8gpu"
    assert any("GPU 3: 17 NVLinks where each of hgx-h100-8gpu, hgx-h200-8gpu, hgx-b200-8gpu has 18" in w
               for w in graph.warnings)
    assert not any(" - GPU 3" in w for w in graph.warnings)  # the GPU's pairs read short because it does: said once


def test_a_description_several_platforms_fit_alike_names_them_all_and_none_of_their_parts() -> None:
    """`topo -m` shows 18 NVLinks a GPU on an HGX H100, H200 and B200 alike: the graph follows the first (their
    wiring as the description shows it is the same), and says the others, so no one board's part is taken for it."""
    graph = graph_from_topology(nv_matrix(8, 18))
    assert graph.platform == "hgx-h100-8gpu" and graph.alike == ("hgx-h200-8gpu", "hgx-b200-8gpu")
    assert graph.named == "each of hgx-h100-8gpu, hgx-h200-8gpu, hgx-b200-8gpu"
    assert any("fits hgx-h100-8gpu, hgx-h200-8gpu, hgx-b200-8gpu alike" in w and "not told" in w
               for w in graph.warnings)
    assert graph.copy().alike == graph.alike
    named = graph_from_topology(nv_matrix(8, 18), platform="hgx-b200-8gpu")
    assert named.platform == "hgx-b200-8gpu" and named.alike == () and named.named == "hgx-b200-8gpu"


def test_boards_fitted_alike_keep_their_shared_link_counts_and_no_one_boards_chips() -> None:
    """An HGX H100 has four NVSwitch chips and a B200 two: a graph fitted to both takes neither's. Each GPU keeps its
    18 links by index, on one NVSwitch fabric whose ports are unknown, with only the FRU words the boards share; a
    picture's title names them all."""
    graph = graph_from_topology(nv_matrix(8, 18))
    assert graph.switches("nvswitch") == ["NVSwitch fabric"]
    assert all(graph.expected_links(g) == 18 for g in graph.gpus)
    port = graph.port_of(0, 13)
    assert (port.switch, port.switch_port, port.source) == ("NVSwitch fabric", None, PortSource.UNKNOWN)
    assert port.find_with is not None and "nvlink -R" in port.find_with
    assert graph.fru == {} and port.fru == "GPU 0 (part unknown)"  # "HGX baseboard" and "HGX B200 baseboard" differ
    assert graph.either == "hgx-h100-8gpu, hgx-h200-8gpu or hgx-b200-8gpu"
    assert not any("NVSwitch chips" in w and "has 1" in w for w in graph.warnings)
    named = graph_from_topology(nv_matrix(8, 18), platform="hgx-b200-8gpu")
    assert len(named.switches("nvswitch")) == 2 and named.port_of(0, 13).source is PortSource.ASSUMED
    assert named.either == "hgx-b200-8gpu"


def short_gpus(gpus: int, count: int, short: dict[int, int]) -> pd.DataFrame:
    """A switched board's rows whose GPUs in `short` have fewer NVLinks: each of their pairs shows the fewer."""
    rows = nv_matrix(gpus, count)
    for g, n in short.items():
        mine = ((rows["a"] == f"GPU{g}") | (rows["b"] == f"GPU{g}")) & (rows["relation"] == "NV")
        rows.loc[mine, "nvlinks"] = rows.loc[mine, "nvlinks"].clip(upper=n)
    return rows


def test_a_board_with_two_gpus_short_of_a_link_still_fits_its_platform() -> None:
    """13 of 28 pairs of a DGX A100 with GPUs 3 and 6 at NV11 show fewer than its template: no template fitted, the
    platform was unknown and the two links down were never judged. A board whose every GPU is short fits none."""
    graph = graph_from_topology(short_gpus(8, 12, {3: 11, 6: 11}))
    assert graph.platform == "dgx-a100-8gpu"
    short = [w.split(":")[0] for w in graph.warnings if "11 NVLinks where dgx-a100-8gpu has 12" in w]
    assert short == ["GPU 3", "GPU 6"]
    cut = short_gpus(8, 12, {3: 11})
    cut = cut[~cut["a"].isin([f"GPU{g}" for g in (5, 6, 7)])]  # a paste cut after GPU 4's row
    assert graph_from_topology(cut).platform == "dgx-a100-8gpu"
    assert graph_from_topology(short_gpus(8, 18, dict.fromkeys(range(8), 13))).platform is None
    assert graph_from_topology(short_gpus(8, 18, dict.fromkeys(range(4), 17))).platform is None


def test_a_gpu_with_no_nvlink_among_switched_peers_is_found_with_or_without_the_platform() -> None:
    """A real B200 node's `topo -m` whose GPU 2 shows NODE or SYS to every peer (vLLM issue 16336): its seven pairs
    read no NVLink because GPU 2 has none, so the board still fits an 18-link switched template. Its whole matrix
    found no template (only a paste cut to two rows did) and answered low, the GPU never named."""
    path = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "topo_m_b200_gpu2_no_nvlink_vllm_1.txt"
    tables = detect.read(Source.from_path(path), node_id="n1").tables
    graph = graph_from_topology(tables["topology"])
    assert graph.platform in {"hgx-h100-8gpu", "hgx-h200-8gpu", "hgx-b200-8gpu"}
    assert [w.split(":")[0] for w in graph.warnings if "0 NVLinks where" in w] == ["GPU 2"]
    answers = [analyze_tables(tables, node_id="n1", platform=platform) for platform in (None, "hgx-b200-8gpu")]
    assert [(d.ticket_priority.value, d.fault_detected, d.isolated_component) for d in answers] == \
        [("high", True, "GPU 2 NVLinks")] * 2


def test_platform_hint_wins() -> None:
    graph = graph_from_topology(nv_matrix(8, 18), platform="hgx-h200-8gpu")
    assert graph.platform == "hgx-h200-8gpu"


def test_seed_style_node_without_platform() -> None:
    graph = generic_graph(8, node_id="hpc-gpu-node-12")
    port = graph.port_of(2, 1)
    assert port.source is PortSource.UNKNOWN and port.switch is None
    assert port.find_with == "nvidia-smi nvlink -R -i 2"
    assert port.component == "GPU 2 NVLink 1"


def remote_rows(entries: list[tuple[int, int, str, int]]) -> pd.DataFrame:
    return TOPOLOGY.conform(pd.DataFrame([
        {"node_id": "n1", "a": f"GPU{g}", "link": link, "b": b, "remote_port": port, "relation": "remote",
         "source": f"nvlink_r.txt:{i + 1}"} for i, (g, link, b, port) in enumerate(entries)]))


def test_nvlink_r_makes_ports_observed() -> None:
    graph = with_observed_ports(platform_graph("hgx-h100-8gpu"), remote_rows([
        (2, 1, "NVSwitch 3", 41), (2, 0, "NVSwitch 0", 8)]))
    moved = graph.port_of(2, 1)
    assert moved.source is PortSource.OBSERVED and moved.find_with is None
    assert moved.component == "GPU 2 NVLink 1 -> NVSwitch 3 port 41"
    assert graph.port_of(2, 0).source is PortSource.OBSERVED
    assert graph.port_of(2, 2).source is PortSource.ASSUMED  # untouched links keep their template port
    assert len([p for p in graph.links_of(2) if p.link_type == "nvlink"]) == 18
    # the template itself is not changed
    assert platform_graph("hgx-h100-8gpu").port_of(2, 1).source is PortSource.ASSUMED


def test_nvlink_r_bus_ids_bind_switches_in_bus_order() -> None:
    graph = with_observed_ports(platform_graph("hgx-h100-8gpu"), remote_rows([
        (0, 0, "NVSwitch 0000:f4:00.0", 3), (0, 5, "0000:f3:00.0", 1)]))
    assert graph.port_of(0, 0).switch == "NVSwitch 1"  # f3 < f4: second in bus order
    assert graph.port_of(0, 5).switch == "NVSwitch 0"
    assert any("PCI bus id order" in w for w in graph.warnings)


def test_remote_rows_in_a_topology_are_applied() -> None:
    rows = pd.concat([nv_matrix(8, 18), remote_rows([(4, 17, "NVSwitch 2", 60)])], ignore_index=True)
    graph = graph_from_topology(rows)
    assert graph.port_of(4, 17).switch_port == 60 and graph.port_of(4, 17).source is PortSource.OBSERVED


def test_unplaceable_remote_end_is_a_warning() -> None:
    graph = with_observed_ports(platform_graph("hgx-h100-8gpu"), remote_rows([(1, 2, "somewhere", 3)]))
    assert any("nvlink_r.txt:1: cannot place remote end 'somewhere'" in w for w in graph.warnings)


def test_the_links_of_one_unplaceable_remote_end_are_one_warning() -> None:
    """A bridged pair's `nvlink -R` names the peer GPU's bus id on every link: one warning per remote end, naming
    its links, not one per link."""
    graph = with_observed_ports(platform_graph("h100-nvl-8gpu"), remote_rows(
        [(0, n, "0000:d5:00.0", n) for n in (0, 1, 2, 3, 6)] + [(1, n, "0000:c5:00.0", n) for n in (0, 1)]))
    said = [w for w in graph.warnings if "cannot place" in w]
    assert [w.split(": ", 1)[1] for w in said] == ["cannot place remote end '0000:d5:00.0' of GPU0 links 0, 1, 2, 3, 6",
                                                   "cannot place remote end '0000:c5:00.0' of GPU1 links 0, 1"]


def test_inventory_per_node_toml(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text('node_id = "n1"\nnode_serial = "SN123"\nrack = "R12-U30"\ndriver = "550.54.15"\n'
                    '[[gpu]]\nindex = 2\nbus_id = "00000000:3B:00.0"\nslot = "SXM3"\nserial = "1652"\n')
    node = load_inventory(path).node("n1")
    assert node.rack_location == "R12-U30" and node.value("driver_version") == "550.54.15"
    assert node.gpu(pci_bus_id="0000:3b:00.0").slot == "SXM3"
    gpu = node.gpu(2)
    assert (gpu.value("slot"), gpu.value("serial"), gpu.value("uuid")) == \
        ("SXM3", "1652", "unknown (nvidia-smi -q: 'GPU UUID')")
    assert node.value("vbios_version") == "unknown (nvidia-smi -q: 'VBIOS Version')"
    assert node.gpu(5).value("slot").startswith("unknown (nvidia-smi -q: 'Module ID'")


def test_inventory_fleet_csv(tmp_path: Path) -> None:
    path = tmp_path / "fleet.csv"
    path.write_text("node_id,gpu_index,pci_bus_id,slot,gpu_serial,gpu_uuid,node_serial,rack_location\n"
                    "a,0,0000:18:00.0,SXM1,s0,GPU-aaa,NA1,R1\n"
                    "a,1,0000:2a:00.0,SXM2,s1,GPU-bbb,NA1,R1\n"
                    "b,0,0000:18:00.0,SXM5,t0,GPU-ccc,NB1,R2\n")
    inv = load_inventory(path)
    assert sorted(inv.nodes) == ["a", "b"]
    assert inv.node("a").gpu(1).uuid == "GPU-bbb" and inv.node("b").gpu(0).slot == "SXM5"
    assert inv.node("zzz").value("node_serial").startswith("unknown")


def test_inventory_bad_row_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.csv"
    path.write_text("node_id,gpu_index,slot\na,0,SXM1\na,two,SXM2\n")
    with pytest.raises(InputError, match=r"fleet\.csv:3"):
        load_inventory(path)
    with pytest.raises(InputError, match="not found"):
        load_inventory(tmp_path / "none.toml")


def test_inventory_puts_slot_labels_into_port_answers(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text('node_id = "n1"\n[[gpu]]\nindex = 2\nslot = "SXM5"\nserial = "1652"\nuuid = "GPU-2"\n')
    graph = platform_graph("hgx-h100-8gpu")
    graph.node_id = "n1"
    port = graph.with_inventory(load_inventory(path)).port_of(2, 1)
    assert port.fru == "GPU 2 module (HGX baseboard slot), slot SXM5"
    assert (port.slot, port.gpu_serial, port.gpu_uuid) == ("SXM5", "1652", "GPU-2")
    assert port.fru_next == "HGX baseboard (NVSwitch 0)"
    bare = graph.port_of(2, 1)
    assert bare.slot is None and bare.fru == "GPU 2 module (HGX baseboard slot)"


def test_inventory_reads_short_and_long_bus_ids_alike(tmp_path: Path) -> None:
    fleet = tmp_path / "inventory.csv"
    fleet.write_text("node_id,pci_bus_id,slot,serial\nn1,3B:00.0,SXM5 #3,S-3\nn1,00000000:DC:00.0,SXM5 #7,S-7\n")
    node = load_inventory(fleet).node("n1")
    assert node.gpu(pci_bus_id="0000:3b:00.0").slot == "SXM5 #3"
    assert node.gpu(pci_bus_id="0000:dc:00.0").slot == "SXM5 #7"


def test_four_gpus_each_with_nv6_to_its_three_peers_are_a_direct_mesh_not_a_switch() -> None:
    """NV6 to each of 3 peers is an H100's 18 links, all direct (a 4-GPU HGX H100 has no NVSwitch); only more links
    in all than any GPU has (NV18 to each of 3 peers) is a switch fabric. NCCL issue 1617's `topo -m`."""
    from tests.ingest.helpers import REAL, read

    rows = read(REAL / "topo_m_4xh100_nv6_1.txt")["topology"]
    graph = graph_from_topology(rows)
    assert graph.switches("nvswitch") == [] and not any("NVSwitch fabric" in w for w in graph.warnings)
    assert graph.expected_links(0) == 18 and graph.port_of(0, 2).peer == "unknown"  # three peers, six links each
    assert graph_from_topology(nv_matrix(4, 6)).switches("nvswitch") == []
    assert graph_from_topology(nv_matrix(4, 18)).switches("nvswitch") == ["NVSwitch fabric"]
