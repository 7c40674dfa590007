"""A failing NVLink carrying far less than its GPU's other NVLinks under the same load runs narrower (lanes down);
one carrying as much as they do is not (congestion fills every link)."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.topology import platform_graph


def _tables(slow_link_traffic: float, others: float) -> dict[str, pd.DataFrame]:
    graph = platform_graph("hgx-h100-8gpu")
    times = pd.date_range("2026-03-01", periods=13, freq="5min", tz="UTC")
    hours = (times - times[0]).total_seconds().to_numpy() / 3600
    frames = [pd.DataFrame({"timestamp": times, "node_id": "n1", "gpu": p.gpu, "link_type": "nvlink",
                            "link": p.link, "peer": p.peer, "crc_data": 0.0, "speed_gbps": 26.562,
                            "replay": hours * 5000.0 if (p.gpu, p.link) == (3, 4) else 0.0,
                            "tx_bytes_per_s": slow_link_traffic if (p.gpu, p.link) == (3, 4) else others})
              for g in graph.gpus for p in graph.links_of(g) if p.link_type == "nvlink"]
    return {"link_samples": pd.concat(frames, ignore_index=True)}


@pytest.mark.parametrize(("slow", "others", "narrower"), [(2e9, 10e9, True), (10e9, 10e9, False),
                                                          (0.2e9, 0.4e9, False)])  # idle: nothing to compare
def test_a_failing_link_short_of_its_siblings_traffic_runs_narrower(slow: float, others: float,
                                                                    narrower: bool) -> None:
    d = analyze_tables(_tables(slow, others), node_id="n1", platform="hgx-h100-8gpu")
    link = next(f for f in d.findings if (f.gpu, f.link) == (3, 4))
    said = [e for e in link.evidence if "narrower link" in e]
    assert bool(said) is narrower
    if narrower:
        assert said[0].startswith("carries 20% of the median traffic of GPU 3's NVLinks (2 of 10 GB/s)")
