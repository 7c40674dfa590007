"""A part already under repair gets no second ticket: an open ticket whose parts include the part asked (a switch
chip's ticket and one of its ports, a GPU's and one of its links; in a rack, the chip's ticket and a compute tray's
link it explains, though the tray's host owns that link) is its open ticket, through `/fabric` and its
draft and filing, the `ticket` command, the digest and the tracker; a wider part asked while a narrower one is open
is a ticket of its own that names it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.console.web import Console
from bot.digest import assemble
from bot.listeners.filing import joined
from bot.mrkdwn import esc
from bot.nodes import SnapshotNodeSource, StoreNodeSource
from bot.storage import open_db
from bot.workflow.tracker import SqliteTracker, Ticket
from diagnostics import format as fmt
from diagnostics.model import Diagnosis
from diagnostics.service import Fleet, Request, StoreSource, fleet
from tests.conftest import link, snapshot_dict
from tests.shared import copy_store

from .console.helpers import click_draft, console, summary
from .helpers import buttons

Rack = tuple[Path, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def engine(switch_chip_rack: Rack) -> Fleet:
    return fleet(StoreSource(switch_chip_rack[1]), Request())


@pytest.fixture(scope="module")
def chip(engine: Fleet) -> tuple[Diagnosis, Diagnosis, str, str]:
    """The rack, its switch tray's host, the failing chip the rack isolates and one failing port of it."""
    rack = engine.racks["rack-01"]
    assert rack.localization is not None and " chip " in rack.isolated_component
    host = next(d for d in engine.diagnoses.values() if d.tray is not None and d.failing
                and all(f.component.startswith(f"{rack.isolated_component} port ") for f in d.failing))
    return rack, host, rack.isolated_component, host.failing[0].component


def _file(tracker: SqliteTracker, d: Diagnosis, component: str) -> str:
    slug = next(x.ref.slug for x in [*d.localizations, *d.findings] if x.component == component)
    return tracker.file(node_id=d.owner_of(slug), component=component, slug=slug, title=component, body="",
                        priority="high", actor="UBOB", evidence=[], parts=d.parts_of(slug)).ticket.id


def _preview(messages: list[Any]) -> Any:
    return next(m for m in messages if len(buttons(m)) == 2)


def _approve(c: Console, preview: Any, tickets: int) -> None:
    """Click the preview's File button; back once the tracker holds `tickets` tickets."""
    filing = next(b for b in buttons(preview) if b["action_id"] == "file_ticket")
    assert c.act(preview.ts, filing["action_id"])["status"] == 200
    assert c.slack.wait_for(lambda s: len(c.local.tracker.tickets()) == tickets)


def test_a_port_of_a_ticketed_switch_chip_is_already_open_from_its_switch_tray_host(
        chip: tuple[Diagnosis, Diagnosis, str, str], switch_chip_rack: Rack) -> None:
    """The chip filed from `/fabric rack`, then its port clicked on the switch tray's host: already open, one
    ticket (and a port draft made before the chip was filed joins the chip's ticket when approved); the other way
    round, the chip is drafted and filed beside the port's ticket, naming it."""
    _, host, chip_name, port = chip
    store = switch_chip_rack[1]
    with console(source=StoreNodeSource(store)) as c:
        early = _preview(click_draft(c, summary(c, host.node_id), port))  # drafted while nothing was open
        from_rack = summary(c, "rack rack-01")
        _approve(c, _preview(click_draft(c, from_rack, chip_name)), 1)
        (filed,) = c.local.tracker.tickets()
        port_slug = host.failing[0].ref.slug
        assert (filed.node_id, filed.component) == ("rack-01", chip_name) and port_slug in filed.parts
        from_host = summary(c, host.node_id)
        told = click_draft(c, from_host, port)
        said = f"on `rack-01` is already open: *{filed.id}* covers {chip_name}, which includes {port}"
        assert any(said in m.text for m in told), [m.text for m in told]
        assert not any(len(buttons(m)) == 2 for m in told)  # no draft to file
        assert len(c.local.tracker.tickets()) == 1
        known = c.local.tracker.get(filed.id)
        assert any(f", {host.node_id}: {port}" in e for e in known.evidence)  # the click's analysis joined it
        filing = next(b for b in buttons(early) if b["action_id"] == "file_ticket")
        assert c.act(early.ts, filing["action_id"])["status"] == 200
        joined = (f"*{filed.id}* (filed by <@{filed.filed_by}>) is already open; it covers {chip_name}, which "
                  f"includes {port}.")
        assert c.slack.wait_for(lambda s: joined in (s.find(early.ts) or early).text), (c.slack.find(early.ts) or
                                                                                        early).text
        assert len(c.local.tracker.tickets()) == 1
    with console(source=StoreNodeSource(store)) as c:  # the port first: the chip is a wider repair, not swallowed
        _approve(c, _preview(click_draft(c, summary(c, host.node_id), port)), 1)
        (narrow,) = c.local.tracker.tickets()
        wide = _preview(click_draft(c, summary(c, "rack rack-01"), chip_name))
        assert f"already open for a part of this one: {narrow.id} ({port})" in wide.shown_blocks
        _approve(c, wide, 2)
        assert f"{narrow.id} ({port})" in c.local.tracker.tickets()[-1].body


def test_a_compute_tray_link_the_ticketed_chip_explains_is_the_chips_ticket_from_the_trays_host(
        chip: tuple[Diagnosis, Diagnosis, str, str], engine: Fleet, switch_chip_rack: Rack, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A compute tray's link that lands on the failing chip is the tray host's part, but the chip's ticket (on the
    rack) holds it: clicked on the tray's host after the chip was filed from `/fabric rack`, it is already open and
    joins the chip's evidence; a draft of it made before joins the chip's ticket when approved; `ticket HOST --link`
    drafts nothing. Before, each was a second ticket, on the tray's host, for a repair the chip's ticket makes."""
    rack, _, chip_name, _ = chip
    assert rack.localization is not None
    parts = rack.parts_of(rack.localization.ref.slug)
    host = next(d for n, d in sorted(engine.diagnoses.items()) if d.rack is not None and d.rack.host_of(d.tray) == n
                and any(f.ref.slug in parts for f in d.failing))
    link = next(f for f in host.failing if f.ref.slug in parts and " -> " in f.component)
    assert host.owner_of(link.ref.slug) == host.node_id and host.wider_owner(link.ref.slug) == "rack-01"
    store = tmp_path / "store"
    copy_store(switch_chip_rack[1], store)
    with console(source=StoreNodeSource(store)) as c:
        early = _preview(click_draft(c, summary(c, host.node_id), link.component))  # drafted while nothing was open
        _approve(c, _preview(click_draft(c, summary(c, "rack rack-01"), chip_name)), 1)
        (filed,) = c.local.tracker.tickets()
        assert filed.node_id == "rack-01" and link.ref.slug in filed.parts
        told = click_draft(c, summary(c, host.node_id), link.component)
        said = f"on `rack-01` is already open: *{filed.id}* covers {chip_name}, which includes {esc(link.component)}"
        assert any(said in m.text for m in told), [m.text for m in told]
        assert len(c.local.tracker.tickets()) == 1
        assert any(f", {host.node_id}: {link.component}" in e for e in c.local.tracker.get(filed.id).evidence)
        filing = next(b for b in buttons(early) if b["action_id"] == "file_ticket")
        assert c.act(early.ts, filing["action_id"])["status"] == 200
        assert c.slack.wait_for(lambda s: f"*{filed.id}* (filed by <@{filed.filed_by}>) is already open; it covers"
                                in (s.find(early.ts) or early).text)
        assert len(c.local.tracker.tickets()) == 1
    other = tmp_path / "cli"
    copy_store(switch_chip_rack[1], other)
    tracker = SqliteTracker(open_db(other))
    chip_ticket = _file(tracker, rack, chip_name)
    capsys.readouterr()
    for name in (link.component, f"GPU {link.ref.gpu} NVLink {link.ref.link}"):  # the rack's name; the driver's
        assert main(["ticket", host.node_id, "--store", str(other), "--link", name, "--rules"]) == 1
        out, err = capsys.readouterr()
        assert not out and f"on rack-01 is already open: {chip_ticket} covers {chip_name}" in err
    tracker.set_status(chip_ticket, "closed", actor="UTECH")  # the other way round: the link's ticket is open on
    link_ticket = _file(tracker, host, link.component)  # the tray's host; the chip's draft names it
    assert main(["ticket", "rack-01", "--store", str(other), "--json", "--rules"]) == 0
    drafted = json.loads(capsys.readouterr().out)
    assert drafted["component"] == chip_name
    assert any(f"already open for a part of this one: {link_ticket} ({link.component})" in w
               for w in drafted["warnings"]), drafted["warnings"]


def test_the_ticket_command_says_the_chips_ticket_covers_its_port(
        chip: tuple[Diagnosis, Diagnosis, str, str], switch_chip_rack: Rack, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rack, host, chip_name, port = chip
    store = tmp_path / "store"
    copy_store(switch_chip_rack[1], store)
    tracker = SqliteTracker(open_db(store))
    chip_ticket = _file(tracker, rack, chip_name)
    capsys.readouterr()
    for node in (host.node_id, "rack-01"):
        assert main(["ticket", node, "--store", str(store), "--link", port, "--rules"]) == 1
        out, err = capsys.readouterr()
        assert not out and f"is already open: {chip_ticket} covers {chip_name}, which includes {port}" in err
    assert main(["ticket", "rack-01", "--store", str(store), "--rules"]) == 1  # the chip itself: its own ticket
    assert f"a ticket for {chip_name} on rack-01 is already open: {chip_ticket} (filed by UBOB)" in \
        capsys.readouterr().err
    tracker.set_status(chip_ticket, "closed", actor="UTECH")  # a closed ticket covers nothing
    port_ticket = _file(tracker, host, port)
    assert main(["ticket", "rack-01", "--store", str(store), "--json", "--rules"]) == 0
    drafted = json.loads(capsys.readouterr().out)
    assert drafted["component"] == chip_name
    assert any(f"already open for a part of this one: {port_ticket} ({port})" in w for w in drafted["warnings"])


def test_the_digest_lists_the_chip_as_new_while_only_its_port_is_ticketed(
        chip: tuple[Diagnosis, Diagnosis, str, str], engine: Fleet) -> None:
    rack, host, chip_name, port = chip
    at = datetime(2030, 1, 1, tzinfo=UTC)
    diagnoses = [*engine.diagnoses.values(), rack]
    tracker = SqliteTracker(open_db(None))
    _file(tracker, host, port)
    listed = assemble(at=at, diagnoses=diagnoses, tracker=tracker, maintenance=[])
    assert chip_name in [o.component for o in listed.new]
    tracker = SqliteTracker(open_db(None))
    _file(tracker, rack, chip_name)
    listed = assemble(at=at, diagnoses=diagnoses, tracker=tracker, maintenance=[])
    assert not [o for o in listed.new if o.component.startswith(chip_name)] and listed.ticketed >= 1


@pytest.fixture(scope="module")
def gpu_node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A node off any rack whose GPU 2 fails on every link read: the analysis isolates the GPU."""
    failing = [link(gpu_src=2, gpu_dst=peer, link_id=f"nvlink-{n}", crc_errors=40_000, replay_count=9_000)
               for n, peer in enumerate((0, 1, 3, 4, 5))]
    path = tmp_path_factory.mktemp("gpu") / "node.json"
    path.write_text(json.dumps(snapshot_dict(node_id="node-gpu2", step_time_ms=150.0, fabric_errors=[
        *failing, link(gpu_src=0, gpu_dst=1, link_id="nvlink-0"), link(gpu_src=4, gpu_dst=5, link_id="nvlink-1")])))
    return path


def test_a_link_of_a_ticketed_gpu_off_racks_is_already_open(gpu_node: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    source = SnapshotNodeSource.from_files([gpu_node])
    d = source.diagnose("node-gpu2")
    assert d.isolated_component == "GPU 2" and d.rack is None
    lane = d.failing[2].component
    with console(source=source) as c:
        first = summary(c, "node-gpu2")
        assert [b.get("style") for b in buttons(first)][:1] == ["primary"]
        _approve(c, _preview(click_draft(c, first, "GPU 2")), 1)
        (filed,) = c.local.tracker.tickets()
        again = summary(c, "node-gpu2")
        # the part in hand says its ticket, and is no longer the message's primary button
        (gpu,) = [b for b in buttons(again) if b["type"] == "button" and b["text"]["text"].endswith(": GPU 2")]
        assert gpu["text"]["text"] == f"Add to {filed.id}: GPU 2" and "style" not in gpu, gpu
        told = click_draft(c, again, lane)
        said = f"on `node-gpu2` is already open: *{filed.id}* covers GPU 2, which includes {esc(lane)}"
        assert any(said in m.text for m in told), [m.text for m in told]
        assert len(c.local.tracker.tickets()) == 1
    store = tmp_path / "store"
    tracker = SqliteTracker(open_db(store))
    _file(tracker, d, "GPU 2")
    capsys.readouterr()
    assert main(["ticket", str(gpu_node), "--store", str(store), "--link", lane, "--rules"]) == 1
    assert f"covers GPU 2, which includes {lane}" in capsys.readouterr().err


def test_a_link_is_asked_by_the_name_its_driver_gives_it(bundled_store: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`--link "GPU 6 NVLink 3"`, as `nvidia-smi nvlink` names it, is the link the analysis names "GPU 6 NVLink 3 ->
    NVSwitch 0 port 27": it was refused as no such component."""
    store = copy_store(bundled_store, tmp_path / "store")  # the command opens the store's tracker and audit trail
    for name in ("GPU 6 NVLink 3", "gpu 6 nvlink 3", "GPU 6 NVLink 3 -> NVSwitch 0 port 27"):
        assert main(["ticket", "hpc-gpu-node-08", "--store", str(store), "--link", name, "--json",
                     "--rules"]) == 0
        assert json.loads(capsys.readouterr().out)["component"] == "GPU 6 NVLink 3 -> NVSwitch 0 port 27"


def test_an_approval_joining_a_verifying_ticket_of_a_wider_part_is_told_in_sentences() -> None:
    """The switch chip's ticket, repaired and soaking, covers the port a draft was approved for: the reply says the
    ticket is verifying its repair, then what it covers, not a clause running into the verb."""
    port = "GPU 4 NVLink 17 -> NVSwitch 3 port 19"
    chip = Ticket(id="FAB-0007", node_id="rack-01", component="NVSwitch 3", slug="nvswitch3", title="NVSwitch 3",
                  status="verifying", priority="high", filed_by="UALICE", filed_at="2026-09-17T07:00:00+00:00",
                  body="", parts=("nvswitch3", "gpu4-nvlink17"), repaired_at="2026-09-17T08:00:00+00:00",
                  repaired_by="UTECH")
    since = fmt.when(datetime(2026, 9, 17, 8, tzinfo=UTC))
    assert joined(chip, "gpu4-nvlink17", port, approver="UBOB") == (
        f":link: *FAB-0007* (filed by <@UALICE>) is verifying its repair (repaired {since} by <@UTECH>); it covers "
        f"NVSwitch 3, which includes {esc(port)}. <@UBOB>'s approval added this evidence to it.")


def test_an_approval_joining_an_open_ticket_of_a_wider_part_is_told_in_sentences() -> None:
    """The switch chip's open ticket covers the port a draft was approved for: the reply says the ticket is already
    open, then what it covers, not 'Already open as FAB-7 covers ...' with a clause where the verb should be."""
    port = "GPU 4 NVLink 17 -> NVSwitch 3 port 19"
    chip = Ticket(id="FAB-0007", node_id="rack-01", component="NVSwitch 3", slug="nvswitch3", title="NVSwitch 3",
                  status="open", priority="high", filed_by="UALICE", filed_at="2026-09-17T07:00:00+00:00",
                  body="", parts=("nvswitch3", "gpu4-nvlink17"))
    assert joined(chip, "gpu4-nvlink17", port, approver="UBOB") == (
        f":link: *FAB-0007* (filed by <@UALICE>) is already open; it covers NVSwitch 3, which includes {esc(port)}. "
        "<@UBOB>'s approval added this evidence to it.")
    assert joined(chip, "nvswitch3", "NVSwitch 3", approver="UBOB") == (
        ":link: *FAB-0007* (filed by <@UALICE>) is already open. <@UBOB>'s approval added this evidence to it.")
