"""A store fed scrape by scrape: a node's day in many small parts is merged into one part of the same rows, swapped
in the catalog at once; the parts it replaces stay on disk for the reads that listed them, for a grace period."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from diagnostics.store import compaction, parts
from diagnostics.store.telemetry import TelemetryStore
from diagnostics.tables import LINK_SAMPLES
from tests.store.test_window import START, fleet_file


def _scrapes(tmp_path: Path, nodes: int = 2, hours: int = 4) -> tuple[Path, list[Path]]:
    """The same rows as one file and as one file per scrape (as a cron job ingests them)."""
    whole = tmp_path / "whole.parquet"
    frame = fleet_file(whole, nodes=nodes, hours=hours, links=2)
    folder = tmp_path / "scrapes"
    folder.mkdir()
    files = []
    for i, (_, rows) in enumerate(frame.groupby("timestamp")):
        files.append(folder / f"scrape-{i:03d}.parquet")
        rows.to_parquet(files[-1], index=False)
    return whole, files


def _parts(store: TelemetryStore, node: str) -> list[Path]:
    return [p.path for p in store._catalog.parts("link_samples", [node])]


@pytest.fixture(autouse=True)
def _hourly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parts, "MIN_GROUP_ROWS", 16)  # row groups of an hour for these few links


def test_a_day_ingested_scrape_by_scrape_is_one_part_that_reads_as_the_whole_file(tmp_path: Path) -> None:
    whole, files = _scrapes(tmp_path)
    at_once, fed = TelemetryStore(tmp_path / "at-once"), TelemetryStore(tmp_path / "fed")
    at_once.ingest([whole])
    for file in files:  # one ingest a scrape, as cron runs it
        fed.ingest([file])
    assert len(files) == 48 and len(_parts(fed, "n0")) <= compaction.COMPACT_PARTS
    assert all(p.name.startswith("merged-") for p in _parts(fed, "n0")[:1])
    for end, span in ((None, timedelta(hours=30)), (START + pd.Timedelta(hours=2, minutes=7), timedelta(hours=1))):
        when = None if end is None else end.to_pydatetime()
        got = fed.window(end=when, span=span, nodes=None)["link_samples"]
        expected = at_once.window(end=when, span=span, nodes=None)["link_samples"]
        pd.testing.assert_frame_equal(got.drop(columns=["source"], errors="ignore"),
                                      expected.drop(columns=["source"], errors="ignore"))
    rows = fed.link_samples("n1", START.to_pydatetime(), (START + pd.Timedelta(hours=5)).to_pydatetime())
    assert len(rows) == 4 * 12 * 2 * 2 and rows["source"].notna().all()  # each row keeps the file it came from


def test_a_day_in_few_parts_is_left_as_it_is(tmp_path: Path) -> None:
    _, files = _scrapes(tmp_path, nodes=1, hours=2)
    store = TelemetryStore(tmp_path / "store")
    store.ingest(files[:compaction.COMPACT_PARTS])
    before = _parts(store, "n0")
    assert len(before) == compaction.COMPACT_PARTS
    assert store.compact().days == 0 and _parts(store, "n0") == before


def test_a_read_that_listed_the_old_parts_still_reads_them_until_their_grace_is_over(tmp_path: Path) -> None:
    _, files = _scrapes(tmp_path, nodes=1, hours=2)
    store = TelemetryStore(tmp_path / "store")
    for file in files[:compaction.COMPACT_PARTS]:
        store.ingest([file])
    listed = store._catalog.parts("link_samples")  # a read lists the parts; an ingest merges them meanwhile
    store.ingest([files[compaction.COMPACT_PARTS]])
    assert len(listed) == compaction.COMPACT_PARTS and len(_parts(store, "n0")) == 1
    old, _ = parts.read_parts(listed, LINK_SAMPLES, None, None, order=("gpu", "link_type", "link", "lane"))
    assert len(old) == compaction.COMPACT_PARTS * 4  # retired, not deleted: the read that listed them goes on
    assert store.compact(grace_s=3600.0).deleted == 0
    assert store.compact(grace_s=0.0).deleted == compaction.COMPACT_PARTS + 1
    assert not any(p.path.exists() for p in listed) and all(p.exists() for p in _parts(store, "n0"))


def test_parts_another_writer_merged_meanwhile_are_not_merged_again(tmp_path: Path) -> None:
    _, files = _scrapes(tmp_path, nodes=1, hours=2)
    store = TelemetryStore(tmp_path / "store")
    store.ingest(files[:compaction.COMPACT_PARTS + 1])
    merged = _parts(store, "n0")
    assert len(merged) == 1 and merged[0].name.startswith("merged-")  # merged as the ingest ended
    day = merged[0].parent.name.removeprefix("day=")
    again = store._catalog.replace("link_samples", "n0", day, [tmp_path / "store" / "gone.parquet"],
                                   tmp_path / "store" / "other.parquet", parts.PartInfo(0, None, None, (), ()))
    assert again is False and _parts(store, "n0") == merged


def test_the_compact_command_merges_an_older_stores_crowded_days(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A store fed scrape by scrape before ingests merged what they wrote: `fabricbot compact` merges every day
    it holds in many parts; run again, it has nothing to do; the window read from it is the same."""
    from bot.cli import main

    _, files = _scrapes(tmp_path, nodes=2, hours=2)
    store = TelemetryStore(tmp_path / "store")
    with monkeypatch.context() as older:  # an ingest that merged nothing, as before compaction
        older.setattr(compaction, "COMPACT_PARTS", 10**6)
        for file in files:
            store.ingest([file])
    assert len(_parts(store, "n0")) == len(files)
    before = store.window(end=None, span=timedelta(hours=3), nodes=None)["link_samples"]
    capsys.readouterr()
    assert main(["compact", "--store", str(tmp_path / "store")]) == 0
    assert capsys.readouterr().out.startswith(f"2 days held in {2 * len(files)} parts merged")
    assert len(_parts(store, "n0")) == 1
    pd.testing.assert_frame_equal(store.window(end=None, span=timedelta(hours=3), nodes=None)["link_samples"], before)
    assert main(["compact", "--store", str(tmp_path / "store"), "--json"]) == 0
    assert capsys.readouterr().out.strip() == '{"days": 0, "parts": 0, "deleted": 0, "failed": {}}'


def _fed_without_merging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: int = 1) -> TelemetryStore:
    """A store holding each node's day in one part per scrape (25 of them), as an ingest before compaction left it."""
    _, files = _scrapes(tmp_path, nodes=nodes, hours=3)
    store = TelemetryStore(tmp_path / "store")
    with monkeypatch.context() as older:
        older.setattr(compaction, "COMPACT_PARTS", 10**6)
        for file in files[:25]:
            store.ingest([file])
    return store


def test_undated_pastes_of_one_node_are_merged_like_dated_ones(tmp_path: Path) -> None:
    """Pastes ingested without a time are kept under the day `none`: their 17th used to end the ingest in a
    traceback (the part's time column, all empty, was not read back), and every later ingest of the node too."""
    paste = (Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvlink_e_h100_1.txt").read_text()
    store = TelemetryStore(tmp_path / "store")
    for i in range(compaction.COMPACT_PARTS + 2):
        file = tmp_path / f"paste-{i}.txt"
        file.write_text(paste + "\n" * (i + 1))  # other bytes: not a duplicate
        report = store.ingest([file], node_id="gpu-n7")
        assert [f.status for f in report.files] == ["ingested"], report.warnings
    day = _parts(store, "gpu-n7")
    assert len(day) == 2 and day[0].parent.name == "day=none"  # merged at the 17th, one more since
    rows = store.link_samples("gpu-n7", None, None)
    assert len(rows) == (compaction.COMPACT_PARTS + 2) * 3 and rows["timestamp"].isna().all()


def test_a_writer_whose_merge_comes_second_deletes_only_its_own_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two writers merging the same day at once: the second's swap finds the parts gone and deletes what it wrote,
    never the first's merged part (they once had one name: the day's history was lost)."""
    store = _fed_without_merging(tmp_path, monkeypatch)
    stale = store._catalog.crowded("link_samples", compaction.COMPACT_PARTS)  # listed by a second writer ...
    first = store.compact()  # ... before the first one merged them
    assert first.days == 1 and first.merged[0].exists()

    class Late:
        root = store._catalog.root

        def crowded(self, *args: object) -> object:
            return stale

        def replace(self, *args: object) -> bool:
            return bool(store._catalog.replace(*args))  # type: ignore[arg-type]

    second = compaction.compact(store._db, Late(), LINK_SAMPLES, ("gpu", "link_type", "link", "lane"))  # type: ignore[arg-type]
    assert second.days == 0 and first.merged[0].exists() and _parts(store, "n0") == first.merged
    assert [p.name for p in first.merged[0].parent.glob("merged-*")] == [first.merged[0].name]
    assert len(store.window(end=None, span=timedelta(hours=4), nodes=None)["link_samples"]) == 25 * 4


def test_a_day_with_a_part_deleted_by_hand_is_said_and_left_as_it_is(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A part deleted or cut by hand: its day is not merged and is named, the ingest that wrote a new reading still
    stores it and says so (it does not fail on readings it kept), and `fabricbot compact` merges the other days and
    exits 3."""
    from bot.cli import main

    store = _fed_without_merging(tmp_path, monkeypatch, nodes=2)
    gone = _parts(store, "n0")[3]
    gone.unlink()
    late = tmp_path / "late.parquet"
    fleet_file(late, nodes=1, hours=1).assign(timestamp=lambda f: f["timestamp"] + pd.Timedelta(hours=5)) \
        .to_parquet(late, index=False)
    report = store.ingest([late])
    assert [f.status for f in report.files] == ["ingested"]
    said = [w.message for w in report.warnings if "not merged" in w.message]
    assert len(said) == 1 and gone.name in said[0] and "the readings are stored" in said[0]
    capsys.readouterr()
    assert main(["compact", "--store", str(tmp_path / "store")]) == 3
    out, err = capsys.readouterr()
    assert out.startswith("1 day held in ") and "n0 2026-03-01 not merged" in err and gone.name in err
    assert len(_parts(store, "n1")) == 1 and len(_parts(store, "n0")) == 26
