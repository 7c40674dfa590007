"""`fabricbot demo`, `serve` (local mode) and `audit` from the command line's side."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.audit import AuditLog
from bot.cli import main
from bot.demo import run_demo
from bot.nodes import TableNodeSource
from bot.storage import open_db
from diagnostics import format as fmt
from diagnostics.synth.fleet import build

from .helpers import png_renderer


def test_the_demo_writes_the_conversation_the_pictures_one_ticket_and_the_action_log(tmp_path: Path) -> None:
    tables, truth = build(nodes=12, hours=3)
    fleet = TableNodeSource(tables, {n: v["platform"] for n, v in truth["nodes"].items()})
    result = run_demo(tmp_path / "transcripts", tmp_path / "ACTION_LOG.md", fleet=fleet, renderer=png_renderer)
    text = result.transcript.read_text()
    planned = text.split("`/fabric maintenance ", 1)[1].split()[0]  # the second failing node, put in maintenance
    for step in ("`/fabric hpc-gpu-node-12`", "`/fabric hpc-gpu-node-03`", "`/fabric job 4411`",
                 "Did you mean `hpc-gpu-node-12`", "Ticket draft: hpc-gpu-node-12", "limited to the on-call",
                 "Filed as **FAB-0001**, approved by @bob", "already filed as FAB-0001",
                 "already open: **FAB-0001**", "@fabricbot why is job 4411 slow?",
                 "The evidence for the GPU 2 -> GPU 3 NVLink 1 draft", "`/fabric maintenance hpc-gpu-node-",
                 '2h "replace ', "findings are shown, not paged",
                 "`/fabric watch`", "clicks `[Report repair]`", "**FAB-0001** is verifying", "`/fabric verify`",
                 "still verifying", "`/fabric digest`", "Waiting for verification (1)"):
        assert step in text, step
    # the alert channel: the first pass said once, a storm collapsed and acknowledged, Alertmanager answered
    began = re.search(r"(\d+) parts? on (\d+) nodes? (?:was|were) already failing when the watch began", text)
    assert began is not None, "the first pass says what was already failing"
    parts, nodes = int(began[1]), int(began[2])
    assert began[0].startswith(f"{fmt.count(parts, 'part')} on {fmt.count(nodes, 'node')} "
                               f"{'was' if parts == 1 else 'were'} "), began[0]  # each count agrees with its word
    for step in ("@fabric-oncall :thunder_cloud_and_rain: "
                 "**Incident: 40 nodes newly failing at once**", "Common factor: **driver 550.90.07, xid 74**",
                 "clicks `[Acknowledge incident]`", "Acknowledged by @alice",
                 "**Alertmanager: FabricbotNvlinkReplay on hpc-gpu-node-12**",
                 "**Resolved** (Alertmanager): FabricbotNvlinkReplay on `hpc-gpu-node-12` (firing since "
                 "2026-09-17 07:05 UTC)"):
        assert step in text, step
    later = text.split("## 17. An alert arrives on its own", 1)[1].split("## 19.", 1)[0]  # this small fleet's
    # readings end before the loop's last passes (the bundled fleet's node 13 arrives at 07:35): its nodes falling
    # silent are said once, never taken as calm, and no priority falling is called worse
    assert "The watch loop's pass with the readings up to 07:35 UTC" in later
    assert "**Fleet view incomplete**" in later and "**Worse**" not in later and "Recovered" not in later
    assert len(result.tickets) == 1 and result.tickets[0].startswith("FAB-0001 hpc-gpu-node-12")
    names = [p.name for p in result.images]
    assert names[:10] == [  # each node's topology, then its job's correlation picture
        "01-hpc-gpu-node-12.png", "02-hpc-gpu-node-12-correlation.png", "03-hpc-gpu-node-03.png",
        "04-hpc-gpu-node-03-correlation.png", "05-hpc-gpu-node-12.png", "06-hpc-gpu-node-12-correlation.png",
        "07-fleet.png", "08-hpc-gpu-node-12-correlation.png",  # the draft's evidence, attached in its thread
        f"09-{planned}.png", f"10-{planned}-correlation.png"]
    # each arriving alert's topology in its thread, then the node Alertmanager named, with its job's picture
    assert names[-2:] == [f"{len(names) - 1:02d}-hpc-gpu-node-12.png", f"{len(names):02d}-hpc-gpu-node-12-"
                          "correlation.png"] and len(names) >= 12
    assert "`/fabric fleet`" in text and "![fleet heat map](demo/07-fleet.png)" in text
    assert all(f"(demo/{p.name})" in text and p.read_bytes().startswith(b"\x89PNG") for p in result.images)
    log = result.action_log.read_text()
    for kind in ("| command |", "| analysis |", "| draft |", "| denied |", "| approval |", "| filing |",
                 "| mention |", "| maintenance |", "| repair |", "| watch |", "| alert |", "| storm |"):
        assert kind in log, kind


def test_audit_exports_markdown_and_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit = AuditLog(open_db(tmp_path))
    audit.record("command", actor="UALICE", subject="hpc-gpu-node-12", detail={"slack_bot_token": "xoxb-1"})
    assert main(["audit", "--store", str(tmp_path), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| command | UALICE | hpc-gpu-node-12 |" in out and "xoxb-1" not in out
    assert main(["audit", "--store", str(tmp_path), "--kind", "command"]) == 0
    assert '"actor": "UALICE"' in capsys.readouterr().out
    assert main(["audit", "--store", str(tmp_path / "missing")]) == 2
    assert "no fabricbot database" in capsys.readouterr().err


def test_serve_without_a_token_runs_the_local_mock_and_says_why(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "--store", str(tmp_path), "--seconds", "0"]) == 0
    err = capsys.readouterr().err
    assert "SLACK_BOT_TOKEN not set" in err and "mock Slack Web API at http://127.0.0.1:" in err
    assert "hpc-gpu-node-12" in err  # the bundled seed nodes, as the store is empty


def test_a_lone_readings_totals_are_listed_where_no_rate_can_flag_them(capsys: pytest.CaptureFixture[str]) -> None:
    """A V100 board's one `nvlink -e` reading: no rate, so nothing crosses a threshold; the links that counted
    errors since reset are what an engineer reads it for, most first, a pinned counter's lower bound said."""
    path = Path(__file__).parents[2] / "fixtures" / "real" / "nvlink_e_v100_short_form_1.txt"
    assert main(["analyze", str(path), "--node", "v"]) == 3  # no rate: incomplete
    out = capsys.readouterr().out
    totals = [line.strip() for line in out.splitlines() if line.startswith("  total:")]
    assert totals == [
        "total:    GPU 2 -> GPU 0 NVLink 0: replays 148, CRC errors 65,535 since reset (CRC flit errors pinned at "
        "65,535, its maximum: it counts no further, so the count since reset and any rate from it are lower bounds)",
        "total:    GPU 0 -> GPU 3 NVLink 3: replays 2,353 since reset"], out
    assert "(12 more links read once: totals only, no rates)" in out

