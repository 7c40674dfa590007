"""The driver's own recovery action (Xid 154, DCGM_FI_DEV_GPU_RECOVERY_ACTION) read from the kernel log and from
dcgm-exporter, and allowed to widen a suspect's reset: "Node Reboot Required" beats "reset GPU alone"."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from diagnostics.analysis import analyze_fleet
from diagnostics.analysis.recovery import recovery_actions
from diagnostics.config.recovery import load_recovery
from diagnostics.enums import EventKind, ResetScope
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from diagnostics.repair import PlanFacts, repair_plan
from diagnostics.tables import EVENTS
from diagnostics.tickets import RulesDrafter

from .helpers import T0, conform, node_links

END = T0 + pd.Timedelta(hours=1)
AT = T0 + pd.Timedelta(minutes=40)


def ns_of(t: pd.Timestamp) -> int:
    return int(t.value)


def _xid154(gpu: int, text: str, at: pd.Timestamp = AT) -> dict[str, object]:
    return {"timestamp": at, "node_id": "n1", "gpu": gpu, "kind": "xid", "code": 154, "source": "kernel",
            "text": f"NVRM: Xid (PCI:0000:{gpu + 0x18:02x}:00): 154, GPU recovery action changed from {text}"}


def _node(*events: dict[str, object]) -> tuple[object, object]:
    """An HGX H100 node whose GPU 2 NVLink 5 replays at 20x its limit, with these events."""
    tables = {"link_samples": node_links({(2, 5): 20000.0}),
              "events": conform(EVENTS, pd.DataFrame(list(events))) if events else conform(EVENTS, pd.DataFrame())}
    fleet = analyze_fleet(tables, window=timedelta(hours=1), end=END, platforms={"n1": "hgx-h100-8gpu"})
    return fleet.diagnoses["n1"], tables


@pytest.mark.parametrize(("line", "scope", "reboots"), [
    ("0x0 (None) to 0x2 (Node Reboot Required)", "node", True),
    ("0x0 (None) to 0x2 (OS Reboot)", "node", True),  # the 610 driver branch's words
    ("0x0 (None) to 0x1 (GPU Reset Required)", "gpu", False),
])
def test_an_xid_154_widens_the_reset_only_when_it_asks_for_more(line: str, scope: str, reboots: bool) -> None:
    d, _ = _node(_xid154(2, line))
    loc = d.localization
    assert loc is not None and loc.gpu == 2 and loc.recovery_scope == scope and "Xid 154" in (loc.recovery or "")
    plan = repair_plan("hgx-h100-8gpu", loc.fault or "nvlink", PlanFacts(node_id="n1", **loc.model_dump(
        include={"gpu", "link", "switch", "switch_port", "peer", "recovery", "recovery_scope"})))
    assert (plan.reset.scope is ResetScope.NODE) is reboots
    if reboots:
        assert plan.repair[0].text.startswith("With node n1 drained, reboot it: the driver asks for it")
        assert d.repair_action.startswith("Reboot node n1, not GPU 2 alone: the driver asks for it")
        assert "exclude" not in plan.isolation[0].text  # a reboot stops every GPU: no GPU left out instead
        ticket = RulesDrafter().draft(d)
        assert ticket.reset.scope is ResetScope.NODE and any("Xid 154" in w for w in ticket.warnings)
    else:
        assert plan.reset.command == "nvidia-smi -r -i 2"
    assert any("the driver asks for" in w and "GPU 2" in w for w in d.warnings)


def test_a_later_none_clears_the_action_and_another_gpu_is_not_reached() -> None:
    d, _ = _node(_xid154(2, "0x0 (None) to 0x2 (Node Reboot Required)"),
                 _xid154(2, "0x2 (Node Reboot Required) to 0x0 (None)", T0 + pd.Timedelta(minutes=50)))
    assert d.localization is not None and d.localization.recovery is None
    d, _ = _node(_xid154(6, "0x0 (None) to 0x2 (Node Reboot Required)"))
    assert d.localization is not None and d.localization.gpu == 2 and d.localization.recovery is None
    assert any("GPU 6" in w for w in d.warnings)  # said, whatever else is found


def test_an_xid_154_with_no_line_is_judged_without_its_action() -> None:
    """An events table's Xid 154 row with no text (a JSONL event of code alone): the analysis stopped on reading its
    missing line ("boolean value of NA is ambiguous"); it has no action to read, so the node is judged without one."""
    row = {k: v for k, v in _xid154(2, "").items() if k != "text"}
    d, _ = _node(row)
    assert d.localization is not None and d.localization.gpu == 2 and d.localization.recovery is None


def test_dcgm_exporters_recovery_action_is_read_as_an_event(tmp_path: object) -> None:
    """Two scrapes of a GB200 tray in dcgm-exporter's labels (dcgm-exporter issue 581's layout): GPU 1 reads 0,
    then 2; GPU 0 reads 0 both times (no event)."""
    labels = 'UUID="GPU-67ff7ed1",pci_bus_id="00000009:01:00.0",device="nvidia{g}",modelName="NVIDIA GB200",' \
             'Hostname="tray-07"'
    files = []
    for i, value in enumerate((0, 2)):
        path = tmp_path / f"scrape{i}.prom"  # type: ignore[operator]
        path.write_text("# TYPE DCGM_FI_DEV_GPU_RECOVERY_ACTION gauge\n" + "".join(
            f'DCGM_FI_DEV_GPU_RECOVERY_ACTION{{gpu="{g}",{labels.format(g=g)}}} {value if g == 1 else 0} '
            f"{1767225600000 + i * 60000}\n" for g in (0, 1)))
        files.append(path)
    events = read_scrapes([(Source.from_path(f), None) for f in files]).tables["events"]
    rows = events[events["kind"].astype(str) == EventKind.RECOVERY_ACTION.value]
    assert len(rows) == 1 and int(rows["gpu"].iloc[0]) == 1 and int(rows["code"].iloc[0]) == 2
    assert "Node Reboot Required" in str(rows["text"].iloc[0])


def test_the_table_reads_the_lines_drivers_write_and_an_unknown_value_is_the_strongest() -> None:
    table = load_recovery()
    assert table.from_line("154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)").scope == "gpu"
    assert table.from_line("154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)").scope == "drain"
    assert table.of(42).scope == "node" and table.of(42).assumed
    assert table.from_line("154, something else") is None


def test_a_kernel_line_with_only_its_pci_address_is_placed_by_the_gpu_table_or_kept_by_address() -> None:
    from diagnostics.analysis.recovery import recovery_actions

    line = _xid154(0, "0x0 (None) to 0x2 (Node Reboot Required)") | {"gpu": None, "pci_bus_id": "0000:18:00.0"}
    events = conform(EVENTS, pd.DataFrame([line]))
    start, end = int(T0.value), int(END.value)
    assert list(recovery_actions(events, start, end, {"0000:18:00.0": 2})) == [2]
    kept = recovery_actions(events, start, end)
    assert list(kept) == ["0000:18:00.0"] and "the GPU at PCI 0000:18:00.0" in kept["0000:18:00.0"].said


def test_an_action_asked_before_the_window_stands_until_a_restart_after_it() -> None:
    """The driver asked "GPU Reset Required" with the fatal Xid 74 it followed; once the window moved past both,
    the Xid still held (it holds until a reset) but the driver's action was gone from the answer. It stands as the
    Xid does, until a restart of its GPU or node is seen after it."""
    early = _xid154(2, "0x0 (None) to 0x2 (Node Reboot Required)", at=T0 - pd.Timedelta(hours=2))
    d, _ = _node(early)
    assert d.localization is not None and d.localization.recovery_scope == "node", d.localization
    events = conform(EVENTS, pd.DataFrame([early]))
    start, end = ns_of(T0), ns_of(END)
    assert recovery_actions(events, start, end)  # nothing read since: it stands
    assert not recovery_actions(events, start, end, restarts={None: ns_of(T0 - pd.Timedelta(hours=1))})
    assert not recovery_actions(events, start, end, restarts={2: ns_of(T0 - pd.Timedelta(hours=1))})
    assert recovery_actions(events, start, end, restarts={5: ns_of(T0 - pd.Timedelta(hours=1))})  # another GPU's
