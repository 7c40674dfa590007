"""`fabricbot ingest`: reads, reports JSON, stores, and exits non-zero only when nothing was read."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics.store import open_store
from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES
from tests.shared import answered_exit

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"


def test_json_report_for_real_scrapes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ingest", str(REAL / "dcgm_metrics_a100_1.txt"), str(REAL / "dcgm_metrics_gb200_1.txt"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["nodes"] == ["3f546054f69d", "axa"]
    assert out["rows"]["link_samples"] == 8 and out["rows"]["gpus"] == 8
    assert {w["line"] for w in out["warnings"] if w["file"].endswith("gb200_1.txt")} >= {10}
    assert set(out) >= {"rows", "nodes", "links_per_gpu", "warnings"}


def test_links_per_gpu_and_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scrape = tmp_path / "s.prom"
    scrape.write_text("".join(f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{i}{{gpu="{g}",Hostname="n"}} 0\n'
                              for g in range(2) for i in range(12)))
    code = main(["ingest", str(scrape), "--store", str(tmp_path / "st"), "--json", "--at", "2026-03-01T00:00:00Z"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["links_per_gpu"] == {"n": {"0": 12, "1": 12}}
    assert (tmp_path / "st" / "link_samples" / "node=n" / "day=2026-03-01").is_dir()
    assert main(["ingest", str(scrape), "--store", str(tmp_path / "st")]) == 0
    assert "already in the store" in capsys.readouterr().out


def test_the_links_read_per_gpu_are_one_line_per_board_read_alike(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """'n1: NVLinks per GPU 0:12 1:12 ...' once per node said little and ran to a line a node: the nodes are grouped
    by what was read, and a GPU read short stands out."""
    def scrape(node: str, short: int | None) -> str:
        return "".join(f'# TYPE DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{i} counter\n'
                       + "".join(f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{i}{{gpu="{g}",Hostname="{node}"}} 0\n'
                                 for g in range(8) if not (g == short and i >= 10))
                       for i in range(12))
    for node, short in [("n1", None), ("n2", None), ("n3", None), ("n4", None), ("n5", 7)]:
        (tmp_path / f"{node}.prom").write_text(scrape(node, short))
    assert main(["ingest", str(tmp_path)]) == 0
    said = [line.strip() for line in capsys.readouterr().out.splitlines() if "NVLinks read" in line]
    assert said == ["NVLinks read: 12 on each of GPUs 0-7: n1, n2, n3 and 1 more node",
                    "NVLinks read: 12 on GPUs 0-6, 10 on GPU 7: n5"]


def test_nothing_readable_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)))
    assert main(["ingest", str(junk)]) == 1
    assert "nothing could be read" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "s.prom"), "--at", "yesterday"]) == 2


def test_at_mtime_dates_scrapes_without_timestamps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    scrape = tmp_path / "s.prom"
    scrape.write_text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="n"} 2\n')
    when = 1_772_409_600  # 2026-03-02T00:00Z
    os.utime(scrape, (when, when))
    assert main(["ingest", str(scrape), "--store", str(tmp_path / "st"), "--at", "mtime"]) == 0
    assert (tmp_path / "st" / "link_samples" / "node=n" / "day=2026-03-02").is_dir()
    capsys.readouterr()
    # a format no reader has is a usage error, said once before any file is read, and nothing is stored
    assert main(["ingest", str(scrape), "--store", str(tmp_path / "other"), "--format", "nvidia-smi-x"]) == 2
    err = capsys.readouterr().err
    assert "field '--format': unknown format 'nvidia-smi-x'; formats: " in err
    assert "inventory" in err and "nvlink" in err
    assert not (tmp_path / "other" / "link_samples").exists()


def test_a_synth_folder_with_its_nodes_csv_is_ingested_and_the_platforms_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from diagnostics.store.telemetry import TelemetryStore
    from diagnostics.synth.fleet import generate

    truth = json.loads(generate(out=tmp_path / "fleet", seed=3, nodes=3, hours=1, scrapes=1).read_text())
    (tmp_path / "fleet" / ".notes.swp").write_bytes(b"\x00junk")
    code = main(["ingest", str(tmp_path / "fleet"), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 0 and "not read" not in out and err == ""
    store = TelemetryStore(tmp_path / "st")
    assert store.platforms() == {n: v["platform"] for n, v in truth["nodes"].items() if v["platform"]}
    files = {Path(r["file"]).name for r in store.db["ingests"].rows}
    assert "nodes.csv" in files and "link_samples.parquet" in files and len(files) == 6  # 4 tables, csv, 1 scrape
    assert "ground_truth.json" not in files and ".notes.swp" not in files
    assert main(["ingest", str(tmp_path / "fleet"), "--store", str(tmp_path / "st")]) == 0
    assert capsys.readouterr().out.count("already in the store") == 6


def test_inventory_files_give_platform_serial_and_rack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from diagnostics.store.telemetry import TelemetryStore

    (tmp_path / "fleet.csv").write_text("hostname,gpu,serial,platform,rack\nn1,0,S0,hgx-h100-8gpu,R7\n"
                                        "n1,1,S1,hgx-h100-8gpu,R7\nn2,0,S2,dgx-a100-8gpu,R8\n")
    (tmp_path / "n3.toml").write_text('node_id = "n3"\nplatform = "hgx-h200-8gpu"\nnode_serial = "SN-3"\n'
                                      '[[gpu]]\nindex = 0\nserial = "G0"\n')
    assert main(["ingest", str(tmp_path / "fleet.csv"), str(tmp_path / "n3.toml"), "--store",
                 str(tmp_path / "st"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["format"] for f in report["files"]] == ["inventory", "inventory"]
    store = TelemetryStore(tmp_path / "st")
    assert store.platforms() == {"n1": "hgx-h100-8gpu", "n2": "dgx-a100-8gpu", "n3": "hgx-h200-8gpu"}
    nodes = {r["node_id"]: r for r in store.db["nodes"].rows}
    assert nodes["n1"]["rack_location"] == "R7" and nodes["n3"]["node_serial"] == "SN-3"


def test_an_unknown_platform_in_a_nodes_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.csv").write_text("node_id,platform\nn1,hgx-h900-8gpu\n")
    assert main(["ingest", str(tmp_path / "nodes.csv"), "--store", str(tmp_path / "st")]) == 1
    err = capsys.readouterr().err
    assert "nodes.csv" in err and "hgx-h900-8gpu" in err and "known:" in err


def test_a_hand_edited_nodes_file_is_read_with_its_spaces_and_a_row_naming_no_node_is_named(cli: Cli,
                                                                                            tmp_path: Path) -> None:
    """Spaces around a value (`n1 , hgx-h100-8gpu`, as people type a CSV) are not part of it; a row whose node_id is
    empty names no node and is refused with its line and value, not kept as a node called ''."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_bytes(b"node_id, platform\r\nn1 , hgx-h100-8gpu\r\nn2,dgx-a100-8gpu\r\n")
    code, out, err = cli("ingest", str(nodes), "--store", str(tmp_path / "s"), "--json")
    assert code == 0, err
    assert json.loads(out)["platforms"] == {"n1": "hgx-h100-8gpu", "n2": "dgx-a100-8gpu"}
    nodes.write_text("node_id,platform\nn1,hgx-h100-8gpu\n,dgx-a100-8gpu\n")
    code, out, err = cli("ingest", str(nodes), "--store", str(tmp_path / "s2"))
    assert code != 0 and f"{nodes}: refused (line 3: this row names no node" in out and "',dgx-a100-8gpu'" in out



def test_a_platform_typed_in_capitals_names_the_known_platform(cli: Cli, tmp_path: Path) -> None:
    """`DGX-A100-8GPU` (a spreadsheet's capitals) in a nodes file or `--platform` is the platform dgx-a100-8gpu, as
    every door then names it; a name no platform has is still refused with the known ones."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("node_id,platform\nn1,DGX-A100-8GPU\nn2, Hgx-H100-8gpu \n")
    code, out, err = cli("ingest", str(nodes), "--store", str(tmp_path / "s"), "--json")
    assert code == 0, err
    assert json.loads(out)["platforms"] == {"n1": "dgx-a100-8gpu", "n2": "hgx-h100-8gpu"}
    paste = FIXTURES / "real" / "nvlink_e_h100_1.txt"
    code, out, err = cli("analyze", str(paste), "--node", "n1", "--platform", "HGX-H100-8GPU", "--json")
    assert code == answered_exit(out), err
    answer = json.loads(out)
    assert (answer[0] if isinstance(answer, list) else answer)["platform"] == "hgx-h100-8gpu"
    nodes.write_text("node_id,platform\nn1,DGX-A900-8GPU\n")
    code, out, _ = cli("ingest", str(nodes), "--store", str(tmp_path / "s2"))
    assert code != 0 and "DGX-A900-8GPU" in out and "known:" in out

@pytest.mark.parametrize("as_json", [False, True])
def test_a_refused_file_leaves_the_good_one_stored_and_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               as_json: bool) -> None:
    good = tmp_path / "good.prom"
    good.write_text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="n"} 2 1772409600000\n')
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\x00\xff" * 64)
    store = tmp_path / "st"
    code = main(["ingest", str(good), str(bad), "--store", str(store), *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert code == 3
    assert "1 of 2 files refused, the others stored" in err and "bad.log: binary data" in err
    if as_json:
        report = json.loads(out)
        assert [(f["status"], f["error"] is None) for f in report["files"]] == [("ingested", True), ("error", False)]
        assert report["refused"] == [str(bad)]
    else:
        assert f"{good}: stored as dcgm" in out and f"{bad}: refused (binary data" in out
    stored = open_store(store).window(end=None, span=timedelta(hours=2))["link_samples"]
    assert stored["replay"].tolist() == [2]
    bad.write_text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="n"} 5 1772409660000\n')
    assert main(["ingest", str(good), str(bad), "--store", str(store)]) == 0  # mended, it is taken


def test_a_paste_that_states_no_time_is_said_at_ingest_not_first_at_the_analysis(cli: Cli, tmp_path: Path) -> None:
    paste = REAL / "nvlink_s_v100_inactive_1.txt"
    code, _, err = cli("ingest", str(paste), "--node", "n1", "--store", str(tmp_path / "s"))
    assert code == 0 and "6 link readings state no time" in err and "--at mtime" in err
    store = str(tmp_path / "s")
    said = "6 link readings of n1 in the store have no time"
    # every door: the node's health is unknown (exit 3, as a window holding none of its readings), never "nothing
    # to repair" or a store said to hold nothing; what to do is to ingest them again with a time
    code, out, err = cli("analyze", "--store", store, "--node", "n1")
    assert code == 3 and said in out and said in err and "--at mtime" in out
    assert "action:   Ingest n1's readings again with the time they were taken" in out
    assert "no link telemetry" not in out
    code, out, err = cli("ticket", "n1", "--store", store, "--rules")
    assert code == 3 and said in err and "nothing to repair" not in out + err
    code, out, err = cli("sweep", "--store", store)
    assert code == 3 and said in out and "holds no link samples" not in out + err
    code, out, _ = cli("sweep", "--store", store, "--json")  # named where a script reads it, as the text names it
    assert code == 3 and json.loads(out)["unjudged"] == ["n1"]
    # beside a node whose readings are dated: named as holding readings with no time, not as silent
    assert cli("ingest", str(paste), "--node", "n2", "--store", store, "--at", "2026-05-13T11:00:00Z")[0] == 0
    code, out, err = cli("sweep", "--store", store)  # n2's offenders found (1), n1 not judged
    assert code == 1 and "INCOMPLETE" in err and "1 node holds only link readings with no time" in out
    assert "--at now as it is taken): n1" in out
    assert "no reading in the" not in out
    code, _, err = cli("ingest", str(paste), "--node", "n1", "--store", str(tmp_path / "t"), "--at", "mtime")
    assert code == 0 and "state no time" not in err


def test_utf16_text_is_named_as_such_with_how_to_convert_it(cli: Cli, tmp_path: Path) -> None:
    """Windows PowerShell's `>` writes UTF-16 with a byte-order mark: a real `nvidia-smi nvlink -s` saved that way is
    no binary data; every door says it is UTF-16 and how to save it as UTF-8, naming the file."""
    paste = tmp_path / "nvlink.txt"
    paste.write_bytes((REAL / "nvlink_s_v100_inactive_1.txt").read_text().encode("utf-16"))
    for argv in (("ingest", str(paste), "--node", "n1", "--store", str(tmp_path / "s")),
                 ("analyze", str(paste), "--node", "n1"), ("analyze", str(paste)),
                 ("ticket", str(paste), "--node", "n1")):
        code, out, err = cli(*argv)
        said = out + err
        assert code != 0 and f"{paste}" in said and "UTF-16 text" in said and "iconv -f UTF-16" in said, argv
        assert "binary data" not in said and "Traceback" not in said


def test_the_same_output_read_again_later_is_a_second_reading(cli: Cli, tmp_path: Path) -> None:
    """A healthy node's `nvidia-smi nvlink -e` prints the same bytes a quarter of an hour later: given a later --at it
    is the second reading the rates need, not 'already in the store' (which left the answer asking to read the
    counters again, forever), and a file stored without a time is taken again with the --at its warning asks for;
    the same file at the same time is still a duplicate."""
    paste = tmp_path / "nvlink.txt"
    paste.write_text("".join(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{g:08d}-cdef-abdc-abcd-abababababab)\n"
                             + "".join(f"\t Link {n}: {c} Errors: 0\n" for n in range(18)
                                       for c in ("Replay", "Recovery", "CRC")) for g in range(8)))
    store = str(tmp_path / "s")
    code, out, err = cli("ingest", str(paste), "--node", "n1", "--store", store)  # no time: kept, not judged
    assert "ingest the file again with --at TIME" in err
    for at in ("2026-12-01T10:00:00Z", "2026-12-01T10:15:00Z"):  # as that says, then a quarter of an hour later
        code, out, err = cli("ingest", str(paste), "--node", "n1", "--at", at, "--store", store)
        assert code == 0 and "stored as nvlink: 144 link_samples" in out, err
    code, out, _ = cli("ingest", str(paste), "--node", "n1", "--at", "2026-12-01T10:15:00Z", "--store", store)
    assert "already in the store" in out
    code, out, _ = cli("analyze", "--store", store, "--node", "n1", "--json")
    diagnosis = json.loads(out)
    assert code == 0 and diagnosis["fault_detected"] is False
    assert "Read the counters again" not in diagnosis["repair_action"]
    assert not any("one reading" in w for w in diagnosis["warnings"])


def test_an_empty_folder_is_named_by_every_door_and_leaves_no_store(tmp_path: Path, cli: Cli) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in (("analyze", str(empty), "--node", "n1"), ("ticket", str(empty), "--node", "n1"),
                 ("ingest", str(empty), "--store", str(tmp_path / "s"))):
        code, _, err = cli(*argv)
        assert (code, err.strip()) == (2, f"fabricbot: {empty}: no file to read in the folder"), argv
    assert not (tmp_path / "s").exists()


def test_ingest_reads_stdin_as_analyze_does(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """`nvidia-smi nvlink -e | fabricbot ingest - --store S --node N --at now`, as a cron line would have it."""
    import io
    import sys

    text = (REAL / "nvlink_e_v100_short_form_dated_2.txt").read_bytes()
    store = tmp_path / "s"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    code, out, _ = cli("ingest", "-", "--node", "n1", "--store", str(store))
    assert code == 0 and out.startswith("<stdin>: stored as nvlink: 24 link_samples")
    code, piped, _ = cli("analyze", "--store", str(store), "--node", "n1", "--json")
    code2, read, _ = cli("analyze", str(REAL / "nvlink_e_v100_short_form_dated_2.txt"), "--node", "n1", "--json")
    assert (code, code2) == (0, 0)
    assert json.loads(piped)["findings"] == json.loads(read)["findings"]


def test_a_file_given_as_the_store_is_said_to_be_one(tmp_path: Path, cli: Cli) -> None:
    scrape = REAL / "nvlink_e_h100_1.txt"
    for argv in (("analyze", "--store", str(scrape), "--node", "n1"), ("ingest", str(scrape), "--store", str(scrape))):
        code, _, err = cli(*argv)
        assert code == 2 and f"{scrape}: a file, not a store's folder" in err
        assert "--store names the folder" in err and "File exists" not in err


def test_an_unknown_platform_in_a_nodes_file_names_its_line_and_value_once(tmp_path: Path, cli: Cli) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("node_id,platform\ngpu-a,hgx-h100-8gpu\ngpu-b,hgx-h100\n")
    code, _, err = cli("ingest", str(nodes))
    assert code == 1
    assert "line 3, field 'platform': unknown platform for node gpu-b" in err
    assert err.count("'hgx-h100'") == err.count("(got 'hgx-h100')") >= 1


def test_a_refused_file_mended_and_ingested_again_is_no_longer_said(tmp_path: Path, cli: Cli,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A nodes.csv refused for an unknown platform was said on the node's every answer, even after the mended file
    was stored under the same name and the node's platform read from it."""
    monkeypatch.chdir(tmp_path)
    Path("nodes.csv").write_text("node_id,platform\ndgx1-07,dgx1-v100\n")
    readings = str(REAL / "nvlink_e_v100_short_form_dated_2.txt")
    cli("ingest", "nodes.csv", readings, "--node", "dgx1-07", "--store", "st")
    said = "nodes.csv: line 2, field 'platform': unknown platform"
    assert said in "".join(cli("analyze", "--store", "st", "--node", "dgx1-07")[1:])
    Path("nodes.csv").write_text("node_id,platform\ndgx1-07,dgx1-v100-8gpu\n")
    assert cli("ingest", "nodes.csv", "--store", "st")[0] == 0
    _, out, err = cli("analyze", "--store", "st", "--node", "dgx1-07", "--json")
    assert json.loads(out)["platform"] == "dgx1-v100-8gpu" and said not in err + out


@pytest.mark.parametrize("at", ["now", "mtime"])
def test_a_reading_piped_in_takes_the_time_of_the_command(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch,
                                                           at: str) -> None:
    """`--at now` times a piped reading that states no time; `--at mtime` has no file to ask, and says so."""
    import io
    import sys

    from freezegun import freeze_time

    text = (REAL / "nvlink_e_h100_1.txt").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    with freeze_time("2026-11-03T10:00:00Z"):
        code, _, err = cli("ingest", "-", "--node", "n1", "--at", at, "--store", str(tmp_path / "s"))
    if at == "mtime":
        assert code == 2 and "stdin has no modification time" in err and not (tmp_path / "s").exists()
        return
    assert code == 0
    times = open_store(tmp_path / "s").link_samples("n1")["timestamp"].unique()
    assert [str(t) for t in times] == ["2026-11-03 10:00:00+00:00"]


def test_a_refused_paste_counts_no_row_as_stored(tmp_path: Path, cli: Cli) -> None:
    """A paste that names no node is refused at ingest; its summary said `rows: link_samples=6 ...` as if they were
    stored."""
    paste = FIXTURES / "real" / "nvlink_s_v100_inactive_1.txt"
    code, out, err = cli("ingest", str(paste), "--store", str(tmp_path / "store"))
    assert code == 1 and "refused" in out and "pass --node NODE" in err
    assert "rows: link_samples=0," in out and "gpus=0" in out
    code, out, _ = cli("ingest", str(paste), "--store", str(tmp_path / "store"), "--node", "n1")
    assert code == 0 and "rows: link_samples=6," in out


def test_a_first_ingest_that_stores_nothing_leaves_no_store_behind(tmp_path: Path, cli: Cli) -> None:
    """A refused first file left an empty database behind, which `analyze --store` then took for a store that holds
    no node, where a mistyped path is told 'no telemetry store here'. A folder the person made stays; a store that
    already held readings keeps them."""
    paste = FIXTURES / "real" / "nvlink_s_v100_inactive_1.txt"
    made = tmp_path / "new"
    assert cli("ingest", str(paste), "--store", str(made))[0] == 1
    assert not made.exists()
    assert "no telemetry store here" in cli("analyze", "--store", str(made), "--node", "n1")[2]
    mine = tmp_path / "mine"
    mine.mkdir()
    assert cli("ingest", str(paste), "--store", str(mine))[0] == 1
    assert mine.is_dir() and not list(mine.iterdir())
    assert cli("ingest", str(paste), "--store", str(mine), "--node", "n1")[0] == 0
    unreadable = tmp_path / "notes.txt"
    unreadable.write_text("rebooted node-1 at noon\n", encoding="utf-8")
    assert cli("ingest", str(unreadable), "--store", str(mine))[0] == 1  # refused: the store and its readings kept
    assert (mine / "fabricbot.db").exists()
    code, out, _ = cli("analyze", "--store", str(mine), "--node", "n1")
    assert code != 2 and out.startswith("n1"), out


def test_a_node_name_too_long_for_a_folder_is_refused_by_name_not_a_traceback(tmp_path: Path, cli: Cli) -> None:
    """`--node` of 300 characters: the file system's 'File name too long' came out as a traceback."""
    paste = FIXTURES / "real" / "nvlink_s_v100_inactive_1.txt"
    store = tmp_path / "store"
    assert cli("ingest", str(paste), "--store", str(store), "--node", "n1")[0] == 0
    long = "gpu-" + "a" * 300
    code, out, err = cli("ingest", str(FIXTURES / "real" / "nvlink_s_a100_1.txt"), "--store", str(store),
                         "--node", long)
    assert code == 1 and "refused" in out
    assert (f"node {long[:40]!r}... (304 characters) is too long a name: the store keeps each node's readings in a "
            "folder named after it, here 309 bytes as a file name, where at most 240 fit; give a shorter name with "
            "--node") in err
    code, out, _ = cli("ingest", str(FIXTURES / "real" / "nvlink_s_a100_1.txt"), "--store", str(store),
                       "--node", long, "--json")
    summary = json.loads(out)  # what was kept: a refused file's rows and node are not
    assert code == 1 and not any(summary["rows"].values()) and summary["nodes"] == [], summary
    wide = "节点" * 45  # 90 characters, 270 bytes as UTF-8, more quoted
    err = cli("ingest", str(FIXTURES / "real" / "nvlink_s_a100_1.txt"), "--store", str(store), "--node", wide)[2]
    assert "(90 characters) is too long a name" in err and "where at most 240 fit" in err, err
    assert cli("analyze", "--store", str(store), "--node", "n1")[0] != 2  # the store as it was


def _two_hosts_scrape(folder: Path) -> Path:
    """A scrape of two hosts, dated, each GPU 0's replays: node-17's climbing, node-18's flat."""
    lines = ["# TYPE DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0 counter"]
    for minute, (a, b) in enumerate([(0, 5), (900, 5)]):
        stamp = 1_765_080_000_000 + minute * 600_000
        lines += [f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{{gpu="0",UUID="GPU-{n}",Hostname="node-{n}"}} {v} {stamp}'
                  for n, v in ((17, a), (18, b))]
    path = folder / "two.prom"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_node_over_a_scrape_of_two_hosts_is_refused_by_name(tmp_path: Path, cli: Cli) -> None:
    """`--node` names the node of readings that name none: over a scrape naming two hosts it stored both machines'
    series as one node's, node-18's flat counter hiding node-17's climbing one (the analysis said 'a series sampled
    twice at one time'), while `analyze FILE --node node-17` answered node-17 alone. Refused, naming the hosts; without
    --node each host is its own node, and one host's scrape may still be stored under another name."""
    scrape = _two_hosts_scrape(tmp_path)
    store = str(tmp_path / "store")
    code, out, err = cli("ingest", str(scrape), "--node", "node-17", "--store", store)
    assert code == 1 and "refused" in out + err and "2 hosts (node-17, node-18)" in out + err, out + err
    assert not (tmp_path / "store").exists()  # nothing stored: no empty store left behind
    assert cli("ingest", str(scrape), "--store", store)[0] == 0
    assert open_store(store, create=False).nodes() == ["node-17", "node-18"]
    code, out, _ = cli("analyze", "--store", store, "--node", "node-17", "--json")
    assert json.loads(out)["fault_detected"] and code == 0
    one = tmp_path / "one.prom"
    one.write_text("".join(line + "\n" for line in scrape.read_text().splitlines() if 'Hostname="node-18"' not in line))
    assert cli("ingest", str(one), "--node", "gpu-17", "--store", str(tmp_path / "renamed"))[0] == 0
    assert open_store(tmp_path / "renamed", create=False).nodes() == ["gpu-17"]


def test_a_file_whose_lines_of_its_format_are_not_read_is_refused_as_analyze_refuses_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two lines of `lspci -vv` without the device line above them (as janhq/jan#183 quotes a 4090's riser): no
    device to put them on. `analyze FILE` refuses it (exit 2); `ingest` said it stored nothing and exited 0, so a
    script from cron saw success. A clean kernel log (no line of the reader's) still holds nothing, as it should."""
    excerpt = tmp_path / "lnk.txt"
    excerpt.write_text("    LnkCap: Port #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <16us\n"
                       "    LnkSta: Speed 2.5GT/s (downgraded), Width x16 (ok)\n")
    assert main(["analyze", str(excerpt), "--node", "n1"]) == 2
    analyzed = capsys.readouterr().err
    store = tmp_path / "store"
    assert main(["ingest", str(excerpt), "--store", str(store), "--node", "n1"]) == 1
    out, err = capsys.readouterr()
    assert f"{excerpt}: refused (no telemetry read: line 2: this line not read as lspci" in out
    assert "nothing could be read" in err and f"{excerpt}:2: this line not read" in analyzed and not store.exists()
    clean = tmp_path / "dmesg.txt"
    clean.write_text("[    1.234567] nvidia: loading out-of-tree module taints kernel.\n"
                     "[   12.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    assert main(["ingest", str(clean), str(excerpt), "--store", str(store), "--node", "n1", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["refused"] == [str(excerpt)]
    assert [f["status"] for f in report["files"]] == ["ingested", "error"]


def test_a_kernel_log_whose_only_xid_line_is_damaged_is_refused_naming_that_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An Xid line with a damaged code was skipped with a warning: `analyze FILE` refused the file, `ingest` kept
    'nothing' and exited 0. The refusal names the line not read first, before the file's other notes."""
    log = tmp_path / "k.log"
    log.write_text("[ 12.3] NVRM: loading NVIDIA UNIX x86_64 Kernel Module 550.54.15\n"
                   "[ 100.0] NVRM: Xid (PCI:0000:01:00): 7x9, pid=1, name=python, GPU has fallen off the bus.\n")
    assert main(["analyze", str(log), "--node", "n1"]) == 2
    capsys.readouterr()
    assert main(["ingest", str(log), "--node", "n1"]) == 1
    assert f"{log}: refused (no telemetry read: line 2: an Xid line that cannot be read" in capsys.readouterr().out
