"""A platform no one named is a guess the ticket's part and steps rest on: the ticket says so, through the file and
the store alike, and says nothing when the platform was named."""

from __future__ import annotations

from pathlib import Path

from diagnostics.service import Request, diagnose, files_source
from diagnostics.tickets import RulesDrafter
from tests.service.test_nvidia_smi_gpus import NODE, readings, through_both


def test_a_platform_taken_from_the_gpu_model_is_a_warning_of_the_ticket(tmp_path: Path) -> None:
    paths = readings(tmp_path / "in", list(range(8)), replays=0)
    paths[1].write_text(paths[1].read_text(encoding="utf-8").replace("Link 3: Replay Errors: 0",
                                                                     "Link 3: Replay Errors: 9000", 1),
                        encoding="utf-8")
    by_file, by_store = through_both(paths, tmp_path)
    for got in (by_file, by_store):
        assert got.platform == "hgx-h100-8gpu" and got.fault_detected
        assert got.platform_guess == "taken from the GPU model 'NVIDIA H100 80GB HBM3'"
        (said,) = [w for w in RulesDrafter().draft(got).warnings if "not named" in w]
        assert said.startswith("the platform, hgx-h100-8gpu, was taken from the GPU model 'NVIDIA H100 80GB HBM3', "
                               "not named: the part and the steps rest on it")
    named = diagnose(files_source(paths, node=NODE)[0], Request(node=NODE, platform="hgx-h100-8gpu")).diagnosis
    assert named.platform_guess is None and not [w for w in RulesDrafter().draft(named).warnings if "not named" in w]


def test_a_platform_fitted_to_the_nodes_own_topology_is_said_too() -> None:
    """A `topo -m` that fits a platform's template chose it silently; an H100 board's fits three alike."""
    real = Path(__file__).parents[2] / "fixtures" / "real" / "topo_m_hgx_h100_1.txt"
    source, _, _ = files_source([real], node="t")
    got = diagnose(source, Request(node="t")).diagnosis
    assert got.platform == "hgx-h100-8gpu" and got.platform_guess is not None
    assert "fitted to the node's own topology" in got.platform_guess
    assert any(w.startswith("platform hgx-h100-8gpu fitted to the node's own topology") for w in got.warnings)
    named = diagnose(source, Request(node="t", platform="hgx-h100-8gpu")).diagnosis
    assert named.platform_guess is None
