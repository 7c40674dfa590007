"""Topology clicks map to the elements the bot posted: a link's own button, or its pick in a component's menu."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from bot.blocks import DRAFT_LINK_ACTION, diagnosis_blocks
from bot.cli import main
from bot.console.topology import analysis_of, draft_targets, topology_view
from bot.console.web import Console
from bot.nodes import SnapshotNodeSource, StoreNodeSource
from bot.transport.mock_slack import BOT_USER, Message
from diagnostics import Diagnosis
from diagnostics.components import ComponentRef
from diagnostics.enums import Severity
from diagnostics.model import Localization
from diagnostics.render import drawable_of

from ..helpers import SEEDS, posted
from .helpers import console, summary


def _posted(diagnosis: Diagnosis, analysis_id: int) -> Message:
    blocks: list[dict[str, Any]] = [b.to_dict() for b in diagnosis_blocks(diagnosis, analysis_id)]
    return Message("COPS", "1800000000.000007", "summary", BOT_USER, blocks=blocks)


def _node12() -> Diagnosis:
    return SnapshotNodeSource.from_files([SEEDS]).diagnose("hpc-gpu-node-12")


def test_a_single_failing_link_is_drafted_by_its_own_button() -> None:
    d = _node12()
    bad = [i for i, f in enumerate(d.findings) if f.severity is not Severity.OK]
    message = _posted(d, 41)
    targets = draft_targets(message)
    assert analysis_of(message) == 41
    assert sorted(targets) == bad
    assert all(t.action_id == f"draft:{i}" and t.option is None for i, t in targets.items())


def test_links_of_a_shared_component_are_drafted_by_their_pick_in_its_menu() -> None:
    d = _node12()
    first = next(i for i, f in enumerate(d.findings) if f.severity is not Severity.OK)
    other = next(i for i, f in enumerate(d.findings) if f.severity is Severity.OK)
    findings = list(d.findings)
    findings[other] = findings[other].model_copy(update={"severity": Severity.FAILING, "worst_ratio": 3.0})
    loc = Localization(ref=ComponentRef.nvswitch("NVSwitch 1"), switch="NVSwitch 1", confidence=0.8,
                       links=[findings[first].component, findings[other].component])
    shared = d.model_copy(update={"findings": findings, "localization": loc, "localizations": [loc]})
    message = _posted(shared, 5)
    targets = draft_targets(message)
    assert sorted(targets) == sorted([first, other])
    for index, target in targets.items():
        assert target.action_id.startswith(DRAFT_LINK_ACTION) and target.option is not None
        # the action Slack would send for that pick: the select, its block, and the chosen option
        block = next(b for b in message.blocks if b["type"] == "actions")
        element = next(e for e in block["elements"] if e["action_id"] == target.action_id)
        action = Console._action(element, block["block_id"], target.option)
        assert action["selected_option"]["value"] == target.option and "options" not in action
        assert action["block_id"] == block["block_id"] and f'"f":{index}' in target.option


def test_every_clickable_link_is_drawn_inside_the_svg_picture() -> None:
    d = _node12()
    view = topology_view(drawable_of(d, None), 41, _posted(d, 41))
    root = ElementTree.fromstring(view["svg"])
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    ns = {"svg": "http://www.w3.org/2000/svg"}
    assert view["links"]
    for link in view["links"]:
        group = root.find(f".//svg:g[@id='{link['gid']}']", ns)
        assert group is not None, link["gid"]
        path = group.find("svg:path", ns)
        assert path is not None and path.get("d"), f"{link['gid']} has no line to click"
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", str(path.get("d")))]
        xs, ys = numbers[0::2], numbers[1::2]
        assert all(0 <= x <= width for x in xs) and all(0 <= y <= height for y in ys), path.get("d")
        assert link["action"] == {"message_ts": "1800000000.000007", "action_id": f"draft:{link['finding']}",
                                  "option": None}


def test_a_suspect_on_no_drawn_link_is_listed_with_the_summarys_draft_for_it() -> None:
    """An NVSwitch that explains links is a suspect of its own: the view lists it beside its drawn links, with the
    element that drafts the switch (not one of its links)."""
    d = _node12()
    first = next(i for i, f in enumerate(d.findings) if f.severity is not Severity.OK)
    loc = Localization(ref=ComponentRef.nvswitch("NVSwitch 1"), switch="NVSwitch 1", confidence=0.8,
                       links=[d.findings[first].component])
    shared = d.model_copy(update={"localization": loc, "localizations": [loc]})
    message = _posted(shared, 5)
    view = topology_view(drawable_of(shared, None), 5, message)
    assert [p["component"] for p in view["parts"]] == ["NVSwitch 1"]
    action = view["parts"][0]["action"]
    element = next(e for b in message.blocks if b["type"] == "actions" for e in b["elements"]
                   if e["action_id"] == action["action_id"])
    assert analysis_of(message) == 5 and '"l":0' in element["value"] and action["option"] is None
    assert {link["finding"] for link in view["links"]} == {first}


def test_a_gpu_off_the_bus_is_listed_with_its_draft_where_no_link_is_degraded(tmp_path: Path) -> None:
    """A node whose only fault is a GPU off the bus (Xid 79): no link is drawn as degraded, yet the view lists the
    GPU with the summary's draft button for it, and clicking it drafts that GPU's ticket. Before, the view held no
    link and nothing to click beside an urgent summary."""
    log = tmp_path / "kern.log"
    log.write_text("Nov 20 03:15:01 n1 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, "
                   "GPU has fallen off the bus.\n", encoding="utf-8")
    store = tmp_path / "store"
    assert main(["ingest", str(log), "--store", str(store), "--node", "n1", "--at", "2026-11-20T03:20:00Z"]) == 0
    with console(source=StoreNodeSource(store)) as c:
        posted_summary = summary(c, "n1")
        assert c.slack.wait_for(lambda s: any(m.files and m.thread_ts == posted_summary.ts for m in list(s.messages)),
                                timeout=60)
        picture = next(f for m in list(c.slack.messages) if m.thread_ts == posted_summary.ts for f in m.files)
        view = c.topology(picture)
        shown = c.state.analysis(view["analysis"])
        assert shown is not None and shown.fault_detected and shown.localization is not None
        assert view["links"] == [] and view["fault"]
        (part,) = view["parts"]
        assert part["component"] == shown.localization.component and part["kind"] == "gpu"
        assert part["action"]["message_ts"] == posted_summary.ts
        assert c.act(**part["action"])["status"] == 200
        assert c.slack.wait_for(lambda s: any(part["component"] in m.text and m.edits
                                              for m in posted(s, thread=posted_summary.ts)), timeout=60)
