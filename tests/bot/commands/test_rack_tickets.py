"""`fabricbot ticket` on a rack whose switch tray fails: a GPU is one compute tray's (GPU 0 of two trays is two
candidates, each drained and reset on its own host), and a part is one ticket whichever door drafts it (the rack,
the failing switch tray's host, a compute tray whose links run to it)."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from diagnostics.enums import ComponentKind, FaultKind
from diagnostics.service import Request, StoreSource, diagnose
from diagnostics.tickets import candidates_for

Rack = tuple[Path, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def store(switch_tray_rack: Rack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the rack's store: a ticket records into the store it reads."""
    copy = tmp_path_factory.mktemp("rack-tickets") / "store"
    shutil.copytree(switch_tray_rack[1], copy)
    return copy


@pytest.fixture(scope="module")
def fault(switch_tray_rack: Rack) -> dict[str, Any]:
    fault: dict[str, Any] = switch_tray_rack[2]["racks"]["rack-01"]["faults"][0]
    return fault


@pytest.fixture(scope="module")
def shared_gpu(fault: dict[str, Any]) -> tuple[int, list[int]]:
    """A GPU index whose failing links start in two compute trays or more, and those trays."""
    trays: dict[int, set[int]] = defaultdict(set)
    for tray, gpu, *_ in fault["links"]:
        trays[gpu].add(tray)
    gpu, where = max(trays.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    assert len(where) >= 2
    return gpu, sorted(where)


def _ticket(capsys: pytest.CaptureFixture[str], store: Path, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["ticket", *argv, "--store", str(store), "--rules"])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_a_rack_gpu_candidate_is_one_trays_gpu_on_its_host(store: Path, shared_gpu: tuple[int, list[int]]) -> None:
    answer = diagnose(StoreSource(store), Request(rack="rack-01"))
    place = answer.diagnosis.rack
    assert place is not None
    gpus = [c for c in candidates_for(answer.diagnosis, answer.graph) if c.kind is ComponentKind.GPU]
    gpu, trays = shared_gpu
    assert {c.tray for c in gpus if c.gpu == gpu} == {str(t) for t in trays}
    for c in gpus:
        assert c.tray is not None and c.hosts == [place.host_of(c.tray)]
        assert all(name.startswith(f"Compute tray {c.tray} GPU {c.gpu} ") for name in c.findings)
        assert c.component == f"Compute tray {c.tray} GPU {c.gpu}"
        assert answer.diagnosis.owner_of(c.id) == place.host_of(c.tray)


def test_a_gpu_index_alone_on_a_rack_is_refused_with_each_trays_gpu(
        store: Path, shared_gpu: tuple[int, list[int]], capsys: pytest.CaptureFixture[str]) -> None:
    gpu, trays = shared_gpu
    for asked in (f"gpu{gpu}", f"GPU {gpu}"):
        code, out, err = _ticket(capsys, store, "rack-01", "--link", asked)
        assert code == 2 and out == ""
        for tray in trays:
            assert f"tray{tray}-gpu{gpu} (rack-01-c{tray:02d})" in err


def test_a_rack_gpu_ticket_drains_and_resets_its_own_tray_from_every_door(
        store: Path, shared_gpu: tuple[int, list[int]], capsys: pytest.CaptureFixture[str]) -> None:
    gpu, trays = shared_gpu
    tray = trays[0]
    host = f"rack-01-c{tray:02d}"
    doors = [("rack-01", f"tray{tray}-gpu{gpu}"), (host, f"gpu{gpu}"), (host, f"GPU {gpu}")]
    texts = {_ticket(capsys, store, node, "--link", link)[1] for node, link in doors}
    jsons = {_ticket(capsys, store, node, "--link", link, "--json")[1] for node, link in doors}
    assert len(texts) == 1 and len(jsons) == 1
    (text,), ticket = texts, json.loads(jsons.pop())
    assert text.startswith(f"# Repair ticket: Compute tray {tray} GPU {gpu} on {host}\n")
    assert ticket["node_id"] == host
    drain = ticket["isolation_steps"][0]["text"]
    assert f"nodename={host} " in drain and "whose links fail" not in drain
    reset = next(s["text"] for s in ticket["repair_steps"] if "nvidia-smi -r" in (s.get("command") or ""))
    assert f"compute tray {tray} ({host})" in reset
    for other in trays[1:]:
        assert f"rack-01-c{other:02d}" not in drain + reset


def test_a_rack_link_ticket_drains_and_resets_its_own_tray_from_every_door(
        store: Path, fault: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """One failing link of the rack, drafted from the rack's menu or its tray's host: its drain and its GPU reset
    name that tray's host. They said 'the compute trays whose links fail' and 'the compute tray', no host named,
    though a GPU reset without its own host drained first is the step a drain guards."""
    answer = diagnose(StoreSource(store), Request(rack="rack-01"))
    links = [c for c in candidates_for(answer.diagnosis, answer.graph) if c.kind is ComponentKind.NVLINK]
    assert links
    place = answer.diagnosis.rack
    assert place is not None
    for c in links:
        assert c.tray is not None and c.hosts == [place.host_of(c.tray)]
    link = links[0]
    host = link.hosts[0]
    texts = {_ticket(capsys, store, node, "--link", link.component, "--json")[1] for node in ("rack-01", host)}
    assert len(texts) == 1
    ticket = json.loads(texts.pop())
    drain = ticket["isolation_steps"][0]["text"]
    assert f"nodename={host} " in drain and "whose links fail" not in drain
    reset = next(s["text"] for s in ticket["repair_steps"] if "nvidia-smi -r" in (s.get("command") or ""))
    assert f"({host})" in reset


def test_a_rack_switch_port_from_the_menu_is_a_port_ticket_on_its_links_gpu_end(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A switch tray port that counts its own errors, drafted from the rack's menu: it was a whole-chip ticket ('an
    NVSwitch is the suspect, not one link', replace the switch tray 'with nothing to reseat'). It is the port's: its
    link's GPU end read and reset on that tray's host, the switch tray reseated before it is replaced."""
    answer = diagnose(StoreSource(store), Request(rack="rack-01"))
    ports = [c for c in candidates_for(answer.diagnosis, answer.graph)
             if c.kind is ComponentKind.NVSWITCH and c.ref.switch_tray is not None and c.ref.port is not None]
    assert ports
    assert {c.fault for c in ports} == {FaultKind.SWITCH_PORT}
    ended = [c for c in ports if c.gpu is not None]
    assert ended and all(c.hosts and c.tray for c in ended)
    port = ended[0]
    code, out, _ = _ticket(capsys, store, "rack-01", "--link", port.component, "--json")
    assert code == 0
    ticket = json.loads(out)
    assert ticket["fault"] == "switch-port" and ticket["link_named"].endswith(port.component)
    assert f"nodename={port.hosts[0]} " in ticket["isolation_steps"][0]["text"]
    texts = [s["text"].lower() for s in ticket["repair_steps"]]
    reseat = next(i for i, t in enumerate(texts) if "reseat" in t)
    replace = next(i for i, t in enumerate(texts) if "replace the nvlink switch tray" in t)
    assert reseat < replace and not any("nothing to reseat" in t for t in texts)


def test_a_switch_tray_is_one_ticket_from_the_rack_its_host_and_each_tray_it_fails(
        store: Path, fault: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    trays = sorted({link[0] for link in fault["links"]})
    switch_host = f"rack-01-s{int(fault['switch_tray']):02d}"
    doors = ["rack-01", switch_host, *(f"rack-01-c{t:02d}" for t in trays)]
    jsons = {door: _ticket(capsys, store, door, "--json")[1] for door in doors}
    for door in doors[1:]:
        assert jsons[door] == jsons["rack-01"], door
    texts = {door: _ticket(capsys, store, door)[1] for door in doors[:3]}  # the text renders the same ticket
    assert texts[doors[1]] == texts[doors[2]] == texts["rack-01"]
    ticket = json.loads(jsons["rack-01"])
    assert ticket["node_id"] == "rack-01" and ticket["component"] == f"Switch tray {fault['switch_tray']}"
    evidence = json.dumps(ticket["evidence"])
    for tray, gpu, *_ in fault["links"]:  # every failing link, not the door's own share of them
        assert f"Compute tray {tray} GPU {gpu} NVLink" in evidence
