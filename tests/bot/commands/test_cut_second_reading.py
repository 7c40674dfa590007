"""Two readings of `nvidia-smi nvlink -e` pasted as one, the second cut before the failing link: the links it did
not reach hold one reading (totals, no rates), so no door may call the node healthy."""

from __future__ import annotations

import json
from pathlib import Path

from tests.shared import answered_exit

from .conftest import Cli


def _reading(when: str, replays: int, links: int = 18) -> str:
    lines = [f"$ date\n{when}\n$ nvidia-smi nvlink -e -i 2\n",
             "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"]
    for link in range(links):
        bad = link == 7
        lines.append(f"\t Link {link}: Replay Errors: {replays if bad else 0}\n"
                     f"\t Link {link}: Recovery Errors: {2 if bad else 0}\n"
                     f"\t Link {link}: CRC Errors: {40 if bad else 0}\n")
    return "".join(lines)


def _paste(tmp_path: Path, *, cut: bool) -> Path:
    second = _reading("Mon Jun  2 10:10:00 UTC 2025", 9000)
    if cut:
        second = second[:second.index("\t Link 6: Recovery")] + "\t Link 6: Rep"
    path = tmp_path / ("cut.txt" if cut else "whole.txt")
    path.write_text(_reading("Mon Jun  2 10:00:00 UTC 2025", 1200) + second)
    return path


def unjudged_in_store(tmp_path: Path, cli: Cli, paste: Path, field: tuple[str, int], reason: str) -> Path:
    """The paste ingested as gpu-x: the store's answer incomplete with its `field`'s count, and a sweep's calling the
    node unjudged for `reason`; the store."""
    store = tmp_path / "store"
    assert cli("ingest", str(paste), "--store", str(store), "--node", "gpu-x")[0] == 0
    code, out, _ = cli("analyze", "--store", str(store), "--node", "gpu-x", "--json")
    assert code == 3 and json.loads(out)[field[0]] == field[1]
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert code == 3 and not swept["complete"] and swept["unjudged"] == ["gpu-x"]
    assert any(reason in r for r in swept["incomplete_reasons"])
    return store


def test_a_second_reading_cut_before_the_failing_link_is_no_all_clear_at_any_door(tmp_path: Path, cli: Cli) -> None:
    whole = _paste(tmp_path, cut=False)
    code, out, _ = cli("analyze", str(whole), "--node", "gpu-x", "--json")
    assert code == 0 and json.loads(out)["fault_detected"]  # read whole: link 7's 7,800 replays in 10 min fail it

    cut = _paste(tmp_path, cut=True)
    code, out, err = cli("analyze", str(cut), "--node", "gpu-x", "--json")
    diagnosis = json.loads(out)
    assert code == 3 == answered_exit(out) and not diagnosis["fault_detected"]
    assert diagnosis["read_once"] == 11 and "Read the counters again" in diagnosis["repair_action"]
    assert "gpu-x: 11 links read once, so no error rate is known" in err
    code, out, _ = cli("analyze", str(cut), "--node", "gpu-x")
    assert code == 3 and " fault=unknown " in out.splitlines()[0] and "11 read once" in out

    store = unjudged_in_store(tmp_path, cli, cut, ("read_once", 11), "one reading per link (or of some links)")
    code, _, err = cli("ticket", "gpu-x", "--store", str(store))
    assert code == 3 and "11 links read once" in err


def test_render_draws_the_cut_reading_as_not_cleared_and_exits_as_analyze_does(tmp_path: Path, cli: Cli) -> None:
    """The picture drew every link grey under "0 failing/down" and exited 0 where analyze says INCOMPLETE."""
    cut = _paste(tmp_path, cut=True)
    picture = tmp_path / "cut.svg"
    code, _, err = cli("render", str(cut), "--node", "gpu-x", "-o", str(picture))
    assert code == 3 and "gpu-x: 11 links read once, so no error rate is known" in err
    assert "health unknown (11 links read once)" in picture.read_text(encoding="utf-8")
    code, _, _ = cli("render", str(_paste(tmp_path, cut=False)), "--node", "gpu-x", "-o", str(picture))
    assert code == 0 and "health unknown" not in picture.read_text(encoding="utf-8")
