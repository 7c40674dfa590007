"""`/fabric fleet` from a store says what `fabricbot sweep --store` says of the same store: a node whose links were
not judged (one reading per link, a stored part that cannot be read) makes the view incomplete, never healthy."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.blocks import degraded
from bot.cli import main
from bot.commands.output import INCOMPLETE
from bot.commands.sweep import _table as sweep_table
from bot.fleet_blocks import fleet_blocks, sweep_blocks
from bot.nodes import StoreNodeSource
from bot.transport.blockkit import shown
from diagnostics import NOT_ALL_CLEAR, Snapshot, diagnose_snapshot, priority_rank
from diagnostics.enums import LinkType, Severity, severity_rank
from diagnostics.offenders import LINKS_SHOWN, Offender, SweepResult
from diagnostics.service import Request, StoreSource, diagnose
from diagnostics.store import open_store
from diagnostics.tickets.pages import unhealthy_page
from tests.analysis.helpers import link_series, links, steady
from tests.bot.helpers import LONG_WAIT, OPS, local_bot, lone_and_cut_store, posted
from tests.conftest import link, snapshot_dict

LOGGED = "2026-01-14T09:00:00Z"  # when a log printed without dates was taken: a store places none without one


def _fleet(store: Path) -> str:
    with local_bot(source=StoreNodeSource(store)) as local:
        assert local.injector.command("fleet", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: len(posted(s)) > 0, timeout=LONG_WAIT)
        return posted(local.slack)[0].shown_blocks


@pytest.mark.parametrize("cut", [False, True], ids=["one-reading", "one-reading-and-a-cut-part"])
def test_a_fleet_with_unjudged_nodes_is_said_incomplete_as_the_sweep_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cut: bool) -> None:
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    store, part = lone_and_cut_store(tmp_path, cut=cut)
    capsys.readouterr()
    assert main(["sweep", "--store", str(store), "--json"]) == INCOMPLETE
    swept = json.loads(capsys.readouterr().out)
    assert swept["complete"] is False
    said = _fleet(store)
    assert "INCOMPLETE" in said and "not an all-clear" in said
    assert "node-1" in said  # the node read once is named, not counted healthy
    assert "3 healthy nodes" not in said and "2 healthy nodes" not in said
    assert "3 nodes with no offending part found" not in said and f"{2 if cut else 1} not judged" in said
    if part is not None:
        assert "node-3" in said and str(part) in said


def test_a_fleet_judged_whole_is_not_called_incomplete(tmp_path: Path) -> None:
    csv = tmp_path / "links.csv"
    links(link_series(steady(24.0, 3), node="node-1", gpu=0, link=0),  # whole counts: a fraction is no count
          link_series(steady(24.0, 3), node="node-2", gpu=0, link=0)).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    said = _fleet(store)
    assert "INCOMPLETE" not in said and "2 healthy nodes" in said


FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


@pytest.fixture(scope="module")
def fleet_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled fleet's readings, events, step times and inventory in a store: a node with every NVLink down
    (its Fabric Manager stopped, high priority) sorts among urgent nodes by name."""
    store = tmp_path_factory.mktemp("fleet") / "store"
    files = [FLEET / n for n in ("link_samples.parquet", "events.parquet", "step_samples.parquet", "nodes.csv")]
    assert all(f.status == "ingested" for f in open_store(store).ingest(files).files)
    return store


def test_the_fleet_lists_nodes_most_urgent_first_in_the_sweep_s_order(
        fleet_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One node's hundred links down must not hide the urgent nodes: `/fabric fleet` lists nodes, each once, by
    priority then severity, with its count of degraded links, and says how many nodes a cut list leaves out;
    `fabricbot sweep --store` lists the same nodes in the same order."""
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    result = StoreNodeSource(fleet_store).sweep()
    offending = result.nodes
    urgency = {n: (priority_rank(result.diagnoses[n].ticket_priority),
                   max(severity_rank(o.severity) for o in result.offenders if o.node_id == n)) for n in offending}
    links = {n: len(degraded(result.diagnoses[n])) for n in offending}
    assert max(links.values()) > 15 and len(offending) > 15  # a node with more links than the list had lines

    said = _fleet(fleet_store)
    listed = re.findall(r"\*\d+\. `([^`]+)`\*", said)
    assert len(listed) == len(set(listed)) and 0 < len(listed) < len(offending)
    assert [urgency[n] for n in listed] == sorted((urgency[n] for n in listed), reverse=True)
    most = max(urgency.values())[0]
    assert {n for n in offending if urgency[n][0] == most} <= set(listed)  # every most urgent node is shown
    for n in listed:
        assert re.search(rf"`{re.escape(n)}`\*[^\n]* · {links[n]} offending (links?|GPUs?|parts?)\b", said), n
    assert f"…and {len(offending) - len(listed)} more nodes" in said
    assert "`fabricbot sweep --store $FABRICBOT_STORE` lists every one" in said and " DIR" not in said  # runnable

    capsys.readouterr()
    main(["sweep", "--store", str(fleet_store)])
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line.startswith("  hpc-")]
    cli = list(dict.fromkeys(n for n in rows if not n.endswith(":")))
    assert sorted(cli) == offending and cli[:len(listed)] == listed
    assert [urgency[n] for n in cli] == sorted((urgency[n] for n in cli), reverse=True)


def _said(result: SweepResult) -> str:
    return json.dumps([b.to_dict() for b in fleet_blocks(result)])


def test_the_fleet_view_words_a_count_of_one_in_the_singular() -> None:
    at = datetime(2026, 3, 1, 8, tzinfo=UTC)
    one = Offender(node_id="node-2", link_type=LinkType.NVLINK, gpu=0, link=0, rule="nvlink_replay",
                   severity=Severity.FAILING, rate_per_hour=5000.0, above=1000.0)
    said = _said(SweepResult(at=at, window_hours=1.0, source="store", swept=["node-1", "node-2"], offenders=[one]))
    assert "1 healthy node;" in said and "healthy nodes" not in said
    assert "1 offending link on 1 of 2 nodes" in said
    cut = _said(SweepResult(at=at, window_hours=1.0, source="store", swept=["node-1", "node-2"], offenders=[one],
                            complete=False, incomplete_reasons=["a part could not be read"]))
    assert "on 1 node found so far" in cut and "1 node with no offending part found" in cut
    many = _said(SweepResult(at=at, window_hours=1.0, source="store", swept=["node-1", "node-3", "node-2"],
                             offenders=[one]))
    assert "2 healthy nodes;" in many


def test_a_node_with_no_reading_in_the_span_is_counted_not_judged_not_among_the_clear() -> None:
    """The sweep's silent nodes (none of their readings in the span it reads) are "not healthy": the view counts
    them with the nodes not judged, as it does a node read once, never among those with no offending part found."""
    at = datetime(2026, 3, 1, 8, tzinfo=UTC)
    one = Offender(node_id="node-2", link_type=LinkType.NVLINK, gpu=0, link=0, rule="nvlink_replay",
                   severity=Severity.FAILING, rate_per_hour=5000.0, above=1000.0)
    said = _said(SweepResult(at=at, window_hours=1.0, source="store", swept=["node-1", "node-2", "node-3", "node-4"],
                             offenders=[one], silent=["node-3"], unjudged=["node-4"], complete=False,
                             incomplete_reasons=["1 node has no reading in the span: node-3"]))
    assert "1 node with no offending part found, 2 not judged" in said, said


def test_every_fleet_door_says_a_node_s_verdict_and_why_it_is_no_all_clear_alike() -> None:
    """The store's fleet view, the Prometheus one and the sweep's text give each node one verdict (the part isolated
    and its priority, or its priority with none isolated), and the two views one caveat, its reasons counted past
    the tenth."""
    faulty = diagnose_snapshot(Snapshot.model_validate(snapshot_dict(
        node_id="node-1", fabric_errors=[link(crc_errors=45120, replay_count=8900)])))
    calm = diagnose_snapshot(Snapshot.model_validate(snapshot_dict(node_id="node-2")))
    offenders = [Offender(node_id=n, link_type=LinkType.NVLINK, gpu=0, link=0, rule="nvlink_replay",
                          severity=Severity.FAILING, rate_per_hour=5000.0, above=1000.0) for n in ("node-1", "node-2")]
    for source, blocks in (("store", fleet_blocks), ("prometheus", sweep_blocks)):
        result = SweepResult(at=datetime(2026, 3, 1, 8, tzinfo=UTC), window_hours=1.0, source=source,
                             offenders=offenders, diagnoses={"node-1": faulty, "node-2": calm},
                             confirmed={o.node_id: [o] for o in offenders}, complete=False,
                             incomplete_reasons=[f"node-{i + 3} was read once" for i in range(12)])
        said = shown(json.dumps([b.to_dict() for b in blocks(result)], ensure_ascii=False))
        table = io.StringIO()
        sweep_table(result, table)
        verdicts = [result.verdict(n) for n in ("node-1", "node-2")]
        assert faulty.isolated_component in str(verdicts[0]) and "no part isolated" in str(verdicts[1])
        for verdict in verdicts:
            assert f"— {verdict}" in said and f"diagnosis: {verdict};" in table.getvalue(), source
        why, reasons = result.not_all_clear()
        assert NOT_ALL_CLEAR in said and why in said and reasons[-1] == "…and 2 more reasons" and reasons[-1] in said


def test_a_silent_node_in_maintenance_is_counted_once_as_in_maintenance() -> None:
    """Planned work explains a node's silence: it was counted both among the nodes not judged and in maintenance."""
    at = datetime(2026, 3, 1, 8, tzinfo=UTC)
    planned = diagnose_snapshot(Snapshot.model_validate(snapshot_dict(node_id="node-3"))).model_copy(
        update={"maintenance": "in maintenance until 2026-03-01 10:00 UTC: replace GPU 1"})
    said = _said(SweepResult(at=at, window_hours=1.0, source="store", swept=["node-1", "node-2", "node-3"],
                             silent=["node-3"], diagnoses={"node-3": planned}, complete=False,
                             incomplete_reasons=["1 node has no reading in the span: node-3"]))
    assert "2 nodes with no offending part found, 1 in maintenance;" in said, said


REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
BUS = re.compile(r"the GPU at PCI ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")


def test_every_fleet_door_lists_a_node_s_parts_in_one_order_the_fatal_one_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel log of one fatal Xid 149 and three Xid 145 on four GPUs, all four "failing" with no ratio: ranked
    by severity alone they fell into bus order, so `sweep` cut the fatal GPU (the one the node is isolated on) into
    "...and 1 more", and `/fabric fleet` cut another. The sweep (text and JSON), `/fabric fleet` and the digest
    list the same parts in the same order, the fatal one first."""
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    store = str(tmp_path / "store")
    assert main(["ingest", str(REAL / "xid_145_149_log_1.txt"), "--store", store, "--node", "n1", "--at", LOGGED]) == 0
    capsys.readouterr()
    main(["analyze", "--store", store, "--node", "n1", "--json"])
    diagnosis = json.loads(capsys.readouterr().out)
    fatal = [f["ref"]["bus"] for f in diagnosis["findings"] if any(c["fatal"] for c in f["crossed"])]
    assert len(fatal) == 1 and diagnosis["localization"]["ref"]["bus"] == fatal[0]

    main(["sweep", "--store", store, "--json"])
    order = [o["bus"] for o in json.loads(capsys.readouterr().out)["offenders"]]
    assert len(order) == 4 and order[0] == fatal[0] and sorted(order) != order  # the fatal GPU, not bus order
    main(["sweep", "--store", store])
    table = capsys.readouterr().out
    assert [m for line in table.splitlines() if line.startswith("  n1 ") for m in BUS.findall(line)[:1]] \
        == order[:LINKS_SHOWN]
    said = _fleet(Path(store))
    listed = [BUS.findall(line)[0] for line in said.split("\\n") if line.lstrip().startswith("•")]
    assert listed == order[:LINKS_SHOWN]
    main(["digest", "--store", store])
    digest = [BUS.findall(line)[0] for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith(
        ("urgent", "high", "medium", "low")) and " n1 / " in line]
    assert digest == order
    d = diagnose(StoreSource(Path(store)), Request(node="n1")).diagnosis  # the node's own doors keep it too
    assert [f.ref.bus for _, f in degraded(d)] == order
    assert [BUS.findall(line)[0] for line in unhealthy_page(d, None, 0)["links"]] == order  # the model's first page


def test_the_fleet_view_names_a_node_s_parts_as_the_sweep_does(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """GPUs a kernel log names by their Xids are GPUs, not "degraded links": `/fabric fleet` counts them with the
    noun `fabricbot sweep` uses, in its title, beside the node and in what a cut list leaves out."""
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    store = str(tmp_path / "store")
    assert main(["ingest", str(REAL / "xid_145_149_log_1.txt"), "--store", store, "--node", "n1", "--at", LOGGED]) == 0
    capsys.readouterr()
    main(["sweep", "--store", store])
    table = capsys.readouterr().out.splitlines()
    counted = table[0].split(" on ")[0]  # "4 offending GPUs"
    more = next(line for line in table if "...and" in line).split("...and ")[1].split(" (")[0]
    said = _fleet(Path(store))
    assert f"Fleet: {counted} on 1 of 1 node" in said and f"· {counted}" in said
    assert f"…and {more} of this node" in said and "degraded link" not in said.split("window")[0]


def test_a_racks_hosts_under_one_ticket_are_one_entry_that_hides_no_other_rack(tmp_path: Path) -> None:
    """A rack incident's fifteen trays were fifteen entries of `/fabric fleet` and `sweep`, all urgent, and pushed the
    other racks' urgent switch tray under "...and N more nodes". The hosts whose part is on one ticket filed elsewhere
    are now one entry, led by the most urgent of them, naming the others; `--all` still lists every host's rows."""
    from diagnostics.service import sweep
    from diagnostics.synth.rack_fleet import generate_racks

    generate_racks(out=tmp_path / "fleet", seed=0, racks=2, hours=6, scenarios=["rack_incident", "switch_tray"])
    store = open_store(tmp_path / "store")
    store.ingest([tmp_path / "fleet"])
    result = sweep(StoreSource(tmp_path / "store"), Request())
    owners = {n: d.ticket_owner for n, d in result.diagnoses.items()}
    assert {"rack-01", "rack-02"} <= set(owners.values())
    entries = result.entries()
    assert [n for entry in entries for n in entry] == result.ranked()  # every node, in the same order
    led = {owners[e[0]]: e for e in entries if owners.get(e[0]) != e[0]}
    assert set(led) == {"rack-01", "rack-02"} and all(len(e) > 1 for e in led.values())
    assert all(owners[n] == owner for owner, e in led.items() for n in e)
    shown_ = shown(json.dumps([b.to_dict() for b in fleet_blocks(result, limit=2)]))
    for owner, entry in led.items():
        assert f"`{entry[0]}`" in shown_ and f"under {owner}'s ticket for the same part" in shown_
    out = io.StringIO()
    sweep_table(result, out)
    text = out.getvalue()
    for owner, entry in led.items():
        assert f"{len(entry) - 1} more hosts under {owner}'s ticket" in text
        assert not re.search(rf"^  {re.escape(entry[-1])} ", text, re.M)  # named in the line, not listed
    out = io.StringIO()
    sweep_table(result, out, every=True)
    assert all(re.search(rf"^  {re.escape(e[-1])} ", out.getvalue(), re.M) for e in led.values())


def test_a_racks_switch_port_listed_by_two_hosts_is_counted_once(tmp_path: Path) -> None:
    """A switch port whose failed recoveries only its switch side reports is a row of the compute tray at its GPU
    end and of the switch tray's host: the sweep's headline counted it twice (292 parts where 291 were). It is one
    part of the rack, in the sweep's count and `/fabric fleet`'s, while each host still lists it."""
    from diagnostics.service import sweep
    from diagnostics.synth.rack_fleet import generate_racks

    generate_racks(out=tmp_path / "fleet", seed=0, racks=1, hours=8, scenarios=["switch_port"])
    open_store(tmp_path / "store").ingest([tmp_path / "fleet"])
    result = sweep(StoreSource(tmp_path / "store"), Request())
    ports = [o for o in result.offenders if o.ref is not None and o.ref.switch_tray and o.ref.port is not None
             and o.ref.kind.value == "nvswitch"]
    assert len({o.node_id for o in ports}) == 2 and len({o.ref.slug for o in ports if o.ref}) == 1, ports
    assert result.found().startswith("1 offending link"), result.found()
    header = fleet_blocks(result, limit=5)[0].to_dict()
    assert header["text"]["text"].startswith("Fleet: 1 offending link on 2 of "), header  # as the sweep counts it
