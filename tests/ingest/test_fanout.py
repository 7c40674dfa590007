"""pdsh / clush / dshbak output: each host's lines read as that host's by every text reader."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest import detect, fanout
from diagnostics.ingest.base import Source
from tests.ingest.helpers import REAL, read_text

# (fixture, the reader detection must choose): one output each of the nvlink, -q, lspci and dcgmi readers
OUTPUTS = [("nvlink_e_h100_1.txt", "nvlink"), ("smi_q_one_gpu_h100_1.txt", "smi_query"),
           ("lspci_vv_laneerr_rk3588_1.txt", "lspci"), ("dcgmi_nvlink_s_e_h800_1.txt", "dcgmi_nvlink")]
SHELL = REAL / "parallel_shell" / "dshbak_c_csm_ncn_1.txt"  # no output of a reader: a dshbak -c paste as printed
HOSTS = ("node01", "node02")
UUID = "GPU-abcdefab-cdef-abdc-abcd-abababababab"


def _output(name: str) -> list[str]:
    """The fixture's output lines as the tool printed them (its source lines, prompt and indentation left out)."""
    lines = [line for line in (REAL / name).read_text().splitlines()
             if not line.startswith("#") and "$ " not in line and "# lspci" not in line]
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return [line[indent:] for line in lines]


def _own(line: str, host: str) -> str:
    """A host's own copy of a line: its GPUs have their own UUIDs."""
    return line.replace(UUID, UUID[:-2] + host[-2:])


def _per_host(result: pd.DataFrame) -> dict[str, int]:
    return result["node_id"].value_counts().sort_index().to_dict()


def _alone(name: str) -> dict[str, int]:
    """What the output read alone gives, per table: each host must get the same."""
    found = read_text("\n".join(_output(name)) + "\n")
    return {table: len(frame) for table, frame in found.tables.items() if len(frame)}


@pytest.mark.parametrize(("name", "reader"), OUTPUTS)
def test_a_pdsh_output_is_each_hosts_one_host_after_another(name: str, reader: str) -> None:
    text = "\n".join(f"{host}: {_own(line, host)}".rstrip() for host in HOSTS for line in _output(name)) + "\n"
    assert Source.from_text(text).fanout == fanout.PREFIX
    result = read_text(text)
    for table, rows in _alone(name).items():
        assert _per_host(result[table]) == {host: rows for host in HOSTS}, (reader, table)


@pytest.mark.parametrize(("name", "reader"), OUTPUTS)
def test_interleaved_lines_are_regrouped_per_host_in_their_own_order(name: str, reader: str) -> None:
    lines = _output(name)
    text = "\n".join(f"{host}: {_own(line, host)}" for line in lines for host in HOSTS) + "\n"
    result = read_text(f"$ pdsh -w node[01-02] {reader}\n" + text)
    for table, rows in _alone(name).items():
        assert _per_host(result[table]) == {host: rows for host in HOSTS}, (reader, table)
    if reader == "nvlink":  # each host's GPU is its own: no UUID is said to be two hosts'
        assert not [w for w in result.warnings if "UUID" in w.message]
        assert set(zip(result["gpus"]["node_id"], result["gpus"]["uuid"], strict=True)) == {
            (host, _own(UUID, host)) for host in HOSTS}


@pytest.mark.parametrize(("name", "reader"), OUTPUTS)
def test_a_dshbak_block_of_a_range_is_each_hosts_reading(name: str, reader: str) -> None:
    text = "----------------\nnode[01-03,07]\n----------------\n" + "\n".join(_output(name)) + "\n"
    assert Source.from_text(text).fanout == fanout.BLOCKS
    result = read_text(text)
    hosts = ("node01", "node02", "node03", "node07")
    for table, rows in _alone(name).items():
        assert _per_host(result[table]) == {host: rows for host in hosts}, (reader, table)
    said = [(w.line, w.message) for w in result.warnings]
    assert len(said) == len(set(said))  # a line's warning is said once, not once a host


def test_only_some_prefixed_lines_are_no_parallel_shell_output() -> None:
    lines = _output("nvlink_e_h100_1.txt")
    text = "\n".join(["node01: GPU 0 is ours", *lines]) + "\n"
    assert Source.from_text(text).fanout is None
    assert set(read_text(text)["link_samples"]["node_id"].isna()) == {True}


def test_an_unprefixed_line_among_a_hosts_lines_stays_that_hosts() -> None:
    lines = _output("nvlink_e_h100_1.txt")[:4]  # GPU 0 and its link 0's three counters
    text = "\n".join([f"node01: {lines[0]}", lines[1], f"node02: {_own(lines[0], 'node02')}"]
                     + [f"node01: {line}" for line in lines[2:]] + [f"node02: {line}" for line in lines[1:]]) + "\n"
    links = read_text(text)["link_samples"]
    assert _per_host(links) == {"node01": 1, "node02": 1}
    assert (links[["replay", "recovery", "crc_flit"]] == 0).all().all()  # node01's lost-prefix line is its


def test_a_kernel_log_is_not_read_as_hosts_named_kernel() -> None:
    text = "\n".join(["kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.",
                      "kernel: NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.",
                      "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 12 LTSSM Fault Up"]) + "\n"
    assert Source.from_text(text).fanout is None
    result = read_text(text)
    assert len(result["events"]) and set(result["events"]["node_id"].isna()) == {True}


def test_host_lists_expand_as_pdsh_and_clush_write_them() -> None:
    assert fanout.expand("node[01-03,07]") == ["node01", "node02", "node03", "node07"]
    assert fanout.expand("a01,b[8-10]") == ["a01", "b8", "b9", "b10"]
    assert fanout.expand("r[1-2]-n[1-2]") == ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    assert fanout.expand("node[03-01]") is None and fanout.expand("node[01") is None


def test_a_real_dshbak_c_output_gives_each_block_to_each_host_of_its_range() -> None:
    source = Source.from_path(SHELL)
    assert source.fanout == fanout.BLOCKS
    numbered = [(n, text) for n, text in enumerate((SHELL).read_text().splitlines(), 1)]
    hosts: dict[str, list[str]] = {}
    current = ""
    for _, text, host in fanout.regroup(numbered, fanout.BLOCKS):
        if host is not None:
            current = host
            hosts[current] = []
        elif current:
            hosts[current].append(text)
    assert list(hosts) == [f"ncn-m00{i}" for i in (1, 2, 3)] + [f"ncn-w00{i}" for i in range(1, 6)] + [
        f"ncn-s00{i}" for i in (1, 2, 3)]
    assert hosts["ncn-w005"][0].startswith("kernel-default-5.14") and len(hosts["ncn-w005"]) == 6
    assert hosts["ncn-s002"][1] == "package qlgc-fastlinq-kmp-default is not installed"


def test_a_block_under_a_long_range_is_sniffed_once_and_copied_within_a_bound(monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    block = _output("nvlink_e_h100_1.txt")
    text = "----------------\ngpu[0001-9999]\n----------------\n" + "\n".join(block) + "\n"
    assert Source.from_text(text).head_text() == "\n".join(block) + "\n"  # each block once, not once a host
    monkeypatch.setattr(fanout, "MAX_COPIED", 3 * len(block))
    result = read_text(text)
    assert sorted(set(result["link_samples"]["node_id"])) == ["gpu0001", "gpu0002", "gpu0003", "gpu0004"]
    said = [w for w in result.warnings if w.line == 2 and "gpu0005 to gpu9999" in w.message]
    assert len(said) == 1 and "9,995 hosts" in said[0].message


def test_the_local_nodes_output_after_a_pdsh_output_is_no_hosts() -> None:
    lines = _output("nvlink_e_h100_1.txt")[:4]
    pdsh = [f"{host}: {_own(line, host)}" for host in HOSTS for line in lines]
    local = [_own(line, "login99") for line in lines]
    for between in (["", "nvidia-smi nvlink -e"], [""]):
        result = read_text("\n".join(pdsh + between + local) + "\n")
        links = result["link_samples"]
        assert links["node_id"].iloc[:2].tolist() == list(HOSTS) and pd.isna(links["node_id"].iloc[2]), between
        assert len(links) == 3, between
        assert not [w for w in result.warnings if "damaged" in w.message]


def test_hosts_named_gpu_are_hosts_and_kernel_words_are_not() -> None:
    lines = _output("nvlink_e_h100_1.txt")
    hosts = ("gpu01", "gpu02", "gpu03")
    text = "\n".join(f"{host}: {_own(line, host)}".rstrip() for host in hosts for line in lines) + "\n"
    assert Source.from_text(text).fanout == fanout.PREFIX
    assert sorted(set(read_text(text)["link_samples"]["node_id"])) == list(hosts)
    block = "----------------\ngpu[01-02]\n----------------\n" + "\n".join(lines) + "\n"
    assert sorted(set(read_text(block)["link_samples"]["node_id"])) == ["gpu01", "gpu02"]
    assert fanout.host_of("GPU0: Xid 79") is None and fanout.host_of("GPU 0: NVIDIA H100") is None
    assert fanout.host_of("nvidia-nvswitch3: SXid 20034") is None


@pytest.mark.parametrize("frame", ["Summary", "2026-05-13", "2026-05-13T10:00:00Z", "10:00"])
def test_a_framed_word_or_date_is_no_host(frame: str) -> None:
    """A heading or the date a capture frames between two readings is no dshbak header: the readings stay one
    node's, two of them, so a rate is known."""
    reading = "\n".join(_output("nvlink_e_h100_1.txt"))
    text = f"----------\n{frame}\n----------\n{reading}\n----------\n{frame}\n----------\n{reading}\n"
    assert Source.from_text(text).fanout is None
    assert read_text(text)["link_samples"]["node_id"].isna().all()


def test_a_reader_that_reads_lines_as_printed_sniffs_them_as_printed() -> None:
    topo = [line for line in (REAL / "topo_m_hgx_h100_1.txt").read_text().splitlines() if not line.startswith("#")]
    text = "\n".join(f"node01: {line}" for line in topo) + "\n"
    assert Source.from_text(text).fanout == fanout.PREFIX
    with pytest.raises(InputError, match="unrecognized format"):
        detect.choose(Source.from_text(text))
