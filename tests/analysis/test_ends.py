"""Which end of a link saw the errors: both ends of a GPU's PCIe link from lspci, an NVLink joined to its NVSwitch
port; an end is named only where both ends were read."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.analysis.ends import EndView, pcie_end
from diagnostics.enums import LinkEnd, Severity
from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from diagnostics.ingest.lspci import READER
from diagnostics.model import Finding
from diagnostics.topology import platform_graph
from tests.conftest import FIXTURES
from tests.ingest.dcgm_helpers import scrape

PASTE = (FIXTURES / "samples" / "lspci_vvv_lane_h100.txt").read_text(encoding="utf-8")


def _diagnose(text: str) -> object:
    tables = READER.read(Source.from_text(text, name="paste.txt"), node_id="n1").tables
    return analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")


def _pcie(d: object) -> Finding:
    """The GPU PCIe link a paste's lane status names: one paste dates nothing, so it warns (the status is sticky)."""
    found = next(f for f in d.findings if f.link_type.value == "pcie" and f.crossed)  # type: ignore[attr-defined]
    assert found.severity is Severity.WARNING and found.crossed[0].rule == "pcie_lane_error_undated"
    return found


def test_the_gpu_end_receives_and_the_port_above_replays() -> None:
    d = _diagnose(PASTE)
    f = _pcie(d)
    assert (f.ref.slug, f.lanes, f.end) == ("gpu0-pcie", [6], LinkEnd.GPU)
    assert any("GPU numbers taken from PCI bus order" in w for w in d.warnings)  # type: ignore[attr-defined]


def _read_at(text: str, hour: int) -> dict[str, pd.DataFrame]:
    tables = READER.read(Source.from_text(text, name=f"at{hour}.txt"), node_id="n1").tables
    tables["link_samples"] = tables["link_samples"].assign(timestamp=datetime(2026, 3, 1, hour, tzinfo=UTC))
    return tables


CLEAR = PASTE.replace("LaneErrStat: LaneErr at lane: 6", "LaneErrStat: 0", 1)


@pytest.mark.parametrize(("readings", "dated"), [
    ([(PASTE, 12)], False),  # one reading: set at some time since the status was last cleared
    # set at every reading: still no time (the port above reads its own status clear: another register)
    ([(PASTE, 11), (PASTE, 12)], False),
    ([(CLEAR, 11), (PASTE, 12)], True),  # clear, then set: the lane erred between the two
    ([(CLEAR, 6), (PASTE, 12)], False),  # the clear reading lies before the 5 h the rules read: no door dates it
    ([(PASTE, 10), (CLEAR, 11), (PASTE, 12)], True),  # cleared (by setpci, or a reset), then set again
])
def test_a_sticky_lane_status_fails_only_when_a_clear_reading_dates_it(readings: list[tuple[str, int]],
                                                                       dated: bool) -> None:
    """The Lane Error Status is sticky (RW1C, PCIe r4.0 sec. 7.7.3.3): a set bit says the lane erred at some time
    since it was last cleared. Failing only where an earlier reading in the rules' span read it clear; else a warning
    whose note says how to date it (clear it with setpci, read again)."""
    read = [_read_at(text, hour) for text, hour in readings]
    tables = {k: pd.concat([r[k] for r in read], ignore_index=True) for k in read[0]}
    d = analyze_tables(tables, node_id="n1")  # no platform: no GPU the two-GPU paste leaves out is missing
    f = next(f for f in d.findings if f.ref.slug == "gpu0-pcie")
    assert (f.lanes, f.end) == ([6], LinkEnd.GPU)
    advice = [w for w in d.warnings if "lane error status" in w]
    if dated:
        assert f.severity is Severity.FAILING and [c.rule for c in f.crossed] == ["pcie_lane_error"]
        assert d.fault_detected and d.localization is not None and d.localization.ref.slug == "gpu0-pcie"
        assert advice == []
    else:
        assert f.severity is Severity.WARNING and [c.rule for c in f.crossed] == ["pcie_lane_error_undated"]
        assert "lanes in error (undated status)" in f.crossed[0].message
        assert not d.fault_detected and d.localization is None
        assert len(advice) == 1 and "sticky (RW1C, PCIe r4.0 sec. 7.7.3.3)" in advice[0]
        assert "names lane 6 in its lane error status" in advice[0] and "so the lane may have erred" in advice[0]
        assert "`setpci -s 0000:19:00.0 ECAP_SECPCI+8.L`" in advice[0] and "lspci -vvv` again" in advice[0]
        # the write that clears it is a person's, on a drained node, never a command to paste on one in service
        assert "with the node drained" in advice[0] and "=VALUE" not in advice[0]


def test_the_upstream_end_receives_when_the_status_is_the_port_s() -> None:
    swapped = (PASTE.replace("LaneErrStat: LaneErr at lane: 6", "LaneErrStat: 0", 1)
               .replace("LaneErrStat: 0\n\tKernel driver in use: pcieport", "LaneErrStat: LaneErr at lane: 9\n"
                        "\tKernel driver in use: pcieport", 1)
               .replace("CESta:\tRxErr+ BadTLP- BadDLLP+ Rollover- Timeout-", "CESta:\tRxErr- BadTLP- BadDLLP- "
                        "Rollover- Timeout+")
               .replace("CESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout+", "CESta:\tRxErr+ BadTLP- BadDLLP- "
                        "Rollover- Timeout-", 1))
    f = _pcie(_diagnose(swapped))
    assert (f.lanes, f.end) == ([9], LinkEnd.UPSTREAM)


def test_without_the_port_above_the_lane_is_named_but_no_end() -> None:
    alone = "\n".join(line for line in PASTE.splitlines() if "Bus: primary" not in line)
    f = _pcie(_diagnose(alone))
    assert (f.lanes, f.end) == ([6], None)
    assert any("only one end of the link was read" in e for e in f.evidence)


@pytest.mark.parametrize(("gpu", "upstream", "end"), [
    (EndView(lanes=(3,)), EndView(sent={"replay_timeout": 2.0}), LinkEnd.GPU),
    (EndView(), EndView(received={"rx_err": 4.0}), LinkEnd.UPSTREAM),
    # the GPU replayed and neither end received errors: the forward path or the ACK/NAK return path (PCIe r4.0
    # sec. 3.6.2), so no end: a timeout alone does not say which direction failed
    (EndView(sent={"replay_timeout": 1.0}), EndView(), None),
    (EndView(received={"bad_tlp": 1.0}), EndView(received={"rx_err": 1.0}), None),  # both receive: the link between
    (EndView(), EndView(), None),
])
def test_which_end_received(gpu: EndView, upstream: EndView, end: LinkEnd | None) -> None:
    got, _, said = pcie_end({LinkEnd.GPU: gpu, LinkEnd.UPSTREAM: upstream}, 2)
    assert got is end
    if end is None and gpu.receives:
        assert any("both ends" in s for s in said)
    if end is None and gpu.sent:
        assert any("no end named" in s and "3.6.2" in s for s in said)


def _switch_tables(gpu_counter: str, port_counter: str, observed: bool = True) -> dict[str, pd.DataFrame]:
    """Every NVLink of an HGX H100 healthy but GPU 3's NVLink 2, and the NVSwitch port it lands on, counting;
    `observed`: with every GPU's `nvidia-smi nvlink -R` rows, so the port map is read, not assumed."""
    graph = platform_graph("hgx-h100-8gpu")
    port = graph.port_of(3, 2, "nvlink")
    times = pd.date_range("2026-03-01", periods=13, freq="5min", tz="UTC")
    hours = (times - times[0]).total_seconds().to_numpy() / 3600
    frames = [pd.DataFrame({"timestamp": times, "node_id": "n1", "gpu": p.gpu, "link_type": "nvlink", "link": p.link,
                            "peer": p.peer, "replay": 0.0, "crc_data": 0.0,
                            **({gpu_counter: hours * 5000.0} if (p.gpu, p.link) == (3, 2) else {})})
              for g in graph.gpus for p in graph.links_of(g) if p.link_type == "nvlink"]
    frames.append(pd.DataFrame({"timestamp": times, "node_id": "n1", "link_type": "nvswitch",
                                "nvswitch": str(port.switch).split()[-1], "link": port.switch_port, "replay": 0.0,
                                "crc_data": 0.0, port_counter: hours * 5000.0}))
    tables = {"link_samples": pd.concat(frames, ignore_index=True)}
    if observed:
        tables["topology"] = pd.DataFrame([
            {"node_id": "n1", "a": f"GPU{g}", "b": p.switch, "relation": "remote", "link": p.link,
             "remote_port": p.switch_port, "source": "nvlink -R"}
            for g in graph.gpus for p in graph.links_of(g) if p.link_type == "nvlink"])
    return tables


@pytest.mark.parametrize(("gpu_counter", "port_counter", "end"), [
    ("replay", "crc_data", LinkEnd.NVSWITCH), ("crc_data", "replay", LinkEnd.GPU)])
def test_an_nvlink_seen_from_both_ends_names_the_receiving_end(gpu_counter: str, port_counter: str,
                                                              end: LinkEnd) -> None:
    d = analyze_tables(_switch_tables(gpu_counter, port_counter), node_id="n1", platform="hgx-h100-8gpu")
    assert [loc.ref.slug for loc in d.localizations] == ["gpu3-nvlink2"]  # one part: the port folded into the link
    assert d.localization is not None and d.localization.end is end
    assert d.localization.port_source.value == "observed"
    assert any("seen from both ends (the port map observed)" in e for e in d.localization.evidence)


@pytest.mark.parametrize(("gpu_counter", "port_counter"), [("replay", "crc_data"), ("crc_data", "replay")])
def test_an_assumed_port_map_names_no_end(gpu_counter: str, port_counter: str) -> None:
    """The port the template puts at a link's other end is evidence with that basis, never an end: the issue's
    'an end is inferred by the assumed port map'."""
    d = analyze_tables(_switch_tables(gpu_counter, port_counter, observed=False), node_id="n1",
                       platform="hgx-h100-8gpu")
    assert d.localization is not None and d.localization.end is None
    assert any("no end named" in e and "assumed port map" in e and "nvidia-smi nvlink -R -i 3" in e
               for e in d.localization.evidence)


def test_dcgm_exporter_scrapes_of_a_gpu_link_and_its_nvswitch_port_by_the_assumed_map_name_no_end() -> None:
    """Two dcgm-exporter scrapes half an hour apart, as the exporter writes them: GPU 3's NVLink 2 replays, and the
    NVSwitch port it lands on (`nvswitch` and `nvlink` labels) counts the CRC errors it received."""
    port = platform_graph("hgx-h100-8gpu").port_of(3, 2, "nvlink")
    switch = str(port.switch).split()[-1]
    t0, t1 = 1772366400000, 1772366400000 + 30 * 60 * 1000
    lines = []
    for stamp, count in ((t0, 0), (t1, 2500)):
        for line in scrape(ts_ms=stamp, host="n1"):
            if line.startswith("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L2{") and 'gpu="3"' in line:
                line = line.replace("} 0 ", f"}} {count} ")
            lines.append(line)
        lines.append(f'DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS{{nvswitch="{switch}",nvlink="{port.switch_port}",'
                     f'Hostname="n1"}} {count} {stamp}')
    tables = detect.read(Source.from_text("\n".join(lines) + "\n", name="scrapes.prom")).tables
    d = analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")
    assert [loc.ref.slug for loc in d.localizations] == ["gpu3-nvlink2"]
    # the port is this link's other end only by the template's map: its count is evidence, no end is named
    assert d.localization is not None and d.localization.end is None
    assert any(f"NVSwitch {switch} port {port.switch_port}" in e and "assumed port map" in e
               for e in d.localization.evidence)


def test_two_readings_of_nvlink_ec_name_the_lane_on_its_link() -> None:
    reading = ("$ date -u\n{date}\n$ nvidia-smi nvlink -ec -i 2\n"
               "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-22222222-2222-2222-2222-222222222222)\n"
               "\t Link 5: Lane 0: CRC Errors: 0\n\t Link 5: Lane 1: CRC Errors: {count}\n")
    text = (reading.format(date="Sun Mar  1 12:00:00 UTC 2026", count=10)
            + reading.format(date="Sun Mar  1 12:30:00 UTC 2026", count=4010))
    tables = detect.read(Source.from_text(text, name="ec.txt"), node_id="n1").tables
    d = analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")
    link = next(f for f in d.findings if (f.gpu, f.link) == (2, 5) and f.crossed)
    assert link.lanes == [1] and link.end is None  # one end read: the lane, not the end


def test_a_gpu_table_numbers_the_lspci_rows_and_a_gpu_it_lacks_is_said() -> None:
    tables = READER.read(Source.from_text(PASTE, name="paste.txt"), node_id="n1").tables
    tables["gpus"] = pd.DataFrame({"node_id": ["n1"], "gpu": [5], "pci_bus_id": ["0000:19:00.0"]})
    d = analyze_tables(tables, node_id="n1", platform="hgx-h100-8gpu")
    f = _pcie(d)
    assert (f.gpu, f.lanes) == (5, [6])
    assert any(w.startswith("0000:1b:00.0: a GPU the node's GPU table does not list") for w in d.warnings)
    assert not any("PCI bus order" in w for w in d.warnings)


@pytest.mark.parametrize(("status", "said"), [("6", "lane 6 in error"), ("6 7", "lanes 6, 7 in error")])
def test_the_receiving_end_names_its_lanes_in_words_that_agree(status: str, said: str) -> None:
    f = _pcie(_diagnose(PASTE.replace("LaneErrStat: LaneErr at lane: 6", f"LaneErrStat: LaneErr at lane: {status}", 1)))
    assert any(e.startswith(f"GPU 0's port received errors: {said} (lane error status") for e in f.evidence), f.evidence
