"""The commands a model's text names, held against a repair plan's, and the instructions fabricbot never gives.

A command is its tool, its subcommand where the tool has them, and its options: `nvidia-smi nvlink -e -i 2` is
(nvidia-smi, nvlink, {-e, -i}). A text may name a command only where the plan holds one of the same tool and
subcommand with every option the text gives (values aside: the GPUs an `-i` names are held to the facts in
`reasoning`), so `nvidia-smi nvlink -r` (which zeroes the counters) is not the plan's `nvidia-smi nvlink -e`. A tool
the plan never names (`setpci`, `rmmod`, `nv set`) is refused outright. Some instructions are refused whatever the
plan holds, sentence by sentence: a write into the hardware or the kernel's files, a link or port disabled or taken
offline, a repair without the drain, the counters cleared, the node put back in service. A sentence that says not to
do it before the words that match advises the opposite; a sentence the catalog itself holds is the catalog's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .catalog import PlanStep, RepairPlan
from .sentences import drafted, said_not

# tool -> its subcommands (a word that changes what the tool does; other words are values)
_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "nvidia-smi": frozenset({"nvlink", "topo", "drain", "mig", "c2c", "vgpu", "dmon", "pmon", "conf-compute"}),
    "dcgmi": frozenset({"diag", "discovery", "health", "stats", "group", "fieldgroup", "dmon", "nvlink", "policy",
                        "config", "modules", "profile", "introspect", "test"}),
    "systemctl": frozenset({"start", "stop", "restart", "reload", "status", "enable", "disable", "mask", "unmask",
                            "kill", "is-active", "reboot", "poweroff", "halt"}),
    "nv": frozenset({"set", "unset", "show", "action", "config", "apply"}),
    "ipmitool": frozenset({"sel", "chassis", "power", "raw", "mc", "sdr", "fru", "sensor", "lan"}),
    "scontrol": frozenset({"update", "show", "reboot", "reconfigure"}),
    "kubectl": frozenset({"cordon", "uncordon", "drain", "delete", "label", "taint", "get", "describe"}),
}
# tools named by themselves: those the plans use, and those a model must never slip in (a register write, a module
# unloaded under running jobs, a device removed)
_PLAIN = ("lspci", "setpci", "journalctl", "dmesg", "nv-fabricmanager", "nvidia-fabricmanager", "nvidia-imex-ctl",
          "nvidia-bug-report.sh", "reboot", "poweroff", "modprobe", "rmmod", "insmod", "devmem", "mlxlink", "mlxconfig",
          "ibportstate", "curl")
_NAMES = sorted([*_SUBCOMMANDS, *_PLAIN], key=len, reverse=True)
_TOOL = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(t) for t in _NAMES if t != "nv") + r"|nv(?=\s+(?:"
                   + "|".join(_SUBCOMMANDS["nv"]) + r")\b)|ip(?=\s+(?:link|addr|address|route)\b))(?![\w.-])",
                   re.IGNORECASE)
_END = re.compile(r"`|\n|;|&&|\|\||\||\)|\.(?:\s|$)|,\s|:\s")  # where a command named in prose or code stops
_OPTION = re.compile(r"^-{1,2}[A-Za-z][\w-]*")
# nvidia-smi's long options, as its short ones (`nvidia-smi -h`); `-i` only narrows a command to the GPUs it names
_LONG = {"--gpu-reset": "-r", "--id": "-i", "--query": "-q", "--display": "-d", "--errorcounters": "-e",
         "--status": "-s", "--remotelinkinfo": "-R", "--capabilities": "-c", "--resetcounters": "-r",
         "--reseterrorcounters": "-re"}
_NARROWS = frozenset({"-i", "-d"})  # the GPUs a command is run on, the sections `-q` shows
_SAME = {"dmesg": "journalctl"}  # reads the same kernel log
_RESETS = frozenset({"-r"})  # a reset must name its GPUs (`-i`): without, it resets every GPU of the node
# what a step says in words, and the commands that do just that
_SAID = [(re.compile(r"\bpower(?:ed|s|ing)?[- ](?:off|down)\b", re.IGNORECASE),
          (("poweroff", ""), ("systemctl", "poweroff"), ("ipmitool", "chassis"))),
         (re.compile(r"\bpower[- ]cycl", re.IGNORECASE), (("ipmitool", "chassis"),)),
         (re.compile(r"\breboot|\brestart", re.IGNORECASE),
          (("reboot", ""), ("systemctl", "reboot"), ("ipmitool", "chassis"))),
         (re.compile(r"\bkernel (?:log|lines)|journalctl -k", re.IGNORECASE), (("dmesg", ""), ("journalctl", "")))]

_OBJECT = r"[^.;,]{0,40}?\b(?:nv)?(?:link|port|interface|lane)s?\b"  # a link or port the verb acts on, nearby
_WRITES = re.compile(r">\s*/(?:sys|proc|dev)/|\btee\b[^`\n]*/(?:sys|proc|dev)/|\bsetpci\b[^`\n]*=", re.IGNORECASE)
_DISABLES = re.compile(
    r"\b(?:disabl|isolat|shut\s*down|shutting\s+down|turn(?:ed|ing|s)?\s+off|power(?:ed|ing|s)?\s+off)\w*\b"
    + _OBJECT + r"|\b(?:take|takes|taking|took|set|sets|setting|bring|brings|bringing|brought|put|puts|putting|"
    r"mark|marks|marking)\b" + _OBJECT + r"[^.;,]{0,30}?\b(?:offline|down|disabled)\b", re.IGNORECASE)
_NO_DRAIN = re.compile(
    r"\b(?:without|no need to|no need for|needn'?t|need not|don'?t|do not|skip|skipping|instead of|rather than)\s+"
    r"(?:first\s+)?(?:the\s+|a\s+|any\s+)?drain"
    r"|\bdrain(?:ing)?\s+(?:is\s+|isn'?t\s+)?(?:not\s+)?(?:needed|necessary|required|unnecessary|optional)\b"
    r"|\bdrain\w*\s+(?:it\s+|the\s+node\s+|them\s+)?later\b|\bno\s+drain\b|\bkeep\w*\b[^.;]*\bin service\b"
    r"|\bwhile\s+(?:its\s+|the\s+)?(?:jobs?|workloads?)\s+(?:keep\s+|are\s+|is\s+)?(?:still\s+)?running\b"
    r"|\b(?:safe|done)\s+live\b|\bjobs?\s+can\s+(?:stay|keep|continue)", re.IGNORECASE)
# a step that stops GPUs, said before the drain it needs ("reset GPU 2, then drain", "run dcgmi diag now, before
# draining", "drain after the reset"), or on a node still working ("on the running node", "right away" with no drain)
_STOPS = (r"(?:reset|reboot|restart|re-?seat|power[- ]?(?:cycl|off|down)|swap(?:s|ped|ping)?\b(?!\s*-?\s*tests?)|"
          r"replac(?:e|es|ed|ing)\b|remov(?:e|es|ed|ing)\b|dcgmi\s+diag|diag(?:nostic)?s?\b)")
_AT_ONCE = r"(?:reset|reboot|restart|re-?seat|power[- ]?(?:cycl|off|down)|dcgmi\s+diag|diag(?:nostic)?s?\b)"
_ACTS_FIRST = re.compile(
    rf"\b{_STOPS}\w*\b[^.;]*?\b(?:before|prior\s+to|ahead\s+of|then|afterwards?)\b[^.;]{{0,20}}?\bdrain"
    rf"|\bdrain\w*\b[^.;]{{0,30}}?\bafter(?:wards)?\s+(?:the\s+|its\s+|that\s+|this\s+|an?\s+)?{_STOPS}"
    rf"|\b{_STOPS}\w*\b[^.;]*?\bdrain\w*\b[^.;]{{0,30}}?\b(?:afterwards?|later|when\s+(?:the\s+|its\s+)?"
    r"(?:current\s+)?jobs?\s+(?:ends?|finish\w*|completes?|is\s+done))\b"
    r"|\bon\s+the\s+(?:running|live|busy|loaded)\s+(?:node|host|server|system|machine)\b"
    r"|\bwhile\s+(?:the\s+node|the\s+host|it)\s+(?:is\s+)?(?:still\s+)?(?:in\s+service|running\s+jobs|serving|busy)\b"
    r"|\bwith\s+(?:its\s+|the\s+)?(?:jobs?|workloads?)\s+(?:still\s+)?(?:on\s+it|running)\b"
    r"|\bwithout\s+waiting\s+for\s+(?:the\s+|a\s+)?drain"
    rf"|^(?![^.;]*\b(?:drain|returns?\b|comes\s+back|recurs?\b))[^.;]*?\b{_AT_ONCE}\w*\b[^.;]*?\b(?:right\s+away|immediately|right\s+now|at\s+once|"
    r"straight\s+away)\b",
    re.IGNORECASE)
_COUNTERS = re.compile(r"\b(?:clear|reset|zero)\w*\s+(?:the\s+|its\s+|all\s+|their\s+)?(?:nvlink\s+|error\s+|crc\s+|"
                       r"replay\s+|link\s+)*counters?\b", re.IGNORECASE)
_RESUMES = re.compile(r"state=resume|\buncordon\b|\bresume\b[^.;]{0,20}\bnode\b|\breturn\w*\s+[^.;]{0,20}\bto "
                      r"service\b", re.IGNORECASE)
_REFUSED = [
    (_WRITES, "tells someone to write to the hardware or the kernel (a register, a file under /sys, /proc or /dev); "
              "fabricbot only advises reading, draining and the catalog's repair steps"),
    (_DISABLES, "tells someone to disable, isolate or take down a link or port; isolation is draining the node or "
                "excluding the GPU, never a link or a port"),
    (_NO_DRAIN, "tells someone to act without draining first; every reset, reboot and repair in the plan follows "
                "the drain"),
    (_ACTS_FIRST, "tells someone to reset, reboot, run a diagnostic or touch hardware before the drain (or on a node "
                  "still running jobs); every reset, reboot and repair in the plan follows the drain"),
    (_COUNTERS, "tells someone to clear the error counters; they are read, never reset (a reset erases the evidence "
                "and the rates)"),
    (_RESUMES, "tells someone to put the node back in service; that waits for the repair to be verified"),
]


@dataclass(frozen=True)
class Command:
    """One command as a text names it: tool, subcommand ('' for none) and options (without their values)."""

    tool: str
    sub: str
    options: frozenset[str]
    written: str = field(default="", compare=False)  # as the text has it, for saying which
    gpus: frozenset[int] = field(default=frozenset(), compare=False)  # the GPU indices `-i` names, held to the facts

    def __str__(self) -> str:
        return self.written or " ".join(filter(None, (self.tool, self.sub, *sorted(self.options))))


def commands_in(text: str) -> list[Command]:
    """Every command `text` names, in order (nvidia-smi's long options as its short ones)."""
    found = []
    for m in _TOOL.finditer(text):
        tool = m.group(1).lower()
        stop = _END.search(text, m.end())
        words = text[m.end():stop.start() if stop else len(text)].split()
        subs = _SUBCOMMANDS.get(tool, frozenset())
        sub = next((w.lower() for w in words if w.lower() in subs), "")
        options = frozenset(_LONG.get(o.group(0), o.group(0)) for w in words if (o := _OPTION.match(w.split("=")[0])))
        said = m.group(1) if not sub and not options else " ".join([m.group(1), *words])  # prose after a bare tool
        found.append(Command(tool, sub, options, said, _indices(words) if tool in _INDEXED else frozenset()))
    return found


_INDEXED = frozenset({"nvidia-smi", "dcgmi"})  # tools whose `-i` names GPUs by index


def _indices(words: Sequence[str]) -> frozenset[int]:
    """The GPU indices a command's `-i` (`--id`) names: `-i 2`, `-i 0,1`, `--id=3`; a PCI bus id is no index."""
    values = [v for i, w in enumerate(words) for v in
              ([words[i + 1]] if w in ("-i", "--id") and i + 1 < len(words) else
               [w.split("=", 1)[1]] if w.startswith(("-i=", "--id=")) else [])]
    return frozenset(int(n) for v in values for n in v.split(",") if n.strip().isdigit())


def gpus_run_on(text: str) -> set[int]:
    """Every GPU index the commands in `text` are run on (their `-i`): a reset of GPU 3 is about GPU 3, whatever
    the prose around it says."""
    return {g for c in commands_in(text) for g in c.gpus}


def plan_texts(plan: RepairPlan) -> list[str]:
    """The plan's words: its action, captures and steps, and their commands."""
    return [plan.action, *(c.command for c in plan.captures),
            *(t for s in [*plan.isolation, *plan.repair] for t in (s.text, s.command or ""))]


def plan_commands(plan: RepairPlan) -> list[Command]:
    """Every command the plan names, in its commands and in its words."""
    return [c for t in plan_texts(plan) for c in commands_in(t)]


def step_commands(step: PlanStep, plan: RepairPlan) -> list[Command]:
    """The commands one catalog step's rewording may name: its own, the plan's captures (reads, to check the step's
    work), and those that do what its words say (`poweroff` where it says powered off, `ipmitool` for a power
    cycle, `dmesg` for the kernel log). A reboot where the step resets one GPU is another step."""
    own = [*commands_in(step.text), *commands_in(step.command or "")]
    said = [Command(tool, sub, frozenset())
            for pattern, does in _SAID if pattern.search(step.text) for tool, sub in does]
    return [*own, *said, *(c for capture in plan.captures for c in commands_in(capture.command))]


def held(command: Command, allowed: Iterable[Command]) -> bool:
    """Whether one of `allowed` is the same tool and subcommand with every option `command` gives (`-i` and `-d`
    aside: they only narrow); a tool named alone, or with words only: whether the plan names the tool (or one that
    reads the same) at all. A GPU reset must name its GPUs."""
    allowed = list(allowed)
    if _unnamed_reset(command):
        return False
    options = command.options - _NARROWS
    if not command.sub and not options:
        return any(a.tool in (command.tool, _SAME.get(command.tool)) for a in allowed)
    return any(a.tool == command.tool and a.sub == command.sub and options <= a.options for a in allowed)


def _unnamed_reset(command: Command) -> bool:
    return command.tool == "nvidia-smi" and bool(command.options & _RESETS) and "-i" not in command.options


def refused_instructions(text: str, catalog: Sequence[str] = ()) -> list[str]:
    """What `text` tells someone to do that fabricbot never advises, sentence by sentence: a sentence that says not
    to do it before the words that match ("never reset without draining", "do not skip the drain") advises the
    opposite, and a sentence the catalog itself says (a plan held until the input is mended says not to drain yet)
    is the catalog's."""
    problems: list[str] = []
    for sentence in drafted(text, catalog):
        for pattern, why in _REFUSED:
            m = pattern.search(sentence)
            if m and not said_not(sentence, m.start()) and why not in problems:
                problems.append(why)
    return problems


# A repeat offender's plan replaces the part: a reseat, a swap test or a GPU reset told again is the repair its
# earlier tickets tried. Words that recall those repairs ("the earlier reseat did not hold") tell no one to repeat it.
_REPEATED = re.compile(r"\bre-?seat\w*|\bswap(?:ped|ping|s)?[- ]test\w*"
                       r"|\bswap(?:ped|ping|s)?\b[^.;:]{0,40}?\b(?:module|card|tray|socket|slot)s?\b"
                       r"|\breset\w*\s+(?:GPU|the GPU|its GPU)\b", re.IGNORECASE)
_RECALLED = re.compile(r"\b(?:earlier|previous|prior|past|already)\b|\b(?:did\s+not|didn'?t|never)\s+h[oe]ld\b",
                       re.IGNORECASE)


def repeated_repairs(text: str, why: str, catalog: Sequence[str] = ()) -> list[str]:
    """Where `text` tells someone to reseat, swap-test or reset a repeat offender's GPU again, sentence by sentence
    (`why`: the escalation): a sentence that says not to, recalls the earlier repairs, or is the catalog's own is
    not such an instruction."""
    for sentence in drafted(text, catalog):
        m = _REPEATED.search(sentence)
        if m is None or said_not(sentence, m.start()) or _RECALLED.search(sentence):
            continue
        return [f"tells someone to {m.group(0).lower()} again, but this is a repeat offender's plan ({why}): the "
                "part is replaced first; the reset, reseat and swap test of its earlier tickets are not repeated"]
    return []


def command_problems(text: str, allowed: list[Command], scope: str, catalog: Sequence[str] = ()) -> list[str]:
    """Each command `text` names that `allowed` does not hold, then what it tells someone that is never advised;
    `scope` names what holds the allowed commands ('this nvlink plan'), `catalog` is its words."""
    problems = []
    for command in dict.fromkeys(commands_in(text)):
        if not held(command, allowed):
            problems.append(f"names `{command}`, which resets every GPU of the node: a reset names its GPUs (`-i`)"
                            if _unnamed_reset(command) else
                            f"names `{command}`, which is not in {scope} (keep to the catalog's captures and steps)")
    return problems + refused_instructions(text, catalog)
