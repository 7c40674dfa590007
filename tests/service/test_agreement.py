"""One question, one answer: each kind of input asked through each door gives the same headline, slowdown,
priority, verdict, action and part.

Doors: `fabricbot analyze` on the input itself, `fabricbot ingest` then `analyze --store`, `fabricbot ticket` both
ways, `fabricbot render` (the diagnosis it draws), and `/fabric NODE` through the real app on the mock Slack (the
analysis it posted, and the console's feed of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bot.cli import build_parser, main
from bot.commands.render import drawable_for
from bot.console.feed import channel_feed
from bot.console.topology import analysis_of
from bot.nodes import StoreNodeSource
from bot.state import BotState
from diagnostics import Diagnosis
from diagnostics.synth.rack_fleet import generate_racks
from tests.bot.helpers import OPS, local_bot, summary_for
from tests.conftest import FIXTURES
from tests.ingest.helpers import smi_q_read_twice
from tests.shared import answered_exit

FACTS = ("fault_detected", "isolated_component", "degradation_pct", "ticket_priority", "verdict", "repair_action",
         "rates_known")
AT = "2026-11-30T12:00:00Z"  # when an undated paste was taken, said to both the file door and the store


@dataclass
class Case:
    """An input as a user has it: its files, the node to ask about, and how undated readings are placed."""

    name: str
    files: list[Path]
    node: str
    snapshot: bool = False
    dated_by: list[str] = field(default_factory=list)  # ingest: --at; analyze: --end


Run = Callable[..., tuple[int, str, str]]


def _facts(d: Diagnosis | dict[str, Any]) -> dict[str, Any]:
    data = d.model_dump(mode="json") if isinstance(d, Diagnosis) else d
    return {k: data[k] for k in FACTS}


def _seed(tmp: Path, index: int, **extra: Any) -> Path:
    case = json.loads((FIXTURES / "seed_examples.json").read_text())[index]
    path = tmp / f"seed-{index + 1}{''.join(f'-{v}' for v in extra.values())}.json"
    path.write_text(json.dumps(case["input"] | extra))
    return path


def _fleet_csv(tmp: Path, node: str) -> list[Path]:
    """The committed fleet's tables for the node's job as CSV files, with the inventory."""
    fleet = FIXTURES / "fleet"
    steps = pd.read_parquet(fleet / "step_samples.parquet")
    jobs = steps[steps["node_ids"].astype(str).str.contains(node, regex=False)]
    nodes = sorted({n.strip() for v in jobs["node_ids"].astype(str) for n in v.split(",")} | {node})
    links = pd.read_parquet(fleet / "link_samples.parquet")
    events = pd.read_parquet(fleet / "events.parquet")
    out = []
    for name, frame in (("link_samples", links[links["node_id"].astype(str).isin(nodes)]), ("step_samples", jobs),
                        ("events", events[events["node_id"].astype(str).isin(nodes)] if len(events) else events)):
        path = tmp / f"{name}.csv"
        frame.to_csv(path, index=False)
        out.append(path)
    inventory = pd.read_csv(fleet / "nodes.csv", dtype=str)
    inventory[inventory["node_id"].isin(nodes)].to_csv(tmp / "nodes.csv", index=False)
    return [*out, tmp / "nodes.csv"]


@pytest.fixture(scope="module")
def racks(switch_tray_rack: tuple[Path, Path, dict[str, Any]]) -> tuple[Path, str]:
    """The run's synthetic NVL72 rack whose switch tray fails, and the compute tray host its fault reaches."""
    folder, _, truth = switch_tray_rack
    tray = truth["racks"]["rack-01"]["faults"][0]["links"][1][0]  # a compute tray with a link on the failing unit
    return folder, f"rack-01-c{tray:02d}"


def _cases(tmp: Path, racks: tuple[Path, str]) -> list[Case]:
    real = FIXTURES / "real"
    fleet = FIXTURES / "fleet"
    committed = [fleet / "link_samples.parquet", fleet / "step_samples.parquet", fleet / "events.parquet",
                 fleet / "nodes.csv"]
    (tmp / "csv").mkdir()
    return [
        Case("seed, failing", [_seed(tmp, 0)], "hpc-gpu-node-12", snapshot=True),
        Case("seed, healthy", [_seed(tmp, 1)], "hpc-gpu-node-03", snapshot=True),
        Case("seed on a platform", [_seed(tmp, 0, platform="hgx-h100-8gpu")], "hpc-gpu-node-12", snapshot=True),
        Case("normalized CSV tables", _fleet_csv(tmp / "csv", "hpc-gpu-node-12"), "hpc-gpu-node-12"),
        Case("nvidia-smi nvlink -e paste", [real / "nvlink_e_h100_1.txt"], "h100-a", dated_by=[AT]),
        Case("kernel log", [real / "sxid_24007_xid_a100_1.txt"], "192.168.11.119"),
        Case("committed fleet, failing node", committed, "hpc-gpu-node-12"),
        Case("committed fleet, healthy node", committed, "hpc-gpu-node-03"),
        Case("committed fleet, off-the-bus GPU", committed, "hpc-gpu-node-01"),
        Case("NVL72 rack, a compute tray", [racks[0]], racks[1]),
        Case("Fabric Manager log", [real / "fabricmanager_sxid20034_gpud_1.txt"], "n1"),
        Case("dcgmi nvlink -s paste", [real / "dcgmi_nvlink_s_all_down_1.txt"], "n1", dated_by=[AT]),
        Case("system journal, kernel and Fabric Manager", [FIXTURES / "samples" / "journal_fm_kernel.log"], "n1"),
        Case("nvidia-smi -q read twice in one paste", [_pasted(tmp, "twice.txt", smi_q_read_twice())], "h100-q"),
        Case("nvidia-smi -q read twice, the second cut",
             [_pasted(tmp, "twice-cut.txt", smi_q_read_twice(cut_in_gpu4=True))], "h100-q"),
    ]


def _pasted(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def _direct(run: Run, case: Case) -> dict[str, Any]:
    if case.snapshot:
        code, out, err = run("analyze", str(case.files[0]), "--json")
    else:
        end = ["--end", case.dated_by[0]] if case.dated_by else []
        code, out, err = run("analyze", *map(str, case.files), "--node", case.node, *end, "--json")
    assert code == answered_exit(out), err
    return _facts(json.loads(out))


_STORES: dict[tuple[str, ...], Path] = {}  # the inputs several cases share, ingested once per module


def _ingested(run: Run, case: Case, store: Path) -> tuple[dict[str, Any], Path]:
    at = ["--at", case.dated_by[0]] if case.dated_by else []
    node = [] if case.snapshot or len(case.files) > 1 or case.files[0].is_dir() else ["--node", case.node]
    key = (*map(str, case.files), *node, *at)
    if key not in _STORES:
        code, _, err = run("ingest", *map(str, case.files), "--store", str(store), *node, *at)
        assert code == 0, err
        _STORES[key] = store
    store = _STORES[key]
    code, out, err = run("analyze", "--store", str(store), "--node", case.node, "--json")
    assert code == answered_exit(out), err
    return _facts(json.loads(out)), store


def _ticket(run: Run, *target: str) -> dict[str, Any] | None:
    code, out, err = run("ticket", *target, "--json", "--rules")
    if code == 1:  # nothing to repair
        return None
    if code == 3 and "one reading per link, so no error rate is known" in err:  # no rate: its health unknown
        return None
    assert code == 0, err
    data = json.loads(out)
    part = data["replacement_part"]
    return {"priority": data["priority"], "gpu": data["gpu_index"], "part": part["id"] if part else None,
            "component": data["component"], "identity": data["identity"]}


def _drawn(case: Case, store: Path | None) -> dict[str, Any]:
    target = str(case.files[0]) if store is None else case.node
    args = build_parser().parse_args(["render", target, *(["--store", str(store)] if store else [])])  # as typed
    drawable = drawable_for(args, None if store is None else str(store))
    assert drawable.diagnosis is not None
    return _facts(drawable.diagnosis)


def _posted(store: Path, node: str) -> tuple[dict[str, Any], str]:
    """`/fabric NODE` answered by the real app over the store: the analysis it posted, and the text the console's
    feed shows for it."""
    with local_bot(source=StoreNodeSource(store)) as local:
        message = summary_for(local, node)
        analysis = analysis_of(message)
        diagnosis = BotState(local.audit.db).analysis(analysis) if analysis is not None else None
        feed = channel_feed(local.slack, OPS, "UALICE", [])
    shown = next(m for m in feed["messages"] if m["ts"] == message.ts)
    if diagnosis is None:  # a healthy node's summary has no draft button to carry the analysis id
        return {}, json.dumps(shown)
    return _facts(diagnosis), json.dumps(shown)


CASES = ("seed, failing", "seed, healthy", "seed on a platform", "normalized CSV tables", "nvidia-smi nvlink -e paste",
         "kernel log", "committed fleet, failing node", "committed fleet, healthy node",
         "committed fleet, off-the-bus GPU", "NVL72 rack, a compute tray", "Fabric Manager log",
         "dcgmi nvlink -s paste", "system journal, kernel and Fabric Manager", "nvidia-smi -q read twice in one paste",
         "nvidia-smi -q read twice, the second cut")


@pytest.mark.parametrize("asked", CASES)
def test_each_input_through_each_door_gives_one_answer(asked: str, tmp_path: Path, racks: tuple[Path, str],
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "FABRICBOT_STORE", "FABRICBOT_PROMETHEUS_URL"):
        monkeypatch.delenv(name, raising=False)

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    disagreements: list[str] = []
    cases = _cases(tmp_path, racks)
    assert [c.name for c in cases] == list(CASES)
    for i, case in enumerate(c for c in cases if c.name == asked):
        answers = {"analyze FILE": _direct(run, case)}
        answers["analyze --store"], store = _ingested(run, case, tmp_path / f"store-{i}")
        if case.snapshot:  # `render` analyses a snapshot file; other files it draws bare
            answers["render FILE"] = _drawn(case, None)
        answers["render --store"] = _drawn(case, store)
        posted, shown = _posted(store, case.node)
        if posted:
            answers["/fabric"] = posted
        first = answers["analyze FILE"]
        for door, got in answers.items():
            for key in FACTS:
                if got[key] != first[key]:
                    disagreements.append(f"{case.name}: {door} says {key}={got[key]!r}, analyze FILE {first[key]!r}")
        said = first["isolated_component"] if first["fault_detected"] else \
            "fabric health unknown" if not first["rates_known"] else "no fabric fault"  # one reading: no rate
        if said not in shown:
            disagreements.append(f"{case.name}: the console's feed does not show {said!r}")
        end = ["--end", case.dated_by[0]] if case.dated_by else []
        direct = _ticket(run, str(case.files[0])) if case.snapshot else _ticket(
            run, str(case.files[0]), "--node", case.node, *end) if len(case.files) == 1 else None
        stored = _ticket(run, case.node, "--store", str(store))
        if len(case.files) == 1 and direct != stored:  # `ticket` reads one file
            disagreements.append(f"{case.name}: the ticket from the file {direct} and from the store {stored}")
        if stored is not None and stored["priority"] != first["ticket_priority"]:
            disagreements.append(f"{case.name}: the ticket's priority {stored['priority']} is not the diagnosis' "
                                 f"{first['ticket_priority']}")
    assert disagreements == []


def test_the_seed_examples_expected_outputs_hold_through_the_store(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The seed's own expected outputs, matched exactly as `analyze FILE` matches them, asked of a store."""
    cases = json.loads((FIXTURES / "seed_examples.json").read_text())
    assert main(["ingest", str(FIXTURES / "seed_examples.json"), "--store", str(tmp_path / "s")]) == 0
    for case in cases:
        capsys.readouterr()
        assert main(["analyze", "--store", str(tmp_path / "s"), "--node", case["input"]["node_id"], "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        for key, want in case["expected_output"].items():
            if key == "degradation_pct":
                assert abs(got[key] - want) <= 0.1 + 1e-9, (case["input"]["node_id"], key, got[key])
            else:
                assert got[key] == want, (case["input"]["node_id"], key, got[key])


IMEX_DOWN = """\
$ nvidia-imex-ctl -N -H
5/12/2025 06:08:10.580
Nodes:
Node #0   - 10.0.2.1 (rack-02-c01)    - READY                - Version: 570.172
Node #1   - 10.0.2.9 (rack-02-c09)    - UNAVAILABLE          - Version: 570.172

Domain State: DEGRADED
"""


def test_the_rack_as_the_unit_is_one_answer_and_one_ticket_through_each_door(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rack-01: GPUs off the bus on half its trays at once; rack-02: IMEX down as `nvidia-imex-ctl -N -H` pasted on
    one of its trays says. Asked of the rack and of a tray, through `analyze --store`, `ticket` and `/fabric`: one
    suspect for the rack, one part (none), the same action."""
    folder = tmp_path / "nvl72"
    truth = json.loads(generate_racks(out=folder, seed=6, racks=2, hours=6,
                                      scenarios=["rack_incident", "healthy_rack"]).read_text())
    end = pd.Timestamp(truth["end"])
    paste = tmp_path / "imex.txt"
    paste.write_text(IMEX_DOWN.replace("5/12/2025 06:08:10.580", f"{end:%-m/%-d/%Y %H:%M:%S}.000"))
    store = tmp_path / "store"
    assert main(["ingest", str(folder), "--store", str(store)]) == 0
    assert main(["ingest", str(paste), "--store", str(store), "--node", "rack-02-c01"]) == 0
    tray = f"rack-01-c{truth['racks']['rack-01']['faults'][0]['trays'][0]:02d}"
    for rack, host, kind, component in (("rack-01", tray, "rack-incident", "The rack's NVLink domain"),
                                        ("rack-02", "rack-02-c05", "fabric-manager",
                                         "NVLink domain fabric software (NMX-Controller, IMEX)")):
        capsys.readouterr()
        assert main(["analyze", "--store", str(store), "--rack", rack, "--json"]) == 0
        whole = json.loads(capsys.readouterr().out)
        assert whole["isolated_component"] == component and len(whole["localizations"]) == 1
        assert whole["localizations"][0]["fault"] == kind and len(whole["localizations"][0]["hosts"]) == 18
        tickets = []
        for target in (rack, host):
            assert main(["ticket", target, "--store", str(store), "--json", "--rules"]) == 0
            tickets.append(json.loads(capsys.readouterr().out))
        assert [t["component"] for t in tickets] == [component] * 2
        assert [t["node_id"] for t in tickets] == [rack] * 2  # the rack's ticket, asked of the rack or a tray
        assert [t["replacement_part"] for t in tickets] == [None, None]
        assert tickets[0]["isolation_steps"][0]["text"] == tickets[1]["isolation_steps"][0]["text"]
        posted, _ = _posted(store, host)
        assert posted["isolated_component"] == component
        assert posted["repair_action"] == whole["repair_action"]


LSPCI = (FIXTURES / "samples" / "lspci_vvv_lane_h100.txt").read_text(encoding="utf-8")
LSPCI_CLEAR = LSPCI.replace("LaneErrStat: LaneErr at lane: 6", "LaneErrStat: 0", 1)


@pytest.mark.parametrize(("readings", "failing"), [
    ([("12:00", LSPCI)], False),  # one reading: set at some time since it was last cleared
    ([("11:00", LSPCI_CLEAR), ("12:00", LSPCI)], True),  # read clear, then set: the lane erred between
    ([("05:00", LSPCI_CLEAR), ("12:00", LSPCI)], False),  # the clear reading lies before the span the rules read
], ids=["undated", "dated", "cleared-before-the-span"])
def test_a_sticky_lane_status_is_dated_alike_through_each_door(readings: list[tuple[str, str]], failing: bool,
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`lspci -vvv` listings, each after a `date` line: GPU 0's Lane Error Status (sticky, RW1C, PCIe r4.0 sec.
    7.7.3.3) fails only where a reading in the rules' span read it clear before; the file itself and the store it
    was ingested into give the same answer and the same ticket."""

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    paste = tmp_path / "lspci.txt"  # `date; lspci -vvv`, once or twice
    paste.write_text("".join(f"2026-03-01T{clock}:00Z\n{text}" for clock, text in readings), encoding="utf-8")
    code, out, err = run("analyze", str(paste), "--node", "n1", "--json")
    assert code == answered_exit(out), err
    direct = json.loads(out)
    code, _, err = run("ingest", str(paste), "--store", str(tmp_path / "s"), "--node", "n1")
    assert code == 0, err
    code, out, err = run("analyze", "--store", str(tmp_path / "s"), "--node", "n1", "--json")
    assert code == answered_exit(out), err
    stored = json.loads(out)
    assert _facts(stored) == _facts(direct)
    assert direct["fault_detected"] is failing
    assert direct["isolated_component"] == ("GPU 0 PCIe" if failing else "None")
    rules = [[c["rule"] for c in f["crossed"]] for d in (direct, stored) for f in d["findings"]
             if f["link_type"] == "pcie" and f["gpu"] == 0]
    assert rules == [["pcie_lane_error" if failing else "pcie_lane_error_undated"]] * 2
    for d in (direct, stored):
        assert any("sticky" in w and "setpci" in w for w in d["warnings"]) is not failing
    tickets = [_ticket(run, str(paste), "--node", "n1"), _ticket(run, "n1", "--store", str(tmp_path / "s"))]
    assert tickets[0] == tickets[1]
    assert (tickets[0] is not None) is failing


def test_the_text_answer_says_the_same_verdict_through_a_file_and_a_store(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze FILE` and `analyze --store --node` print the diagnosis' verdict line alike (a snapshot's text once
    left it out)."""
    cases = json.loads((FIXTURES / "seed_examples.json").read_text())
    main(["analyze", str(FIXTURES / "seed_examples.json")])
    from_file = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  verdict:")]
    assert main(["ingest", str(FIXTURES / "seed_examples.json"), "--store", str(tmp_path / "s")]) == 0
    from_store = []
    for case in cases:
        capsys.readouterr()
        assert main(["analyze", "--store", str(tmp_path / "s"), "--node", case["input"]["node_id"]]) == 0
        from_store += [line for line in capsys.readouterr().out.splitlines() if line.startswith("  verdict:")]
    assert from_file == from_store and len(from_file) >= 1


def test_a_gpu_off_the_bus_in_a_kernel_log_alone_holds_at_every_door_after_its_hour(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """n1's journal holds an Xid 79 at 07:54 and no counter of n1 is read. Asked later (the file with a later end; the
    store, whose fleet ends at another node's reading an hour on): nothing shows the GPU came back, so it holds as the
    fatal SXid beside it does, at every door. It was dropped once its hour was past (the sweep ranked n1 high, on the
    SXid alone, while `analyze --store --node n1` said urgent)."""
    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    journal, later = FIXTURES / "samples" / "journal_fm_kernel.log", "2024-07-23T09:30:00Z"
    store = tmp_path / "store"
    assert run("ingest", str(journal), "--store", str(store))[0] == 0
    assert run("ingest", str(FIXTURES / "real" / "nvlink_s_v100_inactive_1.txt"), "--node", "d", "--at", later,
               "--store", str(store))[0] == 0
    answers = {}
    for door, argv in {"analyze FILE": ("analyze", str(journal), "--end", later, "--json"),
                       "analyze --store": ("analyze", "--store", str(store), "--node", "n1", "--end", later,
                                           "--json")}.items():
        code, out, err = run(*argv)
        assert code == answered_exit(out), err
        answers[door] = _facts(json.loads(out))
    code, out, err = run("sweep", "--store", str(store), "--json")
    answers["sweep --store"] = _facts(json.loads(out)["diagnoses"]["n1"])
    for door, got in answers.items():
        assert got["isolated_component"] == "the GPU at PCI 0000:91:00.0", (door, got)
        assert got["ticket_priority"] == "urgent", (door, got)
    assert "Xid 79" in out and "0000:91:00.0" in out


@pytest.mark.parametrize("cut", [False, True])
def test_a_board_read_twice_in_one_paste_is_judged_on_its_rate_through_a_file_and_a_store(
        cut: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`nvidia-smi -q`, ten minutes, `nvidia-smi -q` again, pasted as one: GPU 0's replays are a rate (30,000/h,
    failing), not a second section dropped; a second reading cut before GPU 4's replays leaves its 63 a total, not
    a rate of 0/h within thresholds."""
    paste = _pasted(tmp_path, "twice.txt", smi_q_read_twice(cut_in_gpu4=cut))
    assert main(["ingest", str(paste), "--node", "h100-q", "--store", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    texts = []
    for argv in (["analyze", str(paste), "--node", "h100-q"], ["analyze", "--store", str(tmp_path / "s"), "--node",
                                                              "h100-q"]):
        assert main(argv) == 0
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    assert "isolated: GPU 0 PCIe" in texts[0] and "replays 30,000/h > 1,000/h (pcie_replay)" in texts[0]
    assert ("total:    GPU 4 PCIe: replays 63 since reset" in texts[0]) is cut
