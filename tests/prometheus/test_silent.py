"""Against a real Prometheus: a sweep whose span holds no node's samples, or none of a node the server knows around
it, is incomplete and names the silent nodes, as the store's sweep is; a node that went quiet is known, and its
answer (`sweep --node`) says it has no reading in the span and exits incomplete, as the store's answer does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from bot.cli import main
from diagnostics import load_thresholds
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, sweep
from diagnostics.store import open_store
from tests.prometheus.helpers import Fleet, Server, generate_fleet, promtool_missing, serve_fleet, silenced

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

QUIET = "node-001"  # its series stop 6 h before the fleet's end: more than a 1 h sweep's rules read
QUIET_FOR = timedelta(hours=6)


@pytest.fixture(scope="module")
def quiet_fleet() -> Fleet:
    return silenced(generate_fleet(nodes=2, hours=8.0, scrape_s=300), QUIET, QUIET_FOR)


@pytest.fixture(scope="module")
def quiet_server(quiet_fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = serve_fleet(quiet_fleet, tmp_path_factory.mktemp("quiet"))
    yield server
    server.stop()


@pytest.fixture
def client(quiet_server: Server) -> Iterator[PrometheusClient]:
    with PrometheusClient(load_config(quiet_server.url, env={})) as c:
        yield c


def test_a_window_before_every_sample_is_incomplete_not_an_all_clear(quiet_fleet: Fleet,
                                                                     client: PrometheusClient) -> None:
    result = sweep(client, load_thresholds(), at=quiet_fleet.start - timedelta(days=31), analyze=False)
    assert not result.offenders
    assert not result.complete
    assert "not an all-clear" in result.headline()


def test_a_window_after_every_sample_names_the_nodes_known_around_it(quiet_fleet: Fleet,
                                                                     client: PrometheusClient) -> None:
    result = sweep(client, load_thresholds(), at=quiet_fleet.end + timedelta(hours=12), analyze=False)
    assert not result.complete
    assert result.silent == sorted(quiet_fleet.samples["node_id"].astype(str).unique())


def test_a_node_silent_in_the_span_makes_the_view_incomplete(quiet_fleet: Fleet, client: PrometheusClient) -> None:
    result = sweep(client, load_thresholds(), at=quiet_fleet.end, analyze=False)
    assert result.silent == [QUIET]
    assert not result.complete
    assert any(QUIET in reason for reason in result.incomplete_reasons)


def test_the_cli_sweep_exits_incomplete_over_an_empty_window(quiet_fleet: Fleet, quiet_server: Server,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    at = (quiet_fleet.start - timedelta(days=31)).isoformat()
    code = main(["sweep", "--prometheus", quiet_server.url, "--at", at])
    out = capsys.readouterr().out
    assert code == 3
    assert "within thresholds" not in out



def test_a_fleet_that_all_reports_is_settled_by_one_number(quiet_fleet: Fleet, quiet_server: Server) -> None:
    """Where every node the index knows reports in the span, the presence answer is their count, one row however
    many nodes there are; the nodes are asked by name only where some are silent."""
    answers: list[tuple[str, int]] = []

    def seen(response: httpx.Response) -> None:
        response.read()
        if response.request.method == "POST":
            query = parse_qs(response.request.content.decode())["query"][0]
            answers.append((query, len(response.json()["data"]["result"])))

    def swept(at: datetime) -> SweepResult:
        answers.clear()
        http = httpx.Client(timeout=30, event_hooks={"response": [seen]})
        with PrometheusClient(load_config(quiet_server.url, env={}), http=http) as client:
            return sweep(client, load_thresholds(), at=at, analyze=False)

    def by_name() -> list[str]:
        return [q for q, _ in answers if q.startswith("group by (Hostname) (")]

    both = swept(quiet_fleet.start + timedelta(hours=1))  # before node-001 went quiet
    assert both.complete and not both.silent, both.incomplete_reasons
    assert [rows for q, rows in answers if q.startswith("count(group by (Hostname) (")] == [1]
    assert not by_name()
    one = swept(quiet_fleet.end)
    assert one.silent == [QUIET]
    assert len(by_name()) == 2 and f'Hostname=~"{QUIET}' in by_name()[1].replace("\\", "")  # the silent one alone


def _doors(server: Server, store: Path, node: str, end: datetime,
           capsys: pytest.CaptureFixture[str]) -> list[tuple[int, bool, list[str]]]:
    """The node asked of the store (`analyze --store --node`) and of the server (`sweep --prometheus --node`) at
    `end`: each door's exit status, whether it found a fault, and what it said of the node on stderr."""
    said = []
    for args in (["analyze", "--store", str(store), "--node", node, "--end", end.isoformat(), "--json"],
                 ["sweep", "--prometheus", server.url, "--node", node, "--at", end.isoformat(), "--json"]):
        code = main(args)
        out, err = capsys.readouterr()
        said.append((code, bool(json.loads(out)["fault_detected"]),
                     [line.split(": it has ")[0] for line in err.splitlines() if node in line]))
    return said


@pytest.fixture(scope="module")
def quiet_store(quiet_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same series in a store, ingested from the file the server was backfilled from."""
    folder = tmp_path_factory.mktemp("quiet-store") / "store"
    open_store(folder, create=True).ingest([quiet_server.data.parent / "fleet.om"])
    return folder


@pytest.mark.parametrize("before", [timedelta(0), QUIET_FOR + timedelta(hours=3)],
                         ids=["at-the-end", "before-the-first-reading"])
def test_a_quiet_node_asked_by_name_is_incomplete_on_both_doors(quiet_fleet: Fleet, quiet_server: Server,
                                                                quiet_store: Path, before: timedelta,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A node the server knows that stopped reporting before the span a sweep reads (or whose readings start after
    the window) is answered, not unknown: incomplete, named with where its readings run, as the store answers it."""
    store, server = _doors(quiet_server, quiet_store, QUIET, quiet_fleet.end - before, capsys)
    assert store[0] == server[0] == 3
    assert store[1:] == server[1:]
    assert server[2] and all("no link reading in the 5 h before" in line for line in server[2])


def test_a_reporting_node_asked_by_name_is_complete_on_both_doors(quiet_fleet: Fleet, quiet_server: Server,
                                                                  quiet_store: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store, server = _doors(quiet_server, quiet_store, "node-000", quiet_fleet.end, capsys)
    assert store[0] != 3 and server[0] != 3  # a fault exits 1 from the sweep, 0 (answered) from analyze
    assert store[1:] == server[1:]


def test_a_node_quiet_inside_the_read_span_is_said_quiet_since_its_last_sample_on_both_doors(
        quiet_fleet: Fleet, quiet_server: Server, quiet_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its series read back hold its last value for the server's lookback after its last sample: the time its
    readings stop is that sample's, as the store says it, not the lookback's end."""
    at = quiet_fleet.end - QUIET_FOR + timedelta(hours=2)  # its last sample 2 h before: inside the span read
    said = []
    for args in (["analyze", "--store", str(quiet_store), "--node", QUIET, "--end", at.isoformat(), "--json"],
                 ["sweep", "--prometheus", quiet_server.url, "--node", QUIET, "--at", at.isoformat(), "--json"]):
        main(args)
        warnings = json.loads(capsys.readouterr().out)["warnings"]
        said.append([w for w in warnings if w.startswith(f"no link reading from {QUIET} since")])
    last = quiet_fleet.samples.loc[quiet_fleet.samples["node_id"] == QUIET, "timestamp"].max()
    assert said[0] == said[1] and len(said[0]) == 1
    assert said[0][0].startswith(f"no link reading from {QUIET} since {last:%Y-%m-%d %H:%M} UTC: the window ends at "
                                 f"{at:%Y-%m-%d %H:%M} UTC (as asked); its last readings (window 1 h to "
                                 f"{last:%Y-%m-%d %H:%M} UTC) showed ")  # its fault then, the same on both doors


def test_a_quiet_node_is_headed_fault_unknown_on_both_doors(quiet_fleet: Fleet, quiet_server: Server,
                                                           quiet_store: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A node with no link read in its window is 'fault=unknown' in the server's table as in the store's: nothing
    read clears it, so neither door heads it 'fault=no'."""
    heads = []
    for args in (["analyze", "--store", str(quiet_store), "--node", QUIET, "--end", quiet_fleet.end.isoformat()],
                 ["sweep", "--prometheus", quiet_server.url, "--node", QUIET, "--at", quiet_fleet.end.isoformat()]):
        main(args)
        heads.append(capsys.readouterr().out.splitlines()[0])
    assert all("fault=unknown" in head for head in heads), heads


@pytest.mark.parametrize("quiet", [timedelta(hours=2), timedelta(minutes=65)])
def test_a_node_quiet_since_before_the_window_leaves_the_fleet_view_incomplete_on_both_doors(
        quiet: timedelta, quiet_fleet: Fleet, quiet_server: Server, quiet_store: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Its last sample inside the span the rules read, none in the window: no rule's query sees it, and the
    server's sweep once called the fleet complete without it (exit 0 over a node whose exporter had stopped)."""
    last = quiet_fleet.samples.loc[quiet_fleet.samples["node_id"] == QUIET, "timestamp"].max()
    at = (last + quiet).isoformat()
    codes, said = [], []
    for door in (["--store", str(quiet_store)], ["--prometheus", quiet_server.url]):
        codes.append(main(["sweep", *door, "--at", at, "--json"]))
        out = json.loads(capsys.readouterr().out)
        said.append((out["complete"], [r for r in out["incomplete_reasons"] if QUIET in r]))
    assert codes == [1, 1]  # offenders found elsewhere (1), the view incomplete on both doors
    assert [complete for complete, _ in said] == [False, False]
    assert all(len(reasons) == 1 for _, reasons in said), said
