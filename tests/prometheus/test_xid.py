"""Xid rules pushed down into PromQL: the generated queries, the offenders they yield, and a real server's answer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from diagnostics import format as fmt
from diagnostics import load_thresholds
from diagnostics.analysis import analyze_tables
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.prometheus import PrometheusClient, SweepResult, fleet_queries, load_config, sweep
from diagnostics.service import Request, StoreSource, tables_source
from diagnostics.service import sweep as sweep_source
from diagnostics.store import open_store
from tests.prometheus.helpers import Server, backfill, promtool_missing, start_server
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}
COUNTER = next(iter(load_map().xid_counter))
GAUGE = next(iter(load_map().xid_gauge))


def _client(handler: httpx.MockTransport) -> PrometheusClient:
    return PrometheusClient(load_config("http://prom.test:9090", env={}), http=httpx.Client(transport=handler),
                            sleep=lambda s: None)


def _xid_queries(thresholds_path: Path | None = None) -> dict[tuple[str, str | None], str]:
    client = _client(httpx.MockTransport(lambda r: httpx.Response(200, json=EMPTY)))
    return {(q.rule, q.xid): q.promql for q in fleet_queries(client, load_thresholds(thresholds_path), 1.0)
            if q.xid}


def test_xid_queries_come_from_the_thresholds_codes_and_the_dcgm_names(tmp_path: Path) -> None:
    queries = _xid_queries()
    assert set(queries) == {(r, k) for r in ("xid_nvlink", "xid_off_bus") for k in ("counter", "gauge")}
    nvlink, off_bus = queries[("xid_nvlink", "counter")], queries[("xid_off_bus", "counter")]
    assert COUNTER in nvlink and 'xid=~"74|144|145|146|149|150"' in nvlink and "[3600s]" in nvlink
    assert 'xid=~"79"' in off_bus and "increase(" in off_bus and "offset 3600s" in off_bus
    gauge = queries[("xid_off_bus", "gauge")]
    assert GAUGE in gauge and "changes(" in gauge and "== 79" in gauge and "== 74" not in gauge
    # a site's own codes change the query, not the code
    user = tmp_path / "thresholds.toml"
    user.write_text('[[rule]]\nname = "xid_off_bus"\ncodes = [79, 95]\n', encoding="utf-8")
    changed = _xid_queries(user)
    assert 'xid=~"79|95"' in changed[("xid_off_bus", "counter")]
    assert "== 95" in changed[("xid_off_bus", "gauge")]


def test_xid_rules_are_no_longer_left_to_the_local_analysis() -> None:
    result = sweep(_client(httpx.MockTransport(lambda r: httpx.Response(200, json=EMPTY))), load_thresholds(),
                   at=AT, analyze=False)
    left = " ".join(result.not_pushed_down)
    assert "xid_nvlink" not in left and "xid_off_bus" not in left
    assert "sxid" in left  # no dcgm-exporter metric carries SXids: still local only


def test_offenders_carry_the_rule_and_the_xid_code() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.content.decode())["query"][0]
        rows: list[dict[str, object]] = []
        if COUNTER in query and "79" in query:
            rows = [{"metric": {"Hostname": "node-a", "gpu": "3", "xid": "79"}, "value": [AT.timestamp(), "1"]}]
        elif GAUGE in query and "== 74" in query:
            rows = [{"metric": {"Hostname": "node-b", "gpu": "1", "xid": "74"}, "value": [AT.timestamp(), "1"]}]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": rows}})

    result = sweep(_client(httpx.MockTransport(serving(["node-a", "node-b"], answer))), load_thresholds(), at=AT,
                   analyze=False)
    found = {(o.node_id, o.component, o.rule, o.severity.value, o.xid) for o in result.offenders}
    assert found == {("node-a", "GPU 3 (Xid 79)", "xid_off_bus", "down", 79),
                     ("node-b", "GPU 1 (Xid 74)", "xid_nvlink", "failing", 74)}
    assert result.complete and "2 offending" in result.headline()


# ---- against a real Prometheus: a few Xid series backfilled over two hours ----

START = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
END = START + timedelta(hours=2)


def _series(name: str, labels: str, values: list[tuple[int, float]]) -> list[str]:
    """A series sampled every minute from START, holding each (from minute, value) until the next."""
    out: list[str] = []
    for minute in range(values[0][0], 121):
        value = [v for m, v in values if m <= minute][-1]
        out.append(f"{name}{{{labels}}} {value:g} {(START + timedelta(minutes=minute)).timestamp():.0f}")
    return out


def xid_scrapes() -> str:
    """node-a: Xid 79 counted at 1:30; node-b: the last-Xid gauge turns 74 at 1:40; node-d: a new Xid 74 series at
    1:50. node-c is noise: Xid 13 counted (no rule lists it) and a gauge stuck on 79 since before the data."""
    host = 'Hostname="{}",gpu="{}",modelName="NVIDIA H100 80GB HBM3"'
    lines = [f"# TYPE {COUNTER} gauge",
             *_series(COUNTER, host.format("node-a", 3) + ',xid="79"', [(0, 0), (90, 1)]),
             *_series(COUNTER, host.format("node-c", 0) + ',xid="13"', [(0, 0), (100, 2)]),
             *_series(COUNTER, host.format("node-d", 5) + ',xid="74"', [(110, 2)]),
             f"# TYPE {GAUGE} gauge",
             *_series(GAUGE, host.format("node-b", 1), [(0, 0), (100, 74)]),
             *_series(GAUGE, host.format("node-c", 2), [(0, 79)]),
             "# EOF"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def xid_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    reason = promtool_missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("prometheus-xid")
    (folder / "xid.om").write_text(xid_scrapes(), encoding="utf-8")
    backfill(folder / "xid.om", folder / "data")
    running = start_server(folder / "data")
    yield running
    running.stop()


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_real_server_names_the_xid_nodes_as_the_local_analysis_does(xid_server: Server) -> None:
    thresholds = load_thresholds()
    with PrometheusClient(load_config(xid_server.url, env={})) as client:
        result = sweep(client, thresholds, at=END, window_hours=1.0, analyze=False)
    assert result.complete, result.incomplete_reasons
    pushed = {(o.node_id, o.gpu, o.rule, o.xid) for o in result.offenders}
    assert pushed == {("node-a", 3, "xid_off_bus", 79), ("node-b", 1, "xid_nvlink", 74),
                      ("node-d", 5, "xid_nvlink", 74)}
    tables = read_scrapes([(Source.from_text(xid_scrapes(), name="xid.om"), None)]).tables
    local = set()
    for node in ("node-a", "node-b", "node-c", "node-d"):
        diagnosis = analyze_tables(tables, node_id=node, window=timedelta(hours=1), end=END, thresholds=thresholds)
        local |= {(node, f.gpu, c.rule) for f in diagnosis.findings for c in f.crossed if c.rule.startswith("xid")}
    assert local == {(n, g, r) for n, g, r, _ in pushed}


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_every_door_names_the_same_xid_offenders(xid_server: Server, tmp_path: Path) -> None:
    """The same scrapes swept on the server, from the store and from the files in memory: the same GPUs, each with
    its Xid code and named as the GPU (`GPU 3 (Xid 79)`, not its PCIe link)."""
    thresholds = load_thresholds()
    request = Request(end=END, window=timedelta(hours=1), thresholds=thresholds)
    scrapes = tmp_path / "xid.om"
    scrapes.write_text(xid_scrapes(), encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.ingest([scrapes])
    files, _ = tables_source([scrapes])
    with PrometheusClient(load_config(xid_server.url, env={})) as client:
        doors = {"prometheus": sweep(client, thresholds, at=END, window_hours=1.0, analyze=False),
                 "store": sweep_source(StoreSource(store), request), "files": sweep_source(files, request)}

    def xids(result: SweepResult) -> set[tuple[object, ...]]:
        return {(o.node_id, o.component, o.rule, o.severity.value, o.xid) for o in result.offenders
                if o.rule.startswith("xid")}

    want = {("node-a", "GPU 3 (Xid 79)", "xid_off_bus", "down", 79),
            ("node-b", "GPU 1 (Xid 74)", "xid_nvlink", "failing", 74),
            ("node-d", "GPU 5 (Xid 74)", "xid_nvlink", "failing", 74)}
    assert {door: xids(result) for door, result in doors.items()} == {door: want for door in doors}


def _both_doors(server: Server, tmp_path: Path, at: datetime) -> dict[str, SweepResult]:
    """The same scrapes swept, unread, by the server they were backfilled into and by a store they are ingested
    into, at `at` over a one-hour window."""
    thresholds = load_thresholds()
    scrapes = tmp_path / "xid.om"
    scrapes.write_text(xid_scrapes(), encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.ingest([scrapes])
    request = Request(end=at, window=timedelta(hours=1), thresholds=thresholds)
    with PrometheusClient(load_config(server.url, env={})) as client:
        return {"prometheus": sweep(client, thresholds, at=at, window_hours=1.0, analyze=False),
                "store": sweep_source(StoreSource(store), request)}


@pytest.mark.prometheus
@pytest.mark.timeout(120)
@pytest.mark.parametrize("early_s", [0, 30])
def test_the_server_counts_xids_in_the_window_as_the_store_does(xid_server: Server, tmp_path: Path,
                                                                early_s: int) -> None:
    """An Xid is an event count over the window, not a rate: the server's counter rows give the same value, in the
    same unit, as the store's, also at an instant between scrapes (where `increase` would extrapolate)."""
    doors = _both_doors(xid_server, tmp_path, END - timedelta(seconds=early_s))

    def values(result: SweepResult) -> dict[tuple[object, ...], tuple[float, str]]:
        return {(o.node_id, o.gpu, o.rule, o.xid): (o.rate_per_hour, f"{fmt.value(o.rate_per_hour, o.unit)} > "
                                                                     f"{fmt.value(o.above, o.unit)}")
                for o in result.offenders if o.rule.startswith("xid") and o.node_id in ("node-a", "node-d")
                and o.rate_per_hour is not None and o.above is not None}

    served, stored = values(doors["prometheus"]), values(doors["store"])
    assert served == stored and len(served) == 2


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_a_last_xid_gauge_row_counts_its_change_as_the_store_does(xid_server: Server, tmp_path: Path) -> None:
    """The gauge turned 74 once inside the window: one event on the server's row as in the store's, not blank."""
    doors = _both_doors(xid_server, tmp_path, END)

    def said(result: SweepResult) -> set[tuple[object, ...]]:
        return {(o.gpu, o.xid, o.rule, fmt.value(o.rate_per_hour, o.unit)) for o in result.offenders
                if o.node_id == "node-b" and o.rate_per_hour is not None}

    assert said(doors["prometheus"]) == said(doors["store"]) == {(1, 74, "xid_nvlink", "1 event")}


def test_an_off_bus_row_of_the_last_xid_gauge_says_the_span_it_was_read_over() -> None:
    """The off-bus rule's gauge query also reads the span before the window on a silent GPU, as its counter query
    does: a row found there said its change came 'inside the window' where the counter's row says 'or since its GPU
    fell silent'."""
    from diagnostics.prometheus.sweep import _offender

    client = _client(httpx.MockTransport(lambda request: httpx.Response(500)))
    queries = [q for q in fleet_queries(client, load_thresholds(), 1.0) if q.rule == "xid_off_bus"]
    row = {"metric": {"Hostname": "node-a", "gpu": "3", "xid": "79"}, "value": [AT.timestamp(), "1"]}
    said = {q.xid: _offender(client, q, row).detail for q in queries}
    assert set(said) == {"counter", "gauge"}
    assert all(d.endswith("or since its GPU fell silent") for d in said.values()), said
