"""The commands a model's text names, held against a repair plan's, and the instructions fabricbot never gives.

A command is its tool, its subcommand where the tool has them, and its options: `nvidia-smi nvlink -e -i 2` is
(nvidia-smi, nvlink, {-e, -i}). A text may name a command only where the plan holds one of the same tool and
subcommand with every option the text gives (values aside: GPU and link numbers are held to the facts elsewhere), so
`nvidia-smi nvlink -r` (which zeroes the counters) is not the plan's `nvidia-smi nvlink -e`. A tool the plan never
names (`setpci`, `rmmod`, `nv set`) is refused outright. Some instructions are refused whatever the plan holds: a
write into the kernel's files, a link or port disabled or taken offline, a repair without the drain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .catalog import PlanStep, RepairPlan

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
                   + "|".join(_SUBCOMMANDS["nv"]) + r")\b))(?![\w.-])", re.IGNORECASE)
_END = re.compile(r"`|\n|;|&&|\|\||\||\)|\.(?:\s|$)|,\s")  # where a command named in prose or code stops
_OPTION = re.compile(r"^-{1,2}[A-Za-z][\w-]*")

_WRITES = re.compile(r">\s*/(?:sys|proc|dev)/|\bsetpci\b[^`\n]*=", re.IGNORECASE)
_DISABLES = re.compile(
    r"\b(?:disabl|isolat|shut\s*down|shutting\s+down|turn(?:ed|ing|s)?\s+off)\w*\b[^.;]*\b(?:nv)?(?:link|port|interface|"
    r"lane)s?\b"
    r"|\b(?:take|takes|taking|took|set|sets|setting|bring|brings|bringing|brought|put|puts|putting|mark|marks|"
    r"marking)\b[^.;]*\b(?:nv)?(?:link|port|interface|lane)s?\b[^.;]*\b(?:offline|down|disabled)\b", re.IGNORECASE)
_NO_DRAIN = re.compile(
    r"\b(?:without|no need to|needn'?t|need not|don'?t|do not|skip|skipping|instead of|rather than)\s+(?:first\s+)?"
    r"(?:the\s+|a\s+|any\s+)?drain"
    r"|\bdrain(?:ing)?\s+(?:is\s+|isn'?t\s+)?(?:not\s+)?(?:needed|necessary|required|unnecessary)\b"
    r"|\bno\s+drain\b|\bkeep\w*\b[^.;]*\bin service\b", re.IGNORECASE)
_REFUSED = [
    (_WRITES, "tells someone to write to the hardware or the kernel (a register, a file under /sys, /proc or /dev); "
              "fabricbot only advises reading, draining and the catalog's repair steps"),
    (_DISABLES, "tells someone to disable, isolate or take down a link or port; isolation is draining the node or "
                "excluding the GPU, never a link or a port"),
    (_NO_DRAIN, "tells someone to act without draining first; every reset, reboot and repair in the plan follows "
                "the drain"),
]


@dataclass(frozen=True)
class Command:
    """One command as a text names it: tool, subcommand ('' for none) and options (without their values)."""

    tool: str
    sub: str
    options: frozenset[str]
    written: str = field(default="", compare=False)  # as the text has it, for saying which

    def __str__(self) -> str:
        return self.written or " ".join(filter(None, (self.tool, self.sub, *sorted(self.options))))

    @property
    def bare(self) -> bool:
        """The tool named alone ('check dmesg'), with nothing it is told to do."""
        return not self.sub and not self.options


def commands_in(text: str) -> list[Command]:
    """Every command `text` names, in order."""
    found = []
    for m in _TOOL.finditer(text):
        tool = m.group(1).lower()
        stop = _END.search(text, m.end())
        words = text[m.end():stop.start() if stop else len(text)].split()
        subs = _SUBCOMMANDS.get(tool, frozenset())
        sub = next((w.lower() for w in words if w.lower() in subs), "")
        options = frozenset(o.group(0) for w in words if (o := _OPTION.match(w.split("=")[0])))
        found.append(Command(tool, sub, options, " ".join([m.group(1), *words])))
    return found


def plan_texts(plan: RepairPlan) -> list[str]:
    """The plan's words: its action, captures and steps, and their commands."""
    return [plan.action, *(c.command for c in plan.captures),
            *(t for s in [*plan.isolation, *plan.repair] for t in (s.text, s.command or ""))]


def plan_commands(plan: RepairPlan) -> list[Command]:
    """Every command the plan names, in its commands and in its words."""
    return [c for t in plan_texts(plan) for c in commands_in(t)]


def step_commands(step: PlanStep) -> list[Command]:
    """The commands one catalog step names: a reworded step keeps to its own (a reboot where the step resets one
    GPU is another step, not clearer wording)."""
    return [*commands_in(step.text), *commands_in(step.command or "")]


def held(command: Command, allowed: Iterable[Command]) -> bool:
    """Whether one of `allowed` is the same tool and subcommand with every option `command` gives (a tool named
    alone: whether the plan names the tool at all)."""
    allowed = list(allowed)
    if command.bare:
        return any(a.tool == command.tool for a in allowed)
    return any(a.tool == command.tool and a.sub == command.sub and command.options <= a.options for a in allowed)


def refused_instructions(text: str, catalog: Sequence[str] = ()) -> list[str]:
    """What `text` tells someone to do that fabricbot never advises, unless the catalog's own words (`catalog`) say
    the same (a plan held until the input is mended says not to drain yet)."""
    return [why for pattern, why in _REFUSED if pattern.search(text) and not any(pattern.search(t) for t in catalog)]


def command_problems(text: str, allowed: list[Command], scope: str, catalog: Sequence[str] = ()) -> list[str]:
    """Each command `text` names that `allowed` does not hold, then what it tells someone that is never advised;
    `scope` names what holds the allowed commands ('this nvlink plan'), `catalog` is its words."""
    problems = []
    for command in dict.fromkeys(commands_in(text)):
        if not held(command, allowed):
            problems.append(f"names `{command}`, which {scope} does not hold (keep to the catalog's captures and "
                            "steps)")
    return problems + refused_instructions(text, catalog)
