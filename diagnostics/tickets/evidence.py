"""What a ticket keeps from each analysis of its part: one plain line per finding about it, and the slowdown.

A later analysis adds its own lines (they name it and its time); a repeated click on the same analysis adds none.
"""

from __future__ import annotations

from .. import format as fmt
from ..config.thresholds import WRONG_VALUES_RULE
from ..enums import ComponentKind
from ..model import Diagnosis, Finding

SHOWN_RATES = ("crc", "replay", "recovery", "effective_errors", "recovery_failed", "replay_rollovers")


def link_measures(f: Finding) -> str:
    """A link's rates and levels worth showing, or its state when it has none."""
    if f.ref.kind is ComponentKind.GPU_FABRIC:  # a collective's figure or its wrong values: no link, so no state
        said = [fmt.metric(c.counter, c.rate_per_hour, unit=c.unit) if c.rate_per_hour is not None else
                "wrong values in its results (#wrong): data corrupted" for c in f.crossed
                if c.rate_per_hour is not None or c.rule == WRONG_VALUES_RULE]
        return "; ".join(said) or f"{f.severity.value} (measured by a collective)"
    shown = fmt.metrics({**{k: v for k, v in f.rates_per_hour.items() if k in SHOWN_RATES}, **f.levels})
    return shown or f"state {f.link_state.value}"


def link_crossed(f: Finding) -> str:
    """The thresholds a link crossed, as the analysis said them."""
    return "; ".join(c.message for c in f.crossed)


def link_text(f: Finding) -> str:
    crossed = link_crossed(f)
    return f"{f.component} ({f.severity.value}): {link_measures(f)}" + (f" — {crossed}" if crossed else "")


def evidence_lines(diagnosis: Diagnosis, component: str, at: str, analysis_id: int) -> list[str]:
    """The lines analysis `analysis_id` (made at `at`) gives a ticket for `component` and the links it explains,
    with the window it judged: the same analysis gives the same lines however often it is added (a Draft clicked
    again on one summary added its lines again, stamped with each click's time)."""
    names = {component}
    if diagnosis.localization is not None and diagnosis.localization.component == component:
        names.update(diagnosis.localization.links)
    head = f"analysis {analysis_id} at {at} ({diagnosis.window_said()}), {diagnosis.node_id}"
    lines = [f"{head}: {link_text(f)}" for f in diagnosis.findings if f.component in names]
    if diagnosis.degradation_pct is not None:
        lines.append(f"{head}: step time {diagnosis.degradation_pct:+.1f}% against baseline")
    return lines
