"""TelemetryStore: Parquet by node and day, SQLite manifest, events and nodes; reads give back what went in."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from diagnostics.store.telemetry import TelemetryStore
from tests.ingest.dcgm_helpers import gpu_labels

DAY1 = 1_772_323_200_000  # 2026-03-01T00:00Z in ms


def write_scrapes(path: Path, host: str, start_ms: int, minutes: int, replay_step: int) -> None:
    lines = ["# TYPE DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0 counter"]
    for gpu in range(2):
        for m in range(minutes):
            lines.append(f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{{{gpu_labels(gpu, host)}}} "
                         f"{m * replay_step} {start_ms + m * 60_000}")
    lines.append("# TYPE DCGM_FI_DEV_XID_ERRORS gauge")
    lines += [f"DCGM_FI_DEV_XID_ERRORS{{{gpu_labels(1, host)}}} {x} {start_ms + i * 60_000}"
              for i, x in enumerate([0, 0, 79])]
    path.write_text("\n".join(lines) + "\n")


def test_round_trip_partitions_and_manifest(tmp_path: Path) -> None:
    a, b = tmp_path / "a.prom", tmp_path / "b.prom"
    write_scrapes(a, "node-a", DAY1 - 2 * 60_000, 4, 5)  # crosses midnight: two day partitions
    write_scrapes(b, "node-b", DAY1, 3, 1)
    store = TelemetryStore(tmp_path / "store")
    report = store.ingest([a, b])
    assert [f.status for f in report.files] == ["ingested", "ingested"]
    assert store.nodes() == ["node-a", "node-b"]
    days = sorted(p.name for p in (tmp_path / "store" / "link_samples" / "node=node-a").iterdir())
    assert days == ["day=2026-02-28", "day=2026-03-01"]

    rows = store.link_samples("node-a")
    assert len(rows) == 8 and list(rows[rows["gpu"] == 0]["replay"]) == [0, 5, 10, 15]
    assert str(rows["timestamp"].dtype) == "datetime64[ns, UTC]" and str(rows["gpu"].dtype) == "Int16"
    window = store.link_samples(start=datetime(2026, 3, 1, tzinfo=UTC), end=datetime(2026, 3, 1, 0, 2, tzinfo=UTC))
    assert sorted(window["node_id"].astype(str).unique()) == ["node-a", "node-b"] and len(window) == 8

    events = store.events("node-a")
    assert list(events["code"]) == [79] and events["timestamp"].iloc[0] == pd.Timestamp(DAY1, unit="ms", tz="UTC")
    assert len(store.events()) == 2

    again = store.ingest([a])
    assert [f.status for f in again.files] == ["duplicate"]
    assert len(store.link_samples()) == 14 and store.db["ingests"].count == 2


def test_snapshot_gives_step_samples_and_jobs(tmp_path: Path) -> None:
    snap = Path(__file__).resolve().parents[2] / "fixtures" / "seed_examples.json"
    store = TelemetryStore(tmp_path / "s")
    store.ingest([snap])
    jobs = store.jobs()
    assert jobs and all(j.startswith("snapshot:") for j in jobs)
    node = jobs[0].removeprefix("snapshot:")
    steps = store.step_samples(jobs[0])
    assert len(steps) == 2 and list(store.step_samples(node_id=node)["job_id"].unique()) == [jobs[0]]


def test_unreadable_file_is_reported_not_raised(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01\x02" * 100)
    report = TelemetryStore(tmp_path / "s").ingest([junk, tmp_path / "missing.prom"])
    assert [f.status for f in report.files] == ["error", "error"] and not report.read_anything
    assert "binary" in str(report.files[0].error)


def test_topology_and_gpu_identity_round_trip(tmp_path: Path) -> None:
    topo = tmp_path / "topo.csv"
    topo.write_text("node_id,a,b,relation,nvlinks\nn1,GPU0,GPU1,NV,18\nn1,GPU0,NIC0,PIX,\nn2,GPU0,GPU1,NV,12\n")
    scrape = tmp_path / "s.prom"
    scrape.write_text(f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{gpu_labels(3, 'n1')}}} 1 {DAY1}\n")
    store = TelemetryStore(tmp_path / "s")
    store.ingest([topo, scrape])
    rows = store.topology("n1")
    assert list(zip(rows["b"], rows["relation"], rows["nvlinks"], strict=True)) == [("GPU1", "NV", 18),
                                                                                   ("NIC0", "PIX", pd.NA)]
    assert str(rows["nvlinks"].dtype) == "Int16" and len(store.topology()) == 3
    gpus = store.gpus("n1")
    assert gpus["uuid"].item() == "GPU-00003" and gpus["pci_bus_id"].item() == "0000:1b:00.0"
    assert store.nodes() == ["n1", "n2"]


def test_xid_gauge_change_between_ingests_is_an_event(tmp_path: Path) -> None:
    store = TelemetryStore(tmp_path / "s")
    for minute, last_xid in enumerate([79, 79, 74]):
        path = tmp_path / f"scrape{minute}.prom"
        path.write_text(f"DCGM_FI_DEV_XID_ERRORS{{{gpu_labels(6, 'n1')}}} {last_xid} {DAY1 + minute * 60_000}\n")
        store.ingest([path])
    events = store.events("n1")
    assert list(events["code"]) == [74] and events["gpu"].tolist() == [6]
    assert events["timestamp"].item() == pd.Timestamp(DAY1 + 120_000, unit="ms", tz="UTC")


def test_nodes_named_only_by_step_samples_are_known(tmp_path: Path) -> None:
    steps = tmp_path / "steps.csv"
    steps.write_text("timestamp,job_id,node_ids,step,step_time_ms\n2026-03-01T00:00:00Z,j1,\"n7,n8\",1,250\n")
    store = TelemetryStore(tmp_path / "s")
    store.ingest([steps])
    assert store.nodes() == ["n7", "n8"] and store.jobs() == ["j1"]
    assert store.step_samples(node_id="n8")["step_time_ms"].tolist() == [250]


def test_the_newest_event_is_found_in_the_database_as_its_times_order_it(tmp_path: Path) -> None:
    """An events-only store's end: the newest event's exact time, a fraction of a second or a nanosecond included,
    an undated event never the newest, read without loading the events."""
    from diagnostics.store.records import records as _records
    from diagnostics.tables import EVENTS

    store = TelemetryStore(tmp_path / "store")
    assert store.newest_event() is None
    base = pd.Timestamp(DAY1, unit="ms", tz="UTC")
    times = [base, base + pd.Timedelta("0.999999s"), base + pd.Timedelta("1s") + pd.Timedelta(1, "ns"),
             base + pd.Timedelta("1s"), pd.NaT]
    frame = EVENTS.conform(pd.DataFrame({"timestamp": times, "node_id": ["a", "b", "a", "c", "d"], "kind": "xid",
                                         "code": 79}))
    store.db["events"].insert_all(_records(frame))
    assert store.newest_event() == int((base + pd.Timedelta("1s") + pd.Timedelta(1, "ns")).value)
    assert store.newest_event() == int(store.events()["timestamp"].max().value)


def test_step_samples_that_name_no_job_are_no_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An nccl-tests log names no job: its rows were stored under a job called `unknown`, which `--job X` then
    offered ("1 known: unknown") and `--job unknown` answered. They stay the host's steps, and are no job."""
    from bot.cli import main

    log = tmp_path / "nccl.txt"
    log.write_text("# Using devices\n#  Rank  0 Group  0 Pid   1728 on hostA device  0 [0000:0f:00] NVIDIA A100\n"
                   "# Avg bus bandwidth    : 232.1 \n", encoding="utf-8")
    store = TelemetryStore(tmp_path / "store")
    store.ingest([log])
    assert store.jobs() == [] and len(store.step_samples(node_id="hostA")) == 1
    for job in ("X", "unknown"):
        assert main(["analyze", "--store", str(tmp_path / "store"), "--job", job]) != 0
        err = capsys.readouterr().err
        assert f"no job {job!r}" in err and "unknown" not in err.replace(f"'{job}'", "")


def test_a_nodes_window_reads_only_the_run_parts_that_name_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Benchmark runs (no job) are read by the nodes their parts name, merged parts too: a node with no run reads
    none of them, and a store from before parts named theirs reads every one."""
    from diagnostics.store import compaction
    from diagnostics.store.writing import NO_JOB

    monkeypatch.setattr(compaction, "COMPACT_PARTS", 3)
    store = TelemetryStore(tmp_path / "store")
    for i, host in enumerate(["hostA", "hostB", "hostA", "hostB"]):
        log = tmp_path / f"nccl-{i}.txt"
        log.write_text(f"#  Rank  0 Group  0 Pid   1728 on {host} device  0 [0000:0f:00] NVIDIA A100\n"
                       f"# Avg bus bandwidth    : {230 + i} \n", encoding="utf-8")
        store.ingest([log])
    catalog = store._catalog
    read = {node: catalog.parts_naming("step_samples", NO_JOB, [node], None, 2**62) for node in ("hostA", "hostB")}
    assert len(read["hostA"]) == 1 and read["hostA"] == read["hostB"]  # the four merged into one: both named
    assert catalog.parts_naming("step_samples", NO_JOB, ["hostC"], None, 2**62) == []
    store._db.execute("DELETE FROM part_nodes")  # as a store from before left it
    assert len(catalog.parts_naming("step_samples", NO_JOB, ["hostC"], None, 2**62)) == 1
    for i, host in enumerate(["hostC", "hostD", "hostC"]):  # new parts merged with the old one: still read by all
        log = tmp_path / f"nccl-new-{i}.txt"
        log.write_text(f"#  Rank  0 Group  0 Pid   1728 on {host} device  0 [0000:0f:00] NVIDIA A100\n"
                       f"# Avg bus bandwidth    : {240 + i} \n", encoding="utf-8")
        store.ingest([log])
    assert len(catalog.parts_naming("step_samples", NO_JOB, ["hostA"], None, 2**62)) == 1  # hostA's old rows in it


def test_each_ingest_of_a_run_is_its_own_and_the_later_is_judged(tmp_path: Path) -> None:
    """Two pastes of one node's run hold it at the same line (`<stdin>:N`): each ingest's run is its own, not
    merged into one, and of two undated runs the later ingested is judged, whichever figure is better."""
    from diagnostics.analysis.bandwidth import all_reduce_runs, newest_runs
    from diagnostics.ingest.base import Source
    from tests.analysis.test_bandwidth import A100, HOST, tenth

    for first, then, busbw in ((A100, tenth(A100), 23.2), (tenth(A100), A100, 232.04)):
        store = TelemetryStore(tmp_path / f"store-{busbw}")
        for text in (first, then):
            store.ingest([Source.from_text(text, name="<stdin>")])
        runs = all_reduce_runs(store.read_window(end=None, span=pd.Timedelta(hours=1), nodes=[HOST])
                               .tables["step_samples"])
        assert len(runs) == 2 and newest_runs(runs)[HOST].busbw_gbps == busbw


def test_a_store_from_before_runs_were_keyed_reads_each_part_as_its_own_run(tmp_path: Path) -> None:
    """Parts written before rows named their run: each part's rows are one run, not all of a host's runs one."""
    import pyarrow.parquet as pq

    from diagnostics.analysis.bandwidth import all_reduce_runs
    from diagnostics.ingest.base import Source
    from tests.analysis.test_bandwidth import A100, HOST, tenth

    store = TelemetryStore(tmp_path / "store")
    for i, text in enumerate((A100, tenth(A100))):
        store.ingest([Source.from_text(text, name=f"nccl-{i}.txt")])
    parts = store._db.execute("SELECT path, columns FROM parquet_files WHERE tbl = 'step_samples'").fetchall()
    for path, columns in parts:
        table = pq.read_table(tmp_path / "store" / path)
        pq.write_table(table.drop_columns([c for c in ("run", "ingested") if c in table.column_names]),
                       tmp_path / "store" / path)
        kept = ",".join(c for c in columns.split(",") if c not in ("run", "ingested"))
        store._db.execute("UPDATE parquet_files SET columns = ? WHERE path = ?", [kept, path])
    store._db.conn.commit()
    runs = all_reduce_runs(store.read_window(end=None, span=pd.Timedelta(hours=1), nodes=[HOST]).tables["step_samples"])
    assert sorted(r.busbw_gbps for r in runs) == [23.2, 232.04]
