"""What is not there is unknown, not down: an input that stops short (a scrape cut inside a line) holds what it holds,
the links it does not reach are not missing links, through the files and through the store, until a whole input of
the node is read; a store part damaged after it was written leaves its node unjudged and the rest answered."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from diagnostics.analysis.diagnosis import NO_LINKS_ACTION
from diagnostics.service import Request, StoreSource, diagnose, files_source, fleet, sweep
from diagnostics.store import open_store
from tests.analysis.helpers import link_series, links
from tests.conftest import FIXTURES

NODE = "hpc-gpu-node-07"
T0 = 1_789_631_100_000  # ms


def scrape(links: int = 12, gpus: int = 8, times: int = 4) -> str:
    """A dcgm-exporter scrape of a healthy A100 node, metric by metric as the exporter writes its families."""
    lines = []
    for counter in ("CRC_FLIT_ERROR_COUNT", "REPLAY_ERROR_COUNT"):
        for link in range(links):
            name = f"DCGM_FI_DEV_NVLINK_{counter}_L{link}"
            lines.append(f"# TYPE {name} counter")
            lines += [f'{name}{{gpu="{g}",Hostname="{NODE}"}} {3 + t} {T0 + t * 300_000}'
                      for g in range(gpus) for t in range(times)]
    return "\n".join(lines) + "\n"


def inputs(folder: Path, text: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nodes.csv").write_text(f"node_id,platform\n{NODE},dgx-a100-8gpu\n", encoding="utf-8")
    (folder / "node.prom").write_text(text, encoding="utf-8")
    return [folder / "node.prom", folder / "nodes.csv"]


def cut_text() -> str:
    whole = scrape()
    at = whole.index("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L6")
    return whole[:at + 30]  # inside a sample line of link 6: links 6-11 and the replays never reached


def test_a_scrape_cut_inside_a_line_reads_no_link_it_does_not_reach_as_missing(tmp_path: Path) -> None:
    whole_source, node, _ = files_source(inputs(tmp_path / "whole", scrape()))
    whole = diagnose(whole_source, Request(node=node)).diagnosis
    assert not whole.fault_detected and not any("no series" in str(f.crossed) for f in whole.findings)
    source, node, said = files_source(inputs(tmp_path / "cut", cut_text()))
    got = diagnose(source, Request(node=node)).diagnosis
    assert any("the input ends inside this line" in w for w in said)
    assert not got.fault_detected and got.ticket_priority == whole.ticket_priority
    assert not any(f.component.startswith("GPU") and "NVLink 6" in f.component for f in got.findings)
    assert any("stops short" in w for w in got.warnings)


def test_the_store_answers_a_cut_scrape_as_the_file_does_until_a_whole_one_is_read(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    store.ingest(inputs(tmp_path / "cut", cut_text()))
    got = diagnose(StoreSource(tmp_path / "store"), Request(node=NODE)).diagnosis
    assert not got.fault_detected and any("stops short" in w for w in got.warnings)
    cut_links = scrape(links=6)  # a whole scrape that holds 6 of 12 links, later: now they are missing
    later = cut_links.replace(f" {T0 + 900_000}\n", f" {T0 + 1_200_000}\n")
    store.ingest(inputs(tmp_path / "later", later))
    again = diagnose(StoreSource(tmp_path / "store"), Request(node=NODE)).diagnosis
    assert not any("stops short" in w for w in again.warnings)
    assert again.fault_detected and any("no series for link 6" in str(f.crossed) for f in again.findings)


def damaged_part_store(folder: Path) -> Path:
    """A store of two healthy nodes, NODE's one part cut after it was written; returns that part."""
    store = open_store(folder / "store")
    other = scrape().replace(NODE, "hpc-gpu-node-08")
    store.ingest([*inputs(folder / "a", scrape()), *inputs(folder / "b", other)[:1]])
    part = next((folder / "store" / "link_samples").glob(f"node={NODE}/*/*.parquet"))
    part.write_bytes(part.read_bytes()[:1000])
    return part


def test_a_damaged_part_leaves_its_node_unjudged_and_the_fleet_answered(tmp_path: Path) -> None:
    """One node's part cut after it was written: the sweep answers the other nodes and says the view is incomplete,
    naming the part; the node's own answer says its health is unknown and why, never healthy, and is incomplete."""
    part = damaged_part_store(tmp_path)
    result = sweep(StoreSource(tmp_path / "store"), Request())
    assert not result.complete and str(part) in " ".join(result.incomplete_reasons)
    assert set(result.swept) == {NODE, "hpc-gpu-node-08"} and NODE not in result.silent
    answer = diagnose(StoreSource(tmp_path / "store"), Request(node=NODE))
    got = answer.diagnosis
    assert got.warnings[0].startswith(f"{NODE}'s link readings could not be read: {part}")
    assert got.repair_action == NO_LINKS_ACTION and not got.fault_detected
    assert answer.incomplete == [got.warnings[0]]
    assert diagnose(StoreSource(tmp_path / "store"), Request(node="hpc-gpu-node-08")).incomplete == []


def slowed_job_store(folder: Path) -> Path:
    """A store of job j1 on n1, slowed at 05:00 by n1's failing link, its history reaching back into the day
    before the window (12:00 to 08:00 the next day at 5 minutes), and a healthy n2; returns the store's folder."""
    start = pd.Timestamp("2026-03-01T12:00:00Z")
    n = 20 * 12 + 1
    slow = np.arange(n) >= 17 * 12
    replay = np.concatenate(([0.0], np.cumsum(np.where(slow, 250.0, 1.0)[1:])))  # 12/h, then 3,000/h
    frame = links(link_series(replay, node="n1", start=start),
                  link_series(np.arange(n, dtype=float), node="n2", start=start))
    frame.to_csv(folder / "links.csv", index=False)
    steps = pd.DataFrame({"timestamp": [start + pd.Timedelta(minutes=5 * i) for i in range(n)], "job_id": "j1",
                          "node_ids": "n1", "step": range(n), "step_time_ms": np.where(slow, 260, 200)})
    steps.to_csv(folder / "steps.csv", index=False)
    open_store(folder / "store").ingest([folder / "links.csv", folder / "steps.csv"], fmt="tables")
    return folder / "store"


def cut_earlier_day(store: Path, node: str = "n1") -> Path:
    """The node's part of the store's first day, cut after it was written; returns the part."""
    part = next((store / "link_samples" / f"node={node}").glob("day=2026-03-01/*.parquet"))
    part.write_bytes(part.read_bytes()[:500])
    return part


def test_a_damaged_part_of_a_slowed_jobs_earlier_day_leaves_the_sweep_incomplete(tmp_path: Path) -> None:
    """A job slowed by a failing link, its history reaching back into the day before the window: with the node's
    part of that day cut, the sweep still answers (the link judged on its window), names the part and says the
    view is incomplete, where it failed whole; the intact store's sweep is complete and the link explains the job."""
    store = slowed_job_store(tmp_path)
    whole = sweep(StoreSource(store), Request())
    assert whole.complete and "explains job j1" in (whole.diagnoses["n1"].verdict or "")
    part = cut_earlier_day(store)
    result = sweep(StoreSource(store), Request())
    assert not result.complete and [o.rule for o in result.offenders] == ["nvlink_replay"]
    (reason,) = result.incomplete_reasons
    assert reason.startswith("1 node judged on their window") and f"n1 ({part}" in reason


def test_a_slowed_jobs_links_whose_history_cannot_be_read_are_not_scored_not_cleared(tmp_path: Path) -> None:
    """With n1's earlier day cut, the job's explanation carries n1's links as not scored and why, and every
    answer says so in the same words: the sweep (n1's link judged on its window, its history unreadable), the node's
    own question (its whole day unreadable) and the job's; none says n1's links do not track the slowdown."""
    store = slowed_job_store(tmp_path)
    whole = fleet(StoreSource(store), Request())
    assert whole.analysis.jobs["j1"].unscored == [] and "explains job j1" in (whole.diagnoses["n1"].verdict or "")
    part = cut_earlier_day(store)
    swept = fleet(StoreSource(store), Request())
    job = swept.analysis.jobs["j1"]
    assert job.slowdown and [(u.node_id, u.ref.name if u.ref else None) for u in job.unscored] == [
        ("n1", "GPU 0 NVLink 0 -> NVSwitch 0")] and str(part) in job.unscored[0].why
    said = {"sweep": sweep(StoreSource(store), Request()).diagnoses["n1"].verdict,
            "node": diagnose(StoreSource(store), Request(node="n1")).diagnosis.verdict,
            "job": diagnose(StoreSource(store), Request(job="j1")).diagnosis.verdict, "explanation": job.verdict}
    assert len(set(said.values())) == 1, said
    verdict = said["sweep"] or ""
    assert verdict.startswith("job j1 is +30.0% slower; the links of n1 were not scored against it, its stored "
                              f"readings could not be read ({part}") and verdict.endswith("is unknown")
    assert "do not track" not in verdict and "not the fabric" not in verdict
    (link,) = [f for f in swept.diagnoses["n1"].findings if f.component == "GPU 0 NVLink 0 -> NVSwitch 0"]
    assert link.explains_slowdown is None and link.correlation_score is None
    assert any(e.startswith("not scored against job j1's step time") for e in link.evidence)
    assert not any("do not track" in e for e in link.evidence)


def test_an_elided_paste_read_twice_is_judged_on_the_links_it_shows(tmp_path: Path) -> None:
    """A real `nvidia-smi nvlink -e` paste whose author elided links with `[...]`, read twice a quarter of an hour
    apart: its rates are judged, and the links the elisions stand for are not missing (a lone reading was already
    spared; two readings of the same paste were an urgent 'GPU 0 reports 3 of its 18 NVLinks')."""
    paste = FIXTURES / "real" / "nvlink_e_h100_1.txt"
    store = open_store(tmp_path / "store")
    for minute in (0, 15):
        at = datetime(2026, 12, 1, 10, minute, tzinfo=UTC)
        assert store.ingest([paste], node_id="n1", at=at).files[0].status == "ingested"
    got = diagnose(StoreSource(tmp_path / "store"), Request(node="n1")).diagnosis
    assert not any("NVLinks: no series" in str(f.crossed) for f in got.findings)
    assert not got.fault_detected and any("elided" in w for w in got.warnings)
