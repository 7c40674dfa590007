"""`fabricbot sweep --store`: the local store swept by the engine, with the Prometheus sweep's output and exit codes."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from freezegun import freeze_time

from bot.cli import main
from bot.commands.sweep import _table
from diagnostics import analyze_fleet, load_thresholds
from diagnostics import format as fmt
from diagnostics.offenders import LINKS_SHOWN
from diagnostics.prometheus import SweepResult
from diagnostics.service import Request, StoreSource, files_source, sweep
from diagnostics.store.telemetry import open_store
from diagnostics.synth.fleet import load
from diagnostics.synth.life import load_life
from tests.bot.commands.conftest import Cli
from tests.shared import copy_store

FLEET = Path(__file__).resolve().parents[3] / "fixtures" / "fleet"
REAL = FLEET.parent / "real"


@pytest.fixture(scope="module")
def store_dir(bundled_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_store(bundled_store, tmp_path_factory.mktemp("sweep") / "store")


@pytest.fixture(autouse=True)
def _no_prometheus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FABRICBOT_PROMETHEUS_URL", raising=False)


def test_the_store_sweep_finds_what_the_engine_finds_in_memory(store_dir: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["sweep", "--store", str(store_dir), "--json"]) == 1  # offenders, though a node holds one scrape
    result = json.loads(capsys.readouterr().out)
    assert result["source"] == "store" and not result["complete"]
    lone = [n for n, v in json.loads((FLEET / "ground_truth.json").read_text())["nodes"].items()
            if v["scenario"] == "single_scrape"]
    assert [r for r in result["incomplete_reasons"] if "one reading per link" in r and all(n in r for n in lone)]
    assert len(result["incomplete_reasons"]) == 1
    tables, inventory = load(FLEET)
    life = load_life(FLEET)  # the fleet folder holds the life nodes too, ending at the fleet's end
    assert life is not None
    tables = {k: pd.concat([v, life[0][k]], ignore_index=True) if k in life[0] else v for k, v in tables.items()}
    memory = analyze_fleet(tables, platforms={**inventory, **life[1]})
    assert sorted(result["diagnoses"]) == sorted(n for n, d in memory.diagnoses.items()
                                                 if any(f.severity.value != "ok" for f in d.findings))
    for node, d in result["diagnoses"].items():
        assert [loc["component"] for loc in d["localizations"]] == \
            [loc.component for loc in memory.diagnoses[node].localizations], node
    storm = [o for o in result["offenders"] if o["node_id"] == "hpc-gpu-node-12" and o["rule"] == "nvlink_replay"]
    assert [(o["gpu"], o["link"]) for o in storm] == [(2, 1)]
    assert result["timings"]["analyze_s"] > 0 and result["timings"]["fetch_s"] > 0


def test_the_table_says_where_it_ran(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["sweep", "--store", str(store_dir)]) == 1
    out = capsys.readouterr().out
    assert "offending parts" in out and "hpc-gpu-node-12" in out and "the store, window 1 h to " in out
    assert "(s)" not in out  # counts say their noun once, singular for one: '1 node holds', '2 findings'


def test_the_headline_counts_links_and_the_table_gives_each_value_its_unit() -> None:
    """A link down with a fatal SXid on its switch end is one offending link over two rules, listed once per rule;
    an event count reads '1 event', as every door formats it."""
    from diagnostics.enums import LinkType, Severity
    from diagnostics.format import Unit
    from diagnostics.offenders import Offender

    down = Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=6, link=1, rule="link_down", severity=Severity.DOWN,
                    detail="link is inactive")
    sxid = down.model_copy(update={"rule": "sxid_fatal", "severity": Severity.FAILING, "rate_per_hour": 1.0,
                                   "above": 0.0, "unit": Unit.EVENTS})
    crc = Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=7, link=15, rule="crc", severity=Severity.WARNING,
                   rate_per_hour=719.0, above=100.0)
    result = SweepResult(at=datetime(2026, 9, 17, 8, tzinfo=UTC), window_hours=1.0, source="store",
                         offenders=[down, sxid, crc])
    assert result.headline() == "2 offending links (3 rule breaches) on 1 node"
    out = io.StringIO()
    _table(result, out)
    row = next(line for line in out.getvalue().splitlines() if "sxid_fatal" in line)
    assert "1 event > 0 events" in row and "1 events" not in row
    assert "719/h > 100/h" in out.getvalue()
    result.complete, result.incomplete_reasons = False, ["a part could not be read"]
    assert result.headline().startswith("fleet view INCOMPLETE (2 offending links, 3 rule breaches, found so far;")


def test_a_node_silent_over_the_span_makes_the_view_incomplete(store_dir: Path) -> None:
    store = open_store(store_dir)
    end = store.newest()
    assert end is not None
    later = end + timedelta(hours=6)  # every node silent for longer than the rules look back
    result = sweep(StoreSource(store), Request(end=later, thresholds=load_thresholds()))
    assert not result.complete and "have no reading" in result.incomplete_reasons[0]
    assert "not an all-clear" in result.headline()


def test_without_a_store_or_a_server_it_says_which_to_give(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep"]) == 2
    err = capsys.readouterr().err
    assert "--store DIR" in err and "--prometheus URL" in err


def test_an_empty_store_is_not_an_all_clear(tmp_path: Path) -> None:
    empty = StoreSource(open_store(tmp_path / "empty"))
    result = sweep(empty, Request(end=pd.Timestamp.now(tz="UTC").to_pydatetime(), thresholds=load_thresholds()))
    assert not result.complete and result.incomplete_reasons == ["the source holds no link samples and no events"]


def test_a_store_of_undated_kernel_log_events_is_judged_by_no_window_until_given_a_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dmesg's seconds since boot give no time: a store cannot place such events in any window (taken at each
    window's end, a week-old fatal Xid would page anew at every sweep), so the sweep and the node's answer both call
    it unjudged, say why and how to date them; ingested with --at, both judge them alike."""
    log = FLEET.parent / "real" / "kernel_xid79_sxid20034_gpud_1.txt"
    for store, at in ((tmp_path / "undated", ()), (tmp_path / "dated", ("--at", "2026-03-01T12:00:00Z"))):
        assert main(["ingest", str(log), "--store", str(store), "--node", "n1", *at]) == 0
        said = capsys.readouterr().err
        assert ("6 events state no time" in said) == (not at), said
        swept_code = main(["sweep", "--store", str(store), "--json"])
        swept = json.loads(capsys.readouterr().out)
        node_code = main(["analyze", "--store", str(store), "--node", "n1", "--json"])
        node = json.loads(capsys.readouterr().out)
        if at:
            assert (swept_code, node_code) == (1, 0)  # offenders found; a node answered
            assert swept["swept"] == ["n1"] and swept["diagnoses"]["n1"]["ticket_priority"] == "urgent"
            assert node["ticket_priority"] == "urgent"
            assert {o["rule"] for o in swept["offenders"]} == {c["rule"] for f in node["findings"]
                                                               for c in f["crossed"]}
        else:
            assert swept_code == node_code == 3 and not swept["offenders"] and not node["findings"]
            [why] = swept["incomplete_reasons"]
            assert why.startswith("6 events of n1 in the store have no time") and "--at TIME" in why, why
            assert why in node["warnings"] and "--at TIME" in node["repair_action"]


def test_a_mistyped_store_is_an_error_not_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--store", str(tmp_path / "typo")]) == 2
    assert "no telemetry store here" in capsys.readouterr().err and not (tmp_path / "typo").exists()


def test_a_store_of_events_alone_is_swept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = FLEET.parent / "real" / "sxid_24007_xid_a100_1.txt"
    assert main(["ingest", str(real), "--store", str(tmp_path / "s"), "--at", "2026-03-01T12:00:00Z"]) == 0
    capsys.readouterr()
    main(["sweep", "--store", str(tmp_path / "s"), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert any(o["rule"] == "sxid_fatal" for o in result["offenders"])


def test_a_real_xid_79_is_the_same_offender_from_the_store_and_from_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel log naming the GPU by its PCI address: the store's sweep gives the Xid code and names the GPU, as
    the files read in memory do (and as the Prometheus door names `GPU 3 (Xid 79)`)."""
    real = FLEET.parent / "real" / "kernel_xid79_sxid20034_gpud_1.txt"
    at = "2026-03-01T12:00:00Z"
    assert main(["ingest", str(real), "--store", str(tmp_path / "s"), "--node", "n1", "--at", at]) == 0
    capsys.readouterr()
    main(["sweep", "--store", str(tmp_path / "s"), "--json"])
    stored = json.loads(capsys.readouterr().out)
    off_bus = [o for o in stored["offenders"] if o["rule"] == "xid_off_bus"]
    assert [(o["xid"], o["bus"], o["severity"]) for o in off_bus] == [(79, "0000:91:00.0", "down")]
    main(["sweep", "--store", str(tmp_path / "s")])
    assert "the GPU at PCI 0000:91:00.0 (Xid 79)" in capsys.readouterr().out
    files, _, _ = files_source([real], node="n1")
    in_memory = sweep(files, Request(end=pd.Timestamp(at).to_pydatetime(), thresholds=load_thresholds()))
    assert [o.model_dump(mode="json", exclude={"node_id"}) for o in in_memory.offenders] == \
        [{k: v for k, v in o.items() if k != "node_id"} for o in stored["offenders"]]


def test_png_writes_the_fleet_heat_map(store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    out = tmp_path / "fleet.png"
    capsys.readouterr()
    assert main(["sweep", "--store", str(store_dir), "--png", str(out), "--json"]) == 1
    captured = capsys.readouterr()
    json.loads(captured.out)  # the JSON stays whole: what was written is said on stderr
    nodes = len(open_store(store_dir, create=False).nodes())
    assert f"wrote {out}" in captured.err and f"the heat map of {nodes} nodes" in captured.err
    assert Image.open(out).format == "PNG"


def test_the_table_says_which_young_nodes_were_rated_again_for_the_persistent_rules_only() -> None:
    """A node whose series began before the window, inside a persistent rule's span, is asked again for those rules
    only: the line must not say its series began inside the window."""
    result = SweepResult(at=datetime(2026, 3, 2, tzinfo=UTC), window_hours=1.0,
                         young={"joined": 1.0, "early": 4.0, "reset": 4.0})
    out = io.StringIO()
    _table(result, out)
    line = next(t for t in out.getvalue().splitlines() if "rated 3 nodes again" in t)
    assert "1 with series begun inside the window; 2 with series begun before it, inside the 4 h the persistent " \
           "rules read: for those rules only" in line, line
    assert "early, joined, reset" in line


def test_a_gpu_off_the_bus_is_one_row_as_its_node_shows_one_finding(store_dir: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Its Xid 79 and its silence are one part (analyze folds them into one finding): the sweep lists it once, with
    every rule it broke and what each said, named as the GPU and not as its PCIe link."""
    truth = json.loads((FLEET / "ground_truth.json").read_text())["nodes"]
    node = next(n for n, v in truth.items() if v["scenario"] == "xid79_gpu_lost")
    capsys.readouterr()
    main(["sweep", "--store", str(store_dir), "--json"])
    swept = json.loads(capsys.readouterr().out)
    main(["analyze", "--store", str(store_dir), "--node", node, "--json"])
    (gone,) = [f for f in json.loads(capsys.readouterr().out)["findings"]
               if f["severity"] != "ok" and any(c["rule"] == "gpus_missing" for c in f["crossed"])]
    rows = [o for o in swept["offenders"] if o["node_id"] == node and o["gpu"] == gone["gpu"]]
    assert len(rows) == 1, rows
    assert sorted([rows[0]["rule"], *rows[0]["also"]]) == sorted(c["rule"] for c in gone["crossed"])
    assert all(c["message"] in rows[0]["detail"] for c in gone["crossed"])
    main(["sweep", "--store", str(store_dir)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"  {node} ")]
    assert len([line for line in lines if f"GPU {gone['gpu']}" in line]) == 1, lines
    assert not [line for line in lines if f"GPU {gone['gpu']} PCIe" in line], lines


def test_the_sweep_names_each_link_as_analyze_names_it(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One component, one name: a link the sweep lists (its JSON and its table) is named as `fabricbot analyze`
    names it on the same node, its far end included (`GPU 2 -> GPU 3 NVLink 1`, `... -> NVSwitch 1 port 17`)."""
    truth = json.loads((FLEET / "ground_truth.json").read_text())["nodes"]
    nodes = [next(n for n, v in truth.items() if v["scenario"] == s) for s in ("replay_storm", "nvswitch_port_fault")]
    capsys.readouterr()
    main(["sweep", "--store", str(store_dir), "--json"])
    swept = json.loads(capsys.readouterr().out)
    main(["sweep", "--store", str(store_dir)])
    table = capsys.readouterr().out.splitlines()
    ends = set()
    for node in nodes:
        main(["analyze", "--store", str(store_dir), "--node", node, "--json"])
        named = {f["component"] for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] != "ok"}
        rows = [o for o in swept["offenders"] if o["node_id"] == node and o["link_type"] == "nvlink"]
        assert rows and {o["component"] for o in rows} == named, (node, rows, named)
        for o in rows:
            assert [line for line in table if line.split()[:1] == [node] and f" {o['component']} " in line], o
        ends.update(name.split(" -> ")[-1].split()[0] for name in named if " -> " in name)
    assert ends == {"GPU", "NVSwitch"}  # a bridge's far GPU and a switch port: both ends said as analyze says them


def test_gpus_a_kernel_log_names_by_bus_alone_are_counted_one_each(tmp_path: Path, cli: Cli) -> None:
    """A kernel log names its GPUs by PCI address: one Xid 149 and three Xid 145, on four GPUs, swept as '1
    offending link (4 rule breaches)', the four read as one since none has an index; and each is a GPU, not a
    link."""
    store = str(tmp_path / "store")
    log = FLEET.parent / "real" / "xid_145_149_log_1.txt"
    assert cli("ingest", str(log), "--store", store, "--node", "gx", "--at", "2026-05-18T10:00:00Z")[0] == 0
    code, out, err = cli("sweep", "--store", store)
    assert code == 1, err  # offenders found
    assert out.splitlines()[0] == "4 offending GPUs on 1 node", out


def test_a_node_shows_its_worst_links_and_counts_the_rest_unless_all_are_asked(
        store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As `/fabric fleet` lists a node: its worst three links, then how many more; `--all` (and `--json`) every one.
    A node with a hundred links down was a hundred rows, the next node's urgent link far below them."""
    capsys.readouterr()
    main(["sweep", "--store", str(store_dir), "--json"])
    swept = json.loads(capsys.readouterr().out)
    main(["sweep", "--store", str(store_dir)])
    table = capsys.readouterr().out.splitlines()
    main(["sweep", "--store", str(store_dir), "--all"])
    every = capsys.readouterr().out.splitlines()
    parts: dict[str, set[str]] = {}
    for o in swept["offenders"]:
        parts.setdefault(o["node_id"], set()).add(o["component"])
    many = [node for node, named in parts.items() if len(named) > LINKS_SHOWN]
    assert many, "the bundled fleet has a node with more offending links than a list shows"
    for node, named in parts.items():
        rows = [line for line in table if line.split()[:1] == [node] and "...and" not in line]
        shown = {c for c in named if any(f" {c} " in line for line in rows)}
        assert len(shown) == min(len(named), LINKS_SHOWN), (node, shown)
        more = [line for line in table if line.split()[:2] == [node, "...and"]]
        left = len(named) - LINKS_SHOWN
        assert len(more) == (left > 0) and all(f"...and {left} more offending " in line for line in more), more
        assert all(any(line.split()[:1] == [node] and f" {c} " in line for line in every) for c in named)


def test_the_worst_offenders_put_the_fewest_links_reporting_first_and_say_switches_as_the_headline_does() -> None:
    from diagnostics.config.thresholds import BELOW_EXPECTED_RULE
    from diagnostics.enums import LinkType, Severity
    from diagnostics.offenders import Offender, offending, worst_first

    def short(gpu: int, reporting: float) -> Offender:
        return Offender(node_id="n1", link_type=LinkType.NVLINK, gpu=gpu, rule=BELOW_EXPECTED_RULE,
                        severity=Severity.FAILING, rate_per_hour=reporting, above=18.0)

    assert [o.gpu for o in worst_first([short(0, 16.0), short(1, 2.0), short(2, 9.0)])] == [1, 2, 0]
    assert offending(2, "NVSwitch") == "2 offending NVSwitches" and offending(1, "link") == "1 offending link"


def _xid74_beside_undated_events(tmp_path: Path, cli: Cli) -> str:
    """A store of a node with a dated Xid 74 (an offender) and `dmesg-node`, whose SXid log has no time (not judged)."""
    store = str(tmp_path / "store")
    assert cli("ingest", str(REAL / "xid74_link_a100_vllm_1.txt"), "--store", store)[0] == 0
    assert cli("ingest", str(REAL / "sxid_22013_h100_1.txt"), "--store", store, "--node", "dmesg-node")[0] == 0
    return store


def test_offenders_found_exit_1_though_the_view_is_incomplete_and_unknown_alone_exits_3(tmp_path: Path,
                                                                                         cli: Cli) -> None:
    """A pager that acts on exit 1 saw 3 over the whole fleet whenever one node was not judged (a real fleet always
    has one), so the offenders it found never paged: they decide the status, and the incompleteness is still said.
    Without an offender an unjudged node is 3, never 0."""
    store = _xid74_beside_undated_events(tmp_path, cli)
    code, out, err = cli("sweep", "--store", store, "--json")
    result = json.loads(out)
    assert result["offenders"] and not result["complete"] and result["unjudged"] == ["dmesg-node"]
    assert code == 1 and "INCOMPLETE" in err and "this is not an all-clear" in err, err
    code, out, err = cli("sweep", "--store", store)
    assert code == 1 and "INCOMPLETE" in err and "INCOMPLETE" in out
    alone = str(tmp_path / "alone")
    assert cli("ingest", str(REAL / "sxid_22013_h100_1.txt"), "--store", alone, "--node", "dmesg-node")[0] == 0
    code, out, err = cli("sweep", "--store", alone, "--json")
    assert code == 3 and not json.loads(out)["offenders"] and "INCOMPLETE" in err


def test_a_node_holding_only_undated_events_is_said_so_not_silent(tmp_path: Path, cli: Cli) -> None:
    """A `dmesg` log (seconds since boot) ingested without --at, beside a dated one: no window places its events, so
    the sweep says the node holds only events with no time and how to give them one, not that it has no reading in
    the span (it has readings: undated ones), and it is not judged, as `analyze` calls its answer incomplete."""
    store = _xid74_beside_undated_events(tmp_path, cli)
    code, out, err = cli("sweep", "--store", store, "--json")
    result = json.loads(out)
    assert code == 1 and "dmesg-node" in err and "dmesg-node" in result["unjudged"]  # the other node's Xid 74
    assert "dmesg-node" not in result.get("silent", [])
    [said] = [r for r in result["incomplete_reasons"] if "dmesg-node" in r]
    assert said.startswith("1 node holds only events with no time") and "--at TIME" in said, said
    assert cli("analyze", "--store", store, "--node", "dmesg-node")[0] == 3


def test_a_judged_node_holding_undated_events_is_no_all_clear_through_any_door(tmp_path: Path, cli: Cli) -> None:
    """Dated nvlink readings judged healthy, and a dmesg of an Xid 79 (a GPU fallen off the bus) ingested apart
    without --at: no window places the Xid, but it may be now, so `analyze`, `ticket` and `sweep` each call their
    answer incomplete (exit 3) and say the events and how to date them, where they answered healthy."""
    real = FLEET.parent / "real"
    store = str(tmp_path / "store")
    assert cli("ingest", str(real / "nvlink_e_v100_short_form_dated_2.txt"), "--store", store, "--node", "n1")[0] == 0
    code, _, err = cli("ingest", str(real / "kernel_xid79_sxid20034_gpud_1.txt"), "--store", store, "--node", "n1")
    assert code == 0 and "6 events state no time: the store keeps them" in err, err
    said = "6 events of n1 in the store have no time (a log printed without dates, ingested without --at)"
    for asked in (("analyze", "--store", store, "--node", "n1"), ("ticket", "n1", "--store", store, "--rules")):
        code, _, err = cli(*asked)
        assert code == 3 and said in err, (asked, code, err)
    code, out, err = cli("sweep", "--store", store, "--json")
    result = json.loads(out)
    assert code == 1 and not result["complete"] and result["swept"] == ["n1"]
    assert [r for r in result["incomplete_reasons"] if r.startswith("1 node also holds events with no time") and
            "n1 (6 events)" in r], result["incomplete_reasons"]


def test_a_server_that_does_not_answer_leaves_the_fleet_and_a_node_unknown_alike(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 3 either way (a node's health unknown, as the fleet's view incomplete): `--node` once exited 2, which
    the help keeps for a usage or configuration error."""
    from tests.prometheus.helpers import free_port

    settings = tmp_path / "prometheus.toml"
    settings.write_text("[limits]\nretries = 0\ntimeout_seconds = 2\n", encoding="utf-8")
    monkeypatch.setenv("FABRICBOT_PROMETHEUS_CONFIG", str(settings))
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["sweep", "--prometheus", url]) == 3
    capsys.readouterr()
    assert main(["sweep", "--prometheus", url, "--node", "gpu-a"]) == 3
    assert "gpu-a not read (" in capsys.readouterr().err


def test_a_store_no_longer_fed_is_said_so_by_a_sweep_of_its_newest_readings(store_dir: Path, cli: Cli) -> None:
    """A scheduled `sweep --store` judges the window to the newest reading; where that is months old (the feed
    stopped), it paged on stale readings as current without a word."""
    newest = StoreSource(store_dir).newest()
    assert newest is not None
    cli("sweep", "--store", str(store_dir), "--json")  # once before the clock is frozen: what it builds lazily, built
    with freeze_time(newest + timedelta(days=30)):
        _, out, err = cli("sweep", "--store", str(store_dir), "--json")
        table = cli("sweep", "--store", str(store_dir))[1]
    said = f"the store's newest reading is from {fmt.when(newest)}, 30 days before now"
    assert said in err and "give --at TIME" in err
    # in the result a script reads, as every other warning of the sweep, and in the table's warnings
    assert [w for w in json.loads(out)["warnings"] if w.startswith(said)], json.loads(out)["warnings"]
    assert f"  warning: {said}" in table
    with freeze_time(newest + timedelta(hours=2)):  # a store still fed: its newest reading is now's
        assert "newest reading is from" not in cli("sweep", "--store", str(store_dir), "--json")[2]
    with freeze_time(newest + timedelta(days=30)):  # a time asked: the window the person named
        assert "newest reading is from" not in cli("sweep", "--store", str(store_dir), "--json", "--at",
                                                   newest.isoformat())[2]
