"""`fabricbot rules`: the thresholds as Prometheus recording and alerting rules, checked and unit-tested by promtool,
and the sweep reading the recorded rates from a real server."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics import load_thresholds
from diagnostics.enums import LinkType
from diagnostics.prometheus import PrometheusClient, load_config, recording_name, rules_yaml, sweep
from diagnostics.prometheus.rules import window_text
from tests.prometheus.helpers import Fleet, Server, backfill, start_server, write_openmetrics

pytestmark = [pytest.mark.timeout(180)]

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`)")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, check=False, timeout=60)


def test_names_say_the_counter_the_link_type_and_the_window() -> None:
    assert recording_name("replay", LinkType.NVLINK, 1.0) == "fabricbot_link:replay_nvlink:rate1h"
    assert [window_text(h) for h in (1.0, 0.5, 1.75, 2.0, 0.01)] == ["1h", "30m", "105m", "2h", "36s"]


def test_a_changed_threshold_and_persistence_reach_the_file() -> None:
    text = rules_yaml(load_thresholds(overrides={"nvlink_replay": 250}))
    assert '"fabricbot_link:replay_nvlink:rate1h > 250"' in text
    persistent = text[text.index('alert: "FabricbotRecoveryPersistentNvlink"'):]
    assert persistent.splitlines()[2].strip() == 'for: "2h"'  # recoveries in 3 windows of 1 h: held 2 h
    assert text.count("- record:") == len(set(text.split("- record:")[1:]))  # one recording per counter


def test_each_alert_follows_the_recording_it_reads_in_one_group() -> None:
    """Prometheus runs one group's rules in order at one time and separate groups in no set order (promtool too: by
    Go map order), so an alert reads the rate recorded at its own evaluation only when it follows it in its group."""
    text = rules_yaml(load_thresholds())
    assert text.count("  - name:") == 1
    body = text.splitlines()
    recorded = {line.split('"')[1]: i for i, line in enumerate(body) if "- record:" in line}
    reads = [(i, name) for i, line in enumerate(body) if line.strip().startswith("expr:")
             for name in recorded if name in line and "- alert:" in body[i - 1]]
    assert reads and all(recorded[name] < i for i, name in reads)


@needs_promtool
def test_promtool_checks_the_written_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fabricbot.rules.yml"
    assert main(["rules", "--out", str(out), "--profile", "dcgm"]) == 0
    assert "recording and" in capsys.readouterr().out
    done = _promtool("check", "rules", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


UNIT_TEST = """
rule_files: [{rules}]
# every 10 min: enough for a 2 h `for:`, and quick; past the 5-minute lookback, so an alert judging a rate recorded
# at an earlier evaluation would see none (the file keeps each alert in its recording rules' group, after them)
evaluation_interval: 10m
tests:
  - interval: 1m
    input_series:
      # 30 replays a minute on GPU 2 NVLink 3 (1800 per hour), 10 a minute on NVLink 4 (600 per hour)
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3{{Hostname="node-7", gpu="2"}}'
        values: '0+30x240'
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L4{{Hostname="node-7", gpu="2"}}'
        values: '0+10x240'
      # GPU 3 NVLink 6 of a node that joined at 80 min: 50 a minute (3000 per hour) over the 10 min it covers, recorded
      # as its increase over the hour (500): a series younger than the window is rated low here (the sweep rates
      # such a node again over its series' span), so no alert yet
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L6{{Hostname="node-8", gpu="3"}}'
        values: '_x80 0+50x10'
      # one recovery every 20 minutes on GPU 5 NVLink 1: the rate stays above 0 from the first on
      - series: 'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L1{{Hostname="node-7", gpu="5"}}'
        values: '{recovery_values}'
    promql_expr_test:
      - expr: fabricbot_link:replay_nvlink:rate1h
        eval_time: 90m
        exp_samples:
          - labels: 'fabricbot_link:replay_nvlink:rate1h{{Hostname="node-7", gpu="2", nvlink="3", nvswitch=""}}'
            value: 1800
          - labels: 'fabricbot_link:replay_nvlink:rate1h{{Hostname="node-7", gpu="2", nvlink="4", nvswitch=""}}'
            value: 600
          - labels: 'fabricbot_link:replay_nvlink:rate1h{{Hostname="node-8", gpu="3", nvlink="6", nvswitch=""}}'
            value: 500
    alert_rule_test:
      - eval_time: 90m
        alertname: FabricbotNvlinkReplay
        exp_alerts:
          - exp_labels: {{Hostname: node-7, gpu: "2", nvlink: "3", severity: failing, fabricbot_rule: nvlink_replay,
                         link_type: nvlink}}
            exp_annotations:
              summary: "node-7 GPU 2 NVLink 3: replay at 1800 per hour (above 1000)"
              description: "NVLink replays above 1000 per hour: the link is failing."
      - eval_time: 90m
        alertname: FabricbotRecoveryPersistentNvlink
        exp_alerts: []
      - eval_time: 200m
        alertname: FabricbotRecoveryPersistentNvlink
        exp_alerts:
          - exp_labels: {{Hostname: node-7, gpu: "5", nvlink: "1", severity: failing,
                         fabricbot_rule: recovery_persistent, link_type: nvlink}}
            exp_annotations:
              summary: "node-7 GPU 5 NVLink 1: recovery at {recoveries} per hour (above 0)"
              description: "{recovery_doc}"
"""


@needs_promtool
def test_promtool_unit_tests_the_recording_and_alerting_rules(tmp_path: Path) -> None:
    rules = tmp_path / "fabricbot.rules.yml"
    rules.write_text(rules_yaml(load_thresholds()), encoding="utf-8")
    test = tmp_path / "fabricbot.test.yml"
    values = " ".join(["0x9", *(f"{n}+0x19" for n in range(1, 12)), "12+0x30"])
    doc = load_thresholds().rule("recovery_persistent").doc
    test.write_text(UNIT_TEST.format(rules=rules.name, recoveries=3, recovery_values=values, recovery_doc=doc),
                    encoding="utf-8")
    done = _promtool("test", "rules", str(test))
    assert done.returncode == 0, done.stdout + done.stderr
    # the file's alerts are not vacuous: at 250 per hour the 600-per-hour link alerts too, and the test fails
    rules.write_text(rules_yaml(load_thresholds(overrides={"nvlink_replay": 250})), encoding="utf-8")
    failed = _promtool("test", "rules", str(test))
    assert failed.returncode != 0 and "FabricbotNvlinkReplay" in failed.stdout + failed.stderr


@pytest.fixture(scope="module")
def recorded_server(fleet: Fleet, server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second server over the same fleet plus the recording rules, backfilled by promtool from the first."""
    folder = tmp_path_factory.mktemp("recorded")
    om = folder / "fleet.om"
    write_openmetrics(fleet, om)
    backfill(om, folder / "data")
    rules = folder / "fabricbot.rules.yml"
    rules.write_text(rules_yaml(load_thresholds()), encoding="utf-8")
    done = _promtool("tsdb", "create-blocks-from", "rules", f"--url={server.url}",
                     f"--start={int(fleet.start.timestamp())}", f"--end={int(fleet.end.timestamp()) + 1}",
                     f"--output-dir={folder / 'data'}", "--quiet", str(rules))
    assert done.returncode == 0, done.stdout + done.stderr
    running = start_server(folder / "data")
    yield running
    running.stop()


@pytest.mark.prometheus
@needs_promtool
def test_the_sweep_reads_the_recorded_rates_and_finds_the_same_links(
        fleet: Fleet, server: Server, recorded_server: Server) -> None:
    thresholds = load_thresholds()
    with PrometheusClient(load_config(server.url, env={})) as plain, \
            PrometheusClient(load_config(recorded_server.url, env={})) as fast:
        computed = sweep(plain, thresholds, at=fleet.end, window_hours=1.0, analyze=False)
        read = sweep(fast, thresholds, at=fleet.end, window_hours=1.0, analyze=False)
    assert not computed.recorded
    assert "fabricbot_link:replay_nvlink:rate1h" in read.recorded and read.complete
    assert {o.key for o in read.offenders} == {o.key for o in computed.offenders}
    rates = {o.key: o.rate_per_hour for o in computed.offenders}
    for o in read.offenders:  # a recorded rate is the last evaluation's: up to one interval (1 of 60 min) old
        if o.rate_per_hour is not None:
            assert o.rate_per_hour == pytest.approx(rates[o.key], rel=0.05)
    # a window no rule was recorded at is computed, as before
    other = sweep(PrometheusClient(load_config(recorded_server.url, env={})), thresholds, at=fleet.end,
                  window_hours=0.5, analyze=False)
    assert not other.recorded


STOPPED_TEST = """
rule_files: [{rules}]
evaluation_interval: 10m
tests:
  - interval: 1m
    input_series:
      # node-7 keeps reporting on GPU 2 NVLink 3 while NVLink 4's series stops at 60 min: a link down
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3{{Hostname="node-7", gpu="2"}}'
        values: '0+0x120'
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L4{{Hostname="node-7", gpu="2"}}'
        values: '0+0x60'
      # every series of node-9 stops at 60 min: its exporter or the node went away, not its links
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3{{Hostname="node-9", gpu="0"}}'
        values: '0+0x60'
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L4{{Hostname="node-9", gpu="0"}}'
        values: '0+0x60'
    alert_rule_test:
      - eval_time: 80m
        alertname: FabricbotLinkMissing
        exp_alerts:
          - exp_labels: {{Hostname: node-7, gpu: "2", nvlink: "4", severity: down,
                         fabricbot_rule: link_missing, link_type: nvlink}}
            exp_annotations:
              summary: "node-7 GPU 2 NVLink 4: its series stopped inside the window"
              description: "fabricbot's link_missing check"
"""


@needs_promtool
def test_a_node_whose_every_series_stopped_pages_no_link_as_missing(tmp_path: Path) -> None:
    """As the sweep says it: a stopped exporter is a silent node (the `up` series' to page on), not each link down."""
    rules = tmp_path / "fabricbot.rules.yml"
    rules.write_text(rules_yaml(load_thresholds()), encoding="utf-8")
    test = tmp_path / "fabricbot.test.yml"
    test.write_text(STOPPED_TEST.format(rules=rules.name), encoding="utf-8")
    done = _promtool("test", "rules", str(test))
    assert done.returncode == 0, done.stdout + done.stderr


XID_TEST = """
rule_files: [{rules}]
evaluation_interval: 10m
tests:
  - interval: 10m
    input_series:
      # three Xid 74s counted on GPU 3 of n1 inside the hour; the last-Xid gauge of n2's GPU 1 turns 79 at 60 min
      - series: 'DCGM_EXP_XID_ERRORS_COUNT{{Hostname="n1", gpu="3", xid="74"}}'
        values: '0x7 3x3'
      - series: 'DCGM_FI_DEV_XID_ERRORS{{Hostname="n2", gpu="1"}}'
        values: '0x6 79x4'
      - series: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{{Hostname="n2", gpu="1"}}'
        values: '0x10'
    alert_rule_test:
      - eval_time: 90m
        alertname: FabricbotXidNvlink
        exp_alerts:
          - exp_labels: {{Hostname: n1, gpu: "3", xid: "74", severity: failing, fabricbot_rule: xid_nvlink,
                         link_type: nvlink}}
            exp_annotations:
              summary: "n1 GPU 3: Xid 74 (xid_nvlink), 3 in the window"
              description: "{nvlink_doc}"
      - eval_time: 90m
        alertname: FabricbotXidOffBus
        exp_alerts:
          - exp_labels: {{Hostname: n2, gpu: "1", xid: "79", severity: down, fabricbot_rule: xid_off_bus,
                         link_type: pcie}}
            exp_annotations:
              summary: "n2 GPU 1: Xid 79 (xid_off_bus), 1 in the window"
              description: "{off_bus_doc}"
"""


@needs_promtool
def test_an_xid_alert_names_the_xid_its_series_counted_not_how_many(tmp_path: Path) -> None:
    """The code is the series' `xid` label; the alert's value is how many there were (three Xid 74s once paged as
    "Xid 3")."""
    thresholds = load_thresholds()
    rules = tmp_path / "fabricbot.rules.yml"
    rules.write_text(rules_yaml(thresholds), encoding="utf-8")
    test = tmp_path / "fabricbot.test.yml"
    test.write_text(XID_TEST.format(rules=rules.name, nvlink_doc=thresholds.rule("xid_nvlink").doc,
                                    off_bus_doc=thresholds.rule("xid_off_bus").doc), encoding="utf-8")
    done = _promtool("test", "rules", str(test))
    assert done.returncode == 0, done.stdout + done.stderr
