"""format_exposition writes link_samples that the dcgm reader reads back to the same rows."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import READER
from diagnostics.ingest.dcgm_write import format_exposition
from diagnostics.tables import LINK_SAMPLES

KEY = ["timestamp", "node_id", "gpu", "link_type", "link", "nvswitch", "gpu_total"]
VALUES = ["crc_flit", "crc_data", "replay", "recovery", "symbol_errors", "tx_bytes_per_s", "effective_ber"]


def frame() -> pd.DataFrame:
    t0 = pd.Timestamp("2026-03-01T00:00Z")
    rows = []
    for minute in range(3):
        ts = t0 + pd.Timedelta(minutes=minute)
        for gpu in range(2):
            for link in range(3):
                rows.append({"timestamp": ts, "node_id": 'rack "a"', "gpu": gpu, "link_type": "nvlink",
                             "link": link, "gpu_total": False, "crc_flit": float(minute * link),
                             "replay": float(65535 if (gpu, link) == (1, 2) else minute), "recovery": 0.0})
            rows.append({"timestamp": ts, "node_id": 'rack "a"', "gpu": gpu, "link_type": "nvlink",
                         "gpu_total": True, "replay": 10.0 + minute, "tx_bytes_per_s": 2.5e10,
                         "symbol_errors": 4.0, "effective_ber": 1.25e-15})
            rows.append({"timestamp": ts, "node_id": 'rack "a"', "gpu": gpu, "link_type": "pcie",
                         "gpu_total": False, "replay": 3.0})
        rows.append({"timestamp": ts, "node_id": 'rack "a"', "link_type": "nvswitch", "nvswitch": "1",
                     "link": 40, "gpu_total": False, "replay": 8.0, "crc_data": 1.0})
    return LINK_SAMPLES.conform(pd.DataFrame(rows))


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    out = df[KEY + VALUES + ["saturated"]].copy()
    for col in ("node_id", "link_type", "nvswitch"):
        out[col] = out[col].astype("string")
    return out.sort_values(KEY[:6], na_position="first").reset_index(drop=True)


@pytest.mark.parametrize("openmetrics", [False, True])
def test_round_trip(openmetrics: bool) -> None:
    original = frame()
    original["saturated"] = original["replay"] == 65535
    lines = list(format_exposition(original, openmetrics=openmetrics))
    assert (lines[-1] == "# EOF") is openmetrics
    names = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(names) == len(set(names))  # each metric family written once, all together
    back = READER.read(Source.from_text("\n".join(lines) + "\n", name="w.prom"))
    assert not back.warnings
    pd.testing.assert_frame_equal(canonical(back["link_samples"]), canonical(original), check_dtype=False)


def test_per_link_rows_use_per_link_names_and_totals_plain_names() -> None:
    lines = list(format_exposition(frame()))
    assert any(line.startswith('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L2{gpu="1",Hostname="rack \\"a\\""} 65535 ')
               for line in lines)
    assert any(line.startswith("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{") for line in lines)
    assert any(line.startswith('DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERRORS{nvswitch="1",nvlink="40",') for line in lines)
    assert any(line.endswith(" 1772323200000") for line in lines)  # milliseconds in Prometheus text
