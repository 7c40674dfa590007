"""A GPU whose NVLinks NVML reports as all inactive (`nvidia-smi nvlink -s` prints one line instead of its links)
reaches the diagnosis as a fault on that GPU through every door: one file given to `analyze`, the store, and a
paste in a Slack thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bot.commands.conftest import Cli
from tests.bot.helpers import OPS, local_bot, posted, summary_for

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
SAMPLE = REAL / "nvlink_s_b200_all_inactive_1.txt"  # gpud #1085: GPU 2 of a B200 node


def _inactive_gpus(diagnosis: dict[str, Any]) -> dict[int, int]:
    """GPU -> how many of its NVLinks the diagnosis holds as inactive and down."""
    seen: dict[int, int] = {}
    for f in diagnosis["findings"]:
        if f["link_state"] == "inactive" and f["severity"] == "down":
            seen[f["gpu"]] = seen.get(f["gpu"], 0) + 1
    return seen


def test_all_inactive_is_a_fault_on_that_gpu_through_the_file_and_the_store(tmp_path: Path, cli: Cli) -> None:
    code, out, err = cli("analyze", str(SAMPLE), "--node", "b200-n1", "--json")
    assert code == 0, err
    alone = json.loads(out)
    assert alone["fault_detected"] and alone["isolated_component"] == "GPU 2"
    assert _inactive_gpus(alone) == {2: 18} and alone["localization"]["gpu"] == 2
    store = tmp_path / "store"
    code, out, err = cli("ingest", str(SAMPLE), "--store", str(store), "--node", "b200-n1",
                         "--at", "2026-03-01T12:00:00Z")
    assert code == 0, err
    code, out, err = cli("analyze", "--store", str(store), "--node", "b200-n1", "--json")
    assert code == 0, err
    stored = json.loads(out)
    assert _inactive_gpus(stored) == _inactive_gpus(alone)
    assert (stored["isolated_component"], stored["ticket_priority"]) == (alone["isolated_component"],
                                                                        alone["ticket_priority"]) == ("GPU 2", "high")


def test_a_pasted_all_inactive_gpu_is_said_first_with_its_links() -> None:
    with local_bot() as local:
        root = summary_for(local, "hpc-gpu-node-12")
        local.injector.message("```\n$ nvidia-smi nvlink -s\n" + SAMPLE.read_text() + "```", user="UALICE",
                               channel=OPS, thread_ts=root.ts)
        assert local.slack.wait_for(lambda s: posted(s, thread=root.ts))
        reply = posted(local.slack, thread=root.ts)[0].shown
    first, *rest = reply.splitlines()
    assert "has a failing GPU 2" in first and "Priority high" in first
    assert "• GPU 2 NVLinks 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17: inactive" in rest
    assert "0 of 18 links up" in rest and "show no errors" not in reply  # `nvlink -s`: states, no counters
