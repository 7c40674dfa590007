"""What the model may say, and the checks that keep its words consistent with the facts.

The model returns reasoning only: which candidate, why, the alternatives, its hypotheses, a summary and the wording
of the repair steps. Every GPU, link, switch, port, part and priority its text names must match the facts of the
candidate it chose, and every command and part it names must be in that candidate's repair plan (which never
disables a link or a port); anything else is sent back to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from ..config.parts import UNKNOWN_PLATFORM, parts
from ..config.platforms import all_platforms, gpu_names
from ..enums import ComponentKind, LinkEnd, Priority
from ..model import Diagnosis
from .candidates import Candidate
from .catalog import PlanStep, RepairPlan
from .commands import (
    Command,
    command_problems,
    gpus_run_on,
    plan_commands,
    plan_texts,
    repeated_repairs,
    step_commands,
)
from .isolation import isolation_problems
from .sentences import drafted, sentences

_LIST = r"(\d+(?:\s*(?:,|and|or|&|/)\s*\d+)*)"  # after a plural: 'GPUs 5 and 7', 'ports 10, 16'
# a number as a person may spell it after a GPU's name ('GPU six'); GPUs of a node and a tray's go up to 17
_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"]
_SPELLED = "|".join(_WORDS)
# a whole number, not a UUID's, a part number's or a PCI address's first group ('GPU-12345678-...', 'GPU 0000:dc:00.0')
_ID = r"(\d+)(?!\w|[-:.]\w)"
_GPU = re.compile(rf"\bGPUs\s*#?\s*{_LIST}|\bGPU\s*[#_-]?\s*{_ID}|\bcuda:{_ID}|\bGPU\b[^.;,()]{{0,12}}?\bindex\s*#?\s*"
                  rf"{_ID}|\bGPU\s+({_SPELLED})(?=['’]s\b|\s+(?:NVLinks?|links?|is|was|has|fails?|failed|shows|"
                  rf"reports|and|or)\b|\s*[.,;:)]|\s*$)", re.IGNORECASE)
# NVLink's generation is said as a number too ("the NVLink 5 fabric", "NVLink 4 bandwidth"): not a link's
_GENERATION = r"(?!\s*(?:fabric|generation|gen\b|domain|systems?|network|switch|platform|bandwidth|speeds?|era|\)))"
_LINK = re.compile(rf"\bNVLinks\s+#?\s*{_LIST}|\bNVLink\s+#?\s*(\d+)\b{_GENERATION}|\bnvlink[-_](\d+)"
                   rf"|(?<![\w-])link\s+#?\s*{_ID}", re.IGNORECASE)
_SWITCH = re.compile(rf"\bNVSwitch\s*[#_-]?\s*{_ID}|(?<!pcie\s)\bswitch\s*#?\s*{_ID}", re.IGNORECASE)
_PORT = re.compile(rf"\bports\s*#?\s*{_LIST}|\bport\s*(?:[#:_-]|number|no\.?)?\s*{_ID}", re.IGNORECASE)
_SWITCH_TRAY = re.compile(rf"\bswitch[-\s]trays\s*#?\s*{_LIST}|\bswitch[-\s]tray\s*#?\s*(\d+)", re.IGNORECASE)
_COMPUTE_TRAY = re.compile(rf"\bcompute[-\s]trays\s*#?\s*{_LIST}|\bcompute[-\s]tray\s*#?\s*(\d+)", re.IGNORECASE)
_CHIP = re.compile(rf"\bchips\s*#?\s*{_LIST}|\bchip\s*#?\s*(\d+)", re.IGNORECASE)
_LANE = re.compile(r"\blanes?\s*#?\s*(\d+)(?!\s*(?:of|lanes?)\b)", re.IGNORECASE)  # 'lane 6', not 'lanes 8 of 16'
# a GPU's own link named together ("GPU 5 NVLink 2", "GPU 5's NVLink 2"): held to the links the facts name, so a
# draft does not give the failing link to the peer the input named (GPU 2 NVLink 2, its peer GPU 5)
_GPU_LINK = re.compile(r"\bGPU\s*#?\s*(\d+)(?:['’]s)?\s+NVLink\s*#?\s*(\d+)", re.IGNORECASE)
PAIRS = "GPU's NVLink"  # the facts' key of the (GPU, link) pairs, each as GPU x 1000 + link
# an NVIDIA board part number (699-2G520-0200-000): the parts catalog names parts by id and name, never by number
_PART_NUMBER = re.compile(r"\b\d{3}-[0-9A-Z]{5}-[0-9A-Z]{4}-[0-9A-Z]{3}\b", re.IGNORECASE)

_END = re.compile(r"\b(GPU|NVSwitch|upstream)(?:'s)?\s+end\b", re.IGNORECASE)
_END_OF = {"gpu": LinkEnd.GPU, "nvswitch": LinkEnd.NVSWITCH, "upstream": LinkEnd.UPSTREAM}
_LEVELS = "|".join(p.value for p in Priority)
_PRIORITY = re.compile(rf"\bpriority\b\W{{0,3}}(?:(?:is|of|to|at|as|be|should\s+be|would\s+be|will\s+be|must\s+be|"
                       rf"could\s+be)\s+)?(?:an?\s+)?({_LEVELS})\b|\b({_LEVELS})[-\s]priority\b"
                       r"(?!\s+(?:jobs?|workloads?|training|tenants?|customers?|queues?|partitions?|users?)\b)",
                       re.IGNORECASE)
# a priority said in another scale than the ticket's (P1, SEV-2): the ticket's level is said in its own words
# (never a GPU's performance state: "at P0 under load")
_OTHER_SCALE = re.compile(r"\b(?:priority|treat(?:ed|s)?\s+(?:it\s+|this\s+)?as|rate[ds]?\s+(?:it\s+)?as|as\s+an?|"
                          r"escalat\w*\s+(?:it\s+|this\s+)?(?:as|to))\s+"
                          r"(P[0-4]|SEV[-\s]?[0-4])\b|\b(P[0-4]|SEV[-\s]?[0-4])[-\s]+(?:priority|incident|ticket|issue)\b"
                          r"|\b(SEV[-\s]?[0-4])\b", re.IGNORECASE)


class Alternative(BaseModel):
    candidate_id: str = Field(description="An id from list_candidates.")
    why: str = Field(description="Why it is less likely than the chosen candidate.")


class ModelHypothesis(BaseModel):
    kind: ComponentKind = Field(description="nvlink = a single link; nvswitch = a shared NVSwitch; gpu = the GPU "
                                            "module; pcie = the PCIe riser/path; fabric-software = Fabric Manager "
                                            "or driver.")
    candidate_id: str | None = Field(None, description="The candidate this hypothesis blames, if one fits.")
    evidence: list[str] = Field(default_factory=list, description="Facts from the tools for and against it.")


class DraftReasoning(BaseModel):
    """The model's structured answer; facts are never taken from it."""

    candidate_id: str = Field(description="The id (from list_candidates) of the component held responsible.")
    why: str = Field(description="Why this candidate, citing the findings.")
    alternatives: list[Alternative] = Field(default_factory=list, description="Other candidates, most likely first.")
    hypotheses: list[ModelHypothesis] = Field(default_factory=list,
                                              description="Ranked: single link, shared NVSwitch, GPU module, PCIe "
                                                          "riser, fabric software; most likely first.")
    cites: list[str] = Field(default_factory=list,
                             description="Refs (from unhealthy_links) of the links behind the choice. Required when "
                                         "the choice is not the analysis's: it carries the ticket only if the cited "
                                         "rows are unhealthy and are links it explains.")
    summary: str = Field(description="Two or three sentences for the on-call engineer and the technician.")
    repair_steps: list[str] = Field(default_factory=list,
                                    description="Clearer wording of the repair steps from repair_steps_for, one "
                                                "per step, same order and count; empty keeps the catalog wording.")


def _numbers(pattern: re.Pattern[str], text: str) -> set[int]:
    """The numbers `text` names of one kind (in figures, or a GPU's in words); a GPU's also as a command's `-i`
    names it (`nvidia-smi -r -i 3`)."""
    named = {_WORDS.index(n.lower()) if n.lower() in _WORDS else int(n) for m in pattern.finditer(text)
             for n in re.findall(rf"\d+|{_SPELLED}", next(g for g in m.groups() if g), re.IGNORECASE)}
    return named | gpus_run_on(text) if pattern is _GPU else named


def _from(texts: Iterable[str | None], pattern: re.Pattern[str]) -> set[int]:
    out: set[int] = set()
    for t in texts:
        if t:
            out |= _numbers(pattern, t)
    return out


def _pairs(texts: Iterable[str | None]) -> set[int]:
    """The (GPU, NVLink) pairs the texts name together, each as GPU x 1000 + link."""
    return {int(g) * 1000 + int(n) for t in texts if t for g, n in _GPU_LINK.findall(t)}


def _facts(c: Candidate) -> dict[str, set[int]]:
    texts = [c.component, c.peer, c.switch, *c.findings]
    gpus = _from(texts, _GPU) | ({c.gpu} if c.gpu is not None else set())
    links = _from([c.component, *c.findings, c.link_id], _LINK) | ({c.link} if c.link is not None else set())
    ports = _from([c.component, *c.findings], _PORT) | ({c.switch_port} if c.switch_port is not None else set())
    pairs = _pairs([c.component, *c.findings]) | ({c.gpu * 1000 + c.link} if c.gpu is not None and c.link is not None
                                                  else set())
    return {"GPU": gpus, "NVLink": links, "NVSwitch": _from([c.switch, c.component], _SWITCH), "port": ports,
            "lane": set(c.lanes), PAIRS: pairs, **{name: _from(texts, p) for name, p in _RACK_PATTERNS.items()}}


def _with_plan(facts: dict[str, set[int]], plan: RepairPlan) -> dict[str, set[int]]:
    """A candidate's facts and what its own repair plan names: the GPUs a pre-Ampere reset takes with it, the compute
    trays a rack's repair drains; the plan's words are the catalog's, never a contradiction."""
    said = plan_texts(plan)[1:]  # not its action: a contradiction there names the part the input says it is not
    return {**{name: facts.get(name, set()) | _from(said, pattern) for name, pattern in _PATTERNS.items()},
            PAIRS: facts.get(PAIRS, set()) | _pairs(said)}


ALL_PARTS = "*"
_RACK_PATTERNS = {"switch tray": _SWITCH_TRAY, "compute tray": _COMPUTE_TRAY, "chip": _CHIP}
_PATTERNS = {"GPU": _GPU, "NVLink": _LINK, "NVSwitch": _SWITCH, "port": _PORT, "lane": _LANE, **_RACK_PATTERNS}


def _union(candidates: Iterable[Candidate], diagnosis: Diagnosis) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {name: set() for name in [*_PATTERNS, PAIRS]}
    for c in candidates:
        for name, values in _facts(c).items():
            out[name] |= values
    out["GPU"] |= _from((f.component for f in diagnosis.findings), _GPU)
    out["NVLink"] |= _from((t for f in diagnosis.findings for t in (f.component, f.link_id)), _LINK)
    out["NVLink"] |= {f.link for f in diagnosis.findings if f.link is not None and f.link_type.value == "nvlink"}
    out["NVSwitch"] |= _from((f.switch for f in diagnosis.findings), _SWITCH)
    out["port"] |= {f.switch_port for f in diagnosis.findings if f.switch_port is not None}
    out["lane"] |= {lane for f in diagnosis.findings for lane in f.lanes}
    out[PAIRS] |= _pairs(f.component for f in diagnosis.findings) | {
        f.gpu * 1000 + f.link for f in diagnosis.findings if f.gpu is not None and f.link is not None}
    for name, pattern in _RACK_PATTERNS.items():
        out[name] |= _from((t for f in diagnosis.findings for t in (f.component, f.switch)), pattern)
    return out


def contradictions(text: str, facts: dict[str, set[int]], owner: str, priority: Priority,
                   part_ids: set[str] | str) -> list[str]:
    """Each GPU, link, switch, port, tray, chip, part or priority `text` names that the facts do not hold (a kind
    the facts leave out holds none)."""
    problems = []
    for name, pattern in _PATTERNS.items():
        have = facts.get(name, set())
        for n in sorted(_numbers(pattern, text) - have):
            held = ", ".join(f"{name} {v}" for v in sorted(have)) or "none"
            problems.append(f"names {name} {n}, but {owner} has {held}")
    if PAIRS in facts:
        for pair in sorted(_pairs([text]) - facts[PAIRS]):
            held = ", ".join(f"GPU {v // 1000} NVLink {v % 1000}" for v in sorted(facts[PAIRS])) or "none"
            problems.append(f"names GPU {pair // 1000} NVLink {pair % 1000}, but {owner} has {held}")
    for m in _PRIORITY.finditer(text):
        level = (m.group(1) or m.group(2)).lower()
        if level != priority.value:
            problems.append(f"states priority {level}, but the priority is {priority.value} (set by the analysis)")
    for m in _OTHER_SCALE.finditer(text):
        said = next(g for g in m.groups() if g)
        problems.append(f"states a priority as {said}, but the priority is {priority.value} (set by the analysis, "
                        "said in its own words)")
    for m in _PART_NUMBER.finditer(text):
        problems.append(f"names part number {m.group(0)}, which the parts catalog does not hold: name the part by "
                        "the catalog's id or name")
    lowered = text.lower()
    for p in parts() if part_ids != ALL_PARTS else ():
        if p.id not in part_ids and p.id.lower() in lowered:
            held = ", ".join(sorted(part_ids)) or "none"
            problems.append(f"names part {p.id}, but the catalog parts for this component are {held}")
    return problems


def _says(term: str, text: str) -> bool:
    """Whether `text` names `term` as words of its own (`H100`, not the `h100` inside a part id)."""
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text, re.IGNORECASE) is not None


def _boards() -> list[list[str]]:
    """Each platform's GPU names, its product first (`H100`; a GB200 tray's `GB200`, then `B200`, its superchip's
    GPUs): a part is its board's, and a board's GPUs go by any of its names."""
    return [names for names in (gpu_names(name) for name in all_platforms()) if names]


def part_name_problems(text: str, plans: Sequence[RepairPlan]) -> list[str]:
    """Each part `text` names by its name (`H200 SXM5 module`, `PCIe riser assembly`) or by its board's GPU product
    (`H200` on an H100 board) that is none of these plans' parts: a part id is caught by `contradictions`, but a
    technician orders by these words. The plans' own words never contradict them."""
    own = [p for plan in plans for p in (plan.part, plan.next_part) if p is not None]
    words = " ".join([*(f"{p.fru} {p.description}" for p in own), *(t for plan in plans for t in plan_texts(plan))])
    held = ", ".join(p.id for p in own) or "none"
    problems: list[str] = []
    for p in parts():
        if p.platform == UNKNOWN_PLATFORM or any(p.id == o.id for o in own) or not _says(p.fru, text) \
                or _says(p.fru, words) or any(p.fru in q for q in problems):
            continue
        problems.append(f"names the {p.fru} ({p.id}, a part of {p.platform}), but the catalog parts for this "
                        f"component are {held}")
    boards = _boards()
    board = sorted({names[0] for names in boards if _says(names[0], words)})  # the plan's words name its product
    if board:
        named = {m for names in boards if names[0] in board for m in names}  # its GPUs by any of their names
        problems += [f"names {m}, but this component's board is the {' / '.join(board)}'s (its parts: {held})"
                     for m in sorted({m for names in boards for m in names}) if m not in named and _says(m, text)]
    return problems


def end_problems(text: str, end: LinkEnd | None, owner: str, catalog: Sequence[str] = ()) -> list[str]:
    """Each end of the link `text` says the errors reach that the analysis did not name (an end is named only where
    both ends' counters say it); a sentence the catalog holds ("a clean switch end points at the GPU end") is its
    own condition, not a claim."""
    named = {_END_OF[m.group(1).lower()] for s in drafted(text, catalog) for m in _END.finditer(s)}
    held = f"the {end.value} end" if end is not None else "no end (the counters of both ends do not name one)"
    return [f"names the {e.value} end, but {owner} has {held}" for e in sorted(named) if e is not end]


def plan_problems(text: str, plan: RepairPlan, allowed: list[Command], scope: str | None = None,
                  step: PlanStep | None = None) -> list[str]:
    """A command the plan (or the part of it `scope` names) does not hold, an instruction never given (a write, a
    link disabled, no drain), an isolation narrower than what the plan (or the catalog `step` the text rewords)
    stops, or, in a repeat offender's plan, the reseat, swap test or reset its earlier tickets tried told again."""
    problems = command_problems(text, allowed, scope or f"this {plan.fault.value} plan", plan_texts(plan))
    if plan.escalation is not None:
        problems += repeated_repairs(text, plan.escalation, plan_texts(plan))
    return problems + isolation_problems(text, plan, step)


def held_problems(text: str, *, held: bool) -> list[str]:
    """A priority level stated for a ticket `held` until the input and the platform agree (its plan cannot apply, or
    the platform named is not its GPUs'), in a sentence that does not say it is held: the ticket's priority reads
    held, and no one acts on the level until then."""
    if not held:
        return []
    return [f"states priority {(m.group(1) or m.group(2)).lower()}, but this ticket is held until the input and the "
            "platform agree: its priority reads held" for s in sentences(text) if "held" not in s.lower()
            for m in _PRIORITY.finditer(s)]


def node_text_problems(text: str, diagnosis: Diagnosis, candidates: Sequence[Candidate],
                       priority: Priority) -> list[str]:
    """Reasoning may discuss any component of the node, but only those that exist, and not a different priority."""
    return contradictions(text, _union(candidates, diagnosis), "this node", priority, ALL_PARTS)


def hypothesis_problems(hypotheses: Sequence[ModelHypothesis], diagnosis: Diagnosis,
                        candidates: Sequence[Candidate], priority: Priority) -> list[str]:
    ids = {c.id for c in candidates}
    problems = []
    for i, h in enumerate(hypotheses):
        if h.candidate_id is not None and h.candidate_id not in ids:
            problems.append(f"hypothesis {i + 1} names candidate {h.candidate_id!r}, which does not exist")
        for text in h.evidence:
            problems += [f"hypothesis {i + 1} {p}" for p in node_text_problems(text, diagnosis, candidates, priority)]
    return problems


def check(out: DraftReasoning, diagnosis: Diagnosis, candidates: Sequence[Candidate], priority_of: dict[str, Priority],
          plans: dict[str, RepairPlan]) -> list[str]:
    """Every reason to send the answer back; empty when it is consistent with the facts."""
    by_id = {c.id: c for c in candidates}
    known = ", ".join(by_id)
    chosen = by_id.get(out.candidate_id)
    if chosen is None:
        return [f"candidate_id {out.candidate_id!r} does not exist; choose one of: {known}"]
    problems = []
    for alt in out.alternatives:
        if alt.candidate_id not in by_id:
            problems.append(f"alternative {alt.candidate_id!r} does not exist; candidates are: {known}")
    prio, plan = priority_of[chosen.id], plans[chosen.id]
    part_ids = {p.id for p in (plan.part, plan.next_part) if p is not None}
    allowed = plan_commands(plan)
    problems += hypothesis_problems(out.hypotheses, diagnosis, candidates, prio)
    own = _with_plan(_facts(chosen), plan)
    for label, text, may, scope, step in [("summary", out.summary, allowed, None, None), *(
            (f"repair step {i + 1}", s, step_commands(plan.repair[i], plan) if i < len(plan.repair) else [],
             f"catalog step {i + 1}", plan.repair[i] if i < len(plan.repair) else None)
            for i, s in enumerate(out.repair_steps))]:
        problems += [f"{label} {p}" for p in contradictions(text, own, f"candidate {chosen.id}", prio, part_ids)]
        problems += [f"{label} {p}" for p in end_problems(text, chosen.end, f"candidate {chosen.id}",
                                                          plan_texts(plan))]
        problems += [f"{label} {p}" for p in plan_problems(text, plan, may, scope, step)]
        problems += [f"{label} {p}" for p in part_name_problems(text, [plan])]
        problems += [f"{label} {p}" for p in held_problems(
            text, held=not plan.applies or diagnosis.platform_contradicted is not None)]
    problems += [f"why {p}" for p in node_text_problems(out.why, diagnosis, candidates, prio)]
    for label, text in [("why", out.why), *((f"alternative {a.candidate_id!r}", a.why) for a in out.alternatives),
                        *((f"hypothesis {i + 1}", e) for i, h in enumerate(out.hypotheses) for e in h.evidence)]:
        problems += [f"{label} {p}" for p in plan_problems(text, plan, allowed)]
    if out.repair_steps and len(out.repair_steps) != len(plan.repair):
        problems.append(f"repair_steps has {len(out.repair_steps)} steps; give exactly {len(plan.repair)} "
                        "(one per catalog step, same order) or none")
    return problems
