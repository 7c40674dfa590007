"""Against a real Prometheus over a backfilled synthetic fleet: push-down, read-back, agreement, CLI, faults."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics import load_thresholds
from diagnostics.prometheus import Offender, PrometheusClient, load_config, read_node, sweep, sweep_url
from tests.prometheus.helpers import Fleet, Server, promtool_missing, start_server
from tests.prometheus.mirror import failing_links

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]

_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))


@pytest.fixture
def client(server: Server) -> Iterator[PrometheusClient]:
    with PrometheusClient(load_config(server.url, env={})) as c:
        yield c


def _keys(offenders: list[Offender]) -> set[tuple[object, ...]]:
    return {o.key for o in offenders}


@pytest.mark.parametrize("window", [1.0, 0.5, 1.75])
def test_push_down_agrees_with_the_files(fleet: Fleet, client: PrometheusClient, window: float) -> None:
    thresholds = load_thresholds()
    pushed = sweep(client, thresholds, at=fleet.end, window_hours=window, analyze=False)
    local = failing_links(fleet.samples, thresholds, fleet.end, window, fleet.gpus)
    assert pushed.complete, pushed.incomplete_reasons
    assert _keys(pushed.offenders) == _keys(local)
    rates = {o.key: o.rate_per_hour for o in local}
    for o in pushed.offenders:  # the same extrapolation: the same rates, not only the same verdicts
        assert (o.rate_per_hour is None) == (rates[o.key] is None)
        if o.rate_per_hour is not None:
            assert o.rate_per_hour == pytest.approx(rates[o.key], rel=1e-9)


def test_agreement_holds_at_a_threshold_between_two_rates(fleet: Fleet, client: PrometheusClient) -> None:
    """Put the replay threshold right next to the near-threshold link's rate: only exact mirroring agrees."""
    local = failing_links(fleet.samples, load_thresholds(), fleet.end, 1.0, fleet.gpus)
    rate = next(o.rate_per_hour for o in local if o.node_id == "node-000" and o.rule == "nvlink_replay")
    assert rate is not None
    for above in (rate - 0.01, rate + 0.01):
        thresholds = load_thresholds(overrides={"nvlink_replay": above})
        pushed = sweep(client, thresholds, at=fleet.end, window_hours=1.0, analyze=False)
        assert _keys(pushed.offenders) == _keys(failing_links(fleet.samples, thresholds, fleet.end, 1.0,
                                                              fleet.gpus))


def test_sweep_finds_the_planted_faults_and_confirms_them_locally(fleet: Fleet, client: PrometheusClient) -> None:
    result = sweep(client, load_thresholds(), at=fleet.end, window_hours=1.0)
    found = {(o.node_id, o.component, o.rule) for o in result.offenders}
    # each read-back node's rows named as its analysis names the links (their switch ends), as the store's sweep
    assert ("node-001", "GPU 2 NVLink 5 -> NVSwitch 1 port 11", "nvlink_replay") in found
    assert ("node-001", "GPU 2 NVLink 5 -> NVSwitch 1 port 11", "crc") in found
    assert ("node-002", "GPU 4 PCIe", "pcie_replay") in found
    assert ("node-002", "GPU 1 NVLink 3 -> NVSwitch 0 port 7", "recovery") in found
    assert ("node-003", "GPU 6 NVLink 9 -> NVSwitch 2 port 30", "link_missing") in found
    assert ("node-003", "GPU 3 NVLink 17", "links_below_expected") in found  # the one of its 18 that never reports
    for node, confirmed in result.confirmed.items():
        named = {(o.link_key, o.rule): o.component for o in confirmed}
        assert all(o.component == named[o.link_key, o.rule] for o in result.offenders
                   if o.node_id == node and (o.link_key, o.rule) in named)
    assert result.complete and result.nodes == ["node-000", "node-001", "node-002", "node-003"]
    short = [o for o in result.offenders if o.rule == "links_below_expected"]
    assert {(o.gpu, o.rate_per_hour, o.above) for o in short} == {(3, 17.0, 18.0), (6, 17.0, 18.0)}
    # only the offending nodes were read back, and their local analysis finds the same links
    for node, confirmed in result.confirmed.items():
        mine = {o.key for o in result.offenders if o.node_id == node and o.rule != "link_missing"}
        assert mine <= _keys(confirmed)
    # and the history analysis, run on the read-back series alone, diagnoses the same link
    diagnosis = result.diagnoses["node-001"]
    assert diagnosis.fault_detected and diagnosis.platform == "hgx-h100-8gpu"
    assert any(f.gpu == 2 and f.link == 5 and f.severity.value == "failing" for f in diagnosis.findings)
    assert result.diagnoses["node-002"].fault_detected  # the PCIe link at 3000 replays/h


def test_fleet_function_for_the_bot(fleet: Fleet, server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FABRICBOT_PROMETHEUS_URL", server.url)
    result = sweep_url(load_thresholds(), at=fleet.end, analyze=False)
    assert result.complete and "node-001" in result.nodes


def test_push_down_transfers_a_fraction_of_the_series(fleet: Fleet, server: Server) -> None:
    thresholds = load_thresholds()
    with PrometheusClient(load_config(server.url, env={})) as c:
        sweep(c, thresholds, at=fleet.end, window_hours=1.0, analyze=False)
        pushed = c.stats.bytes_received
    with PrometheusClient(load_config(server.url, env={})) as c:
        for node in sorted(fleet.samples["node_id"].unique()):
            read_node(c, str(node), fleet.end - timedelta(hours=1), fleet.end, 60)
        everything = c.stats.bytes_received
    # each rule is one small answer; at fleet size the share is far smaller. Every request costs its answer's
    # envelope (an empty one is some 90 bytes gzipped) whatever the fleet: at these 4 nodes the two that say which
    # nodes report and which the index knows (one number, and the names) take the share from 1/15.7 to 1/14.8
    assert pushed * 14 < everything


def test_read_node_gives_the_file_tables(fleet: Fleet, client: PrometheusClient) -> None:
    start = fleet.start
    tables = read_node(client, "node-001", start, fleet.end, 60)
    got = tables["link_samples"]
    want = fleet.samples[fleet.samples["node_id"] == "node-001"]
    assert len(got) == len(want)
    key = ["timestamp", "gpu", "link_type", "link"]
    merged = got.merge(want, on=key, suffixes=("", "_file"))
    assert len(merged) == len(want)
    for column in ("replay", "crc_flit", "recovery"):
        mask = merged[f"{column}_file"].notna()
        assert (merged.loc[mask, column] == merged.loc[mask, f"{column}_file"]).all()
    assert set(tables["gpus"]["model"]) == {"NVIDIA H100 80GB HBM3"}


def test_a_silent_node_is_an_error_not_an_empty_table(fleet: Fleet, client: PrometheusClient) -> None:
    from diagnostics.prometheus import PrometheusError

    with pytest.raises(PrometheusError, match="a silent node is not a healthy one"):
        read_node(client, "node-999", fleet.start, fleet.end, 60)


def test_cli_sweep_json(fleet: Fleet, server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--prometheus", server.url, "--at", fleet.end.isoformat(), "--json", "--no-analyze"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["complete"] is True
    assert {(o["node_id"], o["rule"]) for o in out["offenders"]} >= {("node-001", "nvlink_replay")}


def test_cli_sweep_text_with_a_stricter_threshold(fleet: Fleet, server: Server,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--prometheus", server.url, "--at", fleet.end.isoformat(), "--set", "nvlink_replay=2",
                 "--no-analyze", "--all"])
    text = capsys.readouterr().out
    assert code == 1
    assert text.count("nvlink_replay") > 100  # the healthy links' ~3/h now cross as well, each listed with --all


def test_cli_server_down_is_incomplete_not_healthy(fleet: Fleet, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = tmp_path / "p.toml"
    cfg.write_text("[limits]\nretries = 1\nbackoff_seconds = 0.01\ntimeout_seconds = 2\n")
    from tests.prometheus.helpers import free_port

    code = main(["sweep", "--prometheus", f"http://127.0.0.1:{free_port()}", "--config", str(cfg),
                 "--at", fleet.end.isoformat()])
    captured = capsys.readouterr()
    assert code == 3
    assert "INCOMPLETE" in captured.out and "not an all-clear" in captured.err
    assert "all links within thresholds" not in captured.out


def test_real_sample_limit(fleet: Fleet, server: Server, tmp_path: Path) -> None:
    """A second server over a copy of the blocks whose limit is below one series' hour of samples."""
    data = tmp_path / "data"
    shutil.copytree(server.data, data, ignore=shutil.ignore_patterns("lock", "wal", "chunks_head", "queries.active"))
    small = start_server(data, extra=("--query.max-samples=40",))
    try:
        with PrometheusClient(load_config(small.url, env={})) as c:
            result = sweep(c, load_thresholds(), at=fleet.end, window_hours=1.0, analyze=False)
        assert not result.complete
        assert any("sample limit" in r for r in result.incomplete_reasons)
        assert "INCOMPLETE" in result.headline()
    finally:
        small.stop()


def test_cli_one_node_from_prometheus(fleet: Fleet, server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--prometheus", server.url, "--node", "node-001", "--at", fleet.end.isoformat(),
                 "--json"])
    diagnosis = json.loads(capsys.readouterr().out)
    assert code == 1 and diagnosis["node_id"] == "node-001" and diagnosis["fault_detected"]
    assert diagnosis["platform"] == "hgx-h100-8gpu"
    failing = [f for f in diagnosis["findings"] if f["severity"] == "failing"]
    assert [(f["gpu"], f["link"]) for f in failing] == [(2, 5)]
