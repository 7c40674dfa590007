"""A repair is judged on readings since it, window by window: held after a clean soak, failed when errors return."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis.verify import RepairVerdict, check_repair
from diagnostics.config.verification import load_verification
from diagnostics.errors import ConfigError
from diagnostics.service import StoreSource, verify_repair
from diagnostics.store import open_store

from .helpers import T0, link_series, links, steady

PART = "gpu2-nvlink1"
SOAK = load_verification(soak_hours=6)
SAMPLES = 6 * 12 + 1  # six hours at 5 min


def _node(repaired: list[float] | dict[str, list[float]], *, n: int = SAMPLES) -> pd.DataFrame:
    """GPU 2 link 1 with `repaired` replay totals (or several counters) since the repair, beside a healthy link."""
    counters = repaired if isinstance(repaired, dict) else {"replay": repaired}
    return links(link_series({k: v[:n] for k, v in counters.items()}, gpu=2, link=1),
                 link_series(steady(2.0, n), gpu=0, link=0))


def _check(frame: pd.DataFrame, **kw: object):
    return check_repair({"link_samples": frame}, node_id="n1", parts={PART}, repaired_at=T0.to_pydatetime(),
                        now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(), **{"policy": SOAK, **kw})


def test_a_clean_soak_holds() -> None:
    check = _check(_node(steady(3.0, SAMPLES)))
    assert check.verdict is RepairVerdict.HELD and (check.windows, check.covered) == (6, 6)
    assert check.summary.startswith("the repair held: 6 h of readings clean")


def test_errors_that_return_fail_the_repair_in_the_window_they_return() -> None:
    clean = steady(3.0, 37)  # three clean hours, then 6,000 replays an hour
    back = [clean[-1] + v for v in steady(6000.0, SAMPLES - 37 + 1)[1:]]
    check = _check(_node(clean + back))
    assert check.verdict is RepairVerdict.FAILED and check.windows == 4
    assert "GPU 2 NVLink 1" in check.evidence[0] and "2026-03-01 04:00" in check.evidence[0]
    assert check.summary.startswith("the repair did not hold: ")


def test_warnings_keep_it_verifying_by_default_and_reopen_it_when_asked() -> None:
    frame = _node({"replay": steady(3.0, SAMPLES), "crc_flit": steady(150.0, SAMPLES)})  # CRC over its warning rate
    lenient = _check(frame)
    strict = _check(frame, policy=load_verification(soak_hours=6, reopen_at="warning"))
    assert lenient.verdict is RepairVerdict.HELD and any("GPU 2 NVLink 1" in e for e in lenient.evidence)
    assert strict.verdict is RepairVerdict.FAILED


def test_a_soak_too_short_or_without_readings_of_the_part_is_still_verifying() -> None:
    early = check_repair({"link_samples": _node(steady(3.0, 13), n=13)}, node_id="n1", parts={PART},
                         repaired_at=T0.to_pydatetime(), now=(T0 + pd.Timedelta(hours=1)).to_pydatetime(),
                         policy=SOAK)
    assert early.verdict is RepairVerdict.HOLDING and (early.windows, early.covered) == (1, 1)
    other = links(link_series(steady(2.0, SAMPLES), gpu=0, link=0))  # the node reports, the part does not
    blind = _check(other)
    assert blind.verdict is RepairVerdict.HOLDING and blind.covered == 0
    assert "only 0 of 6 windows hold a reading of the part" in blind.evidence[0]


def test_the_stored_check_reads_only_what_came_after_the_repair(tmp_path: Path) -> None:
    before = links(link_series(steady(9000.0, 13), gpu=2, link=1, start=T0 - pd.Timedelta(hours=1)))
    after = _node(steady(3.0, SAMPLES))
    csv = tmp_path / "links.csv"
    pd.concat([before, after]).to_csv(csv, index=False)
    store = open_store(tmp_path / "store")
    assert store.ingest([csv], fmt="tables").files[0].status == "ingested"
    check = verify_repair(StoreSource(store), node="n1", parts={PART}, repaired_at=T0.to_pydatetime(), policy=SOAK)
    assert check.verdict is RepairVerdict.HELD, check
    none_yet = verify_repair(StoreSource(store), node="n1", parts={PART},
                             repaired_at=(T0 + pd.Timedelta(hours=7)).to_pydatetime(), policy=SOAK)
    assert none_yet.verdict is RepairVerdict.HOLDING and none_yet.windows == 0


def test_a_bad_policy_names_its_field_and_value() -> None:
    with pytest.raises(ConfigError, match=r"soak_hours.*-1"):
        load_verification(soak_hours=-1)
