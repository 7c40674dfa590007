"""`/fabric fleet` with a Prometheus server configured: the push-down sweep, posted through the local transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.transport.blockkit import shown
from tests.bot.helpers import LONG_WAIT, OPS, local_bot, posted
from tests.prometheus.helpers import Fleet, Server, free_port, promtool_missing


def _fleet_message(settings: Settings, at: Fleet | None = None) -> tuple[str, list[dict[str, object]]]:
    """Run `/fabric fleet`; the posted message's blocks as text, and the fleet audit entries."""
    clock = (lambda: at.end) if at is not None else None
    with local_bot(settings, clock=clock) as local:
        assert local.injector.command("fleet", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: posted(s), timeout=LONG_WAIT)
        message = posted(local.slack)[0]
        audit = [e["detail"] for e in local.audit.entries("analysis") if e["subject"] == "fleet"]
        return message.shown + "\n" + message.shown_blocks, audit


@pytest.mark.prometheus
@pytest.mark.timeout(180)
@pytest.mark.skipif(bool(promtool_missing()), reason=str(promtool_missing()))
def test_fleet_sweeps_the_prometheus_server_and_names_the_planted_links(fleet: Fleet, server: Server) -> None:
    text, audit = _fleet_message(Settings(prometheus_url=server.url), at=fleet)
    assert "Fleet: " in text and "INCOMPLETE" not in text
    for node, link in [("node-001", "GPU 2 NVLink 5"), ("node-002", "GPU 4 PCIe"), ("node-002", "GPU 1 NVLink 3"),
                       ("node-003", "GPU 6 NVLink 9"), ("node-003", "GPU 3 NVLink 17")]:
        assert node in text and link in text
    assert "nvlink_replay" in text and "links_below_expected" in text and "17 links reporting of 18" in text
    assert "hpc-gpu-node" not in text  # the local store was not used
    assert audit == [{"source": "prometheus", "complete": True, "nodes": 4, "offenders": audit[0]["offenders"],
                      "incomplete_reasons": []}]
    assert audit[0]["offenders"] >= 6


def test_fleet_with_prometheus_down_says_the_view_is_incomplete(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "prometheus.toml"
    cfg.write_text("[limits]\nretries = 0\ntimeout_seconds = 2\n", encoding="utf-8")
    monkeypatch.setenv("FABRICBOT_PROMETHEUS_CONFIG", str(cfg))
    text, audit = _fleet_message(Settings(prometheus_url=f"http://127.0.0.1:{free_port()}"))
    assert "Fleet view INCOMPLETE" in text and "not an all-clear" in text
    assert "unavailable" in text  # the server's failure is named
    assert "within thresholds" not in text and "healthy" not in text
    assert audit[0]["source"] == "prometheus" and audit[0]["complete"] is False


def test_fleet_with_a_bad_prometheus_setting_is_a_message_not_a_traceback(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "prometheus.toml"
    cfg.write_text("[limits]\nretries = -1\n", encoding="utf-8")
    monkeypatch.setenv("FABRICBOT_PROMETHEUS_CONFIG", str(cfg))
    text, audit = _fleet_message(Settings(prometheus_url="http://127.0.0.1:1"))
    assert "Fleet sweep failed" in text and "not an all-clear" in text and "retries" in text
    assert audit[0]["complete"] is False and "retries" in audit[0]["error"]


def test_without_prometheus_the_fleet_comes_from_the_local_store() -> None:
    text, audit = _fleet_message(Settings())
    assert "1 offending link on 1 of 2 nodes" in text and "hpc-gpu-node-12" in text
    assert audit == [{"source": "store", "nodes": 2, "complete": True, "incomplete_reasons": []}]


def test_an_incomplete_sweep_with_offenders_stays_within_slack_limits() -> None:
    from datetime import UTC, datetime

    from bot.fitting import MAX_BLOCKS, MAX_TEXT
    from bot.fleet_blocks import sweep_blocks
    from diagnostics.enums import LinkType, Severity
    from diagnostics.prometheus import Offender, SweepResult

    offenders = [Offender(node_id=f"node-{n:03d}", link_type=LinkType.NVLINK, gpu=g, link=3, rule="nvlink_replay",
                          severity=Severity.FAILING, rate_per_hour=2000.0 + n, above=1000.0)
                 for n in range(60) for g in range(8)]
    result = SweepResult(at=datetime(2026, 3, 2, tzinfo=UTC), window_hours=1.0, offenders=offenders,
                         complete=False, incomplete_reasons=[f"rule r{i} not evaluated: timeout" for i in range(30)])
    blocks = [b.to_dict() for b in sweep_blocks(result)]
    text = shown(json.dumps(blocks, ensure_ascii=False))
    assert len(blocks) <= MAX_BLOCKS and all(len(b.get("text", {}).get("text", "")) <= MAX_TEXT for b in blocks)
    assert "INCOMPLETE: 480 offending links found so far" in text and "not an all-clear" in text
    assert "…and 20 more reasons" in text and "more lines" in text
    assert "node-000" in text and "GPU 7 NVLink 3: nvlink_replay (failing), 2,000/h > 1,000/h" in text


@pytest.mark.prometheus
@pytest.mark.timeout(180)
@pytest.mark.skipif(bool(promtool_missing()), reason=str(promtool_missing()))
def test_fleet_on_the_server_holds_the_bots_planned_work(fleet: Fleet, server: Server) -> None:
    """A node the bot has under planned work is no offender of the server's sweep, as of the store's: the server
    knows no planned work (it once listed the node, and a page followed)."""
    from datetime import timedelta

    from bot.nodes import SnapshotNodeSource
    from tests.bot.helpers import SEEDS

    source = SnapshotNodeSource.from_files([SEEDS])
    source.maintenance().set("node-001", start=fleet.end - timedelta(minutes=30), span=timedelta(hours=2),
                             reason="swap the GPU 2 riser", set_by="UALICE")
    clock = lambda: fleet.end  # noqa: E731
    with local_bot(Settings(prometheus_url=server.url), source=source, clock=clock) as local:
        assert local.injector.command("fleet", user="UALICE", channel=OPS).status == 200
        assert local.slack.wait_for(lambda s: posted(s), timeout=LONG_WAIT)
        message = posted(local.slack)[0]
    text = message.shown + "\n" + message.shown_blocks
    assert "GPU 2 NVLink 5" not in text  # node-001's failing link, held
    assert "node-001 in maintenance until" in text and "swap the GPU 2 riser" in text
    assert "node-003" in text  # the others still listed
