"""One owner for each part's ticket: a rack's part outside every compute tray (a switch tray, a switch chip or
port, a cable cartridge) is the rack's, whichever tray it is seen from, through every door (analyze, ticket, render,
sweep, `/fabric` and its draft, the digest, the alert loop); a part inside a tray is that tray's host's."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bot.cli import main
from bot.commands.sweep import _table as sweep_table
from bot.digest import assemble
from bot.nodes import StoreNodeSource
from bot.storage import open_db
from bot.transport.mock_slack import Message
from bot.workflow.tracker import SqliteTracker, Ticket
from diagnostics.analysis import decide, failing_parts
from diagnostics.components import ComponentRef
from diagnostics.config import load_alerts
from diagnostics.enums import FaultKind, Priority, Severity
from diagnostics.model import Diagnosis, Localization, RackPlace
from diagnostics.prometheus import SweepResult
from diagnostics.render import render_rack
from diagnostics.service import Fleet, Request, StoreSource, alert_pass, diagnose, fleet
from tests.bot.console.helpers import click_draft, console, summary
from tests.bot.helpers import OPS, buttons, local_bot, posted, summary_for

Rack = tuple[Path, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def seen(switch_tray_rack: Rack) -> tuple[Path, list[str]]:
    """The rack's store and the compute trays whose links run through its failing switch tray."""
    _, store, truth = switch_tray_rack
    fault = truth["racks"]["rack-01"]["faults"][0]
    return store, [f"rack-01-c{t:02d}" for t in sorted({link[0] for link in fault["links"]})]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_cli_doors_file_a_switch_tray_on_its_rack_from_any_tray(seen: tuple[Path, list[str]], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    store, trays = seen
    assert len(trays) >= 2
    at = ("--store", str(store))
    _, out = _run(capsys, "analyze", *at, "--rack", "rack-01", "--json")
    rack = json.loads(out)
    assert rack["isolated_component"] == "Switch tray 1" and rack["ticket_owner"] == "rack-01"
    _, out = _run(capsys, "ticket", "rack-01", *at, "--json", "--rules")
    rack_ticket = json.loads(out)
    _, out = _run(capsys, "analyze", *at, "--node", trays[0])
    assert "ticket:   rack-01 (the part is outside" in out
    _, out = _run(capsys, "analyze", *at, "--node", "rack-01-s01")  # the failing switch tray's own host holds it
    assert "ticket:   rack-01 (a part outside every compute tray is the rack's)" in out
    assert "outside rack-01-s01" not in out
    _, out = _run(capsys, "analyze", *at, "--node", trays[1], "--json")
    host = json.loads(out)
    assert host["ticket_owner"] == "rack-01" and host["isolated_component"] == "Switch tray 1"
    assert host["repair_action"] == rack["repair_action"] and host["ticket_priority"] == rack["ticket_priority"]
    for tray in trays[:2]:
        _, out = _run(capsys, "ticket", tray, *at, "--json", "--rules")
        ticket = json.loads(out)
        assert ticket["node_id"] == "rack-01" and ticket["component"] == "Switch tray 1"
        assert ticket["replacement_part"]["id"] == "gb200-nvl72-switch-tray"
        for key in ("replacement_part", "priority", "isolation_steps", "repair_steps", "reset"):
            assert ticket[key] == rack_ticket[key], key
        assert "rack rack-01-c" not in json.dumps(ticket)  # the rack's plan names the rack, never a tray as one
    code, out = _run(capsys, "render", trays[0], *at, "-o", str(tmp_path / "tray.png"), "--no-correlation")
    assert code == 0 and "its suspect is ticketed on rack-01" in out
    # the tray is drawn as its rack, as the bot draws it
    drawn = Image.open(io.BytesIO(render_rack(Diagnosis.model_validate(rack))))
    assert Image.open(tmp_path / "tray.png").size == drawn.size
    _, out = _run(capsys, "sweep", *at, "--json")
    swept = json.loads(out)
    showing = {n for n, d in swept["diagnoses"].items() if d["isolated_component"] == "Switch tray 1"}
    assert set(trays) <= showing and {swept["diagnoses"][n]["ticket_owner"] for n in showing} == {"rack-01"}
    table = io.StringIO()
    sweep_table(SweepResult.model_validate(swept), table)
    assert "Switch tray 1 (ticket on rack-01)" in table.getvalue()


@pytest.fixture(scope="module")
def engine(switch_tray_rack: Rack) -> Fleet:
    """The fleet's one engine pass over the rack's store: every host, and the rack."""
    return fleet(StoreSource(switch_tray_rack[1]), Request())


@pytest.fixture(scope="module")
def answered(engine: Fleet) -> dict[str, Diagnosis]:
    """Every host of the rack as the fleet's one engine pass answers it."""
    return engine.diagnoses


def test_a_tray_with_no_fault_of_its_own_points_at_the_rack_ticket(switch_tray_rack: Rack,
                                                                    answered: dict[str, Diagnosis],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    healthy = next(n for n, d in answered.items() if d.rack is not None and d.tray is not None
                   and not d.fault_detected)
    code = main(["ticket", healthy, "--store", str(switch_tray_rack[1]), "--json", "--rules"])
    err = capsys.readouterr().err
    assert code == 1 and "drafted through the rack (`fabricbot ticket rack-01`" in err


def test_the_digest_and_the_alert_loop_count_the_rack_part_once(seen: tuple[Path, list[str]],
                                                                answered: dict[str, Diagnosis]) -> None:
    store, trays = seen
    at = datetime(2030, 1, 1, tzinfo=UTC)
    tracker = SqliteTracker(open_db(None))
    digest = assemble(at=at, diagnoses=answered.values(), tracker=tracker, maintenance=[])
    switch = [o for o in digest.new if o.component == "Switch tray 1"]
    assert [(o.node_id, o.slug) for o in switch] == [("rack-01", "switch-tray1")]
    parts = [p for p in failing_parts(answered.values()) if p.slug == "switch-tray1"]
    assert [(p.node_id, p.seen_on in trays) for p in parts] == [("rack-01", True)]
    source = StoreSource(store)
    newest = source.newest()  # the pass at the readings' time (a pass years later would find the rack silent)
    assert newest is not None
    _, done = alert_pass(source, Request(), alerts={}, at=newest, ticket_of=lambda node, slug: None)
    new = [d.alert for d in done.decisions if d.alert.slug == "switch-tray1"]
    assert [a.node_id for a in new] == ["rack-01"]
    told = replace(new[0], owed=False)  # posted, as the loop records once it posts
    again = decide(parts, {(told.node_id, told.slug): told}, at=at, policy=load_alerts(),
                   fleet_nodes=len(answered),
                   ticket_of=lambda node, slug: "T-1" if (node, slug) == ("rack-01", "switch-tray1") else None)
    assert [d.step.value for d in again.decisions] == ["ticketed"]


def test_slack_drafts_and_files_the_rack_part_once_whichever_tray_asks(seen: tuple[Path, list[str]]) -> None:
    store, trays = seen
    with local_bot(source=StoreNodeSource(store)) as local:
        first = summary_for(local, trays[0])
        assert "Switch tray 1" in first.shown_blocks and "ticket on `rack-01`" in first.shown_blocks
        _draft(local, first)
        preview = next(m for m in posted(local.slack, thread=first.ts) if len(buttons(m)) == 2)
        assert "on rack-01" in preview.text
        file_button = next(b for b in buttons(preview) if b["action_id"] == "file_ticket")
        local.injector.action(file_button, user="UBOB", channel=OPS, message_ts=preview.ts)
        assert local.slack.wait_for(lambda s: local.tracker.tickets())  # type: ignore[attr-defined]
        (filed,) = local.tracker.tickets()  # type: ignore[attr-defined]
        assert (filed.node_id, filed.component) == ("rack-01", "Switch tray 1")
        second = summary_for(local, trays[1])
        _draft(local, second)
        assert local.slack.wait_for(lambda s: any("already open" in m.text for m in posted(s, thread=second.ts)))
        told = next(m.text for m in posted(local.slack, thread=second.ts) if "already open" in m.text)
        assert f"on `rack-01` is already open: *{filed.id}*" in told
        switch = summary_for(local, "rack-01-s01")  # the failing switch tray's own host
        _draft(local, switch)
        assert local.slack.wait_for(lambda s: any("already open" in m.text for m in posted(s, thread=switch.ts)))
        assert len(local.tracker.tickets()) == 1  # type: ignore[attr-defined]


def _draft(local: Any, summary: Any) -> None:
    button = buttons(summary)[0]
    assert local.injector.action(button, user="UALICE", channel=OPS, message_ts=summary.ts).status == 200
    assert local.slack.wait_for(lambda s: any(m.edits for m in posted(s, thread=summary.ts)))


def _diagnosis(node: str, loc: Localization, tray: str | None) -> Diagnosis:
    place = RackPlace(rack_id="rack-07", platform="gb200-nvl72", compute={"3": "r7-c03", "7": "r7-c07"},
                      switch={"2": "r7-s02"})
    return Diagnosis(node_id=node, window_hours=1.0, fault_detected=True, isolated_component=loc.component,
                     degradation_pct=None, repair_action="", ticket_priority=Priority.HIGH, findings=[],
                     localization=loc, localizations=[loc], rack=place, tray=tray)


@pytest.mark.parametrize(("ref", "fault", "owner"), [
    (ComponentRef.switch_tray_unit("2"), FaultKind.SWITCH_TRAY, "rack-07"),
    (ComponentRef.switch_chip("2", 1), FaultKind.NVSWITCH, "rack-07"),
    (ComponentRef.cartridge_unit("1"), FaultKind.CARTRIDGE, "rack-07"),
    (ComponentRef.nvlink(2, 5).in_tray("7"), FaultKind.SWITCH_PORT, "rack-07"),
    (ComponentRef.of_gpu(2).in_tray("7"), FaultKind.GPU_NVLINKS, "r7-c07"),
    (ComponentRef.compute_tray("7"), FaultKind.COMPUTE_TRAY, "r7-c07"),
    (ComponentRef.nvlink(2, 5).in_tray("7"), FaultKind.NVLINK, "r7-c07"),
])
def test_each_part_has_one_owner_whoever_answers(ref: ComponentRef, fault: FaultKind, owner: str) -> None:
    loc = Localization(ref=ref, fault=fault, confidence=0.9, severity=Severity.FAILING)
    for node, tray in (("rack-07", None), ("r7-c03", "3"), ("r7-c07", "7"), ("r7-s02", "2")):
        d = _diagnosis(node, loc, tray)
        assert d.owner_of() == d.owner_of(ref.slug) == d.ticket_owner == owner, node
    off_rack = _diagnosis("n1", loc, None).model_copy(update={"rack": None})
    assert off_rack.ticket_owner == "n1"


def test_a_switch_tray_port_is_one_part_from_the_rack_and_from_its_switch_tray_host(
        engine: Fleet, seen: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    """The switch tray's host reads its ports under the driver's names; both doors name them as the rack does, so
    the tracker sees one part: a port filed from the rack is already open when its host drafts it. The host still
    takes the driver's name for it (`NVSwitch 1 port 17`, chip 2's), as a compute tray host takes `GPU 3 NVLink 16`."""
    store, _ = seen
    host, rack = engine.diagnoses["rack-01-s01"], engine.racks["rack-01"]
    port = host.failing[0]
    assert port.component.startswith("Switch tray 1 chip ") and port.switch_port == port.ref.port
    same = next(f for f in rack.findings if f.ref.slug == port.ref.slug)
    assert same.component == port.component and host.owner_of(port.ref.slug) == rack.owner_of(port.ref.slug) == \
        "rack-01"
    drafted = []
    assert port.ref.chip is not None
    driver = f"NVSwitch {port.ref.chip - 1} port {port.ref.port}"  # as the host's own nvidia-smi names the port
    for node, name in (("rack-01", port.component), ("rack-01-s01", port.component), ("rack-01-s01", driver)):
        _, out = _run(capsys, "ticket", node, "--store", str(store), "--link", name, "--json", "--rules")
        drafted.append(json.loads(out))
    keys = ("node_id", "component", "switch", "switch_port", "port_source", "replacement_part", "priority")
    first, second, third = ({k: t[k] for k in keys} for t in drafted)
    assert first == second == third
    assert drafted[0]["switch_port"] == port.switch_port and drafted[0]["port_source"] == "observed"
    filed, told, held = _filed_from_rack_then_drafted_on(store, port.component, "rack-01-s01")
    assert (filed.node_id, filed.component) == ("rack-01", port.component)
    assert any(f"is already open: *{filed.id}*" in m.text for m in told), [m.text for m in told]
    assert held == 1


def _filed_from_rack_then_drafted_on(store: Path, component: str, host: str) -> tuple[Ticket, list[Message], int]:
    """`component` drafted and filed from `/fabric rack rack-01` in the console, then drafted from `/fabric HOST`:
    the ticket filed, the host thread's replies, and how many tickets the tracker then holds."""
    with console(source=StoreNodeSource(store)) as c:
        from_rack = summary(c, "rack rack-01")
        preview = next(m for m in click_draft(c, from_rack, component) if len(buttons(m)) == 2)
        filing = next(b for b in buttons(preview) if b["action_id"] == "file_ticket")
        assert c.act(preview.ts, filing["action_id"])["status"] == 200
        assert c.slack.wait_for(lambda s: c.local.tracker.tickets())
        (filed,) = c.local.tracker.tickets()
        told = click_draft(c, summary(c, host), component)
        return filed, told, len(c.local.tracker.tickets())


def test_a_healthy_compute_tray_answers_with_its_racks_plan(answered: dict[str, Diagnosis],
                                                            seen: tuple[Path, list[str]],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A switch tray's repair stops every GPU of the rack: a compute tray whose own links read clean says so and
    gives the rack's action, through the CLI and `/fabric`, as the rack's own answer does."""
    store, trays = seen
    healthy = next(n for n, d in answered.items() if d.tray is not None and n.startswith("rack-01-c")
                   and n not in trays and not d.fault_detected)
    at = ("--store", str(store))
    _, out = _run(capsys, "analyze", *at, "--rack", "rack-01", "--json")
    rack = json.loads(out)
    _, out = _run(capsys, "analyze", *at, "--node", healthy, "--json")
    tray = json.loads(out)
    assert not tray["fault_detected"] and tray["repair_action"] == rack["repair_action"]
    assert "then the rest of rack rack-01" in tray["repair_action"]
    assert any("its GPUs stop with rack rack-01's repair of Switch tray 1" in w for w in tray["warnings"])
    stopped = tray["stopped_by"]
    assert stopped["component"].startswith("Switch tray 1") and stopped["priority"] == rack["ticket_priority"]
    _, out = _run(capsys, "analyze", *at, "--node", healthy)
    said = f"rack rack-01's repair of {stopped['component']} (its ticket: {rack['ticket_priority']} priority)"
    assert f"  rack:     drained with {said}" in out
    with local_bot(source=StoreNodeSource(store)) as local:
        shown = summary_for(local, healthy).shown_blocks
    assert "then the rest of rack rack-01" in shown and "Maintain routine monitoring" not in shown
    assert f"{healthy}: no fault of its own, drained with its rack" in shown and said in shown  # not "no fault"


def test_a_compute_tray_link_is_one_part_from_the_rack_and_from_its_host(
        engine: Fleet, seen: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    """A compute tray's host reads its links as the driver names them (`GPU 3 NVLink 16`); both doors name them as
    the rack does (`Compute tray 4 GPU 3 NVLink 16 -> ...`), one slug on one owner: a link filed from the rack is
    already open when its host drafts it, and a name as the host's driver says it still finds it."""
    store, trays = seen
    rack, host_id = engine.racks["rack-01"], trays[0]
    host = engine.diagnoses[host_id]
    link = next(f for f in host.failing if f.ref.link is not None)
    assert link.component.startswith(f"Compute tray {host.tray} GPU {link.ref.gpu} NVLink {link.ref.link} -> ")
    same = next((f for f in rack.findings if f.ref.slug == link.ref.slug), None)
    assert same is not None and same.component == link.component, [f.ref.slug for f in host.failing]
    assert host.owner_of(link.ref.slug) == rack.owner_of(link.ref.slug) == host_id
    suspect = host.localization
    assert suspect is not None and link.ref.slug in host.parts_of(suspect.ref.slug)  # the links it explains
    assert set(host.parts_of(suspect.ref.slug)) <= set(rack.parts_of(suspect.ref.slug))
    driver_said = link.ref.model_copy(update={"tray": None}).name  # `GPU 3 NVLink 16 -> Switch tray ...`
    drafted = []
    for node, asked in (("rack-01", link.component), (host_id, link.component), (host_id, driver_said)):
        _, out = _run(capsys, "ticket", node, "--store", str(store), "--link", asked, "--json", "--rules")
        drafted.append(json.loads(out))
    keys = ("node_id", "component", "candidate_id", "switch", "switch_port", "port_source", "priority")
    first, *rest = ({k: t[k] for k in keys} for t in drafted)
    assert all(r == first for r in rest), (first, rest)
    assert (first["node_id"], first["candidate_id"]) == (host_id, link.ref.slug)
    filed, told, held = _filed_from_rack_then_drafted_on(store, link.component, host_id)
    assert (filed.node_id, filed.slug) == (host_id, link.ref.slug)
    assert any(f"is already open: *{filed.id}*" in m.text for m in told), [m.text for m in told]
    assert held == 1


def test_a_rack_asked_whose_part_is_in_a_tray_says_the_trays_host_owns_it(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    """The rack's answer said "the part is outside rack-01's tray" of a compute tray's part: it is inside that tray,
    whose host's ticket it is."""
    from tests.conftest import _one_rack

    _, store, _ = _one_rack(tmp_path_factory, "compute_tray", seed=3)
    _, out = _run(capsys, "analyze", "--store", str(store), "--rack", "rack-01", "--json")
    owner = json.loads(out)["ticket_owner"]
    assert owner.startswith("rack-01-c"), owner
    _, out = _run(capsys, "analyze", "--store", str(store), "--rack", "rack-01")
    assert f"ticket:   {owner} (the part is in {owner}'s tray: its host's ticket)" in out, out
    assert "outside" not in out.split("action:", 1)[0]
    _, out = _run(capsys, "ticket", "rack-01", "--store", str(store), "--rules", "--json")
    first = json.loads(out)["isolation_steps"][0]["text"]
    assert first.startswith(f"Drain compute tray {owner} from the scheduler with the job running there"), first


def test_a_trays_answer_lists_the_other_trays_by_slot(seen: tuple[Path, list[str]],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Compute trays 2, 6, 10, not 10, 2, 6: the other trays a switch tray's fault reaches, in slot order."""
    store, trays = seen
    _, out = _run(capsys, "analyze", "--store", str(store), "--node", trays[0], "--json")
    [said] = [w for w in json.loads(out)["warnings"] if "and those of compute trays" in w]
    listed = [int(t) for t in said.split("and those of compute trays ", 1)[1].split(";", 1)[0].split(", ")]
    assert listed == sorted(listed) and len(listed) == len(trays) - 1, said
    assert max(listed) >= 10 > min(listed), said  # both one- and two-digit slots: text order would differ


def test_a_tray_whose_own_end_reads_clean_carries_the_failing_switch_port_its_link_lands_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A switch port only its own side reports (NMX-T's failed recoveries): the rack isolated it and its action
    drained compute tray 1 and reset its GPU, while tray 1 answered "no fault", low, and `ticket` found nothing to
    repair. The tray now carries the rack's part, priority and ticket, as a tray whose own end fails does."""
    from diagnostics.store import open_store
    from diagnostics.synth.rack_fleet import generate_racks

    generate_racks(out=tmp_path / "fleet", seed=0, racks=1, hours=8, scenarios=["switch_port"])
    open_store(tmp_path / "store").ingest([tmp_path / "fleet"])
    source = StoreSource(tmp_path / "store")
    rack = diagnose(source, Request(rack="rack-01")).diagnosis
    assert rack.localization is not None and rack.localization.fault is FaultKind.SWITCH_PORT
    (host,) = rack.localization.hosts
    tray = diagnose(source, Request(node=host)).diagnosis
    assert not [f for f in tray.failing if f.component.startswith("Compute tray")]  # its own end reads clean
    assert tray.fault_detected and tray.isolated_component == rack.isolated_component
    assert tray.ticket_priority == rack.ticket_priority and tray.ticket_owner == "rack-01"
    assert tray.repair_action == rack.localization.action
    capsys.readouterr()
    assert main(["ticket", host, "--store", str(tmp_path / "store"), "--json"]) == 0
    ticket = json.loads(capsys.readouterr().out)
    assert ticket["node_id"] == "rack-01" and ticket["component"] == rack.isolated_component
    # filed on the rack, whose 18 trays each have a GPU 0: the ticket says which, drafted from the tray or the rack
    tray_no = int(host.rsplit("-c", 1)[1])
    for asked in (host, "rack-01"):
        assert main(["ticket", asked, "--store", str(tmp_path / "store")]) == 0
        text = capsys.readouterr().out
        assert f"| GPU | {ticket['gpu_index']} on compute tray {tray_no}, {host} |" in text, asked
        assert f"-i {ticket['gpu_index']}` on compute tray {tray_no}, {host})" in text, asked
