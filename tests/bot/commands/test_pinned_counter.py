"""A replay counter pinned at its 16-bit maximum in both readings counts no further: its 0/h is no rate, so no door
may clear the link on it; where its lower bound already fails the rule, it fails."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli
from .test_cut_second_reading import _reading, unjudged_in_store


def _paste(tmp_path: Path, first: int, second: int) -> Path:
    path = tmp_path / f"replays_{first}_{second}.txt"
    path.write_text(_reading("Mon Jun  2 10:00:00 UTC 2025", first) + _reading("Mon Jun  2 10:10:00 UTC 2025", second))
    return path


def test_a_counter_pinned_in_both_readings_leaves_its_rate_unknown_at_every_door(tmp_path: Path, cli: Cli) -> None:
    code, out, _ = cli("analyze", str(_paste(tmp_path, 1200, 9000)), "--node", "gpu-x", "--json")
    assert code == 0 and json.loads(out)["fault_detected"]  # unpinned: 7,800 replays in 10 min fail link 7

    pinned = _paste(tmp_path, 65535, 65535)
    code, out, err = cli("analyze", str(pinned), "--node", "gpu-x", "--json")
    diagnosis = json.loads(out)
    assert code == 3 and not diagnosis["fault_detected"] and diagnosis["pinned"] == 1
    [link] = [f for f in diagnosis["findings"] if f["link"] == 7]
    assert "replay" not in link["rates_per_hour"]  # unknown, not 0/h
    assert "gpu-x: 1 link with a counter pinned at its maximum, so no error rate is known" in err
    code, out, _ = cli("analyze", str(pinned), "--node", "gpu-x")
    assert code == 3 and " fault=unknown " in out.splitlines()[0]
    assert "(18 more links: 17 within thresholds, 1 with a counter pinned at its maximum: its rate unknown)" in out
    assert "warning: GPU 2 NVLink 7: replays pinned at 65,535" in out

    unjudged_in_store(tmp_path, cli, pinned, ("pinned", 1), "pinned at its maximum")


def test_a_counter_pinned_after_a_rise_that_already_fails_fails(tmp_path: Path, cli: Cli) -> None:
    code, out, _ = cli("analyze", str(_paste(tmp_path, 60000, 65535)), "--node", "gpu-x", "--json")
    diagnosis = json.loads(out)
    assert code == 0 and diagnosis["fault_detected"] and diagnosis["pinned"] == 0  # at least 33,000/h: it fails
    [crossing] = [c for f in diagnosis["findings"] for c in f["crossed"] if c["counter"] == "replay"]
    assert "lower bounds" in crossing["message"]
