"""A rack's candidate units say the failing links they weigh apart in words that agree with their count: a chip's
GPUs failing on other chips too, a compute tray's chips failed by other trays' links too."""

from __future__ import annotations

import pytest

from diagnostics.analysis.rack_localize import Placed, _candidates, _Path
from diagnostics.topology.rack import rack_graph
from tests.analysis.test_localize import bad

RACK = rack_graph("gb200-nvl72")


def _path(tray: str, gpu: int, link: int, switch_tray: str, chip: int) -> _Path:
    f = bad(gpu, link, f"NVSwitch {chip}")
    return _Path((tray, gpu, link), [Placed(f, f"r-c{tray}", f.ref, tray=tray, gpu=gpu, link=link,
                                            switch_tray=switch_tray, chip=chip)])


def _why(paths: list[_Path]) -> list[str]:
    return [u.why for u in _candidates(paths, RACK, RACK.spec.localize)]


@pytest.mark.parametrize(("extra", "said"), [(1, "those GPUs fail 1 link on other chips too"),
                                             (2, "those GPUs fail 2 links on other chips too")])
def test_a_chips_gpus_failing_elsewhere_are_counted_so(extra: int, said: str) -> None:
    on_chip = [_path("1", 0, 0, "1", 1), _path("2", 0, 0, "1", 1)]  # two GPUs' links land on Switch tray 1 chip 1
    elsewhere = [_path("1", 0, 1 + k, "2", 1 + k) for k in range(extra)]  # GPU 0 of tray 1 fails on other chips
    (chip,) = [w for w in _why(on_chip + elsewhere) if "Switch tray 1 chip 1" in w]
    assert f"{said}, weighed apart" in chip, chip


@pytest.mark.parametrize(("extra", "said"), [(1, "1 link of other trays fails on those chips too"),
                                             (2, "2 links of other trays fail on those chips too")])
def test_a_trays_chips_failed_by_other_trays_are_counted_so(extra: int, said: str) -> None:
    tray = [_path("3", 0, 0, "1", 1), _path("3", 1, 1, "1", 2), _path("3", 1, 2, "2", 1)]  # three chips
    others = [_path(str(5 + k), 0, 0, "1", 1) for k in range(extra)]
    (own,) = [w for w in _why(tray + others) if "of Compute tray 3 run to" in w]
    assert f"run to 3 different chips and {said}:" in own, own
