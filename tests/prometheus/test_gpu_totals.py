"""A pre-Blackwell exporter given only the GPU-wide NVLink error totals (`..._COUNT_TOTAL`, no `nvlink` label): the
push-down judges each GPU's total where the GPU has no per-link series of the counter, as the local analysis does,
so the fleet sweep on the server flags the GPU the store and the files flag.

The server is a mock transport answering from the scrape's series: a selector of the query picks the series it
matches, and a rate rule's answer is Prometheus' `increase()` of the picked series (the local mirror's), per link
key, over the window. The scrape holds no per-link series, so no GPU's total gives way to its links' series."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import numpy as np

from diagnostics import load_thresholds
from diagnostics.enums import LinkType
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.prometheus import PrometheusClient, SweepResult, fleet_queries, load_config, sweep
from diagnostics.prometheus.promql import BELOW_EXPECTED_RULE, MISSING_RULE, QueryBuilder
from diagnostics.service import Request, StoreSource, tables_source
from diagnostics.service import sweep as sweep_source
from diagnostics.store import open_store
from tests.prometheus.mirror import extrapolated_increase
from tests.prometheus.mock_api import serving

AT = datetime(2026, 3, 1, 12, 10, tzinfo=UTC)
REPLAY, CRC = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
Series = tuple[str, dict[str, str], list[tuple[float, float]]]


def scrapes() -> str:
    """Two scrapes of an A100 node 10 min apart, NVLink errors as GPU totals only: GPU 3 counts 5,000 replays and
    2,000 CRC flit errors between them (30,000/h and 12,000/h), the other GPUs none."""
    lines = []
    for minutes in (0, 10):
        stamp = round((AT - timedelta(minutes=10 - minutes)).timestamp() * 1000)
        for name, base, rise in ((CRC, 100, 2000), (REPLAY, 10, 5000)):
            lines += [f"# TYPE {name} counter"]
            for gpu in range(8):
                value = (base + (rise if minutes else 0)) if gpu == 3 else 0
                lines.append(f'{name}{{gpu="{gpu}",UUID="GPU-{gpu:08d}",device="nvidia{gpu}",'
                             f'modelName="NVIDIA A100-SXM4-40GB",Hostname="axa"}} {value} {stamp}')
    return "\n".join(lines) + "\n"


def held(text: str) -> list[Series]:
    """The scrape's series: name, labels, (seconds, value) samples."""
    found: dict[tuple[str, str], Series] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        head, value, stamp = line.rsplit(" ", 2)
        name, body = head.split("{", 1)
        labels = dict(re.findall(r'(\w+)="([^"]*)"', body))
        found.setdefault((name, body), (name, labels, []))[2].append((int(stamp) / 1000, float(value)))
    return list(found.values())


_STRING = r'"(?:[^"\\]|\\.)*"'  # a PromQL double-quoted string
_SELECTOR = re.compile(r"\{(__name__=~" + _STRING + r"(?:, \w+(?:=~|!~|!=|=)" + _STRING + r")*)\}")
_MATCHER = re.compile(r"(\w+)(=~|!~|!=|=)(" + _STRING + ")")


def _matches(selector: str, name: str, labels: dict[str, str]) -> bool:
    """Whether a PromQL selector's matchers (a missing label reads as empty) pick the series."""
    for label, op, quoted in _MATCHER.findall(selector):
        want, have = re.sub(r"\\(.)", r"\1", quoted[1:-1]), name if label == "__name__" else labels.get(label, "")
        ok = (re.fullmatch(want, have) is not None) if op in ("=~", "!~") else have == want
        if ok != (op in ("=", "=~")):
            return False
    return True


def picked(query: str, series: list[Series]) -> list[Series]:
    selectors = [m.group(1) for m in _SELECTOR.finditer(query)]
    return [s for s in series if any(_matches(sel, s[0], s[1]) for sel in selectors)]


def server(series: list[Series]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        query = form["query"]
        if request.url.path.endswith("/query_range"):  # the read-back: the samples the node selector picks
            start, end = float(form["start"]), float(form["end"])
            rows: list[dict[str, object]] = [
                {"metric": {"__name__": name, **labels},
                 "values": [[t, f"{v:g}"] for t, v in samples if start <= t <= end]}
                for name, labels, samples in picked(query, series)]
            return httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": rows}})
        return httpx.Response(200, json={"status": "success",
                                         "data": {"resultType": "vector", "result": _rate_rule(query, form, series)}})

    return httpx.MockTransport(serving({labels["Hostname"] for _, labels, _ in series}, answer))


def _rate_rule(query: str, form: dict[str, str], series: list[Series]) -> list[dict[str, object]]:
    """A rate rule's offenders: `increase()` of each picked series over the window, per link key (summed for a rule
    adding counters), per hour, over the rule's limit. Any other query finds nothing in these series."""
    shape = re.search(r"\[(\d+)s\]\)", query), re.search(r"\) / ([\d.]+) > ([\d.e+]+)$", query)
    if "increase(" not in query or "count_over_time" in query or shape[0] is None or shape[1] is None:
        return []
    at, span, hours, above = float(form["time"]), int(shape[0][1]), float(shape[1][1]), float(shape[1][2])
    rates: dict[tuple[str, ...], float] = {}
    for _, labels, samples in picked(query, series):
        inside = [(t, v) for t, v in samples if at - span < t <= at]
        inc = extrapolated_increase(np.array([t for t, _ in inside]), np.array([v for _, v in inside]), at - span, at)
        if inc is None:
            continue
        key = tuple(labels.get(k, "") for k in ("Hostname", "gpu", "nvswitch", "nvlink"))
        rates[key] = rates.get(key, 0.0) + inc if query.startswith("sum by") else max(rates.get(key, 0.0), inc)
    return [{"metric": {k: v for k, v in zip(("Hostname", "gpu", "nvswitch", "nvlink"), key, strict=True) if v},
             "value": [at, f"{inc / hours:g}"]} for key, inc in sorted(rates.items()) if inc / hours > above]


def _client(transport: httpx.MockTransport) -> PrometheusClient:
    return PrometheusClient(load_config("http://prom.test:9090", env={}), http=httpx.Client(transport=transport),
                            sleep=lambda s: None)


def test_a_gpus_nvlink_total_is_swept_where_it_has_no_per_link_series() -> None:
    client = _client(server([]))
    queries = {(q.rule, q.link_type): q.promql for q in fleet_queries(client, load_thresholds(), 1.0)}
    replay = queries[("nvlink_replay", LinkType.NVLINK)]
    # the per-link series, link-entity ones among them; and the total where its GPU has none of them
    assert f'{REPLAY}(_total)?' in replay and 'nvlink!=""}[3600s])' in replay
    assert ") or on (Hostname, gpu) max by (Hostname, gpu, nvswitch, nvlink) (increase({" in replay
    assert 'nvlink=""}[3600s])))) / 1 > 1000' in replay
    # a GPU's total is no link: the queries counting a GPU's links never read it
    for rule in (MISSING_RULE, BELOW_EXPECTED_RULE):
        assert 'nvlink=""' not in queries[(rule, LinkType.NVLINK)], rule
    # a counter without per-link names (NVLink5's) is taken whole, as before; PCIe has no link label to split on
    builder = QueryBuilder(client.config, load_map())
    effective = builder.counter_vector("effective_errors", LinkType.NVLINK, lambda s: s)
    assert effective is not None and " or on " not in effective and "nvlink" not in effective.split("{", 1)[1]
    pcie = builder.counter_vector("replay", LinkType.PCIE, lambda s: s)
    assert pcie is not None and " or on " not in pcie


def test_every_door_flags_the_gpu_whose_nvlink_totals_rise(tmp_path: Path) -> None:
    """The scrape swept on the server, from the store and from the file: GPU 3's NVLinks fail the same rules, the
    read-back confirming them at the rates the store gives, and no door says NVLink counters are not collected."""
    thresholds = load_thresholds()
    scrape = tmp_path / "axa.prom"
    scrape.write_text(scrapes(), encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.ingest([scrape])
    files, _ = tables_source([scrape])
    request = Request(end=AT, window=timedelta(hours=1), thresholds=thresholds)
    doors: dict[str, SweepResult] = {
        "prometheus": sweep(_client(server(held(scrapes()))), thresholds, at=AT, window_hours=1.0),
        "store": sweep_source(StoreSource(store), request), "files": sweep_source(files, request)}

    def offenders(result: SweepResult) -> set[tuple[object, ...]]:
        return {(o.node_id, o.component, o.rule, o.severity.value) for o in result.offenders}

    want = {("axa", "GPU 3 NVLinks", "nvlink_replay", "failing"), ("axa", "GPU 3 NVLinks", "crc", "warning")}
    assert {door: offenders(r) for door, r in doors.items()} == {door: want for door in doors}
    assert all(r.complete for r in doors.values()), {d: r.incomplete_reasons for d, r in doors.items()}

    def confirmed(result: SweepResult) -> list[tuple[object, ...]]:
        return sorted((o.component, o.rule, o.rate_per_hour) for o in result.confirmed["axa"])

    rates = [("GPU 3 NVLinks", "crc", 12000.0), ("GPU 3 NVLinks", "nvlink_replay", 30000.0)]
    assert {door: confirmed(r) for door, r in doors.items()} == {door: rates for door in doors}
    for door, result in doors.items():
        warnings = result.diagnoses["axa"].warnings
        assert not any("NVLink health is unknown" in w for w in warnings), (door, warnings)
        assert any(w.startswith("per-link NVLink counters not collected on this node, only each GPU's total")
                   for w in warnings), (door, warnings)
        said = [w for w in [*warnings, result.diagnoses["axa"].repair_action or ""] if "contradicts" in w]
        assert not said, (door, said)  # an A100's per-GPU totals (fields 409-439) are DCGM's, not NVLink5's only
        assert "reseat GPU 3's A100 SXM4 module" in (result.diagnoses["axa"].repair_action or ""), door
