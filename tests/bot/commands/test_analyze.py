from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.mrkdwn import esc
from bot.nodes import StoreNodeSource
from tests.bot.commands.conftest import Cli
from tests.bot.helpers import local_bot, summary_for
from tests.conftest import FIXTURES, link, snapshot_dict
from tests.service.test_cut_input import NODE, cut_earlier_day, damaged_part_store, slowed_job_store
from tests.shared import answered_exit


def test_seed_file_json_reports_expectations(cli: Cli) -> None:
    code, out, _ = cli("analyze", str(FIXTURES / "seed_examples.json"), "--json")
    assert code == 0
    data = json.loads(out)
    assert [d["node_id"] for d in data] == ["hpc-gpu-node-12", "hpc-gpu-node-03"]
    assert data[0]["isolated_component"] == "GPU 2 -> GPU 3 NVLink 1"
    seed_keys = ("fault_detected", "isolated_component", "degradation_pct", "repair_action", "ticket_priority")
    assert data[0]["expectations"] == dict.fromkeys(seed_keys, True)
    # degradation differs by 0.1 from the seed's 0.6, within tolerance
    assert data[1]["expectations"]["degradation_pct"] is True
    assert data[1]["findings"][0]["severity"] == "ok"
    assert {r["name"] for r in data[0]["thresholds"]} >= {"nvlink_replay", "crc", "recovery"}


def test_one_object_in_one_object_out(tmp_path: Path, cli: Cli) -> None:
    f = tmp_path / "one.json"
    f.write_text(json.dumps(snapshot_dict(fabric_errors=[link(replay_count=2000)])))
    code, out, _ = cli("analyze", str(f), "--json")
    assert code == 0
    data = json.loads(out)
    assert isinstance(data, dict) and data["fault_detected"] is True


def test_table_output(cli: Cli) -> None:
    code, out, _ = cli("analyze", str(FIXTURES / "seed_examples.json"))
    assert code == 0
    assert "GPU 2 -> GPU 3 NVLink 1" in out and "urgent" in out and "5/5 match" in out


def test_stdin(monkeypatch: pytest.MonkeyPatch, cli: Cli) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(snapshot_dict())))
    code, out, _ = cli("analyze", "-", "--json")
    assert code == 0 and json.loads(out)["ticket_priority"] == "low"


def _piped(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


FACTS = ("node_id", "fault_detected", "isolated_component", "ticket_priority", "verdict", "repair_action")


@pytest.mark.parametrize(("sample", "node"), [
    ("dcgm_metrics_a100_1.txt", None),  # names its node
    ("nvlink_e_h100_1.txt", "n1"),  # `nvidia-smi nvlink -e | fabricbot analyze - --node n1`
    ("kernel_xid79_sxid20034_gpud_1.txt", "n1"),  # a kernel log: its first line starts with `[`, as JSON does
])
def test_piped_telemetry_is_read_as_the_same_file_is(sample: str, node: str | None, cli: Cli,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin is sniffed for its format as a file is, not read as snapshot JSON only: the same answer both ways
    (by `analyze` and `ticket`), and the paste that names no node asks for one the same way."""
    path = FIXTURES / "real" / sample
    extra = ["--node", node] if node else []
    code, out, _ = cli("analyze", str(path), "--json", *extra)
    whole = json.loads(out)
    _piped(monkeypatch, path.read_bytes())
    piped_code, piped, _ = cli("analyze", "-", "--json", *extra)
    assert piped_code == code and {k: json.loads(piped)[k] for k in FACTS} == {k: whole[k] for k in FACTS}
    _piped(monkeypatch, path.read_bytes())
    code, out, _ = cli("ticket", "-", *extra)
    assert code in (0, 1) or (code == 3 and not whole["rates_known"])  # one reading per link: health unknown
    assert whole["isolated_component"] in out or not whole["fault_detected"]
    if node:  # a paste that names no node: answered under a name that says so; a ticket needs the name
        _piped(monkeypatch, path.read_bytes())
        code, out, _ = cli("analyze", "-", "--json")
        unnamed = json.loads(out)
        assert code == answered_exit(out) and unnamed["node_id"] == "unnamed-node"
        renamed = json.loads(out.replace("unnamed-node", node))
        assert {k: renamed[k] for k in FACTS} == {k: whole[k] for k in FACTS}
        assert "the input names no node: its readings are answered as 'unnamed-node'" in unnamed["warnings"][0]
        _piped(monkeypatch, path.read_bytes())
        code, _, err = cli("ticket", "-")
        assert code == 2 and "<stdin>" in err and "the input names no node: give --node NODE" in err


def test_piped_utf16_is_named_as_a_file_is(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _piped(monkeypatch, (FIXTURES / "real" / "nvlink_e_h100_1.txt").read_text().encode("utf-16"))
    code, _, err = cli("analyze", "-", "--node", "n1")
    assert code == 2 and "<stdin>: UTF-16 text" in err and "iconv" in err


def test_list_with_one_bad_case_still_reports_the_good(tmp_path: Path,
                                                      cli: Cli) -> None:
    f = tmp_path / "mixed.json"
    f.write_text(json.dumps([snapshot_dict(node_id="good"),
                             snapshot_dict(node_id="bad", fabric_errors=[link(replay_count=-5)])]))
    code, out, err = cli("analyze", str(f), "--json")
    assert code == 1
    data = json.loads(out)
    assert data[0]["node_id"] == "good"
    assert "error" in data[1]
    assert "case 2 (bad)" in err and "fabric_errors[0].replay_count" in err and "-5" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("content", "needle"), [
    ("not json at all", "not valid JSON"),
    ("[]", "the list of snapshots is empty"),
    ('{"node_id": "n",\n "fabric_errors": [}', ":2"),
    ("[1, 2]", "must be a JSON object"),
    ('{"node_id": "n",\n "fabric_errors": [{"gpu": 2, "lin',
     ":2: not valid JSON: Unterminated string starting at column 31: the file ends inside it (cut off?)"),
    ('{"node_id": "n",\n "fabric_errors": [', "Expecting value at column 20: the file ends inside it (cut off?)"),
    ('{"a": 1,}', "Expecting property name enclosed in double quotes at column 9"),
])
def test_bad_files_exit_nonzero_with_a_message(tmp_path: Path, cli: Cli,
                                               content: str, needle: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(content)
    code, _, err = cli("analyze", str(f))
    assert code != 0
    assert needle in err and "Traceback" not in err
    assert "bad.json" in err


def test_missing_file_and_bad_override(cli: Cli) -> None:
    code, _, err = cli("analyze", "/nonexistent/x.json")
    assert code == 2 and "file not found" in err
    code, _, err = cli("analyze", str(FIXTURES / "seed_examples.json"), "--set", "nvlink_replay")
    assert code == 2 and "RULE=NUMBER" in err


def test_override_changes_the_verdict(tmp_path: Path, cli: Cli) -> None:
    f = tmp_path / "one.json"
    payload: dict[str, Any] = snapshot_dict(fabric_errors=[link(replay_count=600)])
    f.write_text(json.dumps(payload))
    _, out, _ = cli("analyze", str(f), "--json")
    assert json.loads(out)["fault_detected"] is False
    _, out, _ = cli("analyze", str(f), "--json", "--set", "nvlink_replay=500")
    assert json.loads(out)["fault_detected"] is True


def test_a_stored_node_is_analysed_on_its_stored_platform_unless_one_is_given(
        tmp_path: Path, cli: Cli) -> None:
    from diagnostics.synth.fleet import generate

    truth = json.loads(generate(out=tmp_path / "fleet", seed=5, nodes=2, hours=2, scrapes=0).read_text())
    node, info = next(iter(truth["nodes"].items()))
    store = str(tmp_path / "st")
    assert cli("ingest", str(tmp_path / "fleet" / "link_samples.parquet"), "--store", store)[0] == 0
    code, out, _ = cli("analyze", "--store", store, "--node", node, "--json")
    bare = json.loads(out)
    assert code == 0 and bare["platform"] is None
    assert any(w.startswith("platform unknown") for w in bare["warnings"])
    assert cli("ingest", str(tmp_path / "fleet" / "nodes.csv"), "--store", store)[0] == 0
    stored = json.loads(cli("analyze", "--store", store, "--node", node, "--json")[1])
    assert stored["platform"] == info["platform"] and not any("platform unknown" in w for w in stored["warnings"])
    other = "pcie-8gpu" if info["platform"] != "pcie-8gpu" else "hgx-h100-8gpu"
    given = json.loads(cli("analyze", "--store", store, "--node", node, "--platform", other, "--json")[1])
    assert given["platform"] == other


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_an_empty_file_is_said_empty_whichever_way_it_is_asked(tmp_path: Path, cli: Cli, text: str) -> None:
    """Alone, an empty file was "neither a snapshot (JSON: ... the file ends inside it (cut off?)) nor telemetry":
    in a folder, or with --node, it was "the input is empty"."""
    empty = tmp_path / "empty.txt"
    empty.write_text(text)
    said = {args: cli("analyze", *args)[:3:2] for args in ((str(empty),), (str(tmp_path),),
                                                            (str(empty), "--node", "n1"))}
    for code, err in said.values():
        assert code == 2 and f"{empty.name}: the input is empty" in err, said
    assert "neither a snapshot" not in said[(str(empty),)][1]


def test_a_paste_cut_before_its_first_link_says_what_was_tried_and_how_to_force_a_reader(tmp_path: Path,
                                                                                         cli: Cli) -> None:
    """A real `nvidia-smi nvlink -s` output cut inside its first GPU line is neither JSON nor recognizable: the error
    says both, and the `--format` (with the readers it takes) and `--node` it names are options `analyze` takes."""
    lines = (FIXTURES / "real" / "nvlink_s_a100_1.txt").read_text().splitlines()
    cut = tmp_path / "cut.txt"
    cut.write_text(next(line for line in lines if line.startswith("GPU 0"))[:40])
    code, _, err = cli("analyze", str(cut))
    assert code == 2 and "neither a snapshot" in err and str(cut) in err
    assert "--format dcgm|dcgmi_nvlink|" in err and "|nvlink|" in err  # the names it takes, as ingest's error says
    whole = tmp_path / "links.txt"
    whole.write_text("\n".join(lines[:6]) + "\n")  # the header and three links
    code, out, err = cli("analyze", str(whole), "--format", "nvlink", "--node", "n1", "--json")
    assert code == answered_exit(out), err
    assert json.loads(out)["node_id"] == "n1"
    code, _, err = cli("analyze", str(whole), "--format", "nvlink-x", "--node", "n1")
    assert code == 2 and "unknown format 'nvlink-x'" in err


def test_an_nccl_tests_log_is_the_node_its_ranks_name(cli: Cli) -> None:
    """nccl-tests logs name their ranks' hosts and no link telemetry: one host is the node asked about, two are
    named in the error that asks for --node (real logs, sources in their first lines)."""
    code, out, err = cli("analyze", str(FIXTURES / "real" / "nccl_allgather_superbench_1.txt"), "--json")
    assert code == 3 and "no link reading, so its fabric health is unknown" in err, err
    assert json.loads(out)["node_id"] == "localhost"
    code, _, err = cli("analyze", str(FIXTURES / "real" / "nccl_allreduce_3.txt"))
    assert code == 2 and "its steps run on 2 nodes (bm-h100-01, bm-h100-02): give --node NODE" in err
    code, out, err = cli("analyze", str(FIXTURES / "real" / "nccl_allreduce_3.txt"), "--node", "bm-h100-02", "--json")
    assert code == 3 and json.loads(out)["node_id"] == "bm-h100-02", err


def test_the_links_left_out_say_how_many_were_read_once(tmp_path: Path, cli: Cli) -> None:
    """A scrape cut short holds one reading of the links after the cut and two of those before: the count of links
    left out of the table says which are within thresholds and which were read once, not that all were read once;
    and, the link read once not judged, the answer is incomplete, not healthy."""
    scrape = tmp_path / "cut.prom"
    scrape.write_text("".join(f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L{link}{{gpu="0",Hostname="n1"}} 5 {t}\n'
                              for link, times in ((0, (1789623900000, 1789624200000)),
                                                  (1, (1789623900000, 1789624200000)), (2, (1789623900000,)))
                              for t in times))
    code, out, err = cli("analyze", str(scrape), "--node", "n1")
    assert code == 3 and "n1: 1 link read once, so no error rate is known" in err, err
    assert "(3 more links: 2 within thresholds, 1 read once: totals only, no rates)" in out


def test_an_nvlink_s_reading_is_said_as_link_states_through_every_door(tmp_path: Path, cli: Cli) -> None:
    """`nvidia-smi nvlink -s` holds link states and speeds, no counter: `analyze FILE`, `analyze --store`, `sweep`
    and the Slack summary of `/fabric` say its links were read once for their states, never that totals were
    read."""
    states = FIXTURES / "real" / "nvlink_s_a100_all_up_gpud_1.txt"
    code, out, err = cli("analyze", str(states), "--node", "n1")
    assert code == answered_exit(out), err
    rest = next(line for line in out.splitlines() if "more links" in line)
    assert "read once: link states only" in rest and "totals" not in rest
    assert "link states only" in out and "totals since reset" not in out
    store = tmp_path / "store"
    assert cli("ingest", str(states), "--store", str(store), "--node", "n1", "--at", "2026-12-05T18:00:00Z")[0] == 0
    code, out, _ = cli("analyze", "--store", str(store), "--node", "n1")
    assert "read once: link states only" in out and "totals" not in out
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    said = " ".join(json.loads(out)["incomplete_reasons"])
    assert "n1" in said and "link states only" in said and "totals" not in said
    # a lone reading of counters beside it (`nvlink -e`) is still totals, in the fleet's view too, where a node's
    # findings hold only its flagged links
    counters = FIXTURES / "real" / "nvlink_e_h100_1.txt"
    assert cli("ingest", str(counters), "--store", str(store), "--node", "n2", "--at", "2026-12-05T18:00:00Z")[0] == 0
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    assert "n1, n2" in (said := " ".join(json.loads(out)["incomplete_reasons"]))
    assert "totals or link states only, no rates" in said
    with local_bot(source=StoreNodeSource(store)) as local:
        shown = str(summary_for(local, "n1").blocks)
    assert "link states only" in shown and "totals" not in shown


def test_a_slowed_jobs_unreadable_history_is_not_scored_through_every_door(tmp_path: Path, cli: Cli) -> None:
    """A slowed job whose node's earlier day in the store was cut: `analyze --store --node`, `sweep --store` and the
    Slack summary of `/fabric n1` give the one verdict, that n1's links were not scored (unknown), never that they
    do not track the slowdown."""
    store = slowed_job_store(tmp_path)
    part = cut_earlier_day(store)
    code, out, err = cli("analyze", "--store", str(store), "--node", "n1", "--json")
    assert code == 3 and f"n1's link readings could not be read: {part}" in err  # its day reaches the cut part
    verdict = json.loads(out)["verdict"]
    assert verdict.startswith("job j1 is +30.0% slower; the links of n1 were not scored against it, its stored "
                              f"readings could not be read ({part}")
    assert verdict.endswith("whether they slow it is unknown")
    code, out, _ = cli("sweep", "--store", str(store), "--json")  # offenders found (1), the view incomplete
    assert code == 1 and not json.loads(out)["complete"] and json.loads(out)["diagnoses"]["n1"]["verdict"] == verdict
    with local_bot(source=StoreNodeSource(store)) as local:
        said = str(summary_for(local, "n1").blocks)
    assert esc(verdict) in said and "do not track" not in said and "not the fabric" not in said


def test_a_node_whose_stored_readings_cannot_be_read_exits_incomplete_as_the_sweep_does(tmp_path: Path,
                                                                                      cli: Cli) -> None:
    """A damaged part of a node: `analyze --store --node` says first that its health is unknown and exits 3, with
    and without --json, naming the part on stderr, as `sweep` exits 3 for the same store; a readable node of that
    store is answered with 0."""
    part = damaged_part_store(tmp_path)
    store = str(tmp_path / "store")
    code, out, err = cli("sweep", "--store", store, "--json")
    assert code == 3 and str(part) in " ".join(json.loads(out)["incomplete_reasons"])
    code, out, err = cli("analyze", "--store", store, "--node", NODE)
    assert code == 3 and f"warning: {NODE}'s link readings could not be read: {part}" in out
    assert err.startswith("fabricbot: answer INCOMPLETE") and f"{NODE}'s link readings could not be read: {part}" in err
    code, out, err = cli("analyze", "--store", store, "--node", NODE, "--json")
    said = json.loads(out)
    assert code == 3 and said["warnings"][0].startswith(f"{NODE}'s link readings could not be read: {part}")
    assert not said["fault_detected"] and str(part) in err
    code, out, err = cli("analyze", "--store", store, "--node", "hpc-gpu-node-08", "--json")
    assert code == 0 and "INCOMPLETE" not in err and json.loads(out)["node_id"] == "hpc-gpu-node-08"


@pytest.mark.parametrize("log", [FIXTURES / "real" / "nccl_allgather_bf16_h100_1.txt",
                                 FIXTURES / "samples" / "megatron_train.log"], ids=["nccl-tests", "megatron"])
def test_a_job_log_that_names_no_host_is_the_node_asked_about(log: Path, cli: Cli) -> None:
    """An nccl-tests run on one node and a training log name no host. Given a node, analyze said it was not in the
    files ("among 0 known"): the advice it gave led to a second refusal. Its rows are now the node asked about, as a
    paste's are (without --node, `unnamed-node`, said so): the answer says the node has no link telemetry, so its
    fabric health is unknown, and what to collect; no empty table of links."""
    code, out, err = cli("analyze", str(log))
    assert code == 3 and out.startswith("unnamed-node ") and "unnamed-node: no link reading" in err
    code, out, err = cli("analyze", str(log), "--node", "n1")
    assert code == 3 and "n1: no link reading, so its fabric health is unknown" in err, err
    assert "warning: no link telemetry for n1: its fabric health is unknown, not healthy" in out
    assert "action:   Collect this node's link counters" in out and "component  state" not in out
    code, out, _ = cli("analyze", str(log), "--node", "n1", "--json")
    assert json.loads(out)["node_id"] == "n1" and json.loads(out)["findings"] == []


def test_what_reading_the_files_said_past_the_first_ten_is_counted_not_dropped(tmp_path: Path, cli: Cli) -> None:
    """Twelve lines no reader takes, each said by `ingest`: `analyze` shows ten and counts the rest."""
    lines = ["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababab0000)"]
    for n in range(18):
        lines += [f"         Link {n}: Replay Errors: 0", f"         Link {n}: Recovery Errors: 0",
                  f"         Link {n}: CRC Errors: 0", *([f"stray line {n}"] if n < 12 else [])]
    paste = tmp_path / "nvlink.txt"
    paste.write_text("\n".join(lines) + "\n")
    _, _, said = cli("ingest", str(paste), "--node", "n1")
    code, out, err = cli("analyze", str(paste), "--node", "n1")
    assert code == answered_exit(out), err
    assert sum("stray line" in w for w in out.splitlines()) == 10
    assert "warning: ... and 2 more from reading the files" in out
    assert said.count("stray line") == 12  # ingest lists what analyze counts


def test_a_table_of_flagged_parts_alone_says_no_count_of_links_left_out(tmp_path: Path, cli: Cli) -> None:
    """A kernel log's Xid flags the GPU it names and no link is left out of the table: no '(0 more links: )' line
    under it."""
    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:dc:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 "
                   "0x00000000 0x00000000 0x00000000 0x00000000)\n")
    code, out, err = cli("analyze", str(log), "--node", "n1", "--end", "2026-01-01T00:00:00Z")
    assert code == 0, err
    assert "1 Xid 149 on the GPU at PCI 0000:dc:00.0" in out
    assert "more link" not in out, out


def test_the_time_an_undated_paste_is_said_to_need_is_an_option_analyze_takes(tmp_path: Path, cli: Cli) -> None:
    """The warning on readings with no time names the option that gives them one; given, the readings are taken as
    read at that time."""
    paste = tmp_path / "paste.txt"
    paste.write_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\n         Link 0: Replay Errors: 3\n")
    code, out, err = cli("analyze", str(paste), "--node", "v")
    assert code == answered_exit(out), err
    said = next(line for line in out.splitlines() if "carries no time" in line)
    option = said.split("give the time with ")[1].split()[0].rstrip(",")
    code, out, err = cli("analyze", str(paste), "--node", "v", option, "2026-03-01T10:00:00Z")
    assert code == answered_exit(out), err
    assert "taken as read at 2026-03-01 10:00 UTC" in out, out


def test_undated_events_are_counted_as_events_not_readings(tmp_path: Path, cli: Cli) -> None:
    """A kernel log with no time of day (dmesg's seconds since boot), beside an undated `nvlink -e` paste: its Xid was
    counted among
    the 'readings' that carry no time, and a log alone said '1 reading', of no reading at all."""
    xid = ("[ 1234.567890] NVRM: Xid (PCI:0000:dc:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 "
           "(0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n")
    log = tmp_path / "kern.log"
    log.write_text(xid)
    code, out, err = cli("analyze", str(log), "--node", "n1")
    assert code == 0, err
    assert "1 event of n1 carries no time" in out, out
    said = next(line for line in out.splitlines() if "carries no time" in line)
    assert "`date` line" not in said and "--time-format iso" in said, said  # a kernel log reads no `date` line
    both = tmp_path / "both.txt"
    both.write_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\n         Link 0: Replay Errors: 3\n\n" + xid)
    code, out, err = cli("analyze", str(both), "--node", "n1")
    assert code == 0, err
    assert "1 reading and 1 event of n1 carry no time" in out, out


def test_a_yearless_journal_is_dated_alike_at_every_door(tmp_path: Path, cli: Cli,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`journalctl -k -q` prints no year: each date is read in the latest year that keeps it no later than the end
    asked (ingest's --at), so a day-old Xid 79 is a day old, not read as new, and the file, stdin and the store it
    was ingested into answer alike."""
    log = tmp_path / "journal.txt"
    log.write_text("Jun 01 03:02:11 gpu-b12 kernel: NVRM: Xid (PCI:0000:bd:00): 79, pid='<unknown>', name=<unknown>, "
                   "GPU has fallen off the bus.\n"
                   "Jun 02 10:14:07 gpu-b12 kernel: NVRM: Xid (PCI:0000:4c:00): 74, pid=20417, name=python, NVLink: "
                   "fatal error detected on link 11(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n")
    end = "2025-06-02T10:15:00Z"
    asked = ("--node", "gpu-b12", "--end", end)
    code, _, err = cli("ingest", str(log), "--store", str(tmp_path / "store"), "--at", end)
    assert code == 0 and "no later than 2025-06-02 10:15:00 UTC" in err, err
    answers = [cli("analyze", str(log), *asked), cli("analyze", "--store", str(tmp_path / "store"), *asked)]
    monkeypatch.setattr("sys.stdin", io.StringIO(log.read_text()))
    answers.append(cli("analyze", "-", *asked))
    heads = {out.split("  warning:")[0] for _, out, _ in answers}
    assert len(heads) == 1, heads
    assert "fatal at 2025-06-01 03:02 UTC, before this window" in heads.pop()


# `dcgmi dmon` after a RHEL prompt, as DCGM issue 265 quotes it (no reader takes dmon's table)
PROMPTED = ("[root@l20a-new-j88eh3ma-000001 ~]# dcgmi dmon -e 1200,1201,1202,1203\n"
            "#Entity    NLXMITP                     NLXMITB                     NLRCVP                      NLRCVB\n"
            "ID\n"
            "GPU 0      170836581862                36758094563894              77753928404                 0\n")


@pytest.mark.parametrize(("text", "refused"), [
    (PROMPTED, "it is `dcgmi dmon`, which fabricbot does not read"),
    ("[root@host ~]# fabric-probe --all\nport 3 ok\nport 4 ok\n", "--format")])
def test_a_paste_after_a_bracketed_prompt_is_refused_as_what_it_is_not_as_broken_json(
        text: str, refused: str, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """`[root@host ~]# dcgmi dmon ...` starts with `[` as JSON does: `analyze FILE`, `ticket FILE` and `analyze -`
    answered 'not valid JSON: Expecting value at column 2' where `--node` and `ingest` name the format and --format.
    Every door now refuses it as the output fabricbot knows it is and does not read, or as text no reader
    recognizes; a list or object that is broken is still JSON's error."""
    paste = tmp_path / "paste.txt"
    paste.write_text(text)
    said = [cli("analyze", str(paste)), cli("ticket", str(paste)), cli("render", str(paste))]
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    said.append(cli("analyze", "-"))
    for code, _, err in said:
        assert code == 2 and "not valid JSON" not in err and refused in err, err
    broken = tmp_path / "broken.json"
    for text in ('[\n  {"node_id": "n",', '{"node_id": "n",', "[1, 2"):
        broken.write_text(text)
        for door in ("analyze", "ticket"):
            code, _, err = cli(door, str(broken))
            assert code == 2 and "not valid JSON" in err, (door, text, err)


@pytest.mark.parametrize(("sample", "node"), [("samples/kernel_sxid_aer.log", None), ("samples/mixed_paste.md", None),
                                              ("real/nvlink_e_h100_1.txt", "h100-a"),
                                              ("samples/journal_fm_kernel.log", None)])
def test_what_analyze_advises_names_only_options_it_takes(sample: str, node: str | None, cli: Cli) -> None:
    """Advice on `analyze FILE` names an option of `analyze`, or another command whole (`fabricbot ingest --at
    TIME`, `dmesg --time-format iso`): it told a person to give the events' time with `--at`, which only `ingest`
    takes."""
    from bot.commands import analyze

    sub = argparse.ArgumentParser().add_subparsers()
    analyze.register(sub)
    options = set(sub.choices["analyze"]._option_string_actions)  # argparse lists its options nowhere public
    assert "--end" in options
    code, out, err = cli("analyze", str(FIXTURES / sample), *(["--node", node] if node else []))
    assert code != 2, err
    said = re.sub(r"`(?!--|fabricbot analyze)[^`]*`", "", out + err)  # another command, quoted whole
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", said))
    assert named <= options, (named - options, said)


def test_several_files_of_one_node_are_answered_as_that_node(cli: Cli) -> None:
    """Two files of gpu-node-07 were refused ("give one snapshot file") though each alone is answered as its node:
    they are now the node's histories, as with `--node`; files of two nodes ask for one, naming both."""
    log, paste = str(FIXTURES / "samples" / "kernel_sxid_aer.log"), str(FIXTURES / "samples" / "mixed_paste.md")
    code, out, err = cli("analyze", log, paste, "--json")
    named_code, named, _ = cli("analyze", log, paste, "--node", "gpu-node-07", "--json")
    assert code == named_code and json.loads(out)["node_id"] == "gpu-node-07", err
    assert json.loads(out) == json.loads(named)
    code, _, err = cli("analyze", log, str(FIXTURES / "samples" / "journal_fm_kernel.log"))
    assert code == 2 and "gpu-node-07" in err and "n1" in err and "--node" in err


def test_a_run_over_two_hosts_that_names_no_link_asks_which_to_answer(cli: Cli) -> None:
    """A one-node run is answered unnamed (above); a run over two hosts names them, and which one is asked about is
    the person's to say."""
    code, _, err = cli("analyze", str(FIXTURES / "real" / "nccl_allreduce_3.txt"))
    assert code == 2 and "its steps run on 2 nodes (bm-h100-01, bm-h100-02): give --node NODE" in err


def test_an_empty_or_runaway_name_is_refused_as_what_it_is(bundled_store: Path, cli: Cli) -> None:
    """`--node "$NODE"` with the variable unset read "--node (or --job) is required"; a name pasted 5,000 characters
    long was echoed whole in the refusal."""
    for option in ("--node", "--job"):
        code, _, err = cli("analyze", "--store", str(bundled_store), option, "")
        assert code == 2 and f"field '{option}': an empty name" in err, err
    code, _, err = cli("analyze", "--store", str(bundled_store), "--node", "x" * 5000)
    assert code == 2 and f"no node '{'x' * 120}'... (5,000 characters)" in err and len(err) < 500, err
