"""The file door (`fabricbot analyze FILE`) and the store door (`fabricbot ingest FILE --store S` then `analyze
--store S`) answer one question alike: what reading the file said, and the window its rates are over."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from freezegun import freeze_time

from diagnostics import Diagnosis
from diagnostics import format as fmt
from diagnostics.store import open_store
from diagnostics.synth import generate
from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES
from tests.ingest.test_nvlink import TWO_NODES
from tests.shared import answered_exit

REAL = FIXTURES / "real"
AT = "2026-05-13T11:00:00Z"  # when undated readings were taken, said to the store at ingest
NODE = "n1"


def _answer(cli: Cli, *argv: str) -> dict[str, Any]:
    """An answer: exit 0, or 3 (health unknown) where no link was judged and no fault found, or where the store's
    readings of the node all lack a time."""
    code, out, err = cli(*argv, "--json")
    answer: dict[str, Any] = json.loads(out)
    untimed = any("in the store have no time" in w for w in answer["warnings"]) and answer["window_end"] is None
    unknown = argv[0] == "analyze" and answered_exit(answer) == 3  # no link judged, no fault: incomplete
    assert (code in (0, 1) and not unknown) or (code == 3 and (untimed or unknown)), err
    return answer


def _stored(cli: Cli, path: Path, store: Path, *at: str) -> None:
    code, _, err = cli("ingest", str(path), "--store", str(store), "--node", NODE, *at)
    assert code == 0, err


def _read_said(answer: dict[str, Any], path: Path) -> list[str]:
    """The warnings a reader gave of the file (each names it), as the answer says them."""
    return [w for w in answer["warnings"] if w.startswith(f"{path}:")]


@pytest.mark.parametrize("name", ["nvlink_e_v100_short_form_2.txt", "kernel_xid79_sxid20034_gpud_1.txt",
                                  "smi_q_one_gpu_h100_1.txt", "topo_m_hgx_h100_1.txt",
                                  "nccl_allgather_bf16_h100_1.txt"])
def test_what_reading_a_file_said_is_said_through_both_doors(cli: Cli, tmp_path: Path, name: str) -> None:
    path = REAL / name
    direct = _answer(cli, "analyze", str(path), "--node", NODE)
    said = _read_said(direct, path)
    assert said, "the file door says what its reader warned of"
    for at in ([], ["--at", AT]):  # kept without a time, and dated at ingest
        store = tmp_path / f"store{len(at)}"
        _stored(cli, path, store, *at)
        assert _read_said(_answer(cli, "analyze", "--store", str(store), "--node", NODE), path) == said


def test_a_file_ingested_twice_says_its_warnings_once(cli: Cli, tmp_path: Path) -> None:
    path = REAL / "nvlink_e_v100_short_form_2.txt"
    for at in (AT, "2026-05-13T11:30:00Z"):  # the same output read again later: another reading
        _stored(cli, path, tmp_path / "store", "--at", at)
    said = _read_said(_answer(cli, "analyze", "--store", str(tmp_path / "store"), "--node", NODE), path)
    assert said == _read_said(_answer(cli, "analyze", str(path), "--node", NODE), path)


def _dates(path: Path) -> list[datetime]:
    """The `date` lines that time the file's readings."""
    return [datetime.strptime(line.strip(), "%a %b %d %H:%M:%S UTC %Y")
            for line in path.read_text().splitlines() if re.fullmatch(r"\w{3} \w{3} \d+ [\d:]+ UTC \d{4}", line)]


def test_a_window_longer_than_the_readings_says_the_span_they_cover_through_each_door(cli: Cli,
                                                                                     tmp_path: Path) -> None:
    path = REAL / "nvlink_e_v100_short_form_dated_2.txt"
    times = _dates(path)
    covered = (max(times) - min(times)).total_seconds() / 3600
    store = tmp_path / "store"
    _stored(cli, path, store)
    answers = {"file": _answer(cli, "analyze", str(path), "--node", NODE, "--window", "1000d"),
               "store": _answer(cli, "analyze", "--store", str(store), "--node", NODE, "--window", "1000d")}
    sweep = _answer(cli, "sweep", "--store", str(store), "--window", "1000d")
    for door, answer in [*answers.items(), ("sweep", sweep)]:
        assert answer["window_hours"] == pytest.approx(covered), door
        assert answer["window_asked_hours"] == pytest.approx(24_000), door
    for answer in answers.values():
        assert len([w for w in answer["warnings"] if " window (" in w and "cover" in w]) == 1
    assert answers["file"]["warnings"][-1] == answers["store"]["warnings"][-1]
    for argv in (["analyze", str(path), "--node", NODE], ["analyze", "--store", str(store), "--node", NODE],
                 ["sweep", "--store", str(store)]):
        _, out, _ = cli(*argv, "--window", "1000d")
        assert f"window {fmt.hours(covered)} to" in out and f"of a {fmt.hours(24_000)} window" in out, argv
        assert f"window {fmt.hours(24_000)}" not in out


def test_a_window_the_readings_reach_is_said_as_asked(cli: Cli) -> None:
    path = REAL / "nvlink_e_v100_short_form_dated_2.txt"
    answer = _answer(cli, "analyze", str(path), "--node", NODE, "--window", "15m")
    assert answer["window_hours"] == pytest.approx(0.25)
    assert answer["window_asked_hours"] is None
    assert not [w for w in answer["warnings"] if " window (" in w and "cover" in w]


def test_a_window_shorter_than_the_readings_gap_says_the_span_the_rates_are_over(cli: Cli, tmp_path: Path) -> None:
    """Readings 30 minutes apart under `--window 15m`: the rate starts from the reading before the window, so it is
    over the 30 minutes, not the quarter hour the header names; every door says so, once."""
    path = REAL / "nvlink_e_v100_short_form_dated_2.txt"
    store = tmp_path / "store"
    _stored(cli, path, store)
    for window, said in (("15m", 1), ("30m", 0)):
        for argv in (["analyze", str(path), "--node", NODE], ["analyze", "--store", str(store), "--node", NODE]):
            answer = _answer(cli, *argv, "--window", window)
            notes = [w for w in answer["warnings"] if "further apart than the" in w and "over the 0.5 h" in w]
            assert len(notes) == said, (argv, window, answer["warnings"])


@pytest.mark.parametrize("days", [-30, 365], ids=["before-its-readings", "after-its-readings"])
def test_a_window_holding_none_of_a_nodes_readings_says_where_they_run_and_exits_as_the_sweep(
        cli: Cli, bundled_store: Path, days: int) -> None:
    """An end a month before a node's first reading (or a year after its last): the store door and the file door
    say where its readings run, not that its counters were never collected, name the window's end in the header,
    and exit as `digest --at` over that end does: incomplete (a view `sweep --at` calls incomplete too)."""
    links = pd.read_parquet(FIXTURES / "fleet" / "link_samples.parquet", columns=["node_id", "timestamp"])
    node = "hpc-gpu-node-12"
    times = links.loc[links["node_id"] == node, "timestamp"]
    first, last = times.min().to_pydatetime(), times.max().to_pydatetime()
    end = (first if days < 0 else last) + timedelta(days=days)
    at = end.isoformat()
    store = str(bundled_store)
    code, out, _ = cli("sweep", "--store", store, "--at", at, "--json")
    swept_json = json.loads(out)
    assert not swept_json["complete"] and code == (1 if swept_json["offenders"] else 3)
    swept = cli("digest", "--store", store, "--at", at)[0]
    assert swept == 3
    for argv in (["analyze", "--store", store, "--node", node], ["analyze", str(FIXTURES / "fleet"), "--node", node]):
        code, out, err = cli(*argv, "--end", at)
        assert code == swept, (argv, out, err)
        assert f"to {fmt.when(end)}" in out.splitlines()[0], out
        assert "INCOMPLETE" in err and f"{node} has no link reading in the" in err and fmt.when(first) in err, err
        code, out, _ = cli(*argv, "--end", at, "--json")
        answer = json.loads(out)
        assert code == swept and datetime.fromisoformat(answer["window_end"]) == end
        if days < 0:
            assert answer["warnings"][0].startswith(f"{node} has link readings from {fmt.when(first)} to "
                                                    f"{fmt.when(last)}, none before the window's end"), answer
            assert not [w for w in answer["warnings"] if w.startswith("no link telemetry")]
            assert fmt.when(first) in answer["repair_action"] and "Collect" not in answer["repair_action"]


def test_a_files_warning_is_said_on_the_answer_of_the_node_its_rows_are_of(cli: Cli, tmp_path: Path) -> None:
    """Two nodes' scrapes, the second cut after its tenth line: its 'cut off' warning is on its own node's answer,
    not on the other's, through the file door and the store door alike; a file that gave no node is said on both."""
    cut = tmp_path / "gb200_cut.txt"
    cut.write_text("".join((REAL / "dcgm_metrics_gb200_1.txt").read_text().splitlines(keepends=True)[:10]))
    whole = REAL / "dcgm_metrics_a100_1.txt"
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    alone = _answer(cli, "analyze", str(cut))
    own, other = alone["node_id"], _answer(cli, "analyze", str(whole))["node_id"]
    said = _read_said(alone, cut)
    assert said and own != other
    store = tmp_path / "store"
    assert cli("ingest", str(whole), str(cut), "--store", str(store), "--at", AT)[0] == 0
    for door in ([str(whole), str(cut), str(junk)], ["--store", str(store)]):
        mine = _answer(cli, "analyze", *door, "--node", own)
        theirs = _answer(cli, "analyze", *door, "--node", other)
        assert _read_said(mine, cut) == said and _read_said(theirs, cut) == [], (door, theirs["warnings"])
        if str(junk) in door:
            assert _read_said(mine, junk) and _read_said(theirs, junk) == _read_said(mine, junk)


def test_a_file_refused_at_ingest_is_said_on_the_answers_of_the_nodes_stored_with_it(cli: Cli,
                                                                                      tmp_path: Path) -> None:
    """A folder's notes beside two nodes' scrapes: the file door says the refused file on each node's answer (it may
    have held that node's readings); the store they were ingested into says it on the same answers, as asked of
    the files, and not on a node stored by another ingest."""
    folder = tmp_path / "scrapes"
    folder.mkdir()
    for name in ("dcgm_metrics_a100_1.txt", "dcgm_metrics_gb200_1.txt"):
        (folder / name).write_text((REAL / name).read_text())
    junk = folder / "notes.txt"
    junk.write_text("hello\nworld\n")
    store = tmp_path / "store"
    code, _, err = cli("ingest", str(folder), "--store", str(store), "--at", AT)
    assert code != 0 and str(junk) in err, err
    nodes = {_answer(cli, "analyze", str(folder / n))["node_id"] for n in ("dcgm_metrics_a100_1.txt",
                                                                          "dcgm_metrics_gb200_1.txt")}
    assert len(nodes) == 2
    for node in sorted(nodes):
        said = _read_said(_answer(cli, "analyze", str(folder), "--node", node), junk)
        assert said and _read_said(_answer(cli, "analyze", "--store", str(store), "--node", node), junk) == said
    _stored(cli, REAL / "nvlink_e_v100_short_form_2.txt", store, "--at", AT)
    assert _read_said(_answer(cli, "analyze", "--store", str(store), "--node", NODE), junk) == []


def test_a_held_nodes_priority_is_said_held_by_the_ticket_the_summary_and_analyze(cli: Cli, tmp_path: Path) -> None:
    """NVLink errors on a platform with no NVLink: the ticket is held until the input and the platform agree, and
    the node's summary, its notification text and `analyze` say the same priority, not the bare level."""
    from bot.blocks import diagnosis_blocks, fallback_text
    from tests.tickets.helpers import SEED_INPUT

    path = tmp_path / "seed.json"
    path.write_text(json.dumps(SEED_INPUT | {"platform": "pcie-8gpu"}))
    code, ticket, err = cli("ticket", str(path), "--rules")
    assert code in (0, 1), err
    said = re.search(r"\*\*Priority:\*\* (.+?) ·", ticket)
    assert said and said[1].startswith("held"), ticket[:400]
    code, out, err = cli("analyze", str(path))
    assert f"priority={said[1]}  " in out.splitlines()[0], out
    d = Diagnosis.model_validate(_answer(cli, "analyze", str(path)))
    assert d.priority_said() == said[1]
    shown = json.dumps([b.to_dict() for b in diagnosis_blocks(d, 1)])
    assert said[1] in shown and f"Priority*\\n{d.ticket_priority.value}\"" not in shown
    assert said[1] in fallback_text(d) and f", {d.ticket_priority.value} priority" not in fallback_text(d)


def test_a_node_whose_plan_applies_is_not_held(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "seed.json"
    from tests.tickets.helpers import SEED_INPUT

    path.write_text(json.dumps(SEED_INPUT | {"platform": "hgx-h100-8gpu"}))
    d = Diagnosis.model_validate(_answer(cli, "analyze", str(path)))
    assert d.held is None and d.priority_said() == d.ticket_priority.value


def test_a_stored_node_is_named_alike_by_every_command_that_reads_one(tmp_path: Path, cli: Cli) -> None:
    """`analyze --store S --node N` was the one form analyze took, `ticket` and `render` the other (`--store S N`):
    a user who learned one got a usage error from the others. Each takes both, and both forms answer alike."""
    truth = json.loads(generate(out=tmp_path / "fleet", seed=0, nodes=2, hours=2, scrapes=0).read_text())
    node = next(n for n, v in truth["nodes"].items() if v["faults"])
    store = str(tmp_path / "store")
    open_store(store).ingest([tmp_path / "fleet" / f"{t}.parquet" for t in ("link_samples", "events",
                                                                             "step_samples")])
    for command, *extra in (("analyze", "--json"), ("ticket", "--json", "--rules"),
                            ("render", "-o", str(tmp_path / "n.png"))):
        named, positional = (cli(command, "--store", store, *form, *extra) for form in (("--node", node), (node,)))
        assert named[0] == positional[0] in (0, 1), (command, named[2], positional[2])
        assert named[1] == positional[1] and node in named[1], command


def test_a_paste_of_two_hosts_sessions_answers_each_host_through_both_doors(cli: Cli, tmp_path: Path) -> None:
    """Shell sessions on two nodes told apart by their prompts: nodeA's link replays 9,000 in an hour and fails,
    nodeB's holds still; read as one node, nodeB's readings hid nodeA's fault."""
    path = tmp_path / "two-nodes.txt"
    path.write_text(TWO_NODES)
    store = tmp_path / "store"
    code, _, err = cli("ingest", str(path), "--store", str(store))
    assert code == 0, err
    for door in (["analyze", str(path)], ["analyze", "--store", str(store)]):
        failing = _answer(cli, *door, "--node", "nodeA")
        assert failing["fault_detected"] is True
        assert [(f["component"], f["rates_per_hour"]["replay"], f["severity"]) for f in failing["findings"]] == [
            ("GPU 0 NVLink 0 -> NVSwitch 0 port 0", 9000.0, "failing")]
        healthy = _answer(cli, *door, "--node", "nodeB")
        assert healthy["fault_detected"] is False and healthy["links_read"]
        assert not any("damaged" in w for w in failing["warnings"] + healthy["warnings"])
    code, out, _ = cli("analyze", str(path), "--node", "nodeA")
    assert code == 0 and "fault=yes" in out and "9,000" in out


def test_a_pdsh_paste_of_two_hosts_answers_each_host_alike_through_both_doors(cli: Cli, tmp_path: Path) -> None:
    lines = [line for line in (REAL / "nvlink_e_h100_1.txt").read_text().splitlines() if line[:1] not in "#$"]
    uuid = "GPU-abcdefab-cdef-abdc-abcd-abababababab"
    path = tmp_path / "pdsh.txt"  # `pdsh -w node[01-02] nvidia-smi nvlink -e`: the hosts' lines interleaved
    path.write_text("".join(f"{host}: {line.replace(uuid, uuid[:-2] + host[-2:])}\n"
                            for line in lines for host in ("node01", "node02")))
    code, _, err = cli("ingest", str(path), "--store", str(tmp_path / "store"), "--at", AT)
    assert code == 0, err
    for host in ("node01", "node02"):
        direct = _answer(cli, "analyze", str(path), "--node", host)
        stored = _answer(cli, "analyze", "--store", str(tmp_path / "store"), "--node", host)
        assert direct["node_id"] == stored["node_id"] == host
        assert direct["fault_detected"] == stored["fault_detected"]
        assert _read_said(direct, path) == _read_said(stored, path) and _read_said(direct, path)


DATED_V100 = REAL / "nvlink_e_v100_short_form_dated_2.txt"  # read at 11:00 and 11:30 on 2026-05-13


def test_an_event_after_the_last_counter_reading_is_judged_through_the_file_and_the_store(tmp_path: Path,
                                                                                        cli: Cli) -> None:
    """Counters read at 11:00 and 11:30, the kernel log saved at 11:50 with a GPU off the bus: the window ended at
    the last counter reading, so the Xid 79 after it was dropped without a word and the answer was the counters'
    alone. The node's own newest event ends the window (the counters are still in it); one hours later (a `dmesg -T`
    log's local time read as UTC) leaves the window with the counters and is said, through every door; one dated after
    the wall clock does not move it (a clock ahead)."""
    log = tmp_path / "kern.log"
    log.write_text("[Wed May 13 11:50:02 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1911, name=python3, GPU has "
                   "fallen off the bus.\n", encoding="utf-8")
    store = tmp_path / "store"
    for path in (DATED_V100, log):
        assert cli("ingest", str(path), "--store", str(store), "--node", "v100")[0] == 0
    doors = [_answer(cli, "analyze", str(DATED_V100), str(log), "--node", "v100"),
             _answer(cli, "analyze", "--store", str(store), "--node", "v100")]
    for answer in doors:
        assert answer["window_end"].startswith("2026-05-13T11:50:02"), answer["window_end"]
        assert answer["ticket_priority"] == "urgent" and "Xid 79" in json.dumps(answer["findings"])
        crc = [f for f in answer["findings"] if f["component"].startswith("GPU 2 -> GPU 0 NVLink 0")]
        assert crc and crc[0]["rates_per_hour"]["crc"] > 0  # the counters still judged, not "no reading"
    assert doors[0]["isolated_component"] == doors[1]["isolated_component"]
    hours = tmp_path / "local.log"  # `dmesg -T` prints local time: read as UTC, eight hours after the counters
    hours.write_text(log.read_text().replace("11:50:02", "19:50:02"), encoding="utf-8")
    later = tmp_path / "later"
    for path in (DATED_V100, hours):
        assert cli("ingest", str(path), "--store", str(later), "--node", "v100")[0] == 0
    for answer in (_answer(cli, "analyze", str(DATED_V100), str(hours), "--node", "v100"),
                   _answer(cli, "analyze", "--store", str(later), "--node", "v100")):
        assert answer["window_end"].startswith("2026-05-13T11:30:00"), answer["window_end"]  # the counters' window
        assert answer["findings"] and not any("Xid 79" in json.dumps(f) for f in answer["findings"])
        assert any("has events after the window's end, up to 2026-05-13 19:50 UTC, 8.3 h after its newest link "
                   "reading: not judged here" in w for w in answer["warnings"]), answer["warnings"]
    swept = json.loads(cli("sweep", "--store", str(later), "--json")[1])
    assert any("1 node has events after the window's end, not judged here: v100" in w for w in swept["warnings"])
    ahead = tmp_path / "ahead.log"
    ahead.write_text(log.read_text().replace("11:50:02", "13:50:02"), encoding="utf-8")
    _answer(cli, "analyze", str(DATED_V100), str(ahead), "--node", "v100")  # built before the clock is frozen
    with freeze_time("2026-05-13T12:00:00Z"):  # the log's clock two hours ahead of the wall clock
        answer = _answer(cli, "analyze", str(DATED_V100), str(ahead), "--node", "v100")
    assert answer["window_end"].startswith("2026-05-13T11:30:00"), answer["window_end"]


def test_a_counter_value_refused_in_one_reading_leaves_its_rate_unknown_through_every_door(tmp_path: Path,
                                                                                          cli: Cli) -> None:
    """GPU 0 NVLink 0's replay count in the second reading refused (`-1`: a counter is never negative, said and not
    read): the link's replay rate was '-' and the node 'fault=no', exit 0, what it carries unseen. Its rate is
    unknown, and the answer incomplete as for a count read lower than before: the file, the store and the sweep."""

    def reading(at: str, replays: str) -> str:
        head = (f"{at}\n$ nvidia-smi nvlink -e\n"
                "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)\n")
        return head + "".join(f"         Link {k}: Replay Errors: {replays if k == 0 else 0}\n"
                              f"         Link {k}: Recovery Errors: 0\n         Link {k}: CRC Errors: 0\n"
                              for k in range(18))

    damaged = tmp_path / "nvlink.txt"
    damaged.write_text(reading("Mon Dec  7 03:00:00 UTC 2026", "100") + reading("Mon Dec  7 03:20:00 UTC 2026", "-1"),
                       encoding="utf-8")
    store = tmp_path / "store"
    assert cli("ingest", str(damaged), "--store", str(store), "--node", "v100")[0] == 0
    for argv in (["analyze", str(damaged), "--node", "v100"], ["analyze", "--store", str(store), "--node", "v100"]):
        code, out, err = cli(*argv, "--json")
        answer = json.loads(out)
        assert code == 3 and answer["unread"] == 1 and not answer["fault_detected"], (argv, err)
        [link] = [f for f in answer["findings"] if f["component"].startswith("GPU 0 NVLink 0")]
        assert "replay" not in link["rates_per_hour"] and any(" missing from a reading of the window" in e
                                                                for e in link["evidence"])
        assert "INCOMPLETE" in err
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert code == 3 and swept["unjudged"] == ["v100"] and not swept["complete"]
    short = tmp_path / "short.txt"  # the short form, which reads a counter it leaves out as 0: a refused one is not
    short.write_text(DATED_V100.read_text(encoding="utf-8").replace("CRC Errors: 45068", "CRC Errors: -1"),
                     encoding="utf-8")
    code, out, _ = cli("analyze", str(short), "--node", "v100", "--json")
    assert code == 3 and json.loads(out)["unread"] == 1
    clean = tmp_path / "clean.txt"  # the same readings whole: its rate judged, no such note
    clean.write_text(reading("Mon Dec  7 03:00:00 UTC 2026", "100") + reading("Mon Dec  7 03:20:00 UTC 2026", "150"),
                     encoding="utf-8")
    assert json.loads(cli("analyze", str(clean), "--node", "v100", "--json")[1])["unread"] == 0


@pytest.mark.parametrize(("name", "fault"), [("topo_m_b200_gpu2_no_nvlink_vllm_1.txt", True),
                                             ("topo_m_hgx_h100_1.txt", False)])
def test_a_store_of_a_topology_alone_is_swept_as_its_node_is_answered(cli: Cli, tmp_path: Path, name: str,
                                                                       fault: bool) -> None:
    """A `topo -m` ingested alone: `analyze FILE` and `analyze --store` found B200 GPU 2 with no NVLink up, while
    `sweep --store` said the store held no link samples and no events. Every door now names the same GPU; a healthy
    description's node is health unknown at each, never an all-clear."""
    path = REAL / name
    _stored(cli, path, tmp_path / "s")
    direct = _answer(cli, "analyze", str(path), "--node", NODE)
    stored = _answer(cli, "analyze", "--store", str(tmp_path / "s"), "--node", NODE)
    code, out, err = cli("sweep", "--store", str(tmp_path / "s"), "--json")
    swept = json.loads(out)
    for answer in (direct, stored):
        assert answer["fault_detected"] is fault
    if fault:
        assert code == 1, err
        assert [(o["node_id"], o["gpu"], o["severity"]) for o in swept["offenders"]] == [(NODE, 2, "down")]
        assert {f["gpu"] for a in (direct, stored) for f in a["findings"] if f["severity"] != "ok"} == {2}
    else:
        assert code == 3 and not swept["offenders"] and not swept["complete"], err
        assert NODE in json.dumps(swept["incomplete_reasons"]) or NODE in swept.get("silent", []), swept


def test_a_window_too_long_for_a_persistence_rule_says_so_through_each_door(cli: Cli, bundled_store: Path) -> None:
    """The bundled fleet holds 8 h: at a 6 h window the flapping link's 3-of-4-windows rule would need 24 h, so the
    link only warns, and each door says the rule was not judged, where the answer said "no fault" beside a verdict
    blaming the link; at 1 h the rule is judged and fails the link."""
    node = "hpc-gpu-node-15"
    doors = {"file": ["analyze", str(FIXTURES / "fleet"), "--node", node],
             "store": ["analyze", "--store", str(bundled_store), "--node", node]}
    said: dict[str, list[str]] = {}
    for door, argv in doors.items():
        answer = _answer(cli, *argv, "--window", "6h")
        said[door] = [w for w in answer["warnings"] if "recovery_persistent needs 24 h" in w]
        assert len(said[door]) == 1 and not answer["fault_detected"], (door, answer["warnings"])
        judged = _answer(cli, *argv)
        assert judged["fault_detected"] and not any("recovery_persistent needs" in w for w in judged["warnings"])
    swept = _answer(cli, "sweep", "--store", str(bundled_store), "--window", "6h")
    assert said["file"] == said["store"] == [w for w in swept["diagnoses"][node]["warnings"]
                                             if "recovery_persistent needs" in w]
