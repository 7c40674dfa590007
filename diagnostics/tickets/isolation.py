"""Drafted words held to the reach of the plan's isolation: a step drains at least what it stops.

A reboot, a power-off, a module or baseboard reseat or a diagnostic on every GPU stops the whole node, so a text
that drains, excludes or isolates one GPU (or keeps the node's other GPUs running) before it offers an isolation
that leaves the other GPUs' jobs to be killed by the repair. A switch tray or cable cartridge carries a link of
every GPU of the rack (of its NVLink domain), so a text that drains a few compute trays and keeps the rack's others
running, where it reseats or replaces one, says too little unless it drains the whole rack too. Sentences the
catalog itself holds are the plan's own wording and pass; a sentence that says not to do it before the words that
match advises the opposite.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .catalog import PlanStep, RepairPlan
from .sentences import drafted, said_not

_ISOLATING = r"(?:drain|exclud|isolat|cordon|fenc|quarantin)\w*"
_ONE_GPU = r"(?:GPUs?\s*#?\s*\d+(?:\s*(?:,|and|or|&)\s*\d+)*|(?:affected|failing|faulty|bad|suspect)\s+GPU\b(?!s))"
_RUNNING = r"(?:keep|stay|remain|continu|serv|run|work)\w*"
_GPU_NARROW = re.compile(
    rf"\b{_ISOLATING}\s+(?:only\s+|just\s+)?(?:the\s+)?{_ONE_GPU}(?!['’]?s?\s+(?:node|host|server|tray|machine))"
    rf"|\b{_ISOLATING}\s+(?:only\s+|just\s+)?(?:the\s+)?GPU\b(?!['’]?s?\s*(?:node|host|server|tray|machine|s\b))"
    rf"|\btak\w*\s+(?:only\s+|just\s+)?(?:the\s+)?(?:{_ONE_GPU}|GPU\b)\s*(?:alone\s+)?out\s+of\s+(?:service|rotation)"
    rf"|\b(?:other|remaining)\s+(?:\w+\s+){{0,2}}GPUs\b[^.;:]{{0,30}}?\b{_RUNNING}"
    rf"|\b(?:keep|leave|let)\w*\s+(?:the\s+)?(?:node'?s\s+)?(?:other|remaining)\s+(?:\w+\s+){{0,2}}GPUs\b"
    rf"|\brest\s+of\s+the\s+(?:node'?s\s+)?GPUs\b[^.;:]{{0,30}}?\b{_RUNNING}", re.IGNORECASE)
_UNITS = r"(?:compute\s+)?(?:trays|nodes|hosts|servers)"
_TRAY_NARROW = re.compile(
    rf"\b(?:other|remaining)\s+(?:\w+\s+){{0,2}}{_UNITS}\b[^.;:]{{0,30}}?\b{_RUNNING}"
    rf"|\b(?:keep|leave|let)\w*\s+(?:the\s+)?(?:rack'?s\s+)?(?:other|remaining)\s+(?:\w+\s+){{0,2}}{_UNITS}\b"
    rf"|\brest\s+of\s+the\s+rack\b[^.;:]{{0,30}}?\b{_RUNNING}"
    rf"|\b{_ISOLATING}\s+(?:only|just)\s+(?:the\s+)?(?:compute\s+)?(?:tray|node|host)s?\b"
    rf"|\b{_ISOLATING}\s+(?:the\s+)?(?:compute\s+)?(?:tray|node|host)s?\b[^.;:]{{0,30}}?\b(?:only|alone)\b",
    re.IGNORECASE)
# "keep the others running": which unit the others are is the sentence's (a GPU named: the node's other GPUs)
_OTHERS = re.compile(rf"\b(?:keep|leave|let)\w*\s+(?:the\s+)?(?:others|rest)\b[^.;:]{{0,20}}?\b{_RUNNING}"
                     rf"|\bthe\s+(?:others|rest)\s+{_RUNNING}", re.IGNORECASE)
_NAMES_GPU = re.compile(r"\bGPUs?\b", re.IGNORECASE)
# the whole rack drained somewhere in the text: a tray drained first is then the plan's own progressive isolation
_RACK_DRAINED = re.compile(
    r"\bdrain\w*\s+(?:\w+\s+){0,4}?(?:whole|entire|every|all)\b[^.;:]{0,40}?\b(?:rack|domain)\b"
    r"|\bdrains?\s+(?:the\s+)?(?:whole\s+|entire\s+)?rack\b|\b(?:rack|domain)\b[^.;:]{0,30}?\bdrained\b",
    re.IGNORECASE)
# said after the words: "excluding GPU 2 alone is not enough" rules the narrow isolation out
_NOT_ENOUGH = re.compile(r"\b(?:is|are|would be|will be)\s+(?:not|never|no)\s+(?:enough|sufficient|isolation|safe)\b"
                         r"|\b(?:isn't|aren't|wouldn't be|won't be)\s+(?:enough|sufficient|safe)\b"
                         r"|\bdoes\s+not\s+(?:do|suffice)\b|\bdoesn't\s+(?:do|suffice)\b", re.IGNORECASE)


def _claims(sentence: str) -> set[str]:
    """The units a sentence narrows the isolation to ('gpu', 'trays'), unless it says not to before the words."""
    found: set[str] = set()
    for unit, pattern in (("gpu", _GPU_NARROW), ("trays", _TRAY_NARROW)):
        m = pattern.search(sentence)
        if m and not _ruled_out(sentence, m):
            found.add(unit)
    m = _OTHERS.search(sentence)
    if m and not _ruled_out(sentence, m):
        found.add("gpu" if _NAMES_GPU.search(sentence) else "trays")
    return found


def _ruled_out(sentence: str, m: re.Match[str]) -> bool:
    return said_not(sentence, m.start()) or bool(_NOT_ENOUGH.search(sentence[m.end():]))


def narrowed_to(text: str, catalog: Sequence[str] = ()) -> set[str]:
    """The units `text` narrows the isolation to, sentence by sentence; a sentence the catalog holds is its own."""
    return {u for s in drafted(text, catalog) for u in _claims(s)}


def isolation_problems(text: str, plan: RepairPlan, step: PlanStep | None = None) -> list[str]:
    """Where `text` isolates less than it must: one GPU where the plan stops the node, a few compute trays kept
    apart from the rack where the step it rewords (or, for a text about the whole plan, the plan) touches a switch
    tray or cartridge and the text nowhere drains the whole rack."""
    catalog = [plan.action, *(t for s in [*plan.isolation, *plan.repair] for t in (s.text, s.command or ""))]
    narrowed = narrowed_to(text, catalog)
    rack_step = plan.stops_rack if step is None else step.stops == "rack"
    if narrowed and rack_step and not _RACK_DRAINED.search(text):
        return [f"isolates less than the rack (a GPU or a few compute trays, the rack's others kept running), but "
                f"this {plan.fault.value} plan {'step ' if step is not None else ''}touches a switch tray or cable "
                "cartridge, which every GPU of the rack (of its NVLink domain) has links through: every compute "
                "tray of the rack is drained first, as the plan's isolation says"]
    if "gpu" in narrowed and plan.stops_node:
        return [f"offers isolating one GPU (excluding or draining it, the node's other GPUs kept running), but this "
                f"{plan.fault.value} plan stops every GPU of the node (a reboot, a power-off, a reseat or a "
                "diagnostic on all GPUs): the only isolation is the node's drain"]
    return []


_LEVEL = {"gpu": 0, "node": 1, "rack": 2}  # what a step stops, and what an isolation reaches, from narrow to wide
_DRAINS = re.compile(r"\bdrain", re.IGNORECASE)


def isolation_reach(plan: RepairPlan) -> str:
    """How far the plan's isolation reaches, read as a technician may take it (an offer to exclude one GPU is taken):
    'rack' (every compute tray drained), 'node' (the node, or the failing compute trays, drained) or 'gpu'."""
    if any(s.drains == "rack" for s in plan.isolation):
        return "rack"
    if any(s.drains == "trays" for s in plan.isolation):
        return "node"
    words = " ".join(s.text for s in plan.isolation)
    return "node" if _DRAINS.search(words) and "gpu" not in narrowed_to(words) else "gpu"


def unsafe_steps(plan: RepairPlan) -> list[str]:
    """Each step of the plan (its reset among them) that stops more than its isolation reaches, and a one-line action
    that offers a narrower isolation than the plan's steps need: what an engineer checks before anyone acts."""
    reach = isolation_reach(plan)
    steps = [("the reset", plan.reset.stops, plan.reset.command or plan.reset.scope.value),
             *((f"step {i}", s.stops, s.text) for i, s in enumerate(plan.repair, 1))]
    problems = [f"{where} stops every GPU of the {stops} ({text[:70]}...), but the isolation reaches the {reach}"
                for where, stops, text in steps if stops is not None and _LEVEL[stops] > _LEVEL[reach]]
    return problems + [f"the action: {p}" for p in isolation_problems(plan.action, plan)]
