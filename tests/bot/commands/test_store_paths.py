"""`analyze`, `ticket` and `render` of a node in a store holding one real output, and ingest of a paste that names
no node: answers and clear errors, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnostics.store.telemetry import TelemetryStore
from tests.bot.commands.conftest import Cli

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
SAMPLES = REAL.parent / "samples"


@pytest.fixture
def scrape_store(tmp_path: Path, cli: Cli) -> str:
    """One real dcgm-exporter scrape (no step samples, no times), as `fabricbot ingest --store` keeps it."""
    store = str(tmp_path / "st")
    assert cli("ingest", str(REAL / "dcgm_metrics_a100_1.txt"), "--store", store)[0] == 0
    return store


def test_analyze_a_stored_scrape_without_step_samples(scrape_store: str, cli: Cli) -> None:
    code, out, err = cli("analyze", "--store", scrape_store, "--node", "axa", "--json")
    diagnosis = json.loads(out)
    # its readings are held, none with a time: its health is unknown (exit 3), said on stderr as in the answer
    assert code == 3 and "no time" in err and diagnosis["node_id"] == "axa" and diagnosis["job_id"] is None
    assert any("no time" in w and "--at" in w for w in diagnosis["warnings"])  # why no window holds them
    assert diagnosis["platform"] == "dgx-a100-8gpu"  # from the GPU model the stored GPU rows name
    assert any("taken from the GPU model" in w for w in diagnosis["warnings"])


def test_ticket_for_a_stored_scrape_without_step_samples(scrape_store: str,
                                                         cli: Cli) -> None:
    code, _, err = cli("ticket", "axa", "--store", scrape_store, "--rules")
    assert code == 3 and "no time" in err and "nothing to repair" not in err and "Traceback" not in err


def test_a_paste_naming_no_node_is_refused_with_the_file_and_what_to_pass(tmp_path: Path,
                                                                         cli: Cli) -> None:
    paste = SAMPLES / "nvidia_smi_q_fabric_h100.txt"
    store = str(tmp_path / "st")
    code, _, err = cli("ingest", str(paste), "--store", store)
    assert code == 1 and "nvidia_smi_q_fabric_h100.txt" in err and "--node" in err and "gpus" in err
    assert TelemetryStore(store).nodes() == []  # nothing half-stored
    assert cli("ingest", str(paste), "--store", store, "--node", "h100-7")[0] == 0
    gpus = TelemetryStore(store).gpus("h100-7")
    assert gpus["gpu"].tolist() == [0, 1]


def test_rows_without_a_node_take_the_one_the_rest_of_the_input_names(tmp_path: Path) -> None:
    table = tmp_path / "gpus.csv"
    table.write_text("node_id,gpu,uuid\nn1,0,GPU-aaaa\n,1,GPU-bbbb\n")
    store = TelemetryStore(tmp_path / "st")
    assert [f.status for f in store.ingest([table]).files] == ["ingested"]
    assert store.gpus("n1")["uuid"].tolist() == ["GPU-aaaa", "GPU-bbbb"] and store.nodes() == ["n1"]


def test_render_a_stored_node_draws_its_findings(tmp_path: Path, cli: Cli) -> None:
    store = str(tmp_path / "st")
    assert cli("ingest", str(REAL / "nvlink_s_v100_inactive_1.txt"), "--store", store, "--node", "v100-1",
               "--at", "2026-03-01T08:00:00Z")[0] == 0
    (tmp_path / "nodes.csv").write_text("node_id,platform\nv100-1,dgx1-v100-8gpu\n")
    assert cli("ingest", str(tmp_path / "nodes.csv"), "--store", store)[0] == 0
    picture = tmp_path / "v100.svg"
    code, out, _ = cli("render", "v100-1", "--store", store, "-o", str(picture))
    svg = picture.read_text()
    assert code == 0 and "dgx1-v100-8gpu" in out
    assert "topology only" not in svg and "2 failing/down" in svg
    assert "window 1 h to 2026-03-01 08:00 UTC" in svg
    code, out, _ = cli("analyze", "--store", store, "--node", "v100-1", "--json")
    diagnosis = json.loads(out)
    assert diagnosis["fault_detected"] and diagnosis["platform"] == "dgx1-v100-8gpu"
    assert "GPU 3" in diagnosis["isolated_component"]
    code, out, _ = cli("analyze", "--store", store, "--node", "v100-1")
    assert code == 0 and "window 1 h to 2026-03-01 08:00 UTC" in out.splitlines()[0]
    code, out, _ = cli("ticket", "v100-1", "--store", store, "--rules", "--json")
    assert code == 0 and json.loads(out)["node_id"] == "v100-1" and json.loads(out)["gpu_index"] == 3
