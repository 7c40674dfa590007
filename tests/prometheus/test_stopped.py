"""Against a real Prometheus: a node whose every series stopped inside the window (its exporter or the node went
away) is one node that stopped reporting, its view incomplete: neither each of its links down nor healthy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics import load_thresholds
from diagnostics.enums import LinkType, Severity
from diagnostics.format import Unit
from diagnostics.prometheus import Offender, PrometheusClient, SweepResult, load_config, sweep
from diagnostics.prometheus.sweep import _off_the_bus
from diagnostics.store import open_store
from tests.prometheus.helpers import Fleet, Server, generate_fleet, promtool_missing, serving, silenced

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

STOPPED = "node-000"  # every series stops 20 minutes before the fleet's end: inside a 1 h window
STOPPED_FOR = timedelta(minutes=20)


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return silenced(generate_fleet(nodes=4, hours=2.0), STOPPED, STOPPED_FOR)


@pytest.fixture(scope="module")
def server(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serving(fleet, tmp_path_factory, "stopped")


@pytest.fixture(scope="module")
def swept(fleet: Fleet, server: Server) -> SweepResult:
    with PrometheusClient(load_config(server.url, env={})) as client:
        return sweep(client, load_thresholds(), at=fleet.end, window_hours=1.0, analyze=False)


def test_a_node_that_stopped_reporting_is_said_not_each_link_down(swept: SweepResult) -> None:
    assert not [o for o in swept.offenders if o.node_id == STOPPED and o.rule == "link_missing"]
    assert not swept.complete
    assert [r for r in swept.incomplete_reasons if STOPPED in r and "stopped reporting" in r]


def test_the_other_nodes_faults_are_still_found(swept: SweepResult) -> None:
    assert ("node-001", 2, 5) in {(o.node_id, o.gpu, o.link) for o in swept.offenders}


def test_a_gpu_short_of_links_counts_links_not_a_rate(swept: SweepResult) -> None:
    short = [o for o in swept.offenders if o.rule == "links_below_expected"]
    assert {(o.node_id, o.gpu, o.unit) for o in short} == {("node-003", 3, Unit.LINKS), ("node-003", 6, Unit.LINKS)}


@pytest.fixture(scope="module")
def store(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same series in a store, ingested from the file the server was backfilled from."""
    folder = tmp_path_factory.mktemp("stopped-store") / "store"
    open_store(folder).ingest([server.data.parent / "fleet.om"])
    return folder


def test_the_stores_sweep_says_the_node_stopped_as_the_servers_does(fleet: Fleet, store: Path, swept: SweepResult,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--store", str(store), "--at", fleet.end.isoformat(), "--no-analyze", "--json"])
    stored = json.loads(capsys.readouterr().out)
    assert code == (1 if stored["offenders"] else 3) and not stored["complete"]
    assert stored["silent"] == swept.silent == [STOPPED]
    assert [r for r in stored["incomplete_reasons"] if STOPPED in r and "stopped reporting" in r]


def test_the_node_asked_by_name_is_said_stopped_on_both_doors(fleet: Fleet, server: Server, store: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    last = fleet.samples.loc[fleet.samples["node_id"] == STOPPED, "timestamp"].max()
    for args in (["analyze", "--store", str(store), "--node", STOPPED, "--end", fleet.end.isoformat(), "--json"],
                 ["sweep", "--prometheus", server.url, "--node", STOPPED, "--at", fleet.end.isoformat(), "--json"]):
        code = main(args)
        warnings = json.loads(capsys.readouterr().out)["warnings"]
        assert code == 3, args
        assert [w for w in warnings if w.startswith(f"no link reading from {STOPPED} since {last:%Y-%m-%d %H:%M} UTC")]


def test_a_node_whose_stopped_gpus_all_fell_off_the_bus_is_that_fault_not_a_silence() -> None:
    """As the store's sweep says it (`every_gpu_off_the_bus`): a node whose series stopped, each stopped GPU with an
    Xid 79, is listed for that; one with a GPU stopped and no Xid 79 on it stopped reporting."""
    def row(node: str, gpu: int, rule: str) -> Offender:
        return Offender(node_id=node, link_type=LinkType.PCIE, gpu=gpu, rule=rule, severity=Severity.DOWN)

    rows = [row("a", 0, "link_missing"), row("a", 1, "link_missing"), row("a", 0, "xid_off_bus"),
            row("a", 1, "xid_off_bus"), row("b", 0, "link_missing"), row("b", 1, "link_missing"),
            row("b", 0, "xid_off_bus"), row("c", 0, "link_missing")]
    assert _off_the_bus(rows, {"a", "b", "c"}) == {"a"}
