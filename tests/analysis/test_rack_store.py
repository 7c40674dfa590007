"""A rack from the store: its inventory (node_id, platform, rack, tray) ingested with its telemetry, the rack
analyzed as one, a tray answered as its rack sees it, and the commands around them."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

from bot.cli import main
from bot.listeners.commands import Request, parse
from bot.nodes import StoreNodeSource
from diagnostics import format as fmt
from diagnostics.enums import ComponentKind
from diagnostics.errors import InputError
from diagnostics.service import Request as Question
from diagnostics.service import StoreSource, diagnose
from diagnostics.store import TelemetryStore, open_store
from diagnostics.tickets import RulesDrafter
from diagnostics.tickets.markdown import ticket_markdown
from tests.shared import copy_store


@pytest.fixture(scope="module")
def stored(switch_tray_rack: tuple[Path, Path, dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """The run's one NVL72 rack with a failing switch tray, ingested (read it; copy it to write)."""
    _, root, truth = switch_tray_rack
    return root, truth


def _store(root: Path) -> TelemetryStore:
    return open_store(root, create=False)


def test_the_inventory_places_every_host_in_its_rack_and_tray(stored: tuple[Path, dict[str, Any]]) -> None:
    racks = _store(stored[0]).racks()
    assert len(racks) == 27 and racks["rack-01-c03"].rack == "rack-01" and racks["rack-01-c03"].tray == "3"
    assert racks["rack-01-s09"].tray == "9"


def test_a_stored_rack_is_localized_and_its_trays_are_told(stored: tuple[Path, dict[str, Any]]) -> None:
    root, truth = stored
    fault = truth["racks"]["rack-01"]["faults"][0]
    answer = diagnose(StoreSource(root), Question(rack="rack-01", window=timedelta(hours=1)))
    d, result = answer.diagnosis, answer.analysis
    assert d.localization is not None and d.localization.ref.slug == fault["component"]
    assert d.localization.ref.kind is ComponentKind.SWITCH_TRAY
    for host in d.localization.hosts:
        assert result.diagnoses[host].isolated_component == d.localization.component
    with pytest.raises(InputError, match=r"no rack 'rack-09'.*known: rack-01\).*did you mean rack-01"):
        diagnose(StoreSource(root), Question(rack="rack-09", window=timedelta(hours=1)))


def test_the_bot_answers_a_rack_and_a_tray_as_its_rack_sees_it(stored: tuple[Path, dict[str, Any]]) -> None:
    root = stored[0]
    assert parse("rack rack-01") == Request("rack", "rack-01")
    source = StoreNodeSource(root)
    rack = source.diagnose("rack-01")
    assert rack.rack is not None and rack.tray is None and rack.localization is not None
    host = rack.localization.hosts[0]
    tray = source.diagnose(host)
    assert tray.node_id == host and tray.tray is not None
    assert tray.isolated_component == rack.localization.component
    assert any("outside this tray" in w for w in tray.warnings)


def test_the_commands_analyze_and_draw_the_rack(stored: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = stored[0]
    assert main(["analyze", "--store", str(root), "--rack", "rack-01"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("rack-01") and "Switch tray" in said
    assert main(["analyze", "--store", str(root), "--rack", "rack-1"]) == 2  # a rack, not a node, is unknown
    told = capsys.readouterr().err
    assert "no rack 'rack-1'" in told and "did you mean rack-01?" in told and "node" not in told
    out = tmp_path / "rack.png"
    assert main(["render", "rack-01", "--rack", "--store", str(root), "-o", str(out)]) == 0
    assert Image.open(out).size == (1200, 900) and out.stat().st_size < 300 * 1024
    assert "suspected: Switch tray" in capsys.readouterr().out


def test_a_rack_host_in_maintenance_is_shown_not_paged(stored: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """Planned work holds for a tray answered through its rack, as for any stored node."""
    root = copy_store(stored[0], tmp_path / "store")
    d = diagnose(StoreSource(root), Question(rack="rack-01", window=timedelta(hours=1))).diagnosis
    assert d.localization is not None and d.window_end is not None
    host = d.localization.hosts[0]
    store = _store(root)
    store.maintenance.set(host, start=d.window_end - timedelta(minutes=30), span=timedelta(hours=2),
                          reason="reseat the switch tray", set_by="UBOB")
    held = StoreNodeSource(root).diagnose(host)
    assert held.maintenance is not None and "reseat the switch tray" in held.maintenance
    assert held.ticket_priority.value == "low"


def test_a_rack_units_ticket_says_no_hosts_reboot_resets_it(stored: tuple[Path, dict[str, Any]]) -> None:
    """A switch tray reboots from NVOS with the rack drained: its ticket's Component table says so, never "reboot or
    restart the node" as a host's part's does."""
    d = diagnose(StoreSource(stored[0]), Question(rack="rack-01", window=timedelta(hours=1))).diagnosis
    text = ticket_markdown(RulesDrafter().draft(d))
    (row,) = [line for line in text.splitlines() if line.startswith("| reset |")]
    assert row == "| reset | none from a host: a switch tray reboots from NVOS, with the rack drained |", row
    assert "Once the switch trays are back up:" in text


def test_a_rack_window_holding_none_of_its_readings_says_where_they_run_as_its_trays_do(
        switch_tray_rack: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    """An end a month before the rack's first reading: the rack door says where its hosts' readings run and what
    window holds them, not that their counters were never collected, and exits incomplete as a tray's door does."""
    files, root, _ = switch_tray_rack
    times = pd.read_parquet(files / "link_samples.parquet", columns=["timestamp"])["timestamp"]
    first, last = times.min().to_pydatetime(), times.max().to_pydatetime()
    end = (first - timedelta(days=30)).isoformat()
    asked = ["analyze", "--store", str(root), "--end", end]
    tray = main([*asked, "--node", "rack-01-c01"])
    capsys.readouterr()
    assert tray == 3
    assert main([*asked, "--rack", "rack-01"]) == tray
    err = capsys.readouterr().err
    assert "INCOMPLETE" in err and "rack-01-c01" in err and fmt.when(first) in err, err
    assert main([*asked, "--rack", "rack-01", "--json"]) == tray
    answer = json.loads(capsys.readouterr().out)
    assert f"have link readings from {fmt.when(first)} to {fmt.when(last)}, none before the window's end" in \
        answer["warnings"][0], answer["warnings"]
    assert not [w for w in answer["warnings"] if w.startswith("no link telemetry")], answer["warnings"]
    assert fmt.when(first) in answer["repair_action"] and "Collect" not in answer["repair_action"]


def test_a_racks_silent_hosts_whose_readings_end_together_are_judged_in_one_pass(
        stored: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each silent host's last readings are its tray's view of the rack: hosts whose readings end at one time are
    one engine pass over the rack, not one pass per host (each some 2 s for an NVL72's 18 compute trays)."""
    import importlib

    service = importlib.import_module("diagnostics.service.diagnose")
    root = stored[0]
    newest = max(_store(root).newest([h]) or pd.Timestamp(0) for h in _store(root).racks())
    passes: list[int] = []
    engine = service.analyze_fleet
    monkeypatch.setattr(service, "analyze_fleet", lambda *a, **k: passes.append(1) or engine(*a, **k))
    late = Question(rack="rack-01", window=timedelta(hours=1), end=newest + timedelta(hours=7))
    d = diagnose(StoreSource(root), late).diagnosis
    assert len(passes) == 2, passes  # the window asked, and the hosts' last one
    showed = [w for w in d.warnings if "'s last readings (window 1 h to " in w]
    assert len(showed) >= 2 and all("Switch tray 1" in w for w in showed), d.warnings


def test_a_rack_and_a_node_asked_together_answer_the_racks_host_or_are_refused(
        stored: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    """`--rack R --node T` answered the rack and dropped the node unsaid: a host of R is answered as `--node T`
    answers it (as its rack sees it); a node outside R is refused, saying where it is."""
    root = stored[0]
    host = _store(root).racks()["rack-01-c03"]
    assert host.rack == "rack-01"
    alone = main(["analyze", "--store", str(root), "--node", "rack-01-c03", "--json"])
    said = capsys.readouterr().out
    both = main(["analyze", "--store", str(root), "--rack", "rack-01", "--node", "rack-01-c03", "--json"])
    assert (both, json.loads(capsys.readouterr().out)["node_id"]) == (alone, json.loads(said)["node_id"])
    assert json.loads(said)["node_id"] == "rack-01-c03"
    assert main(["analyze", "--store", str(root), "--rack", "rack-02", "--node", "rack-01-c03"]) == 2
    told = capsys.readouterr()
    assert "rack-01-c03" in told.err and "is in rack rack-01" in told.err and not told.out
