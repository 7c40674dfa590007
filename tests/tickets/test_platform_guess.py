"""A platform no one named is a guess the ticket's part and steps rest on: the ticket says so, through the file and
the store alike, and says nothing when the platform was named."""

from __future__ import annotations

import re
from pathlib import Path

from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets import RulesDrafter
from tests.service.test_nvidia_smi_gpus import NODE, readings, through_both


def test_a_platform_taken_from_the_gpu_model_is_a_warning_of_the_ticket(tmp_path: Path) -> None:
    paths = readings(tmp_path / "in", list(range(8)), replays=0)
    paths[1].write_text(paths[1].read_text(encoding="utf-8").replace("Link 3: Replay Errors: 0",
                                                                     "Link 3: Replay Errors: 9000", 1),
                        encoding="utf-8")
    by_file, by_store = through_both(paths, tmp_path)
    for got in (by_file, by_store):
        assert got.platform == "hgx-h100-8gpu" and got.fault_detected
        assert got.platform_guess == "taken from the GPU model 'NVIDIA H100 80GB HBM3'"
        (said,) = [w for w in RulesDrafter().draft(got).warnings if "not named" in w]
        assert said.startswith("the platform, hgx-h100-8gpu, was taken from the GPU model 'NVIDIA H100 80GB HBM3', "
                               "not named: the part and the steps rest on it")
    named = diagnose(files_source(paths, node=NODE)[0], Request(node=NODE, platform="hgx-h100-8gpu")).diagnosis
    assert named.platform_guess is None and not [w for w in RulesDrafter().draft(named).warnings if "not named" in w]


def test_a_platform_fitted_to_the_nodes_own_topology_is_said_too() -> None:
    """A `topo -m` that fits a platform's template chose it silently (a DGX A100's)."""
    real = Path(__file__).parents[2] / "fixtures" / "real" / "topo_m_dgx_a100_1.txt"
    source, _, _ = files_source([real], node="t")
    got = diagnose(source, Request(node="t")).diagnosis
    assert got.platform == "dgx-a100-8gpu" and got.platform_guess is not None
    assert "fitted to the node's own topology" in got.platform_guess
    assert any(w.startswith("platform dgx-a100-8gpu fitted to the node's own topology") for w in got.warnings)
    named = diagnose(source, Request(node="t", platform="dgx-a100-8gpu")).diagnosis
    assert named.platform_guess is None


B200_TOPOLOGY = Path(__file__).parents[2] / "fixtures" / "real" / "topo_m_b200_gpu2_no_nvlink_vllm_1.txt"


def test_a_topology_several_boards_fit_alike_names_no_one_boards_part() -> None:
    """A real 8x B200 `topo -m` (vLLM issue 16336) fits the HGX H100, H200 and B200 templates alike (18 NVLinks a
    GPU): its ticket named H100 parts on a B200. The platform is now not told, the fault still found, and the part is
    the one any of those boards would take, with the read that names the board; named, the board's own part."""
    source, _, _ = files_source([B200_TOPOLOGY], node="b")
    got = diagnose(source, Request(node="b")).diagnosis
    assert got.platform is None and got.platform_guess is None and got.fault_detected
    assert any("fits hgx-h100-8gpu, hgx-h200-8gpu, hgx-b200-8gpu alike" in w for w in got.warnings)
    assert not any(w.startswith("platform unknown: the expected links") for w in got.warnings)  # they are checked
    ticket = RulesDrafter().draft(got)
    parts = [p for p in (ticket.replacement_part, ticket.next_part) if p is not None]
    assert ticket.gpu_index == 2 and parts and all(p.platform == "unknown" for p in parts)
    # each of the boards carries its GPUs as SXM modules and resets a GPU alone: no PCIe card, no pre-Ampere caveat
    assert [p.id for p in parts] == ["unknown-sxm-module", "unknown-gpu-baseboard"], parts
    assert not any("PCIe" in c.board for p in parts for c in p.candidates)
    assert not any("pre-Ampere" in s.text for s in [*ticket.isolation_steps, *ticket.repair_steps])
    text = ticket.model_dump_json()
    boards = "hgx-h100-8gpu, hgx-h200-8gpu, hgx-b200-8gpu"
    for said in (f"each of {boards} has", f"{boards} alike"):
        text = text.replace(said, "")  # the boards it fits, said; none of their parts
    assert not any(board in text for board in ("hgx-h100", "HGX H100", "SXM5", "hgx-b200", "HGX B200"))
    assert 'grep -i \\"product name\\"' in text  # the read that names the board
    named = RulesDrafter().draft(diagnose(source, Request(node="b", platform="hgx-b200-8gpu")).diagnosis)
    assert named.replacement_part is not None and named.replacement_part.platform == "hgx-b200-8gpu"


def test_a_peer_gpu_from_a_guessed_platforms_wiring_is_said_assumed_by_the_ticket_and_the_answer() -> None:
    """The real V100 board read as a DGX-1 from its model: GPU 2 NVLink 0's peer, GPU 0, is the DGX-1's wiring. The
    ticket, the text and JSON answers say it is assumed; with the platform named, none of them says so."""
    real = Path(__file__).parents[2] / "fixtures" / "real" / "nvlink_e_v100_short_form_dated_2.txt"
    source, _, _ = files_source([real], node="v")
    wiring = "that platform's wiring, assumed until the node's own is read"
    for platform in (None, "dgx1-v100-8gpu"):
        got = diagnose(source, Request(node="v", platform=platform)).diagnosis
        flagged = [f for f in got.findings if f.severity.value != "ok"]
        assert [(f.gpu, f.ref.peer_gpu, f.link) for f in flagged] == [(2, 0, 0)], flagged
        ticket = RulesDrafter().draft(got, component=flagged[0].component)
        said = [w for w in ticket.warnings if wiring in w]
        answer = [w for w in got.model_dump(mode="json")["warnings"] if wiring in w]
        if platform is None:
            assert len(said) == 1 and "GPU 0 as its link's peer" in said[0] and "nvlink -R -i 2" in said[0], said
            assert len(answer) == 1, got.warnings
        else:
            assert not said and not answer, (ticket.warnings, got.warnings)


def test_a_link_on_boards_fitted_alike_names_no_template_chip_or_port(tmp_path: Path) -> None:
    """On the B200 `topo -m` that three boards fit alike, GPU 0's NVLink 13 down was said to land on 'NVSwitch 2 port
    4', the HGX H100 template's (a B200 has two chips, not four). It now lands on the node's NVSwitch fabric, port
    unknown with the read that finds it, and both tickets take the parts of a switched board (a module, then the
    baseboard), never an NVLink bridge; the platform named, the board's own chip and port come back."""
    status = tmp_path / "nvlink_s.txt"
    status.write_text("GPU 0: NVIDIA Graphics Device (UUID: GPU-0000)\n" + "".join(
        f"\t Link {n}: {'<inactive>' if n == 13 else '50 GB/s'}\n" for n in range(18)), encoding="utf-8")
    source, _, _ = files_source([B200_TOPOLOGY, status], node="b")
    answer = diagnose(source, Request(node="b"))
    got = answer.diagnosis
    assert got.platform is None and got.isolated_component == "GPU 0 NVLink 13 -> NVSwitch fabric"
    link = RulesDrafter().draft(got, graph=answer.graph)
    aggregate = RulesDrafter().draft(got, component="GPU 2 NVLinks", graph=answer.graph)
    for ticket in (link, aggregate):
        assert (ticket.replacement_part and ticket.replacement_part.id, ticket.next_part and ticket.next_part.id) == \
            ("unknown-sxm-module", "unknown-gpu-baseboard"), ticket.component
        text = ticket.to_markdown()
        assert "NVSwitch fabric (port unknown; confirm with `nvidia-smi nvlink -R" in text
        assert not re.search(r"NVSwitch \d", text) and "assumed from the platform template" not in text
        assert "no NVSwitch board holds two GPUs" not in text  # two GPUs down on an eight-GPU switched board
    named = diagnose(source, Request(node="b", platform="hgx-b200-8gpu")).diagnosis
    assert named.isolated_component == "GPU 0 NVLink 13 -> NVSwitch 1 port 4"


def test_a_ticket_on_boards_fitted_alike_names_them_and_asks_only_what_tells_them_apart() -> None:
    """The B200 ticket asked for the `topo -m` it was drafted from and kept a pre-Ampere reset caveat, though the
    topology fits only Hopper and Blackwell boards with NVSwitches. It names those boards, asks for the product name
    alone, and resets the GPU alone, as each of them does; a board named, none of it."""
    source, _, _ = files_source([B200_TOPOLOGY], node="b")
    answer = diagnose(source, Request(node="b"))
    got = answer.diagnosis
    assert got.platforms_alike == ["hgx-h100-8gpu", "hgx-h200-8gpu", "hgx-b200-8gpu"]
    ticket = RulesDrafter().draft(got, graph=answer.graph)
    (said,) = [w for w in ticket.warnings if w.startswith("platform")]
    assert "fits hgx-h100-8gpu, hgx-h200-8gpu, hgx-b200-8gpu alike" in said and "topo -m" not in said, said
    assert ticket.switched is True and "pre-Ampere" not in ticket.to_markdown().split("| reset |")[1].split("\n")[0]
    named = diagnose(source, Request(node="b", platform="hgx-b200-8gpu")).diagnosis
    assert named.platforms_alike == []
