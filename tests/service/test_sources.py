"""Sources agree: tables held in memory and the store they were ingested into list the same nodes and place the same
trays in racks; the job door runs the engine once and answers as the node door answers that node with the job."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bot.cli import main
from bot.console.topology import analysis_of
from bot.nodes import StoreNodeSource
from bot.state import BotState
from diagnostics.ingest.exposition import parse_labels
from diagnostics.service import Request, Source, StoreSource, TableSource, diagnose, files_source, tables_source
from diagnostics.store import open_store
from diagnostics.store.load import load_tables
from tests.bot.helpers import local_bot, summary_for
from tests.conftest import FIXTURES
from tests.shared import answered_exit

service = importlib.import_module("diagnostics.service.diagnose")  # the module (the package's `diagnose` is a function)
NMXT = FIXTURES / "real" / "nmxt_lid_gb200_1.txt"
RACK = "chassis-1820325172739"  # the rack an NMX-T scrape names by its chassis when no --node names it


def _folder(tmp: Path) -> Path:
    """A rack inventory, an NMX-T scrape of one GPU link and of its switch port (the real series and its far end),
    and nodes named only by a job's steps, a topology table or a GPU table."""
    folder = tmp / "inputs"
    folder.mkdir()
    real = next(line for line in NMXT.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    body = real[real.index("{"):real.index("}") + 1]
    labels = parse_labels(body[1:-1])
    switch = (f'Effective_BER{{node_description="{labels["link_partner_description"]}", '
              f'Port_Number="{labels["link_partner_port_num"]}", chassis_id="{labels["chassis_id"]}"}} 4.2e-11 '
              "1781993954087")
    (folder / "nmxt.prom").write_text("# TYPE Effective_BER gauge\n" + f"Effective_BER{body} 1.5e-9 1781993954087\n"
                                      + f"Link_Down{body} 3 1781993954087\n" + switch + "\n", encoding="utf-8")
    pd.DataFrame({"node_id": ["r7-c18", "r7-s06", "spare-1"],
                  "platform": ["gb200-nvl72-compute-tray", "gb200-nvl72-switch-tray", "hgx-h100-8gpu"],
                  "rack": [RACK, RACK, ""], "tray": ["18", "6", ""]}).to_csv(folder / "nodes.csv",
                                                                                     index=False)
    pd.DataFrame({"timestamp": ["2026-06-22T10:00:00Z", "2026-06-22T10:01:00Z"], "job_id": ["j1", "j1"],
                  "step": [1, 2], "step_time_ms": [100.0, 101.0],
                  "node_ids": ["r7-c18,steps-only", "r7-c18,steps-only"]}).to_csv(folder / "steps.csv", index=False)
    pd.DataFrame({"node_id": ["topo-only"], "a": ["GPU0"], "b": ["GPU1"], "relation": ["NV18"]}).to_csv(
        folder / "topology.csv", index=False)
    pd.DataFrame({"node_id": ["gpus-only"], "gpu": [0], "uuid": ["GPU-0000"]}).to_csv(folder / "gpus.csv",
                                                                                      index=False)
    return folder


def test_tables_in_memory_and_the_store_list_the_same_nodes_and_place_the_same_trays(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    tables, warnings = tables_source([folder])
    open_store(tmp_path / "store").ingest([folder])
    stored = StoreSource(tmp_path / "store")
    assert tables.nodes() == stored.nodes()
    assert {"steps-only", "topo-only", "gpus-only", "spare-1", "r7-c18", "r7-s06"} <= set(tables.nodes())
    assert not any(n.startswith("nmx:") or "-tray" in n for n in tables.nodes())  # each tray read as its host
    assert tables.racks() == stored.racks() and tables.racks()["r7-c18"].rack == RACK
    for source in (tables, stored):
        got = source.read(nodes=["r7-c18", "r7-s06"], end=None, span=pd.Timedelta(hours=1).to_pytimedelta())
        assert set(got.tables["link_samples"]["node_id"].astype(str)) == {"r7-c18", "r7-s06"}, source.name
    assert not any("names no host" in w for w in warnings)


def test_the_files_and_the_store_answer_an_nmxt_tray_alike(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    answers = []
    for argv in (["analyze", str(folder), "--node", "r7-c18", "--json"],
                 ["analyze", "--store", str(tmp_path / "store"), "--node", "r7-c18", "--json"]):
        if "--store" in argv:
            assert main(["ingest", str(folder), "--store", str(tmp_path / "store")]) == 0
        capsys.readouterr()
        assert main(argv) == 0
        d = json.loads(capsys.readouterr().out)
        answers.append({k: d[k] for k in ("fault_detected", "isolated_component", "ticket_priority", "verdict",
                                          "repair_action", "ticket_owner")} | {"links": len(d["findings"])})
    assert answers[0] == answers[1] and answers[0]["links"] > 0


def test_a_lone_nmxt_scrape_is_answered_as_the_tray_it_places(capsys: pytest.CaptureFixture[str]) -> None:
    """`fabricbot analyze nmxt.prom` with no --node and no inventory: the one node is the tray kept under its place
    in the rack, the name every later answer uses (it asked for the scrape's raw `nmx:` name and found none)."""
    code = main(["analyze", str(NMXT), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == answered_exit(d)
    assert d["node_id"] == f"{RACK}-compute-tray18" and d["findings"]


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Engine passes the service runs from now on."""
    calls: list[int] = []
    real: Callable[..., Any] = service.analyze_fleet

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "analyze_fleet", counting)
    return calls


def _facts(d: Any) -> dict[str, Any]:
    data = d.model_dump(mode="json")
    return {k: data[k] for k in ("node_id", "fault_detected", "isolated_component", "degradation_pct",
                                 "ticket_priority", "verdict", "repair_action", "job_id", "ticket_owner",
                                 "warnings", "findings", "evidence")}


@pytest.mark.parametrize("job", ["4411", "4401"])
def test_the_job_door_runs_the_engine_once_and_answers_as_the_node_door(job: str, bundled_store: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    sources: list[Source] = [StoreSource(bundled_store),
                             TableSource(load_tables([FIXTURES / "fleet"]).tables, name="files")]
    for source in sources:
        calls = _counted(monkeypatch)
        answer = diagnose(source, Request(job=job))
        assert len(calls) == 1, source.name
        assert answer.job is not None and answer.job.job_id == job
        node = diagnose(source, Request(node=answer.diagnosis.node_id, job=job))
        assert _facts(answer.diagnosis) == _facts(node.diagnosis), source.name
    monkeypatch.undo()


def test_a_racks_job_is_answered_as_its_tray_with_its_rack(switch_tray_rack: tuple[Path, Path, dict[str, Any]],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    source = StoreSource(switch_tray_rack[1])
    calls = _counted(monkeypatch)
    answer = diagnose(source, Request(job="rack-01-train"))
    assert len(calls) == 1
    node = diagnose(source, Request(node=answer.diagnosis.node_id, job="rack-01-train"))
    assert _facts(answer.diagnosis) == _facts(node.diagnosis)
    assert answer.diagnosis.rack is not None and answer.diagnosis.tray is not None  # judged with its rack


def test_the_cli_and_slack_job_doors_agree(bundled_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["analyze", "--store", str(bundled_store), "--job", "4411", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert main(["analyze", str(FIXTURES / "fleet"), "--job", "4411", "--json"]) == 0
    files = json.loads(capsys.readouterr().out)
    with local_bot(source=StoreNodeSource(bundled_store)) as local:
        analysis = analysis_of(summary_for(local, "job 4411"))
        assert analysis is not None
        shown = BotState(local.audit.db).analysis(analysis)
    assert shown is not None
    posted = shown.model_dump(mode="json")
    keys = ("node_id", "job_id", "isolated_component", "degradation_pct", "ticket_priority", "verdict")
    assert {k: cli[k] for k in keys} == {k: files[k] for k in keys} == {k: posted[k] for k in keys}
    assert cli["node_id"] == "hpc-gpu-node-12" and cli["job_id"] == "4411"


def test_a_window_asked_to_end_after_the_readings_says_it_ends_as_asked(bundled_store: Path) -> None:
    """A window asked to end a year after a node's last reading holds none of it: its answer says so and where the
    window ends, as asked, not that the end is the source's newest reading; the store and the files say it alike."""
    from datetime import UTC, datetime

    end = datetime(2027, 9, 17, tzinfo=UTC)
    said = []
    for source in (StoreSource(bundled_store), TableSource(load_tables([FIXTURES / "fleet"]).tables, name="files")):
        warnings = diagnose(source, Request(node="hpc-gpu-node-12", end=end)).diagnosis.warnings
        said.append([w for w in warnings if w.startswith("no link reading from hpc-gpu-node-12 since")])
    assert said[0] == said[1] and len(said[0]) == 1
    ends, last = said[0][0].split("; ")  # and what its last readings showed: a failing link
    assert ends.endswith("the window ends at 2027-09-17 00:00 UTC (as asked)"), said[0]
    assert last.startswith("its last readings (window 1 h to 2026-09-17 08:00 UTC) showed"), said[0]


def test_an_input_of_many_nodes_asked_of_without_one_counts_those_it_does_not_list() -> None:
    """Twelve hosts' nccl-tests ranks: the refusal lists ten and counts the other two."""
    from diagnostics.errors import InputError
    from diagnostics.ingest.base import Source
    from diagnostics.service import files_source

    ranks = "\n".join(f"#  Rank {i:2d} Group  0 Pid {100 + i} on host-{i:02d} device  0 [0x21] NVIDIA A800-SXM4-80GB"
                      for i in range(12))
    text = (f"# nThread 1 nGpus 1\n{ranks}\n#       size         count      type   redop    root     time   algbw   "
            "busbw #wrong     time   algbw   busbw #wrong\n     1048576        262144     float     sum      -1    "
            "100.0   10.49   19.66      0    100.0   10.49   19.66      0\n# Avg bus bandwidth    : 19.66\n")
    with pytest.raises(InputError) as refused:
        files_source([Source.from_text(text, name="nccl.txt")])
    said = str(refused.value)
    assert "its steps run on 12 nodes (host-00, " in said and "host-09 and 2 more): give --node NODE" in said


def _scrape(labels: str) -> str:
    """Two dcgm-exporter scrapes ten minutes apart, one link's replays climbing far past the failing rate."""
    return "".join(f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3{{gpu="2",{labels}}} {replays} {ms}\n'
                   f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L3{{gpu="2",{labels}}} 0 {ms}\n'
                   for replays, ms in ((100, 1_780_000_000_000), (9_100, 1_780_000_600_000)))


def test_a_scrape_with_no_host_label_is_the_node_asked_about_by_every_door(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dcgm-exporter run with --no-hostname labels no series with a host: `analyze FILE` said "give --node" and then
    refused the node given ("no node 'n1' in the files (1 known: unknown)"), while `ingest --node` stored it as n1
    and `ingest` alone stored it under a node called `unknown`, where every host-less scrape landed."""
    bare, named = tmp_path / "bare.prom", tmp_path / "named.prom"
    bare.write_text(_scrape('UUID="GPU-1a2b"'))
    named.write_text(_scrape('UUID="GPU-1a2b",Hostname="n1"'))
    answers = []
    for argv in (["analyze", str(named), "--json"], ["analyze", str(bare), "--node", "n1", "--json"],
                 ["analyze", "--store", str(tmp_path / "store"), "--node", "n1", "--json"]):
        if "--store" in argv:
            assert main(["ingest", str(bare), "--store", str(tmp_path / "store"), "--node", "n1"]) == 0
        capsys.readouterr()
        assert main(argv) == 0
        d = json.loads(capsys.readouterr().out)
        answers.append({k: d[k] for k in ("node_id", "fault_detected", "isolated_component", "ticket_priority",
                                          "repair_action")})
    assert answers[0] == answers[1] == answers[2] and answers[0]["fault_detected"]
    assert main(["ingest", str(bare), "--store", str(tmp_path / "other")]) != 0  # no node to keep it under
    assert "--node" in capsys.readouterr().err


def test_a_node_asked_about_wins_over_a_capture_banner_s_node() -> None:
    """srt-slurm's capture names node01 in its banner: read as node01's, unless another node is asked about (as
    `analyze FILE --node n1` asks), which the readings are then; the banner's time stays theirs."""
    capture = FIXTURES / "real" / "nvlink_e_gb300_hwinfo_1.txt"
    for asked, node in ((None, "node01"), ("n1", "n1")):
        source, chosen, _ = files_source([capture], node=asked)
        assert chosen == node and source.nodes() == [node]
        diagnosis = diagnose(source, Request(node=chosen)).diagnosis
        assert diagnosis.node_id == node and pd.Timestamp(diagnosis.window_end) == pd.Timestamp("2026-08-13 07:53:30Z")


def test_a_log_naming_its_own_host_beside_a_paste_taken_as_the_node_asked_is_said_not_dropped() -> None:
    """`analyze topo_m.txt xid74.log --node x1`: the `topo -m` names no node and became x1's, the kernel log names
    its host, and its fatal Xid 74 vanished from the answer without a word (alone, the log is refused: no x1 in it).
    The answer now says what it leaves out and how to ask for it."""
    real = FIXTURES / "real"
    source, node, said = files_source([real / "topo_m_hgx_h100_1.txt", real / "xid74_link_a100_vllm_1.txt"],
                                      node="x1")
    assert node == "x1" and "192.168.11.119" in source.nodes()
    (left,) = [w for w in said if "name another node" in w]
    assert "(192.168.11.119)" in left and "`--node 192.168.11.119`" in left and "`ingest --node x1`" in left
    _, _, alone = files_source([real / "topo_m_hgx_h100_1.txt"], node="x1")
    assert not [w for w in alone if "name another node" in w]
