"""A GPU's PCIe link read at both ends (`lspci -vvv` joins the port above each GPU; the sysfs AER files count each
end's errors): the errors the port above a GPU received are the link's, as the GPU's own are. The rates read only
the GPU's end, so a port above GPU 0 counting some 5,000 Bad DLLPs and Bad TLPs an hour, with the GPU's own
counts still, was "low, fault=no, Maintain routine monitoring", exit 0, at every door."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Cli

SAMPLES = Path(__file__).parents[3] / "fixtures" / "samples"
COUNTS = ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF")


def _aer(bus: str, errors: int) -> str:
    """`grep -r . .../aer_dev_correctable` of one device: `errors` Bad TLPs and as many Bad DLLPs."""
    counts = {"BadTLP": errors, "BadDLLP": errors}
    lines = [f"$ grep -r . /sys/bus/pci/devices/{bus}/aer_dev_correctable"]
    lines += [f"/sys/bus/pci/devices/{bus}/aer_dev_correctable:{name} {counts.get(name, 0)}" for name in COUNTS]
    lines.append(f"/sys/bus/pci/devices/{bus}/aer_dev_correctable:TOTAL_ERR_COR {2 * errors}")
    return "\n".join(lines) + "\n"


def _readings(tmp_path: Path, port: tuple[int, int], gpu: tuple[int, int] = (0, 0)) -> Path:
    """Two readings an hour apart of the sample's switch port 0000:18:00.0 above GPU 0000:19:00.0 (its lane status
    read clear): the port's counts, then the GPU's, then `lspci -vvv`."""
    listing = (SAMPLES / "lspci_vvv_lane_h100.txt").read_text(encoding="utf-8")
    listing = "".join(line for line in listing.splitlines(keepends=True) if not line.startswith("#"))
    listing = listing.replace("LaneErr at lane: 6", "0")
    text = ""
    for when, at_port, at_gpu in zip(("Mon Dec  7 08:00:00 UTC 2026", "Mon Dec  7 09:00:00 UTC 2026"), port, gpu,
                                     strict=True):
        text += f"{when}\n{_aer('0000:18:00.0', at_port)}{_aer('0000:19:00.0', at_gpu)}{listing}\n"
    path = tmp_path / "pcie.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_errors_the_port_above_a_gpu_received_fail_its_link_at_every_door(tmp_path: Path, cli: Cli) -> None:
    paste = _readings(tmp_path, (10, 5_000))
    code, out, _ = cli("analyze", str(paste), "--node", "h1", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["fault_detected"] and answer["isolated_component"] == "GPU 0 PCIe", answer
    finding = next(f for f in answer["findings"] if f["component"] == "GPU 0 PCIe")
    assert finding["end"] == "upstream"
    assert any("the port above it (0000:18:00.0) received errors" in e for e in finding["evidence"])
    store = tmp_path / "store"
    assert cli("ingest", str(paste), "--store", str(store), "--node", "h1")[0] == 0
    code, out, _ = cli("analyze", "--store", str(store), "--node", "h1", "--json")
    stored = json.loads(out)
    assert (stored["fault_detected"], stored["isolated_component"], stored["ticket_priority"]) == \
        (True, "GPU 0 PCIe", answer["ticket_priority"])
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert [(o["node_id"], o["component"]) for o in swept["offenders"]] == [("h1", "GPU 0 PCIe")], swept["offenders"]


@pytest.mark.parametrize(("port", "gpu"), [((10, 10), (0, 0)), ((10, 10), (3, 3))])
def test_a_still_port_above_a_gpu_fails_nothing(tmp_path: Path, cli: Cli, port: tuple[int, int],
                                                gpu: tuple[int, int]) -> None:
    code, out, _ = cli("analyze", str(_readings(tmp_path, port, gpu)), "--node", "h1", "--json")
    assert code == 0 and not json.loads(out)["fault_detected"], out


def test_both_ends_counting_are_the_links_errors_and_name_no_end(tmp_path: Path, cli: Cli) -> None:
    code, out, _ = cli("analyze", str(_readings(tmp_path, (10, 3_000), (5, 3_000))), "--node", "h1", "--json")
    answer = json.loads(out)
    finding = next(f for f in answer["findings"] if f["component"] == "GPU 0 PCIe")
    assert code == 0 and answer["fault_detected"] and finding["end"] is None
    assert any("errors received at both ends" in e for e in finding["evidence"]), finding["evidence"]
