"""The rack files and the rack graph: where each GPU link of a GB200 NVL72 lands, and a rack file's errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from diagnostics.config.racks import all_racks, rack_spec
from diagnostics.enums import PortSource
from diagnostics.errors import ConfigError
from diagnostics.topology import platform_graph
from diagnostics.topology.rack import rack_graph


def test_nvl72_has_72_gpus_of_18_links_each_on_18_chips_of_72_ports() -> None:
    rack = rack_graph("gb200-nvl72")
    spec = rack.spec
    assert (spec.compute_trays, spec.gpus_per_tray, spec.switch_trays, spec.chips_per_switch_tray) == (18, 4, 9, 2)
    links = list(rack.links())
    assert len(links) == 72 * 18
    per_port = Counter((e.switch_tray, e.chip, e.port) for e in links)
    assert len(per_port) == 18 * 72 and set(per_port.values()) == {1}  # every chip port takes one GPU link
    per_gpu_chips = Counter((e.tray, e.gpu) for e in links)
    assert set(per_gpu_chips.values()) == {18}
    assert {(e.switch_tray, e.chip) for e in links if (e.tray, e.gpu) == (5, 2)} == {
        (t, c) for t in range(1, 10) for c in (1, 2)}  # one link of every GPU to each of the 18 chips


def test_the_wiring_agrees_with_the_one_live_nmxt_series() -> None:
    """NMX-T: GPU 2 of the tray at index 17, link 10 -> chip U1 of switch tray sw06, port 71 (0-based tray index)."""
    end = rack_graph("gb200-nvl72").end(18, 2, 10)
    assert (end.switch_tray, end.chip, end.port) == (6, 1, 71)


def test_a_port_maps_back_to_its_gpu_link_and_a_trunk_port_to_none() -> None:
    rack = rack_graph("gb200-nvl72")
    for end in (rack.end(1, 0, 0), rack.end(7, 3, 13), rack.end(18, 1, 17)):
        assert rack.from_port(end.switch_tray, end.chip, end.port) == end
    assert rack.from_port(3, 1, 0) is None and rack.from_port(3, 1, 73) is None and rack.from_port(10, 1, 5) is None


def test_every_link_is_in_exactly_one_cartridge() -> None:
    rack = rack_graph("gb200-nvl72")
    per = Counter(e.cartridge for e in rack.links())
    assert None not in per and sum(per.values()) == 1296 and len(per) == len(rack.spec.cartridge)


def test_a_tray_with_its_slot_knows_its_ports_as_assumed_and_without_it_does_not() -> None:
    slotted = rack_graph("gb200-nvl72").tray_graph(7)
    port = slotted.port_of(2, 5)
    assert port.switch == "Switch tray 3 chip 2" and port.switch_port == 27 and port.source is PortSource.ASSUMED
    loose = platform_graph("gb200-nvl72-compute-tray")
    assert loose.port_of(2, 5).switch_port is None and loose.port_of(2, 5).source is PortSource.UNKNOWN
    assert any("slot in its rack is not known" in w for w in loose.warnings)
    assert platform_graph("gb200-nvl72-switch-tray").gpus == []


def test_nvl36x2_is_a_rack_of_36_gpus() -> None:
    assert rack_spec("gb200-nvl36x2").gpus == 36 and set(all_racks()) >= {"gb200-nvl72", "gb200-nvl36x2"}


@pytest.mark.parametrize(("old", "new", "says"), [
    ("switch_trays = 9 ", "switch_trays = 8 ", "18 links per GPU need 18 chips, the trays have 16"),
    ("links = [9, 17]", "links = [8, 17]", "in cartridges 1 and 2"),
    ("compute_trays = 18 ", "compute_trays = 19 ", "GPUs need"),
])
def test_a_rack_file_that_contradicts_itself_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               old: str, new: str, says: str) -> None:
    text = Path(rack_spec("gb200-nvl72").path).read_text(encoding="utf-8")
    assert old in text
    (tmp_path / "broken.toml").write_text(text.replace(old, new, 1).replace('name = "gb200-nvl72"',
                                                                             'name = "broken"'), encoding="utf-8")
    monkeypatch.setenv("FABRICBOT_RACKS", str(tmp_path))
    with pytest.raises(ConfigError, match=f"broken.toml: .*{says}"):
        all_racks()


def test_a_real_gb200_scrape_is_a_compute_tray_whose_ports_need_its_slot() -> None:
    """dcgm-exporter on a GB200 tray (fixtures/real): four GPUs, their model names the NVL72 compute tray."""
    from diagnostics.config.platforms import platform_for_model
    from diagnostics.ingest.detect import read

    real = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "dcgm_metrics_gb200_1.txt"
    result = read(real)
    gpus = result["gpus"]
    assert sorted(gpus["gpu"].astype(int)) == [0, 1, 2, 3] and set(gpus["model"]) == {"NVIDIA GB200"}
    platform = platform_for_model("NVIDIA GB200")
    assert platform == "gb200-nvl72-compute-tray"
    assert platform_graph(platform).port_of(3, 17).switch == "Switch tray 9 chip 2"
    assert platform_graph(platform).port_of(3, 17).switch_port is None  # which port: the tray's slot says
