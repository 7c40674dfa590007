"""The bot over the telemetry store, read per request: a later ingest is seen at the next `/fabric NODE`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bot.nodes import StoreNodeSource, UnknownName
from bot.runtime import node_source
from bot.settings import Settings
from diagnostics.service import fleet as fleet_pass
from diagnostics.store.telemetry import TelemetryStore

from .helpers import local_bot, summary_for

START = pd.Timestamp("2026-03-01T00:00:00Z")


def write_hours(path: Path, node: str, first: int, hours: int, per_reading: float, base: float = 0.0) -> float:
    """Link samples of an HGX H100 node's 8 x 18 NVLinks every 5 minutes; GPU 0 NVLink 1 gains `per_reading`
    replays a reading. Returns that link's last replay count, for the next file to go on from."""
    rows, replay = [], base
    for i in range(first * 12, (first + hours) * 12 + 1):
        replay = base + (i - first * 12) * per_reading
        at = (START + pd.Timedelta(minutes=5 * i)).isoformat()
        rows += [{"timestamp": at, "node_id": node, "gpu": gpu, "link_type": "nvlink", "link": link,
                  "replay": replay if (gpu, link) == (0, 1) else 0.0} for gpu in range(8) for link in range(18)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return replay


def text_of(message: object) -> str:
    return str(getattr(message, "blocks", ""))


def test_a_later_ingest_is_seen_by_the_running_bot(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    store = TelemetryStore(store_dir)
    last = write_hours(tmp_path / "first.csv", "gpu-node-7", 0, 2, per_reading=200.0)
    (tmp_path / "nodes.csv").write_text("node_id,platform\ngpu-node-7,hgx-h100-8gpu\n")
    store.ingest([tmp_path / "first.csv", tmp_path / "nodes.csv"])
    source = node_source(Settings(store=store_dir))
    assert isinstance(source, StoreNodeSource)
    with local_bot(source=source) as local:
        before = text_of(summary_for(local, "gpu-node-7"))
        assert "replays 2,400/h" in before and "1 h to 2026-03-01 02:00 UTC" in before
        write_hours(tmp_path / "later.csv", "gpu-node-7", 2, 1, per_reading=500.0, base=last)
        TelemetryStore(store_dir).ingest([tmp_path / "later.csv"])  # another process, while the bot runs
        after = text_of(summary_for(local, "gpu-node-7"))
        assert "replays 6,000/h" in after and "1 h to 2026-03-01 03:00 UTC" in after
        assert "platform unknown" not in after  # the stored platform is used
        before = len(local.slack.messages)
        assert local.injector.command("fleet", user="UALICE", channel="COPS").status == 200
        assert local.slack.wait_for(lambda s: len(s.messages) > before and "Fleet:" in str(s.messages[-1].blocks))
        assert "window 1 h to 2026-03-01 03:00 UTC" in str(local.slack.messages[-1].blocks)


def test_store_source_lists_explains_and_sweeps_from_the_store(tmp_path: Path) -> None:
    store = TelemetryStore(tmp_path / "store")
    write_hours(tmp_path / "a.csv", "gpu-node-1", 0, 3, per_reading=200.0)
    write_hours(tmp_path / "b.csv", "gpu-node-2", 0, 3, per_reading=0.0)
    steps = tmp_path / "steps.csv"
    times = [START + pd.Timedelta(minutes=5 * i) for i in range(37)]
    pd.DataFrame({"timestamp": [t.isoformat() for t in times], "job_id": "j1", "node_ids": "gpu-node-1,gpu-node-2",
                  "step": range(37), "step_time_ms": [200.0] * 37}).to_csv(steps, index=False)
    store.ingest([tmp_path / "a.csv", tmp_path / "b.csv", steps])
    source = StoreNodeSource(tmp_path / "store")
    assert source.node_ids() == ["gpu-node-1", "gpu-node-2"] and source.job_ids() == ["j1"]
    fleet = fleet_pass(source.source, source.request()).diagnoses
    assert fleet["gpu-node-1"].fault_detected and not fleet["gpu-node-2"].fault_detected
    assert all(d.window_end == START + pd.Timedelta(hours=3) for d in fleet.values())
    assert all(any(w.startswith("platform unknown") for w in d.warnings) for d in fleet.values())  # none given
    job = source.explain_job("j1")
    assert job.job_id == "j1" and job.node_id in ("gpu-node-1", "gpu-node-2")
    rates = {(f.gpu, f.link): f.rates_per_hour.get("replay") for f in source.diagnose("gpu-node-1").findings}
    assert rates[(0, 1)] == 2400.0 and rates[(0, 0)] == 0.0 and len(rates) == 144
    with pytest.raises(UnknownName) as err:
        source.diagnose("gpu-node-3")
    assert err.value.matches and err.value.matches[0].startswith("gpu-node-")


def test_the_fleet_judges_a_slowed_job_on_its_day_of_history(tmp_path: Path) -> None:
    """The fleet reads links over the rules' span only; a slowed job's links come from the store when the engine
    asks for them, over the job's steps, so the fleet and the node's own summary agree on what explains it."""
    store = TelemetryStore(tmp_path / "store")
    last = write_hours(tmp_path / "calm.csv", "gpu-node-1", 0, 6, per_reading=0.0)
    write_hours(tmp_path / "storm.csv", "gpu-node-1", 6, 2, per_reading=400.0, base=last)
    write_hours(tmp_path / "peer.csv", "gpu-node-2", 0, 8, per_reading=0.0)
    times = [START + pd.Timedelta(minutes=5 * i) for i in range(8 * 12 + 1)]
    pd.DataFrame({"timestamp": [t.isoformat() for t in times], "job_id": "j1", "node_ids": "gpu-node-1,gpu-node-2",
                  "step": range(len(times)), "step_time_ms": [200.0 if i < 72 else 260.0 for i in range(len(times))]
                  }).to_csv(tmp_path / "steps.csv", index=False)
    (tmp_path / "nodes.csv").write_text("node_id,platform\ngpu-node-1,hgx-h100-8gpu\ngpu-node-2,hgx-h100-8gpu\n")
    store.ingest([tmp_path / n for n in ("calm.csv", "storm.csv", "peer.csv", "steps.csv", "nodes.csv")])
    source = StoreNodeSource(tmp_path / "store")
    swept = fleet_pass(source.source, source.request()).diagnoses["gpu-node-1"]
    alone = source.diagnose("gpu-node-1")
    assert swept.degradation_pct == alone.degradation_pct and swept.degradation_pct is not None
    assert swept.degradation_pct > 20
    explains = [f.component for f in swept.findings if f.explains_slowdown]
    assert explains and explains == [f.component for f in alone.findings if f.explains_slowdown]


def test_planned_work_set_through_the_source_is_the_stores_own(tmp_path: Path) -> None:
    """A window set through the bot's source lands in the store's database: every reader of the store sees it."""
    from datetime import timedelta

    store_dir = tmp_path / "store"
    write_hours(tmp_path / "links.csv", "gpu-node-7", 0, 2, per_reading=200.0)
    TelemetryStore(store_dir).ingest([tmp_path / "links.csv"])
    source = StoreNodeSource(store_dir)
    assert source.maintenance() is source.maintenance()  # one log, not a connection per call
    assert source.newest("gpu-node-7") == source.diagnose("gpu-node-7").window_end == START + pd.Timedelta(hours=2)
    end = START + pd.Timedelta(hours=2)
    source.maintenance().set("gpu-node-7", start=end - timedelta(minutes=30), span=timedelta(hours=2),
                             reason="reseat GPU 0", set_by="UBOB", source="slack")
    assert [w.reason for w in TelemetryStore(store_dir).maintenance.windows("gpu-node-7")] == ["reseat GPU 0"]
    d = source.diagnose("gpu-node-7")
    assert d.maintenance is not None and "reseat GPU 0" in d.maintenance and d.ticket_priority.value == "low"


def test_a_repair_on_a_node_the_store_never_read_is_still_verifying_and_says_why(tmp_path: Path) -> None:
    write_hours(tmp_path / "links.csv", "gpu-node-7", 0, 1, per_reading=1.0)
    TelemetryStore(tmp_path / "store").ingest([tmp_path / "links.csv"])
    check = StoreNodeSource(tmp_path / "store").repair_check(node_id="gpu-node-9", parts=["gpu0-nvlink1"],
                                                             repaired_at=START.to_pydatetime())
    assert check.verdict.value == "holding" and check.evidence == ["the store holds no readings of gpu-node-9"]


def test_a_node_the_store_never_read_is_not_called_healthy_under_its_picture(tmp_path: Path) -> None:
    """A node of the inventory with no link reading: its summary says its health is unknown, and the comment on its
    picture (every link drawn as not read) says so too, not "all links healthy"."""
    store_dir = tmp_path / "store"
    write_hours(tmp_path / "links.csv", "gpu-node-7", 0, 1, per_reading=0.0)
    (tmp_path / "nodes.csv").write_text("node_id,platform\ngpu-node-7,hgx-h100-8gpu\ngpu-node-9,hgx-h100-8gpu\n")
    TelemetryStore(store_dir).ingest([tmp_path / "links.csv", tmp_path / "nodes.csv"])
    with local_bot(source=StoreNodeSource(store_dir)) as local:
        comments = {}
        for node in ("gpu-node-7", "gpu-node-9"):
            summary = summary_for(local, node)
            assert local.slack.wait_for(lambda s, ts=summary.ts: any(m.files for m in s.thread("COPS", ts)))
            comments[node] = next(m.text for m in local.slack.thread("COPS", summary.ts) if m.files)
        assert "fabric health is unknown" in text_of(summary)
    # read, and clean: one link of its board read, so what is healthy is the link read, not "all links" (the others
    # are drawn as not read)
    assert comments["gpu-node-7"].endswith("every link read is healthy")
    assert "healthy" not in comments["gpu-node-9"] and "no link reading" in comments["gpu-node-9"], comments


def test_a_node_silent_in_the_window_is_not_headlined_as_free_of_faults(tmp_path: Path) -> None:
    """A node whose link readings stopped while the others' go on has no link read in the window: its summary's
    header, its notification text and its "Fault detected" field said "no fabric fault" while its own warning and
    picture said its health was unknown. Every line of it now says unknown; a node read and clean still says no
    fault."""
    store_dir = tmp_path / "store"
    write_hours(tmp_path / "quiet.csv", "gpu-node-9", 0, 2, per_reading=0.0)
    write_hours(tmp_path / "on.csv", "gpu-node-7", 0, 8, per_reading=0.0)
    TelemetryStore(store_dir).ingest([tmp_path / "quiet.csv", tmp_path / "on.csv"])
    with local_bot(source=StoreNodeSource(store_dir)) as local:
        silent, read = summary_for(local, "gpu-node-9"), summary_for(local, "gpu-node-7")
    assert "fabric health is unknown" in text_of(silent)
    for said in (silent.text, text_of(silent)):
        assert "no fabric fault" not in said and "health unknown" in said, said
    assert "*Fault detected*\\nno" not in text_of(silent)
    assert "no fabric fault" in read.text and "health unknown" not in read.text


def test_analyze_says_a_silent_node_s_fault_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze` heads a node with no link read in the window `fault=unknown`, as the bot's summary does, not
    `fault=no`."""
    from bot.cli import main

    store_dir = tmp_path / "store"
    write_hours(tmp_path / "quiet.csv", "gpu-node-9", 0, 2, per_reading=0.0)
    write_hours(tmp_path / "on.csv", "gpu-node-7", 0, 8, per_reading=0.0)
    TelemetryStore(store_dir).ingest([tmp_path / "quiet.csv", tmp_path / "on.csv"])
    main(["analyze", "--store", str(store_dir), "--node", "gpu-node-9"])
    head = capsys.readouterr().out.splitlines()[0]
    assert "fault=unknown" in head and "fault=no" not in head, head
    main(["analyze", "--store", str(store_dir), "--node", "gpu-node-7"])
    assert "fault=no" in capsys.readouterr().out.splitlines()[0]
