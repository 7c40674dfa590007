"""The model's choice when it is not the rules': a hypothesis that carries the ticket only when its rows hold it up.

The model may hold a candidate responsible that the analysis did not isolate, citing the rows behind it (link refs
from `unhealthy_links`). A cited row that does not exist is a contradiction and is sent back. The rows that exist
support the choice only when each is over a threshold, or carries a lane or an end the analysis observed, and is one
the chosen component explains; a shared component (a GPU module, an NVSwitch, a PCIe path, the fabric software)
needs two such rows, an NVSwitch rows of two GPUs, and at least one row must be one the rules' choice does not
explain. Otherwise the ticket keeps the rules' choice; either way it shows both, which one it carries and why.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..enums import ComponentKind, Severity
from ..model import Diagnosis, Finding
from .candidates import Candidate
from .pages import find
from .ticket import Choice


def missing_cites(cites: Sequence[str], diagnosis: Diagnosis) -> list[str]:
    """Each cited row the diagnosis does not hold."""
    return [f"cites {c!r}, which is no link of this node (cite refs from unhealthy_links)" for c in cites
            if find(diagnosis, c) is None]


def _observed(f: Finding) -> bool:
    return f.severity is not Severity.OK or bool(f.lanes) or f.end is not None


def _shortfall(rows: list[Finding], theirs: Candidate, target: Candidate) -> str | None:
    """Why the supporting rows are not enough for `theirs`, or None when they are."""
    shared = theirs.kind is not ComponentKind.NVLINK
    if shared and len(rows) < 2:
        return f"{theirs.component} is shared, and one row cannot tell it from the single link"
    if theirs.kind is ComponentKind.NVSWITCH and len({f.gpu for f in rows}) < 2:
        return "every cited row is on one GPU, which points at the GPU, not the switch"
    if all(f.component in target.findings for f in rows):
        return f"the rules' choice, {target.component}, explains every cited row as well"
    return None


def weigh(cites: Sequence[str], diagnosis: Diagnosis, theirs: Candidate, target: Candidate) -> Choice:
    """Whether the model's choice `theirs` carries the ticket over the rules' `target`, by the rows it cites."""
    rows = [f for f in (find(diagnosis, c) for c in dict.fromkeys(cites)) if f is not None]
    reject = [f.ref.slug for f in rows if not _observed(f)]
    unexplained = [f.ref.slug for f in rows if _observed(f) and f.component not in theirs.findings]
    if not rows:
        why = "it cites no rows"
    elif reject:
        why = f"cited rows {', '.join(reject)} are healthy: no threshold crossed, no lane or end observed"
    elif unexplained:
        why = f"cited rows {', '.join(unexplained)} are not links {theirs.component} explains"
    else:
        why = _shortfall(rows, theirs, target) or ""
    cited = [f.ref.slug for f in rows]
    if why:
        return Choice(rules=target.component, model=theirs.component, carried="rules", cited=cited,
                      why=f"the model's choice is not carried: {why}")
    return Choice(rules=target.component, model=theirs.component, carried="model", cited=cited,
                  why=f"the model's choice is carried: the {len(rows)} cited rows (each over a threshold or with "
                      f"a lane or end observed) are all {theirs.component}'s, and the rules' choice does not explain "
                      f"{sum(f.component not in target.findings for f in rows)} of them")
