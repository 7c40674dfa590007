"""Real outputs scored against what their sources say of the machine: a folder's `expected.toml` names each file, the
verdict its source gives (links inactive, a GPU off the bus, a fabric that never registered, a clean board) and,
where the source says it, the part and how urgent; `fabricbot eval DIR` reads each file as `analyze FILE` does and
checks the answer an engineer reads first (fault, headline, priority) and, where a part is localized, that its plan's
steps stop no more than its isolation reaches and leave no placeholder unfilled.

A synthetic fleet's ground truth says what its generator put in; these say what the world's own outputs showed, cut,
elided and unnamed as people paste them."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..enums import Priority, priority_rank
from ..errors import ConfigError, FabricbotError
from ..service import UNNAMED_NODE, Request, diagnose, files_source
from ..tickets.isolation import unsafe_steps
from .evaluate import PLACEHOLDER, plan_of

EXPECTED_FILE = "expected.toml"
# "not yes": no fault found, ruled out or not known; "not no": a fault found, or not ruled out (a counter pinned at
# its maximum whose lower bound fails no rule)
Verdict = Literal["yes", "no", "unknown", "not yes", "not no"]


class Expected(BaseModel):
    """What one file's source says of its machine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fault: Verdict
    names: str | None = None  # the headline names this (a GPU, a bus, a switch)
    priority_at_least: Priority | None = None
    node: str | None = None  # the node to read it as, where it names several
    platform: str | None = None  # the platform its source names, as `--platform` gives it
    says: str  # the source's own words, or what it shows, that the verdict rests on


class SampleResult(BaseModel):
    file: str
    fault: str
    headline: str
    priority: str
    wrong: list[str]


class SamplesReport(BaseModel):
    folder: str
    results: list[SampleResult]

    def passed(self) -> int:
        return sum(1 for r in self.results if not r.wrong)

    def score(self) -> float | None:
        return round(self.passed() / len(self.results), 3) if self.results else None

    def render(self) -> str:
        lines = [f"{self.folder}: {self.passed()} of {len(self.results)} real outputs answered as their sources say"]
        width = max((len(r.file) for r in self.results), default=10)
        for r in self.results:
            mark = "ok" if not r.wrong else "WRONG: " + "; ".join(r.wrong)
            lines.append(f"  {r.file:<{width}}  fault={r.fault:<7}  {r.priority:<6}  {r.headline[:40]:<40}  {mark}")
        return "\n".join(lines)


def load_expected(folder: Path) -> dict[str, Expected]:
    """The folder's expectations, by file name; a bad entry is named with its file and field."""
    path = folder / EXPECTED_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    out = {}
    for name, entry in data.items():
        try:
            out[name] = Expected.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"{path}: [{name}] {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if not (folder / name).is_file():
            raise ConfigError(f"{path}: [{name}] names no file of {folder}")
    return out


def score_sample(folder: Path, name: str, expect: Expected) -> SampleResult:
    """One file read and judged as `analyze FILE [--node N] [--platform P]` reads it, against its source's verdict."""
    try:
        source, node, _ = files_source([folder / name], node=expect.node, unnamed=UNNAMED_NODE)
        d = diagnose(source, Request(node=node, platform=expect.platform)).diagnosis
    except FabricbotError as exc:
        return SampleResult(file=name, fault="error", headline=str(exc)[:60], priority="-", wrong=["not answered"])
    said = d.fault_said()
    wrong = []
    if said != expect.fault and not (expect.fault == "not yes" and said != "yes") and \
            not (expect.fault == "not no" and said != "no"):
        wrong.append(f"fault {said}, its source: {expect.fault} ({expect.says})")
    if expect.names is not None and expect.names not in d.isolated_component:
        wrong.append(f"headline {d.isolated_component!r}, not {expect.names!r}")
    if expect.priority_at_least is not None and priority_rank(d.ticket_priority) < priority_rank(
            expect.priority_at_least):
        wrong.append(f"priority {d.ticket_priority.value}, below {expect.priority_at_least.value}")
    if d.localization is not None:
        plan = plan_of(d.localization, d)
        wrong += [f"unsafe: {u}" for u in (unsafe_steps(plan) if plan.applies else [])]
        wrong += [f"unfilled {m.group()} in the action" for m in PLACEHOLDER.finditer(d.repair_action)]
    return SampleResult(file=name, fault=said, headline=d.isolated_component, priority=d.ticket_priority.value,
                        wrong=wrong)


def evaluate_samples(folder: Path) -> SamplesReport:
    expected = load_expected(folder)
    return SamplesReport(folder=str(folder), results=[score_sample(folder, n, e) for n, e in sorted(expected.items())])
