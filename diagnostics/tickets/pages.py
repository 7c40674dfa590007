"""The diagnosis as the model pages through it: one line per link, unhealthy links first, healthy ones counted.

A node reads 150 links or more; sending each as JSON on every request cost ~20k tokens a draft. A line carries what
a person would scan for (the link's ref, its severity, the rates over their thresholds, where it lands, its lanes
and the end that saw the errors); `link_detail` opens one link, `same_switch` the links that share its switch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..analysis.urgency import urgent_first
from ..enums import Severity
from ..model import Diagnosis, Finding
from ..topology import NodeGraph
from .facts import Port, port_for

PAGE = 25  # lines per page: the worst links of a node fit the first


def _num(x: float) -> str:
    return f"{x:.4g}"


def _rates(f: Finding, limit: int = 3) -> str:
    worst = sorted(f.rates_per_hour.items(), key=lambda kv: -kv[1])[:limit]
    return " ".join(f"{k}={_num(v)}/h" for k, v in worst if v) or "no errors"


def _where(port: Port) -> str:
    if port.switch is None:
        return "lands: unknown" + (f" (find with `{port.find_with}`)" if port.find_with else "")
    at = f"{port.switch} port {port.switch_port}" if port.switch_port is not None else port.switch
    return f"lands: {at} ({port.source.value})"


def line(f: Finding, d: Diagnosis, graph: NodeGraph | None) -> str:
    """One link as one line: ref | name | severity | rates | worst ratio | where it lands | lanes | end | width."""
    parts = [f.ref.slug, f.component, f.severity.value, _rates(f)]
    if f.worst_ratio is not None:
        parts.append(f"x{_num(f.worst_ratio)} threshold")
    if f.link_state.value != "up":
        parts.append(f"state {f.link_state.value}")
    parts.append(_where(port_for(f, d, graph)))
    if f.lanes:
        parts.append("lanes " + ",".join(map(str, f.lanes)))
    if f.end is not None:
        parts.append(f"end {f.end.value}")
    if f.width is not None and f.max_width is not None and f.width < f.max_width:
        parts.append(f"width x{f.width} of x{f.max_width}")
    return " | ".join(parts)


def _counts(findings: Iterable[Finding]) -> dict[str, int]:
    return dict(Counter(f.link_type.value for f in findings))


def unhealthy_page(d: Diagnosis, graph: NodeGraph | None, page: int) -> dict[str, Any]:
    """The node's summary and one page of its unhealthy links, most urgent first (`urgent_first`: the order every
    door lists a node's parts in); healthy links only counted."""
    bad = [f for _, f in urgent_first(d)]
    pages = max(1, -(-len(bad) // PAGE))
    shown = bad[page * PAGE:(page + 1) * PAGE]
    return {"node": d.node_id, "platform": d.platform, "slowdown_pct": d.degradation_pct,
            "analysis_isolated": d.isolated_component, "verdict": d.verdict,
            "healthy_links": _counts(f for f in d.findings if f.severity is Severity.OK),
            "unhealthy_links": len(bad), "page": f"{page + 1} of {pages}",
            "format": "ref | link | severity | worst rates | ratio to threshold | lands | lanes | end",
            "links": [line(f, d, graph) for f in shown]}


def find(d: Diagnosis, link: str) -> Finding | None:
    """The finding a ref, a name or a link id names."""
    return next((f for f in d.findings if link in (f.ref.slug, f.component, f.link_id)), None)


def detail(f: Finding, d: Diagnosis, graph: NodeGraph | None) -> dict[str, Any]:
    """One link in full: counts, rates, levels, thresholds crossed, lanes, width, both ends and the far end's port."""
    port = port_for(f, d, graph)
    far: dict[str, Any] = {"peer": f.peer, "switch": port.switch, "switch_port": port.switch_port,
                           "port_source": port.source.value}
    if graph is not None and f.gpu is not None:
        info = graph.port_of(f.gpu, f.link, f.link_type.value)
        if info.peer_link is not None:
            far["peer_link"] = info.peer_link
    out: dict[str, Any] = {
        "ref": f.ref.slug, "link": f.component, "type": f.link_type.value, "state": f.link_state.value,
        "severity": f.severity.value, "counts": {k: v for k, v in f.counts.items() if v},
        "rates_per_hour": {k: v for k, v in f.rates_per_hour.items() if v},
        "levels": {k: v for k, v in f.levels.items() if v}, "crossed": [c.message for c in f.crossed],
        "lanes": f.lanes or "not observed", "end": f.end.value if f.end else "not named", "far_end": far,
        "window_hours": d.window_hours}
    if f.width is not None:
        out["width"] = f"x{f.width} of x{f.max_width}" if f.max_width else f"x{f.width}"
    if port.find_with and port.switch_port is None:
        out["find_port_with"] = port.find_with
    for key, value in (("onset", f.onset), ("explains_slowdown", f.explains_slowdown),
                       ("correlation_score", f.correlation_score)):
        if value is not None:
            out[key] = str(value) if key == "onset" else value
    if f.evidence:
        out["evidence"] = f.evidence
    return out


def same_switch(f: Finding, d: Diagnosis, graph: NodeGraph | None) -> dict[str, Any]:
    """The other links landing on the same NVSwitch or PCIe switch: unhealthy ones as lines, healthy ones counted;
    and what the topology attaches to it, read or not."""
    switch = port_for(f, d, graph).switch
    if switch is None:
        return {"switch": None, "note": "where this link lands is unknown; no shared switch to compare"}
    others = [o for o in d.findings if o is not f and port_for(o, d, graph).switch == switch]
    bad = [o for o in others if o.severity is not Severity.OK]
    out: dict[str, Any] = {"switch": switch, "gpus_on_it": sorted({o.gpu for o in others if o.gpu is not None}),
                           "healthy_links": _counts(o for o in others if o.severity is Severity.OK),
                           "unhealthy_links": [line(o, d, graph) for o in bad]}
    if graph is not None and graph.neighbours(switch):
        out["attached_per_topology"] = graph.neighbours(switch)  # what else hangs off it: GPUs, NICs, the CPU
    return out
