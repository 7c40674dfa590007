"""A node's NVSwitch tickets, as an engineer reads them: the reset row of a node's switch (not a rack's), the steps
of a switch already named, the plan of every switch failing at once, and the reset of a link that is down."""

from __future__ import annotations

from pathlib import Path

from diagnostics.enums import ComponentKind, FaultKind
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.tickets import RulesDrafter
from diagnostics.tickets.markdown import ticket_markdown
from diagnostics.topology import platform_graph

NODE = "gpu-node-21"
REAL = Path(__file__).parents[2] / "fixtures" / "real"


def _readings(folder: Path, platform: str, model: str, failing: dict[int, set[str] | None]) -> list[Path]:
    """Two `nvidia-smi nvlink -e` readings an hour apart; the links of `failing`'s GPUs (those landing on the named
    peers, where given) replay 9,000 times in the hour."""
    graph = platform_graph(platform)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (at, count) in enumerate((("2026-12-04T10:00:00Z", 100), ("2026-12-04T11:00:00Z", 9100))):
        lines = [at]
        for gpu in graph.gpus:
            lines.append(f"GPU {gpu}: {model} (UUID: GPU-abcdefab-cdef-abdc-abcd-abababab{gpu:04d})")
            for port in sorted((p for p in graph.links_of(gpu) if p.link_type == "nvlink"), key=lambda p: p.link):
                peers = failing.get(gpu, set())
                bad = gpu in failing and (peers is None or port.peer in peers)
                lines += [f"         Link {port.link}: Replay Errors: {count if bad else 0}",
                          f"         Link {port.link}: Recovery Errors: 0", f"         Link {port.link}: CRC Errors: 0"]
            lines.append("")
        path = folder / f"nvlink-{i}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _ticket(paths: list[Path], platform: str | None) -> str:
    source, _, _ = files_source(paths, node=NODE)
    d = diagnose(source, Request(node=NODE, platform=platform)).diagnosis
    return ticket_markdown(RulesDrafter().draft(d))


def _row(text: str, name: str) -> str:
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {name} |")]
    return row


def test_a_node_switchs_reset_row_says_the_node_reboots_not_a_racks_compute_trays(tmp_path: Path) -> None:
    """An HGX H100's NVSwitch 1 failing for three GPUs: its ticket's reset row named compute trays (a rack's)."""
    paths = _readings(tmp_path, "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", {g: {"NVSwitch 1"} for g in (0, 3, 6)})
    text = _ticket(paths, "hgx-h100-8gpu")
    assert "# Repair ticket: NVSwitch 1 on" in text
    row = _row(text, "reset")
    assert "compute tray" not in row and "from a host" not in row and "node" in row, row


def test_a_switch_already_named_is_not_asked_whether_the_links_land_on_one_switch(tmp_path: Path) -> None:
    paths = _readings(tmp_path, "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", {g: {"NVSwitch 1"} for g in (0, 3, 6)})
    text = _ticket(paths, "hgx-h100-8gpu")
    steps = text.split("## Repair, in order")[1].split("##")[0]
    assert "if the failing links of several GPUs all land on" not in steps, steps
    assert "GPUs 0, 3, 6" in steps or "GPU 0, 3 and 6" in steps or "NVSwitch 1" in steps


def test_a_down_links_reset_reads_its_state_again_not_its_counters(tmp_path: Path) -> None:
    """A link that is down counts nothing: after the reset, `nvidia-smi nvlink -s` says whether it came back up."""
    text = _ticket([REAL / "nvlink_s_v100_inactive_1.txt"], "dgx1-v100-8gpu")
    steps = text.split("## Repair, in order")[1].split("##")[0]
    (reset,) = [s for s in steps.splitlines() if "nvidia-smi -r" in s]
    assert "nvidia-smi nvlink -s" in reset and "counters" not in reset, reset


def test_every_switch_failing_alike_has_its_own_plan_versions_and_logs_before_a_cold_power_cycle(
        tmp_path: Path) -> None:
    """All 8 GPUs of an HGX H100 failing on every link: versions and logs first, a cold power cycle of the drained
    node, and the baseboard only if the errors return; not the one-switch plan."""
    paths = _readings(tmp_path, "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", dict.fromkeys(range(8)))
    source, _, _ = files_source(paths, node=NODE)
    d = diagnose(source, Request(node=NODE, platform="hgx-h100-8gpu")).diagnosis
    assert d.localization is not None and d.localization.kind is ComponentKind.NVSWITCH
    ticket = RulesDrafter().draft(d)
    assert ticket.fault is FaultKind.NVSWITCH_SHARED
    text = ticket_markdown(ticket)
    steps = [s.text for s in ticket.repair_steps]
    said = " ".join(steps).lower()
    versions = next(i for i, s in enumerate(steps) if "fabric manager" in s.lower() and "firmware" in s.lower())
    cycle = next(i for i, s in enumerate(steps) if "cold" in s.lower() and "power" in s.lower())
    board = next(i for i, s in enumerate(steps) if "hgx-h100-baseboard" in s)
    assert versions < cycle < board, steps
    assert "sel" in said or "bmc" in said
    assert "one nvswitch" not in said and "switch is soldered" not in said
    assert "drain" in " ".join(s.text for s in ticket.isolation_steps).lower()
    assert "| replacement part |" in text and "hgx-h100-baseboard" in _row(text, "replacement part")
    assert "cold power cycle" in _row(text, "reset")
    assert "switch port" not in text.split("## Physical identity")[0]  # no one switch, so no one port
    assert "every NVSwitch of the node" in _row(text, "link") and "nvswitch-shared" not in _row(text, "link")


def test_the_load_after_a_down_links_reset_checks_the_links_stay_up_not_only_their_counters(tmp_path: Path) -> None:
    """GPU 3's links 3 and 5 inactive: after the reset, the load test reads whether they stay up (`nvlink -s`);
    counters alone say nothing of a link that went down again."""
    text = _ticket([REAL / "nvlink_s_v100_inactive_1.txt"], "dgx1-v100-8gpu")
    steps = text.split("## Repair, in order")[1].split("##")[0]
    (diag,) = [s for s in steps.splitlines() if "dcgmi diag" in s]
    assert "nvidia-smi nvlink -s" in diag and "up" in diag, diag


def test_every_gpu_of_a_dgx1_failing_alike_has_one_plan_versions_and_logs_before_a_cold_power_cycle(
        tmp_path: Path) -> None:
    """A DGX-1 (direct NVLinks, no NVSwitch) with every link of all 8 GPUs replaying: one shared suspect, not GPU 0;
    versions and logs first, a cold power cycle, the baseboard only if the errors return; no switch, port or
    Fabric Manager step. With the platform unknown, the same plan names no part."""
    paths = _readings(tmp_path, "dgx1-v100-8gpu", "Tesla V100-SXM2-32GB", dict.fromkeys(range(8)))
    source, _, _ = files_source(paths, node=NODE)
    d = diagnose(source, Request(node=NODE, platform="dgx1-v100-8gpu")).diagnosis
    assert d.localization is not None and d.localization.kind is ComponentKind.NVLINK_MESH
    assert [s.gpu for s in d.localizations if s.kind is ComponentKind.GPU] == []
    ticket = RulesDrafter().draft(d)
    assert ticket.fault is FaultKind.NVLINK_SHARED
    assert "NVLink mesh" in _row(ticket_markdown(ticket), "link")  # the part's words, not its fault kind's id
    steps = [s.text for s in ticket.repair_steps]
    versions = next(i for i, s in enumerate(steps) if "driver" in s.lower() and "version" in s.lower())
    cycle = next(i for i, s in enumerate(steps) if "cold" in s.lower() and "power" in s.lower())
    board = next(i for i, s in enumerate(steps) if "dgx1-v100-baseboard" in s)
    assert versions < cycle < board, steps
    said = " ".join(steps).lower()
    assert "fabric manager" not in said and "nvswitch" not in said and "sel" in said
    text = ticket_markdown(ticket)
    assert "cold power cycle" in _row(text, "reset")
    guess = diagnose(files_source(paths, node=NODE)[0], Request(node=NODE, platform=None)).diagnosis
    if guess.platform is None:  # the model may tell the board; the unknown path is the localizer's test too
        unknown = RulesDrafter().draft(guess)
        assert unknown.replacement_part is None and "switch port" not in ticket_markdown(unknown)


def test_a_dgx_a100s_every_switch_plan_reads_the_links_after_the_load_before_the_board(tmp_path: Path) -> None:
    """The power cycle clears the counters: whether the errors return is read after the load test, which must say
    so before the step that replaces the board on that condition."""
    paths = _readings(tmp_path, "dgx-a100-8gpu", "NVIDIA A100-SXM4-80GB", dict.fromkeys(range(8)))
    source, _, _ = files_source(paths, node=NODE)
    ticket = RulesDrafter().draft(diagnose(source, Request(node=NODE, platform="dgx-a100-8gpu")).diagnosis)
    steps = [s.text for s in ticket.repair_steps]
    (diag,) = [s for s in steps if "dcgmi diag" in s]
    assert "nvidia-smi nvlink -e" in diag, diag
    assert "shutdown" in next(s for s in steps if "cold" in s), steps


def test_only_a_platform_that_runs_fabric_manager_asks_for_its_version(tmp_path: Path) -> None:
    """A DGX-1 (no NVSwitch, no Fabric Manager) ticket asked for `nv-fabricmanager --version` in its identity; the
    repair catalog's platform entry says which platforms run Fabric Manager. An HGX H100's ticket still asks, and so
    does one whose platform is not known."""
    dgx1 = _ticket([REAL / "nvlink_s_v100_inactive_1.txt"], "dgx1-v100-8gpu")
    row = _row(dgx1, "fabric manager version")
    assert "unknown" not in row and "none" in row, row
    assert "nv-fabricmanager" not in dgx1
    paths = _readings(tmp_path, "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", {g: {"NVSwitch 1"} for g in (0, 3, 6)})
    assert "nv-fabricmanager --version" in _row(_ticket(paths, "hgx-h100-8gpu"), "fabric manager version")


def test_a_fatal_sxids_ticket_quotes_nvidia_with_the_reset_its_plan_takes() -> None:
    """A real fatal SXid 24007: the catalog text the ticket quotes as NVIDIA's named the GPU behind the port and a
    guest VM restart while the ticket's reset step restarts the node; the quote now names the node restart, with
    its source, as the step does."""
    source, node, _ = files_source([REAL / "sxid_24007_xid_a100_1.txt"])
    d = diagnose(source, Request(node=node)).diagnosis
    assert d.localization is not None and d.localization.fault is FaultKind.NVSWITCH_FATAL
    text = ticket_markdown(RulesDrafter().draft(d))
    steps = [line for line in text.splitlines() if line.lower().startswith("1. restart the node")]
    assert steps, text
    quoted = [line.split("NVIDIA: ", 1)[1] for line in text.splitlines()
              if "SXid 24007 (" in line and "NVIDIA: " in line]
    assert quoted, text
    for said in quoted:
        first = said.split(";")[0]  # what to do, before any narrower reset it sets aside
        assert "restart the node" in first and "Fabric Manager guide" in first, said


def test_a_link_a_fatal_sxid_stopped_is_repaired_as_its_switch_port_is(bundled_store: Path) -> None:
    """The bundled fleet's hpc-gpu-node-13: GPU 6 NVLink 1 is inactive after SXid 24007 on its switch port. Its own
    ticket said to reset GPU 6 alone, which clears no fatal SXid; the port's says to restart the node (a fatal SXid
    needs every GPU and NVSwitch reset). Both now restart the node, with no single-GPU reset."""
    answer = diagnose(StoreSource(bundled_store), Request(node="hpc-gpu-node-13"))
    drafter = RulesDrafter()
    link = drafter.draft(answer.diagnosis, graph=answer.graph, component="GPU 6 NVLink 1 -> NVSwitch 0 port 25")
    port = drafter.draft(answer.diagnosis, graph=answer.graph)
    assert port.component == "NVSwitch 0 port 25"
    assert link.fault is port.fault is FaultKind.NVSWITCH_FATAL
    assert link.reset == port.reset and "Restart the node" in link.repair_steps[0].text
    assert not [s.command for s in link.repair_steps if (s.command or "").startswith("nvidia-smi -r")]


def test_a_steps_command_is_not_repeated_after_a_text_that_gives_it(tmp_path: Path) -> None:
    """'Run `dcgmi diag -r 3` on the drained node ... — `dcgmi diag -r 3`': the command after a step whose text
    already gives it in code was said twice; a step whose text does not give it still ends with it."""
    paths = _readings(tmp_path, "hgx-h100-8gpu", "NVIDIA H100 80GB HBM3", {g: {"NVSwitch 1"} for g in (0, 3, 6)})
    text = _ticket(paths, "hgx-h100-8gpu")
    steps = [line for line in text.splitlines() if line[:1].isdigit() and ". " in line]
    assert any("`dcgmi diag -r 3`" in line for line in steps)
    for line in steps:
        if " — `" in line:
            command = line.rsplit(" — `", 1)[1].rstrip("`")
            assert line.count(f"`{command}`") == 1, line
