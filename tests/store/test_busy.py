"""A part's busy links (those breaking a rule in it, or not up) kept in row groups of their own: a history of flagged
links decodes those alone, and every read keeps the same rows as before."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from diagnostics.config.thresholds import load_thresholds
from diagnostics.store import parts
from diagnostics.store.busy import Bars, busy_rows
from diagnostics.store.telemetry import TelemetryStore
from diagnostics.store.writing import LINK_ORDER
from diagnostics.tables import LINK_IDENTITY

from .test_window import START, Spy

STEP = timedelta(minutes=5)


def _link(link: int, count: int = 12, **columns: Any) -> list[dict[str, Any]]:
    """A link's readings five minutes apart, each column a value per reading (a list) or the same in each."""
    return [{"timestamp": START + i * STEP, "node_id": "n0", "gpu": 0, "link_type": "nvlink", "link": link,
             **{k: (v[i] if isinstance(v, list) else v) for k, v in columns.items()}} for i in range(count)]


def _busy(rows: list[dict[str, Any]], bars: Bars | None = None) -> dict[int, bool]:
    frame = pd.DataFrame(rows)
    got = busy_rows(frame, list(LINK_IDENTITY), bars or Bars.of(load_thresholds()), apart=list(LINK_ORDER))
    return {int(k): bool(v.all()) for k, v in pd.Series(got).groupby(frame["link"])}


def test_a_link_is_busy_where_it_breaks_a_rule_between_two_readings_or_is_not_up() -> None:
    rising = [float(200 * i) for i in range(12)]  # 2,400 replays an hour: above 1,000
    rows = [*_link(0, replay=rising), *_link(1, replay=[float(i) for i in range(12)]),  # 12 an hour
            *_link(2, crc_flit=[5.0 * i for i in range(12)], crc_data=[5.0 * i for i in range(12)]),  # 60 + 60 CRC
            *_link(3, replay=[*rising[:6], *[0.0] * 6]),  # reset to zero: no rise after it
            *_link(4, replay=0.0, link_state="down"), *_link(5, replay=np.nan), *_link(6, recovery=[0.0] * 11 + [1.0])]
    assert _busy(rows) == {0: True, 1: False, 2: True, 3: True, 4: True, 5: False, 6: True}
    calm = [*_link(3, replay=[*[float(i) for i in range(6)], *[0.0] * 6])]
    assert _busy(calm) == {3: False}  # a counter reset is no rise
    gaps = _link(7, replay=[v if i % 2 else np.nan for i, v in enumerate(rising)])  # read every other scrape
    shouted = _link(8, replay=0.0, link_state="Down")
    assert _busy([*gaps, *shouted]) == {7: True, 8: True}
    chips = [{**r, "gpu": None, "link_type": "nvswitch", "nvswitch": chip}
             for chip, total in (("0", 1000.0), ("1", 0.0)) for r in _link(9, replay=total)]
    assert _busy(sorted(chips, key=lambda r: r["timestamp"])) == {9: False}  # one port of two switches, both flat
    chips[0]["replay"] = 0.0  # the first switch's port rose by 1,000 in its first five minutes
    assert _busy(chips) == {9: True}  # both switches' rows of the port: they keep their order


def test_a_link_is_judged_by_its_own_type_s_rules_and_the_limits_in_force() -> None:
    fast = [float(200 * i) for i in range(12)]
    rows = [*_link(0, replay=fast), *[{**r, "link_type": "pcie", "link": 1} for r in _link(1, replay=fast)]]
    assert _busy(rows) == {0: True, 1: True}
    raised = load_thresholds(overrides={"nvlink_replay": 5000.0})
    assert _busy(rows, Bars.of(raised)) == {0: False, 1: True}  # the PCIe rule still at 1,000
    narrow = [{**r, "link_type": "pcie", "link": 2} for r in _link(2, width=8, max_width=16)]
    assert _busy(narrow) == {2: True}
    slow = [{**r, "link_type": "pcie", "link": 3} for r in _link(3, gen=1, max_gen=5)]  # idle: power saving
    assert _busy(slow) == {3: False}


def _fleet(hours: int = 6) -> pd.DataFrame:
    """Two nodes of four links on two GPUs each over `hours`, scraped every five minutes: n0's GPU 1 link 2 fails
    (2,400 replays an hour), n1's GPU 0 link 3 went down in the last hour; the others count a few errors."""
    rows = []
    for i in range(hours * 12):
        for node in ("n0", "n1"):
            for gpu in range(2):
                for link in range(4):
                    failing = (node, gpu, link) == ("n0", 1, 2)
                    down = (node, gpu, link) == ("n1", 0, 3) and i >= (hours - 1) * 12
                    rows.append({"timestamp": START + i * STEP, "node_id": node, "gpu": gpu, "link_type": "nvlink",
                                 "link": link, "replay": float(200 * i if failing else i), "crc_flit": float(i // 3),
                                 "link_state": "down" if down else "up"})
    return pd.DataFrame(rows)


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TelemetryStore, TelemetryStore]:
    """The same readings in a store that sets busy links apart and in one that does not (row groups of an hour for
    these few links)."""
    monkeypatch.setattr(parts, "MIN_GROUP_ROWS", 64)
    source = tmp_path / "links.parquet"
    _fleet().to_parquet(source, index=False)
    apart = TelemetryStore(tmp_path / "apart")
    apart.ingest([source])
    with monkeypatch.context() as patched:
        patched.setattr(parts, "busy_rows", lambda frame, identity, bars, **_: np.zeros(len(frame), dtype=bool))
        together = TelemetryStore(tmp_path / "together")
        together.ingest([source])
    return apart, together


def test_busy_links_are_written_in_row_groups_of_their_own(stores: tuple[TelemetryStore, TelemetryStore]) -> None:
    apart, together = stores
    for store, groups in ((apart, 6 + 1), (together, 6)):  # an hour a group; and the busy link's six hours
        part = next((store.root / "link_samples" / "node=n0").rglob("*.parquet"))
        table = pq.read_table(part)
        metadata = pq.read_metadata(part)
        assert metadata.num_row_groups == groups
        if store is apart:
            last = pq.ParquetFile(part).read_row_group(groups - 1).to_pandas()
            assert set(zip(last["gpu"], last["link"], strict=True)) == {(1, 2)}
            assert len(last) == 6 * 12 and table.num_rows == 6 * 12 * 8


def test_every_read_keeps_the_same_rows_and_a_history_of_busy_links_decodes_their_groups_alone(
        stores: tuple[TelemetryStore, TelemetryStore], monkeypatch: pytest.MonkeyPatch) -> None:
    apart, together = stores
    end = START + timedelta(hours=6)
    for span in (timedelta(hours=1), timedelta(hours=5), timedelta(hours=7)):
        pd.testing.assert_frame_equal(apart.read_window(end=end, span=span).tables["link_samples"],
                                      together.read_window(end=end, span=span).tables["link_samples"])
    busy = [("n0", 1, 2), ("n1", 0, 3)]

    def chosen(ids: pd.DataFrame) -> np.ndarray:
        return np.array([k in busy for k in zip(ids["node_id"].astype(str), ids["gpu"], ids["link"], strict=True)])

    spies, got = {}, {}
    for name, store in (("apart", apart), ("together", together)):
        spy = spies[name] = Spy()
        with monkeypatch.context() as patched:
            spy.install(patched)
            got[name] = store.link_history(["n0", "n1"], start=START, end=end, columns=["replay"], select=chosen)
    pd.testing.assert_frame_equal(got["apart"], got["together"])
    held = got["apart"]
    assert sorted(set(zip(held["node_id"].astype(str), held["gpu"], held["link"], strict=True))) == sorted(busy)
    assert len(held) == 2 * 6 * 12
    assert len(spies["apart"].read) == 2 and len(spies["together"].read) == 2 * 6  # a group a node, not each hour


def test_rows_of_one_link_and_time_keep_their_order_when_one_of_them_is_busy(tmp_path: Path) -> None:
    """A link read twice a scrape under two peer names, one reading down: the engine takes the last of a link's
    readings of one time, so the part keeps them in the order they came, busy or not, and the answer is the one a
    store without busy groups gives."""
    rows = []
    for i in range(36):
        at = START + i * STEP
        rows.append({"timestamp": at, "node_id": "n0", "gpu": 0, "link_type": "nvlink", "link": 4, "peer": "GPU 1",
                     "replay": 0.0, "link_state": "down"})
        rows.append({"timestamp": at, "node_id": "n0", "gpu": 0, "link_type": "nvlink", "link": 4, "peer": None,
                     "replay": float(i), "link_state": "up"})
        rows.extend({"timestamp": at, "node_id": "n0", "gpu": 0, "link_type": "nvlink", "link": link,
                     "replay": float(i), "link_state": "up"} for link in range(4))
    source = tmp_path / "links.parquet"
    pd.DataFrame(rows).to_parquet(source, index=False)
    apart = TelemetryStore(tmp_path / "apart")
    apart.ingest([source])
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(parts, "busy_rows", lambda frame, identity, bars, **_: np.zeros(len(frame), dtype=bool))
        together = TelemetryStore(tmp_path / "together")
        together.ingest([source])
    end = START + 35 * STEP
    got = {name: store.read_window(end=end, span=timedelta(hours=5)).tables["link_samples"]
           for name, store in (("apart", apart), ("together", together))}
    pd.testing.assert_frame_equal(got["apart"], got["together"])
    assert list(got["apart"]["link_state"].astype(str)[got["apart"]["link"] == 4][:2]) == ["down", "up"]
    part = next((apart.root / "link_samples").rglob("*.parquet"))
    assert pq.read_metadata(part).num_row_groups == 2  # the link's two readings a scrape, both busy
