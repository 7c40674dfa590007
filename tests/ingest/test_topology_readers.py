"""`nvidia-smi topo -m` and NCCL topology XML readers against the real samples in fixtures/real/."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.ingest.base import Source
from diagnostics.ingest.detect import choose, read
from diagnostics.topology import graph_from_topology

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def topology(name: str) -> tuple[pd.DataFrame, list[str]]:
    result = read(REAL / name, node_id="node-a")
    return result["topology"], [str(w) for w in result.warnings]


def cell(frame: pd.DataFrame, a: str, b: str) -> tuple[str, object]:
    row = frame[(frame["a"] == a) & (frame["b"] == b) & ~frame["relation"].isin(["gpu", "nic"])]
    assert len(row) == 1, f"{a} -> {b}: {len(row)} rows"
    return str(row["relation"].iloc[0]), row["nvlinks"].iloc[0]


def affinity(frame: pd.DataFrame, device: str, relation: str) -> str | None:
    row = frame[(frame["a"] == device) & (frame["relation"] == relation)]
    return None if row.empty else str(row["detail"].iloc[0])


@pytest.mark.parametrize(("name", "reader"), [
    ("topo_m_hgx_h100_1.txt", "topo-m"), ("topo_m_dgx_a100_1.txt", "topo-m"),
    ("topo_m_dgx1_v100_1.txt", "topo-m"), ("topo_m_pcie_4090_1.txt", "topo-m"),
    ("nccl_topo_1.txt", "nccl-xml"),
])
def test_detected(name: str, reader: str) -> None:
    assert choose(Source.from_path(REAL / name)).name == reader


def test_h100_matrix_nv18_everywhere_and_nic_affinities() -> None:
    frame, warnings = topology("topo_m_hgx_h100_1.txt")
    assert sorted(frame.loc[frame["relation"] == "gpu", "a"]) == [f"GPU{i}" for i in range(8)]
    assert sorted(frame.loc[frame["relation"] == "nic", "a"]) == [f"NIC{i}" for i in range(9)]
    nv = frame[frame["relation"] == "NV"]
    assert set(nv["nvlinks"]) == {18}
    pairs = {tuple(sorted((a, b))) for a, b in zip(nv["a"], nv["b"], strict=True)}
    # GPU7's pairs come from the other rows' columns; GPU6-GPU7 is in neither cut row: not made up
    assert len(pairs) == 27 and ("GPU6", "GPU7") not in pairs
    assert cell(frame, "GPU0", "NIC0")[0] == "PIX"
    assert cell(frame, "GPU3", "NIC4")[0] == "PIX"
    assert cell(frame, "GPU0", "NIC1")[0] == "NODE"
    assert cell(frame, "GPU4", "NIC0")[0] == "SYS"
    assert affinity(frame, "GPU3", "cpu_affinity") == "24-47,120-143"
    assert affinity(frame, "GPU4", "numa_affinity") == "2"
    assert affinity(frame, "GPU0", "gpu_numa_id") is None  # N/A
    # the paste is cut inside GPU6's row: both the cut row and the missing rows are named, with lines
    assert any(":10: row GPU6 is cut off after 7 of 17 columns" in w for w in warnings)
    assert any("no rows for GPU7, NIC0" in w for w in warnings)
    assert (frame["source"].astype(str).str.contains(r"topo_m_hgx_h100_1\.txt:\d+$")).all()
    graph = graph_from_topology(frame)
    assert graph.platform == "hgx-h100-8gpu" and graph.gpus == list(range(8)) and graph.node_id == "node-a"
    assert any("hgx-h200-8gpu" in w for w in graph.warnings)  # NV18 fits H200 too: said, not hidden


def test_dgx1_hybrid_cube_mesh() -> None:
    frame, warnings = topology("topo_m_dgx1_v100_1.txt")
    assert warnings == []
    assert cell(frame, "GPU0", "GPU3") == ("NV", 2)
    assert cell(frame, "GPU0", "GPU1") == ("NV", 1)
    assert cell(frame, "GPU0", "GPU5")[0] == "SYS"
    # the old layout names NICs by device: mlx5_2 is NIC2, PIX with GPU4
    nics = frame[frame["relation"] == "nic"].set_index("a")["b"].to_dict()
    assert nics == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert cell(frame, "GPU4", "NIC2")[0] == "PIX"
    assert affinity(frame, "GPU7", "cpu_affinity") == "20-39,60-79"
    graph = graph_from_topology(frame)
    assert graph.platform == "dgx1-v100-8gpu" and graph.warnings == []


def test_dgx_a100_cut_row_keeps_what_is_whole() -> None:
    frame, warnings = topology("topo_m_dgx_a100_1.txt")
    assert set(frame.loc[frame["relation"] == "NV", "nvlinks"]) == {12}
    assert cell(frame, "GPU0", "NIC1")[0] == "PXB"
    assert affinity(frame, "GPU2", "numa_affinity") == "1"
    assert affinity(frame, "GPU4", "cpu_affinity") is None  # '112-127,240-25' is cut: dropped, not guessed
    assert any(":9: the input ends inside this row" in w for w in warnings)
    graph = graph_from_topology(frame)
    assert graph.platform == "dgx-a100-8gpu" and len(graph.gpus) == 8


def test_a_file_ending_inside_a_whole_row_says_so(tmp_path: Path) -> None:
    text = (REAL / "topo_m_dgx1_v100_1.txt").read_text()
    cut = text[: text.index("\nmlx5_3") + 1] + text[text.index("\nmlx5_3") + 1:].split("\n", 1)[0].rstrip("\t")
    (tmp_path / "topo.txt").write_text(cut)
    result = read(tmp_path / "topo.txt")
    assert any(":15: the input ends inside this line" in str(w) for w in result.warnings)
    assert cell(result["topology"], "NIC3", "NIC1")[0] == "SYS"  # whitespace follows X: every value read


def test_4090_pcie_only() -> None:
    frame, warnings = topology("topo_m_pcie_4090_1.txt")
    assert warnings == []
    assert "NV" not in set(frame["relation"])
    assert cell(frame, "GPU6", "NIC0")[0] == "PHB"
    assert cell(frame, "NIC0", "NIC1")[0] == "PIX"
    assert affinity(frame, "GPU5", "numa_affinity") == "1"
    graph = graph_from_topology(frame)
    assert graph.platform == "pcie-8gpu" and graph.expected_links(0) == 0


def test_nccl_xml_18_links_per_gpu_spread_5_5_4_4() -> None:
    frame, warnings = topology("nccl_topo_1.txt")
    assert warnings == []
    links = frame[frame["relation"] == "nvlink"]
    assert links.groupby("a")["nvlinks"].sum().to_dict() == {f"GPU{i}": 18 for i in range(8)}
    for _, per_gpu in links.groupby("a"):
        assert sorted(per_gpu["nvlinks"]) == [4, 4, 5, 5]
        assert per_gpu["b"].str.startswith("NVSwitch 0000:f").all()
    gpus = frame[frame["relation"] == "gpu"].set_index("a")
    assert gpus.loc["GPU0", "b"] == "0000:a4:00.0" and "device=0x2330" in str(gpus.loc["GPU0", "detail"])
    assert cell(frame, "GPU0", "NIC7")[0] == "PIX"  # the NIC under the same bridge
    assert cell(frame, "GPU0", "NIC6")[0] == "NODE"
    assert cell(frame, "GPU0", "NIC0")[0] == "SYS"
    graph = graph_from_topology(frame)
    assert graph.platform == "hgx-h100-8gpu" and graph.warnings == []  # the PCI device id settles H100
    assert graph.graph.nodes["NVSwitch 1"]["pci_bus_id"] == "0000:f4:00.0"


def test_cut_off_xml_reads_what_came_before(tmp_path: Path) -> None:
    lines = (REAL / "nccl_topo_1.txt").read_text().splitlines()
    cut = tmp_path / "cut.xml"
    cut.write_text("\n".join(lines[:44]))  # stops inside GPU 2's element, after two of its <nvlink>s
    result = read(cut)
    frame = result["topology"]
    assert sorted(frame.loc[frame["relation"] == "gpu", "a"]) == ["GPU0", "GPU1", "GPU2"]
    assert any("cut off inside <gpu>" in str(w) and w.line == 44 for w in result.warnings)
    links = frame[frame["relation"] == "nvlink"].groupby("a")["nvlinks"].sum().to_dict()
    assert links == {"GPU0": 18, "GPU1": 18, "GPU2": 9}
    graph = graph_from_topology(frame)
    assert graph.gpus == [0, 1, 2] and graph.platform is None  # still a graph for what is known
    assert any("generic graph" in w for w in graph.warnings)


def test_broken_xml_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text('<system version="1">\n<cpu numaid="0">\n<gpu dev="0" <<>\n</cpu></system>\n')
    result = read(bad, fmt="nccl-xml")
    assert any(w.line == 3 and "not well-formed" in w.message for w in result.warnings)


def test_old_soc_path_kind_and_unknown_cell(tmp_path: Path) -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSOC\t0-7\nGPU1\tSOC\t X \t8-15\n"
    path = tmp_path / "old.txt"
    path.write_text(text)
    frame = read(path)["topology"]
    assert cell(frame, "GPU0", "GPU1")[0] == "SYS"
    path.write_text(text.replace("SOC\t X", "WAT\t X"))
    result = read(path)
    assert any("unknown path kind 'WAT'" in w.message and w.line == 3 for w in result.warnings)


def test_wide_matrix_from_column_zero_cut_mid_row() -> None:
    frame, warnings = topology("topo_m_a100_18nic_1.txt")
    nics = sorted(frame.loc[frame["relation"] == "nic", "a"], key=lambda n: int(n[3:]))
    assert nics == [f"NIC{i}" for i in range(18)]
    assert set(frame.loc[frame["relation"] == "NV", "nvlinks"]) == {12}
    assert cell(frame, "GPU0", "NIC5")[0] == "PXB" and cell(frame, "GPU2", "NIC1")[0] == "PXB"
    assert cell(frame, "GPU4", "GPU7") == ("NV", 12)
    assert cell(frame, "GPU4", "NIC6")[0] == "SYS"  # the cut row's last value: SYS is whole, kept
    assert frame[(frame["a"] == "GPU4") & (frame["b"] == "NIC7")].empty  # past the cut: nothing made up
    assert affinity(frame, "GPU3", "cpu_affinity") == "16-31,144-159"
    assert affinity(frame, "GPU0", "numa_affinity") == "3"
    assert any(":8: row GPU4 is cut off after 15 of 26 columns" in w for w in warnings)
    assert any(":8: the matrix is cut off here: no rows for GPU5, GPU6, GPU7, NIC0" in w for w in warnings)
    graph = graph_from_topology(frame)
    assert graph.platform == "dgx-a100-8gpu" and graph.gpus == list(range(8))


def test_wide_matrix_after_a_prompt_cut_after_one_value() -> None:
    frame, warnings = topology("topo_m_h100_18nic_1.txt")
    assert set(frame.loc[frame["relation"] == "NV", "nvlinks"]) == {18}
    assert cell(frame, "GPU4", "GPU0") == ("NV", 18)  # NV18 has two digits: nothing longer starts with it
    assert cell(frame, "GPU2", "NIC8")[0] == "PXB" and cell(frame, "GPU0", "NIC17")[0] == "SYS"
    assert affinity(frame, "GPU1", "gpu_numa_id") is None  # N/A
    at_cut = [w.split(": ", 1)[1] for w in warnings if ":9:" in w]
    assert at_cut[0] == "row GPU4 is cut off after 1 of 26 columns; read what is there"
    assert graph_from_topology(frame).platform == "hgx-h100-8gpu"


def _cut_a100(after: str) -> str:
    """The real 18-NIC matrix, its GPU4 row cut right after `after` (a prefix of that row)."""
    lines = (REAL / "topo_m_a100_18nic_1.txt").read_text().splitlines()
    assert lines[7].startswith(after)
    return "\n".join([*lines[:7], after])


@pytest.mark.parametrize(("after", "kept"), [
    ("GPU4    NV12    NV12    NV12    NV12     X      NV1", None),  # NV1 may be NV12 or NV18
    ("GPU4    NV12    NV12    NV12    NV12     X      NV12    NV12    NV12    SY", None),  # a fragment
    ("GPU4    NV12    NV12    NV12    NV12     X      NV12    NV12    NV12    SYS     SYS", "SYS"),
    ("GPU4    NV12    NV12    NV12    NV12     X      NV12 ", "NV"),  # whitespace after it: whole
])
def test_the_last_value_of_a_cut_row_is_kept_only_when_whole(tmp_path: Path, after: str, kept: str | None) -> None:
    path = tmp_path / "cut.txt"
    path.write_text(_cut_a100(after))
    result = read(path, node_id="node-a")
    frame = result["topology"]
    columns = ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7", "NIC0", "NIC1"]
    last_col = columns[len(after.split()) - 2]
    rows = frame[(frame["a"] == "GPU4") & (frame["b"] == last_col)]
    messages = [w.message for w in result.warnings if w.line == 8]
    if kept is None:
        assert rows.empty
        said = f"its last value {after.split()[-1]!r} (GPU4 -> {last_col}) may be cut, dropped"
        assert any(said in m for m in messages)
        assert not any("unknown path kind" in m for m in messages)
    else:
        assert rows["relation"].tolist() == [kept]
        assert not any("may be cut" in m for m in messages)


def test_a_short_row_inside_the_matrix_keeps_its_values_and_names_a_bad_one(tmp_path: Path) -> None:
    lines = (REAL / "topo_m_a100_18nic_1.txt").read_text().splitlines()
    lines[4] = lines[4][:60].rstrip() + "    SY"  # GPU1's row, short and ending in a fragment, then GPU2's row
    path = tmp_path / "short.txt"
    path.write_text("\n".join(lines))
    result = read(path)
    assert any(w.line == 5 and "unknown path kind 'SY'" in w.message for w in result.warnings)
    assert not any("may be cut" in w.message for w in result.warnings)
    assert cell(result["topology"], "GPU1", "GPU6") == ("NV", 12)


def test_a_long_topo_m_read_in_chunks_reads_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnostics.ingest import topo_matrix

    text = (REAL / "topo_m_a100_18nic_1.txt").read_text() * 3
    whole = read(Source.from_text(text))["topology"]
    monkeypatch.setattr(topo_matrix, "CHUNK_ROWS", 5)  # a table every matrix
    chunked = read(Source.from_text(text))["topology"]
    pd.testing.assert_frame_equal(whole, chunked, check_categorical=False)  # the same rows; categories in any order
    assert whole["source"].nunique() > 3 and len(whole) > 3 * 5


def test_gb200_tray_four_gpus_nv18_through_the_rack_switches() -> None:
    """k8s-test-infra #371: a GB200 compute tray's 4 GPUs, every pair NV18 (their links reach the rack's switch
    trays), GPUs 0-1 on NUMA node 0 (CPUs 0-71) and 2-3 on node 1 (72-143); no NIC in this matrix."""
    frame, warnings = topology("topo_m_gb200_tray_1.txt")
    assert sorted(frame.loc[frame["relation"] == "gpu", "a"]) == [f"GPU{i}" for i in range(4)]
    assert frame.loc[frame["relation"] == "nic"].empty
    nv = frame[frame["relation"] == "NV"]
    assert set(nv["nvlinks"]) == {18} and len(nv) == 12  # each of the 6 pairs from both of its rows
    assert [affinity(frame, f"GPU{g}", "cpu_affinity") for g in range(4)] == ["0-71", "0-71", "72-143", "72-143"]
    assert [affinity(frame, f"GPU{g}", "numa_affinity") for g in range(4)] == ["0", "0", "1", "1"]
    assert warnings == []


def test_gb200_nvlink_speeds_eighteen_links_at_53_gbps() -> None:
    """k8s-test-infra #371: `nvidia-smi nvlink -s` on a GB200 reads 53.125 GB/s on each of GPU 0's 18 links."""
    result = read(REAL / "nvlink_s_gb200_1.txt")
    links = result["link_samples"]
    per_gpu = {int(g): sorted(int(x) for x in grp["link"]) for g, grp in links.groupby("gpu", observed=True)}
    assert per_gpu == {0: list(range(18)), 1: [0, 1]}  # the author elided the rest
    assert set(links["speed_gbps"]) == {53.125} and set(links["link_state"]) == {"up"}
    assert set(result["gpus"]["model"]) == {"NVIDIA GB200"}
    assert [w.line for w in result.warnings] == [26]  # the author's `...`


# `nvidia-smi topo -p2p r` on two RTX 5090s, as pasted in noonghunna/club-3090 issue 1124
P2P = (" \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n"
       "  CNS  = Chipset not supported\n  GNS  = GPU not supported\n  TNS  = Topology not supported\n"
       "  NS   = Not supported\n  DR   = Disabled by regkey\n  U    = Unknown\n")


@pytest.mark.parametrize("cut", [None, 4], ids=["whole", "cut-before-the-legend"])
def test_a_p2p_support_matrix_is_refused_as_what_it_is_not_read_as_no_nvlinks(cut: int | None) -> None:
    """`topo -p2p` was read as `topo -m`: each cell an 'unknown path kind', then "no platform template fits 2 GPUs
    with no NVLinks", a claim about links a P2P support matrix does not make."""
    from diagnostics.errors import InputError

    text = P2P if cut is None else "\n".join(P2P.splitlines()[:cut]) + "\n"
    with pytest.raises(InputError, match=r"this is `nvidia-smi topo -p2p` output .* `nvidia-smi topo -m` shows"):
        read(Source.from_text(text, name="p2p.txt"))
