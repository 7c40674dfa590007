"""NMX-T's scrape: both ends of a GB200 GPU link read as rows, placed on the hosts the rack inventory names."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from diagnostics.errors import InputError
from diagnostics.ingest.base import Source
from diagnostics.ingest.detect import choose
from diagnostics.ingest.exposition import parse_labels
from diagnostics.ingest.nmxt import READER, place_in_racks
from diagnostics.model import Diagnosis, RackSlot
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from diagnostics.topology.rack import rack_graph
from tests.shared import answered_exit

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nmxt_lid_gb200_1.txt"


def _real_series() -> str:
    return next(line for line in REAL.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))


def _scrape(tmp_path: Path) -> Source:
    """The real series' GPU port as Effective_BER and Link_Down, and the switch port at its far end."""
    gpu = _real_series()
    body = gpu[gpu.index("{"):gpu.index("}") + 1]
    labels = parse_labels(body[1:-1])
    switch = (f'Effective_BER{{node_description="{labels["link_partner_description"]}", '
              f'Port_Number="{labels["link_partner_port_num"]}", chassis_id="{labels["chassis_id"]}"}} 4.2e-11 '
              "1781993954087")
    path = tmp_path / "nmxt.prom"
    path.write_text("# TYPE Effective_BER gauge\n" + f"Effective_BER{body} 1.5e-254 1781993954087\n"
                    + f"Link_Down{body} 3 1781993954087\n" + switch + "\n"
                    + 'Symbol_Errors{node_description="MF0;sw06:N5400_LD/U1", Port_Number="140"} 7\n'
                    + 'Fan_Speed{Port_Number="1"} 4\n', encoding="utf-8")
    return Source.from_path(path)


def test_the_real_series_names_a_gpu_link_whose_far_end_the_rack_file_puts_where_nmxt_says() -> None:
    labels = parse_labels(_real_series().split("{", 1)[1].rsplit("}", 1)[0])
    tray, gpu, link = int(labels["tray_index"]) + 1, int(labels["device_num_on_tray"]), int(labels["port_label"][4:])
    end = rack_graph("gb200-nvl72").end(tray, gpu, link)
    assert labels["link_partner_description"] == f"MF0;sw{end.switch_tray:02d}:N5400_LD/U{end.chip}"
    assert int(labels["link_partner_port_num"]) == end.port


def test_the_real_series_reads_as_its_port_up() -> None:
    links = READER.read(Source.from_path(REAL), node_id="rack-01")["link_samples"]
    assert len(links) == 1 and links.iloc[0]["node_id"] == "nmx:rack-01:compute:18"
    assert links.iloc[0]["link_state"] == "up" and links.iloc[0]["link"] == 10


def test_both_ends_of_the_link_become_rows_of_their_trays(tmp_path: Path) -> None:
    source = _scrape(tmp_path)
    assert choose(source).name == "nmxt"
    result = READER.read(source, node_id="rack-07")
    links = result["link_samples"].sort_values("link_type").reset_index(drop=True)
    assert len(links) == 3
    gpu = links.iloc[0]
    assert (gpu["node_id"], gpu["gpu"], gpu["link_type"], gpu["link"]) == ("nmx:rack-07:compute:18", 2, "nvlink", 10)
    assert gpu["recovery_failed"] == 3 and gpu["effective_ber"] == pytest.approx(1.5e-254)
    assert gpu["link_state"] == "up" and gpu["peer"] == "Switch tray 6 chip 1"  # logical_state ACT; its far end
    switch = links[links["link"] == 71].iloc[0]
    assert (switch["node_id"], switch["nvswitch"], switch["effective_ber"]) == ("nmx:rack-07:switch:6", "0", 4.2e-11)
    assert str(gpu["timestamp"]).startswith("2026-06-2")  # the series' own time (ms)


def test_the_trays_are_placed_on_the_inventorys_hosts_and_an_unplaced_tray_keeps_its_place(tmp_path: Path) -> None:
    result = READER.read(_scrape(tmp_path), node_id="rack-07")
    racks = {"r7-c18": RackSlot("rack-07", "18"), "r7-s06": RackSlot("rack-07", "6")}
    platforms = {"r7-c18": "gb200-nvl72-compute-tray", "r7-s06": "gb200-nvl72-switch-tray"}
    place_in_racks(result, racks, platforms)
    assert set(result["link_samples"]["node_id"].astype(str)) == {"r7-c18", "r7-s06"} and not result.warnings
    again = READER.read(_scrape(tmp_path), node_id="rack-08")
    place_in_racks(again, racks, platforms)
    assert set(again["link_samples"]["node_id"].astype(str)) == {"rack-08-compute-tray18", "rack-08-switch-tray6"}
    said = str(again.warnings[-1])
    assert "names no host for 2 trays of the scrape" in said and "nodes.csv" in said


def test_a_scrape_without_a_rack_or_chassis_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bare.prom"
    path.write_text('Link_Down{node_description="MF0;sw02:N5400_LD/U2", Port_Number="9"} 1\n', encoding="utf-8")
    with pytest.raises(InputError, match="names no rack"):
        READER.read(Source.from_path(path))


def test_the_store_reads_a_scrape_after_its_rack_inventory_as_the_hosts(tmp_path: Path) -> None:
    from diagnostics.store import open_store

    inventory = tmp_path / "nodes.csv"
    inventory.write_text("node_id,platform,rack,tray\nr7-c18,gb200-nvl72-compute-tray,rack-07,18\n"
                         "r7-s06,gb200-nvl72-switch-tray,rack-07,6\n", encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.ingest([inventory])
    store.ingest([_scrape(tmp_path).path], node_id="rack-07")  # type: ignore[list-item]
    links = store.window(end=None, span=timedelta(days=3650), nodes=["r7-c18", "r7-s06"])["link_samples"]
    assert set(links["node_id"].astype(str)) == {"r7-c18", "r7-s06"}
    assert "rack-07-compute-tray18" not in store.nodes()


def _doors(paths: list[Path], tmp: Path, node: str, stored_node: str | None = None) -> tuple[Diagnosis, Diagnosis]:
    """The same tray asked of the files (`analyze FILE --node NODE`) and of the store they were ingested into with
    `--node NODE` (`ingest FILE --node NODE`, then `analyze --store S --node NODE`)."""
    files, chosen, _ = files_source(paths, node=node)
    store = open_store(tmp / "store")
    for path in paths:  # the inventory first, as the README asks, each with the --node a person would give
        store.ingest([path], node_id=None if path.suffix == ".csv" else stored_node or node)
    request = Request(node=chosen, end=None)
    return diagnose(files, request).diagnosis, diagnose(StoreSource(tmp / "store"), request).diagnosis


def _read(d: Diagnosis) -> tuple[Any, ...]:
    return d.node_id, d.fault_detected, len(d.findings), [f.component for f in d.findings]


TRAY = "chassis-1820325172739-compute-tray18"  # the node `analyze` names the real series' tray by


@pytest.mark.parametrize("given", [TRAY, "chassis-1820325172739"])
def test_ingest_node_takes_the_trays_name_analyze_printed_or_its_rack(given: str, tmp_path: Path) -> None:
    files, stored = _doors([REAL], tmp_path, TRAY, stored_node=given)
    assert files.node_id == stored.node_id == TRAY and _read(files) == _read(stored) and files.findings
    assert StoreSource(tmp_path / "store").nodes() == [TRAY]


def test_a_tray_name_the_scrape_does_not_hold_says_so_and_reads_the_rack(tmp_path: Path) -> None:
    result = READER.read(Source.from_path(REAL), node_id="chassis-1820325172739-compute-tray5")
    assert set(result["link_samples"]["node_id"]) == {"nmx:chassis-1820325172739:compute:18"}
    assert "names compute tray 5 of rack chassis-1820325172739, which the scrape does not hold" in str(
        result.warnings[-1])


def test_ingest_node_naming_a_host_of_the_inventory_stores_that_host(tmp_path: Path) -> None:
    inventory = tmp_path / "nodes.csv"
    inventory.write_text("node_id,platform,rack,tray\nr7-c18,gb200-nvl72-compute-tray,chassis-1820325172739,18\n",
                         encoding="utf-8")
    files, stored = _doors([inventory, REAL], tmp_path, "r7-c18")
    assert files.node_id == stored.node_id == "r7-c18" and _read(files) == _read(stored) and files.findings
    assert "r7-c18" in StoreSource(tmp_path / "store").nodes()
    assert not [n for n in StoreSource(tmp_path / "store").nodes() if "tray" in n]


def test_ingest_node_naming_a_host_places_the_scrape_in_the_hosts_rack(tmp_path: Path) -> None:
    """The inventory names the rack otherwise than the scrape's chassis: the host's rack is the one read."""
    inventory = tmp_path / "nodes.csv"
    inventory.write_text("node_id,platform,rack,tray\nr7-c18,gb200-nvl72-compute-tray,rack-07,18\n",
                         encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.ingest([inventory])
    store.ingest([REAL], node_id="r7-c18")
    assert StoreSource(tmp_path / "store").nodes() == ["r7-c18"]
    d = diagnose(StoreSource(tmp_path / "store"), Request(node="r7-c18")).diagnosis
    assert d.findings


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from bot.cli import main

    capsys.readouterr()
    code = main(argv)
    said = capsys.readouterr()
    return code, said.out, said.err


def test_analyze_file_takes_node_as_the_scrape_s_rack_as_ingest_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze FILE --node rack-01` refused the rack ingest --node accepts ("no node 'rack-01' in the files"): the
    scrape's one tray is answered, named as the store names it after `ingest --node rack-01`."""
    code, out, err = _cli(["analyze", str(REAL), "--node", "rack-01"], capsys)
    assert code == answered_exit(out), err
    assert out.startswith("rack-01-compute-tray18 ")
    store = str(tmp_path / "store")
    assert _cli(["ingest", str(REAL), "--store", store, "--node", "rack-01"], capsys)[0] == 0
    code, stored, err = _cli(["analyze", "--store", store, "--node", "rack-01-compute-tray18"], capsys)
    assert code == answered_exit(stored), err
    assert stored.splitlines()[0] == out.splitlines()[0]


@pytest.mark.parametrize(("old", "new", "said"), [
    ('tray_index="17"', 'tray_index="40"', "tray_index = '40' is past the last compute tray of an NVLink domain "
                                           "(18 trays"),
    ('port_label="GPUP10"', 'port_label="GPUP30"', "port_label = 'GPUP30' is past a GPU's last NVLink (18 links"),
])
def test_a_gpu_port_past_the_domain_s_trays_or_links_is_refused_by_line_field_and_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, said: str) -> None:
    """tray_index 40 was stored as a new host `rack-01-compute-tray41`, GPUP30 as GPU 2 link 30 of a GPU with 18
    NVLinks: each is now a warning on its line, and nothing is stored of it."""
    path = tmp_path / "scrape.txt"
    path.write_text(REAL.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    result = READER.read(Source.from_path(path), node_id="rack-01")
    assert not len(result["link_samples"])
    assert [(w.line, said in w.message) for w in result.warnings] == [(3, True)]
    inventory = tmp_path / "nodes.csv"
    inventory.write_text("node_id,platform,rack,tray\nr1-c18,gb200-nvl72-compute-tray,rack-01,18\n", encoding="utf-8")
    store = str(tmp_path / "store")
    assert _cli(["ingest", str(inventory), "--store", store], capsys)[0] == 0
    _, out, err = _cli(["ingest", str(path), "--store", store, "--node", "rack-01"], capsys)
    assert f"{path.name}:3: lid: {said}" in out + err and "tray41" not in out + err
    assert _cli(["analyze", str(path), "--node", "rack-01"], capsys)[0] != 0  # nothing left to answer of


def test_an_unplaced_tray_s_warning_says_what_the_scrape_tells_of_its_platform(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real scrape only said "platform unknown" of its tray: it gives the tray's place and GPU, not the kind of
    rack, so the warning names the rack files' platforms that have such a tray (18: NVL72, or an NVL36x2 domain),
    and naming one of them settles the platform."""
    code, out, _ = _cli(["analyze", str(REAL), "--node", "rack-01"], capsys)
    said = next(line for line in out.splitlines() if "names no host" in line)
    assert code == answered_exit(out) and "not the kind of rack" in said
    assert "gb200-nvl72-compute-tray" in said and "gb200-nvl36x2-compute-tray" in said
    code, out, _ = _cli(["analyze", str(REAL), "--node", "rack-01", "--platform", "gb200-nvl72-compute-tray"], capsys)
    assert code == answered_exit(out) and "platform unknown" not in out


def test_a_cut_scrape_names_its_tray_as_the_whole_one_does_in_the_file_and_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scrape cut inside its last series named its tray by the reader's place `nmx:<rack>:compute:18` (the node
    records that mark a cut input were not renamed), where the whole scrape names it `<rack>-compute-tray18`."""
    whole = REAL.read_text(encoding="utf-8")
    cut = tmp_path / "cut.txt"
    cut.write_text(whole + whole.splitlines()[-1][:80], encoding="utf-8")  # a second series, cut, no newline
    _, out, err = _cli(["analyze", str(cut), "--platform", "gb200-nvl72-compute-tray"], capsys)
    assert out.startswith(f"{TRAY} ") and "nmx:" not in out + err
    store = str(tmp_path / "store")
    assert _cli(["ingest", str(cut), "--store", store], capsys)[0] == 0
    assert StoreSource(tmp_path / "store").nodes() == [TRAY]
    _, stored, err = _cli(["analyze", "--store", store, "--node", TRAY], capsys)
    assert stored.splitlines()[0] == out.splitlines()[0] and "nmx:" not in stored + err


PORTDOWN = 'port_label="GPUP11", logical_state="DOWN"'


def _tray(tmp_path: Path, *, leave_out: tuple[int, int] | None = None, only_gpu: int | None = None) -> Path:
    """The real series as every port of its tray (4 GPUs of 18 links) read twice a minute apart, GPU 2 link 11 down
    (on switch tray 7 chip 1 port 70, blamed on its own PHY): less `leave_out` (GPU, link), or `only_gpu`'s ports
    alone (a scrape grepped for one GPU's)."""
    line = _real_series()
    body = line[line.index("{"):line.index("}") + 1]
    rows = []
    for stamp, downs in ((1781993894087, 3), (1781993954087, 4)):
        for gpu in range(4):
            for link in range(18):
                if (gpu, link) == leave_out or only_gpu not in (None, gpu):
                    continue
                labels = body.replace('device_num_on_tray="2"', f'device_num_on_tray="{gpu}"').replace(
                    'port_label="GPUP10"', f'port_label="GPUP{link}"')
                down = (gpu, link) == (2, 11)
                if down:  # its far end as NMX-T reads it, and what the port says of its state
                    labels = labels.replace('logical_state="ACT"', 'logical_state="DOWN"').replace(
                        "sw06:N5400_LD/U1", "sw07:N5400_LD/U1").replace('link_partner_port_num="71"',
                                                                        'link_partner_port_num="70"').replace(
                        'down_blame="Unknown"', 'down_blame="Local_phy"').replace(
                        'Status_Message="No issue was observed"', 'Status_Message="Link down: high BER"')
                rows.append(f"Link_Down{labels} {downs if down else 0} {stamp}")
    path = tmp_path / "tray.prom"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _inventory(tmp_path: Path) -> Path:
    path = tmp_path / "nodes.csv"
    path.write_text("node_id,platform,rack,tray\nr7-c18,gb200-nvl72-compute-tray,chassis-1820325172739,18\n",
                    encoding="utf-8")
    return path


def test_a_scrape_of_some_ports_of_a_tray_judges_the_down_link_not_the_ports_it_leaves_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scrape grepped for one GPU's ports was read as a tray whose other GPUs fell off the bus (urgent, three
    GPUs 'report no telemetry'): the ports a scrape does not hold are not missing, as with an nvidia-smi output of
    some GPUs; the whole tray's scrape is not partial."""
    assert not READER.read(Source.from_path(_tray(tmp_path)), node_id="rack-07").partial
    part = _tray(tmp_path, only_gpu=2)
    assert READER.read(Source.from_path(part), node_id="rack-07").partial
    for d in _doors([_inventory(tmp_path), part], tmp_path, "r7-c18"):
        assert [(f.gpu, f.link) for f in d.findings if f.severity.value != "ok"] == [(2, 11)]
        assert d.ticket_priority.value != "urgent" and [s.fault.value for s in d.localizations] == ["nvlink"]
        assert any("NMX-T scrape of some ports" in w for w in d.warnings)
    code, ticket, _ = _cli(["ticket", str(part), "--platform", "gb200-nvl72-compute-tray"], capsys)
    assert code == 0 and ticket.splitlines()[0].startswith("# Repair ticket: GPU 2 NVLink 11 ")
    assert "off the bus" not in ticket and "**Priority:** urgent" not in ticket



def test_the_link_partner_is_the_link_s_observed_switch_port_and_its_down_blame_its_evidence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`link_partner_port_num`, `down_blame` and `Status_Message` were not read: the ticket said 'port unknown;
    confirm with nvidia-smi nvlink -R' of a port the scrape names, and not what NMX-T blamed the link's fall on."""
    scrape = _tray(tmp_path, only_gpu=2)
    for d in _doors([_inventory(tmp_path), scrape], tmp_path, "r7-c18"):
        down = next(f for f in d.findings if (f.gpu, f.link) == (2, 11))
        assert (down.switch, down.switch_port, down.port_source.value) == ("Switch tray 7 chip 1", 70, "observed")
        assert "NMX-T: down_blame 'Local_phy', Status_Message 'Link down: high BER'" in down.evidence
    code, ticket, _ = _cli(["ticket", str(scrape), "--platform", "gb200-nvl72-compute-tray"], capsys)
    assert code == 0 and "| switch port | Switch tray 7 chip 1 port 70 (observed) |" in ticket
    assert "port unknown" not in ticket and "down_blame 'Local_phy'" in ticket


def test_a_partner_port_past_any_switch_port_is_said_and_the_link_still_read() -> None:
    """A `link_partner_port_num` of 2^64 (a damaged scrape) raised OverflowError where it became the far end's port;
    it is said, and the link it names is read without it."""
    text = REAL.read_text(encoding="utf-8")
    port = next(part for part in text.split(",") if "link_partner_port_num" in part)
    damaged = text.replace(port, port.split("=")[0] + '="18446744073709551616"')
    result = READER.read(Source.from_text(damaged, name="nmxt.txt"))
    assert len(result["link_samples"]) and any("link_partner_port_num" in w.message and "is no port" in w.message
                                               for w in result.warnings), result.warnings
