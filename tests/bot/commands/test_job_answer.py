"""A job is answered as the node whose link explains its slowdown; the job's other nodes with a fault are named
beside it, with whether their errors track the slowdown, through the file, the store and `/fabric job` alike (a
second failing node of the job went unnamed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from bot.mrkdwn import esc
from bot.nodes import StoreNodeSource
from diagnostics.store import open_store
from tests.analysis.helpers import link_series, links
from tests.bot.commands.conftest import Cli
from tests.bot.helpers import local_bot, summary_for

SAID = "job j1's other nodes with a fault: n2 GPU 3 NVLink 2 -> NVSwitch 0, priority medium: its errors do not track"


def job_of_two_failing_nodes(folder: Path) -> list[Path]:
    """Job j1 on n1 and n2, slowed at 05:00 the next day as n1's link starts failing; n2's link fails at one steady
    rate all along. Returns the tables' files."""
    start = pd.Timestamp("2026-03-01T12:00:00Z")
    n = 20 * 12 + 1
    slow = np.arange(n) >= 17 * 12
    ramp = np.concatenate(([0.0], np.cumsum(np.where(slow, 250.0, 1.0)[1:])))
    links(link_series(ramp, node="n1", start=start),
          link_series(np.arange(n) * 250.0, node="n2", start=start, gpu=3, link=2)).to_csv(folder / "links.csv",
                                                                                          index=False)
    pd.DataFrame({"timestamp": [start + pd.Timedelta(minutes=5 * i) for i in range(n)], "job_id": "j1",
                  "node_ids": "n1,n2", "step": range(n), "step_time_ms": np.where(slow, 260, 200)}
                 ).to_csv(folder / "steps.csv", index=False)
    return [folder / "links.csv", folder / "steps.csv"]


def test_a_jobs_other_failing_node_is_named_through_each_door(tmp_path: Path, cli: Cli) -> None:
    files = job_of_two_failing_nodes(tmp_path)
    open_store(tmp_path / "store").ingest(files, fmt="tables")
    answers = {}
    for door, argv in {"file": ["analyze", *map(str, files)],
                       "store": ["analyze", "--store", str(tmp_path / "store")]}.items():
        code, out, err = cli(*argv, "--job", "j1", "--json")
        answer = json.loads(out)
        assert code == 0 and answer["node_id"] == "n1" and "explains job j1" in answer["verdict"], err
        answers[door] = [w for w in answer["warnings"] if w.startswith("job j1's other")]
    assert answers["file"] == answers["store"] and len(answers["file"]) == 1 and answers["file"][0].startswith(SAID)
    code, out, _ = cli("analyze", "--store", str(tmp_path / "store"), "--node", "n1", "--json")
    assert not any(w.startswith("job j1's other") for w in json.loads(out)["warnings"])  # the node's own question
    with local_bot(source=StoreNodeSource(tmp_path / "store")) as local:
        shown = summary_for(local, "job j1")
    assert esc(answers["store"][0]) in str(shown.blocks), shown.blocks


def test_a_job_no_link_explains_is_answered_as_its_gravest_node(bundled_store: Path, cli: Cli) -> None:
    """The bundled job 4408 runs on hpc-gpu-node-06 (healthy, listed first) and hpc-gpu-node-13 (a fatal SXid) and
    has stopped: it was answered as node-06, "maintain routine monitoring", the fault a line below."""
    code, out, err = cli("analyze", "--store", str(bundled_store), "--job", "4408", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["node_id"] == "hpc-gpu-node-13" and answer["fault_detected"], err
    assert not any(w.startswith("job 4408's other nodes") for w in answer["warnings"])
