"""Gauge rules pushed down: PCIe lanes and generations lost, Blackwell bit-error ratios, judged at the instant.

A small synthetic fleet with planted cases (a downtrain under load and one at idle, a generation lost under load,
a generation drop at idle that is power saving, bit-error ratios over, under, and over only earlier in the window)
is served by a real Prometheus; the push-down must find exactly the planted links, the same set the local sweep
and the history analysis find from the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pandas as pd
import pytest

from bot.fleet_blocks import offender_line
from diagnostics import load_thresholds
from diagnostics.analysis import analyze_tables
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import read_scrapes
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.ingest.dcgm_write import format_exposition
from diagnostics.prometheus import PrometheusClient, SweepResult, fleet_queries, load_config, sweep
from diagnostics.prometheus.promql import QueryBuilder, unpushed_rules
from diagnostics.synth import fleet as synth
from tests.prometheus.helpers import Server, newest, promtool_missing, serve_samples
from tests.prometheus.mirror import failing_links

GAUGE_RULES = {"pcie_width", "pcie_gen_under_load", "effective_ber", "symbol_ber"}
EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}
BUSY, IDLE = 6e9, 1e8  # B/s either side of the packaged pcie_busy_bytes_per_s (1e9)


def _client(url: str = "http://prom.test:9090") -> PrometheusClient:
    http = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, json=EMPTY)))
    return PrometheusClient(load_config(url, env={}), http=http, sleep=lambda s: None)


def _queries(thresholds_path: Path | None = None) -> dict[tuple[str, str], str]:
    return {(q.rule, q.link_type.value): q.promql
            for q in fleet_queries(_client(), load_thresholds(thresholds_path), 1.0)}


# ---- the generated PromQL ----------------------------------------------------------------------------------------
def test_pcie_queries_compare_the_last_readings_of_the_link_gauges() -> None:
    queries = _queries()
    width = queries[("pcie_width", "pcie")]
    assert width.startswith("(max by (Hostname, gpu, nvswitch, nvlink) (last_over_time({__name__=~"
                            '"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH(_total)?"}[3600s])) - ')
    assert "DCGM_FI_DEV_PCIE_LINK_WIDTH(_total)?" in width and width.endswith(" > 0.0")
    gen = queries[("pcie_gen_under_load", "pcie")]
    assert "DCGM_FI_DEV_PCIE_MAX_LINK_GEN" in gen and "DCGM_FI_DEV_PCIE_LINK_GEN(" in gen
    # under load: either direction's last traffic reading at the busy setting, matched on the link's labels
    assert ") and on (Hostname, gpu, nvswitch, nvlink) (" in gen
    assert "DCGM_FI_PROF_PCIE_TX_BYTES(_total)?\"}[3600s])) >= 1000000000.0 or " in gen
    assert "DCGM_FI_PROF_PCIE_RX_BYTES" in gen
    assert ("pcie_width", "nvlink") not in queries  # the rule is PCIe only; no NVLink gauge carries a width


def test_ber_queries_are_per_link_gauge_comparisons_with_exact_limits() -> None:
    queries = _queries()
    effective, symbol = queries[("effective_ber", "nvlink")], queries[("symbol_ber", "nvlink")]
    # both DCGM spellings; NVLink5's bit-error ratios exist only as a GPU's total (no link label): it is judged
    assert ("last_over_time({__name__=~\"DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER_FLOAT(_total)?"
            "|DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO(_total)?\"}") in effective
    # a counter with per-link names has its GPU total compared with the limit only where the GPU has no link series
    assert 'nvlink!=""' in queries[("nvlink_replay", "nvlink")]
    assert ') or on (Hostname, gpu) max by (Hostname, gpu, nvswitch, nvlink) (increase({' in \
        queries[("nvlink_replay", "nvlink")]
    assert effective.endswith("> 1e-12") and symbol.endswith("> 1e-06")
    # the Blackwell counter rules were rate rules already: increase() per hour
    for rule in ("effective_errors", "recovery_failed"):
        assert "increase(" in queries[(rule, "nvlink")], rule


def test_a_sites_limits_and_busy_level_change_the_queries(tmp_path: Path) -> None:
    user = tmp_path / "thresholds.toml"
    user.write_text('[[rule]]\nname = "effective_ber"\nabove = 1.2345678e-13\n\n'
                    '[[rule]]\nname = "pcie_width"\nabove = 3\n\n'
                    "[settings]\npcie_busy_bytes_per_s = 2.5e8\n", encoding="utf-8")
    queries = _queries(user)
    assert queries[("effective_ber", "nvlink")].endswith("> 1.2345678e-13")  # not rounded to 6 digits
    assert queries[("pcie_width", "pcie")].endswith("> 3.0")
    assert ">= 250000000.0" in queries[("pcie_gen_under_load", "pcie")]


def test_only_sxids_replay_rollovers_and_lane_errors_are_left_to_the_local_analysis(tmp_path: Path) -> None:
    thresholds = load_thresholds()
    left = dict(r.split(": ", 1) for r in unpushed_rules(thresholds, QueryBuilder(_client().config, load_map())))
    assert sorted(left) == ["pcie_errors_received", "pcie_lane_error", "pcie_lane_error_undated",
                            "pcie_replay_rollover", "sxid", "sxid_fatal"]
    assert "pcie_errors_received" in left["pcie_errors_received"]  # host AER counts (sysfs, lspci): no exporter field
    for rule in ("pcie_lane_error", "pcie_lane_error_undated"):  # lspci's lane error status: no exporter series
        assert "lanes" in left[rule]
    assert "replay_rollovers" in left["pcie_replay_rollover"]  # no exporter field: nvidia-smi -q reads it
    # a dcgm table without the PCIe traffic gauges cannot tell load from idle: the generation rule stays local
    table = tmp_path / "dcgm.toml"
    text = (Path(__file__).resolve().parents[2] / "diagnostics" / "data" / "dcgm.toml").read_text("utf-8")
    for column in ("tx_bytes_per_s", "rx_bytes_per_s"):
        text = text.replace(f'column = "{column}"\nlink_type = "pcie"', f'column = "{column}"\nlink_type = "nvswitch"')
    table.write_text(text, encoding="utf-8")
    partial = load_map(table)
    left = unpushed_rules(thresholds, QueryBuilder(_client().config, partial))
    assert sorted(r.split(":")[0] for r in left) == ["pcie_errors_received", "pcie_gen_under_load", "pcie_lane_error",
                                                     "pcie_lane_error_undated", "pcie_replay_rollover", "sxid",
                                                     "sxid_fatal"]
    rules = {q.rule for q in fleet_queries(_client(), thresholds, 1.0, partial)}
    assert "pcie_width" in rules and "pcie_gen_under_load" not in rules


# ---- ingest: the PCIe gauges land on the GPU's PCIe link row ------------------------------------------------------
def test_the_dcgm_reader_fills_the_pcie_link_row() -> None:
    text = "\n".join([
        'DCGM_FI_DEV_PCIE_MAX_LINK_GEN{gpu="2",Hostname="n1"} 5 1767225600000',
        'DCGM_FI_DEV_PCIE_LINK_GEN{gpu="2",Hostname="n1"} 3 1767225600000',
        'DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH{gpu="2",Hostname="n1"} 16 1767225600000',
        'DCGM_FI_DEV_PCIE_LINK_WIDTH{gpu="2",Hostname="n1"} 8 1767225600000',
        'DCGM_FI_PROF_PCIE_TX_BYTES{gpu="2",Hostname="n1"} 4.5e9 1767225600000',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="2",Hostname="n1"} 7 1767225600000',
        'DCGM_FI_DEV_PCIE_LINK_WIDTH{gpu="3",Hostname="n1"} 2.5 1767225600000',  # not a width: refused
        'DCGM_FI_DEV_PCIE_LINK_GEN{gpu="3",Hostname="n1"} 300 1767225600000',  # out of range: refused
    ]) + "\n"
    result = read_scrapes([(Source.from_text(text, name="scrape.prom"), None)])
    rows = result.tables["link_samples"]
    assert len(rows) == 1 and set(rows["link_type"].astype(str)) == {"pcie"}
    row = rows[rows["gpu"] == 2].iloc[0]
    assert (row["gen"], row["max_gen"], row["width"], row["max_width"]) == (3, 5, 8, 16)
    assert row["tx_bytes_per_s"] == 4.5e9 and row["replay"] == 7 and pd.isna(row["link"])
    assert not bool(row["gpu_total"]) and str(rows["width"].dtype) == "Int8"
    refused = {w.line: w.message for w in result.warnings}
    assert "'2.5' is not a value this field can hold (a whole number from 0 to 32)" in refused[7]
    assert "'300' is not a value this field can hold (a whole number from 0 to 7)" in refused[8]


def test_written_scrapes_carry_the_pcie_gauges_back() -> None:
    tables, _ = synth.build(seed=5, nodes=1, hours=0.5, scenarios=["pcie_downtrain"])
    lines = list(format_exposition(tables["link_samples"]))
    assert "# TYPE DCGM_FI_DEV_PCIE_LINK_WIDTH gauge" in lines
    back = read_scrapes([(Source.from_text("\n".join(lines) + "\n", name="x"), None)]).tables["link_samples"]
    cols = ["gpu", "gen", "max_gen", "width", "max_width"]
    ours = tables["link_samples"]
    want = ours[ours["link_type"] == "pcie"][cols].astype("int64").sort_values(cols).reset_index(drop=True)
    got = back[back["link_type"] == "pcie"][cols].astype("int64").sort_values(cols).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    assert (got["width"] < got["max_width"]).any()  # the downtrain is in the scrapes


# ---- against a real Prometheus ----------------------------------------------------------------------------------
Written = tuple[dict[str, pd.DataFrame], dict[str, str], Path]
PLANTED = {  # Offender.key: node, link type, GPU, bus, NVSwitch, link, rule
    ("hpc-gpu-node-01", "pcie", 4, None, None, None, "pcie_width"),  # the scenario's downtrain, under load
    ("hpc-gpu-node-02", "pcie", 6, None, None, None, "pcie_width"),  # a downtrain at idle is still lanes lost
    ("hpc-gpu-node-03", "pcie", 3, None, None, None, "pcie_gen_under_load"),
    ("hpc-gpu-node-04", "nvlink", 1, None, None, None, "effective_ber"),  # Blackwell: a GPU's total over its NVLinks
    ("hpc-gpu-node-04", "nvlink", 5, None, None, None, "symbol_ber"),
}


def _plant(links: pd.DataFrame) -> pd.DataFrame:
    """The cases on top of the synthetic fleet; the last 30 minutes are the instant's last readings."""
    links = links.copy()
    end = links["timestamp"].max()
    late = links["timestamp"] > end - pd.Timedelta(minutes=30)
    node = links["node_id"].astype(str)
    pcie, gpu = links["link_type"].astype(str) == "pcie", links["gpu"]
    # node 02 idles at the end: every GPU drops to generation 1 (power saving, not a fault); GPU 6 lost lanes
    idle = late & pcie & (node == "hpc-gpu-node-02")
    links.loc[idle, "tx_bytes_per_s"] = IDLE
    links.loc[idle, "gen"] = 1
    links.loc[idle & (gpu == 6), "width"] = 8
    # node 03 is busy and GPU 3 runs a generation below its maximum: a fault
    busy = late & pcie & (node == "hpc-gpu-node-03")
    links.loc[busy, "tx_bytes_per_s"] = BUSY
    links.loc[busy, "gen"] = links.loc[busy, "max_gen"]
    links.loc[busy & (gpu == 3), "gen"] = links.loc[busy & (gpu == 3), "max_gen"] - 1
    limit = {r.name: r.above for r in load_thresholds().rules}
    # the NVLink5 bit-error ratios are GPU totals (dcgm-exporter's DCGM_FI_DEV_NVLINK_COUNT_*: no link)
    bw = (node == "hpc-gpu-node-04") & links["gpu_total"].fillna(False).astype(bool)
    links.loc[bw & late & (gpu == 1), "effective_ber"] = 3 * limit["effective_ber"]
    links.loc[bw & late & (gpu == 5), "symbol_ber"] = 2 * limit["symbol_ber"]
    links.loc[bw & late & (gpu == 2), "symbol_ber"] = 0.9 * limit["symbol_ber"]  # just under
    # over its limit earlier in the window, back under at the end: the instant's reading is under
    links.loc[bw & ~late & (gpu == 6), "effective_ber"] = 50 * limit["effective_ber"]
    return links


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    folder = tmp_path_factory.mktemp("gauges")
    tables, truth = synth.build(seed=5, nodes=4, hours=2.0,
                                scenarios=["pcie_downtrain", "healthy", "healthy", "healthy_blackwell"])
    assert truth["nodes"]["hpc-gpu-node-04"]["platform"] == synth.B200
    tables["link_samples"] = _plant(tables["link_samples"])
    return tables, {n: v["platform"] for n, v in truth["nodes"].items()}, folder


@pytest.fixture(scope="module")
def served(written: Written) -> Iterator[Server]:
    if promtool_missing():
        pytest.skip(str(promtool_missing()))
    tables, _, folder = written
    server = serve_samples(tables["link_samples"], folder)
    yield server
    server.stop()



@pytest.fixture(scope="module")
def pushed(written: Written, served: Server) -> SweepResult:
    with PrometheusClient(load_config(served.url, env={})) as client:
        return sweep(client, load_thresholds(), at=newest(written[0]), window_hours=1.0, analyze=False)


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_push_down_finds_exactly_the_planted_gauge_faults_and_agrees_with_the_files(
        written: Written, pushed: SweepResult) -> None:
    assert pushed.complete, pushed.incomplete_reasons
    assert sorted(r.split(":")[0] for r in pushed.not_pushed_down) == [
        "pcie_errors_received", "pcie_lane_error", "pcie_lane_error_undated", "pcie_replay_rollover", "sxid",
        "sxid_fatal"]
    assert {o.key for o in pushed.offenders if o.rule in GAUGE_RULES} == PLANTED
    local = failing_links(written[0]["link_samples"], load_thresholds(), newest(written[0]), 1.0)
    assert {o.key for o in pushed.offenders} == {o.key for o in local}
    width = next(o for o in pushed.offenders if o.rule == "pcie_width" and o.node_id == "hpc-gpu-node-01")
    assert (width.rate_per_hour, width.unit, width.component) == (12, "lanes", "GPU 4 PCIe")
    ber = next(o for o in pushed.offenders if o.rule == "effective_ber")
    assert ber.rate_per_hour == pytest.approx(3e-12) and ber.unit == "ratio"
    # people read a gauge in its own unit, never as a rate per hour
    assert "12 lanes > 0 lanes" in offender_line(width) and "/h" not in offender_line(width)
    assert "3.0e-12 > 1.0e-12" in offender_line(ber)


@pytest.mark.prometheus
@pytest.mark.timeout(120)
def test_the_history_analysis_judges_the_same_links_and_calls_the_idle_drop_power_saving(
        written: Written, pushed: SweepResult) -> None:
    tables, inventory, _ = written
    for node in sorted(inventory):
        diagnosis = analyze_tables(tables, node_id=node, window=timedelta(hours=1), end=newest(written[0]),
                                   thresholds=load_thresholds(), platform=inventory[node])
        local = {(f.link_type.value, f.gpu, f.link, c.rule) for f in diagnosis.findings for c in f.crossed
                 if c.rule in GAUGE_RULES}
        remote = {(o.link_type.value, o.gpu, o.link, o.rule) for o in pushed.offenders
                  if o.node_id == node and o.rule in GAUGE_RULES}
        assert local == remote, node
        if node == "hpc-gpu-node-02":
            idle = [f for f in diagnosis.findings if f.link_type.value == "pcie" and f.gpu == 0]
            assert idle and any("power saving" in e for e in idle[0].evidence)

