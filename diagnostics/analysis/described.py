"""NVLinks a node's own topology shows missing: `nvidia-smi topo -m` (or the NCCL XML) counting fewer NVLinks on a
GPU than its platform gives it is a link down, whatever counters were or were not read. NVIDIA Health Validation
fails a GPU with an inactive NVLink or fewer NVLinks than expected (`nvlink_active`, `nvlink_bandwidth_count_speed`,
docs.nvidia.com/health-validation/reference/checks/nvlink)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pandas as pd

from .. import format as fmt
from ..components import ComponentRef
from ..config.thresholds import BELOW_EXPECTED_RULE
from ..enums import LinkState, LinkType, Severity
from ..model import Crossing, Finding
from ..topology import NodeGraph, gpu_node
from ..topology.facts import Facts
from ..topology.graph import GPU, NVSWITCH

_READ_WITH = "`nvidia-smi nvlink -s -i {gpu}` names the inactive link"


def described_short(rows: pd.DataFrame, graph: NodeGraph,
                    live: Mapping[int, Collection[int]] | None = None) -> tuple[list[Finding], list[str]]:
    """Findings for the GPUs (switched boards) or GPU pairs (direct NVLinks) the node's own topology shows with fewer
    NVLinks than `graph`'s platform has, and warnings. A GPU with link readings (`live`: GPU -> NVLinks reporting)
    is judged by them, not on the description: they are newer than a stored `topo -m` may be, and a link they lack
    is judged missing from them (its own finding, not a second one for the GPU).
    When every GPU is short alike, the platform named may not be the board's: that is said, not judged."""
    if graph.platform is None or rows.empty:
        return [], []
    facts = Facts.from_rows(rows)
    if not facts.gpus:
        return [], []
    found, notes = _switched(facts, graph) if graph.switches(NVSWITCH) else (_direct(facts, graph), [])
    whole = {g for g, links in (live or {}).items() if links}
    return [f for f in found if f.gpu not in whole and f.peer_gpu not in whole], notes


def _totals(facts: Facts) -> dict[int, int]:
    """Each described GPU's NVLinks on a switched board: to its switches where they are named (NCCL XML), else the
    most `topo -m` shows to any peer (a pair through the switches shows the fewer of its two GPUs' links)."""
    totals: dict[int, int] = {}
    for per_gpu in facts.switch_links().values():
        for gpu, count in per_gpu.items():
            totals[gpu] = totals.get(gpu, 0) + count
    if totals:
        return totals
    for (a, b), count in facts.pair_nvlinks().items():
        for gpu in (a, b):
            totals[gpu] = max(totals.get(gpu, 0), count)
    return totals


def _switched(facts: Facts, graph: NodeGraph) -> tuple[list[Finding], list[str]]:
    totals = _totals(facts)
    expected = {g: graph.expected_links(g) for g in totals if g in graph.gpus}
    short = {g: n for g, n in totals.items() if g in expected and n < expected[g]}
    if not short:
        return [], []
    if len(short) == len(expected) and len(expected) > 1 and len(set(short.values())) == 1:
        have, want = next(iter(short.values())), next(iter(expected.values()))
        return [], [f"the node's topology shows every GPU with {have} NVLinks where {graph.named} has {want}: "
                     "either the board is not that platform (name the right one) or its whole NVLink fabric is "
                     "short (an NVSwitch down); `nvidia-smi nvlink -s` tells them apart"]
    return [_finding(ComponentRef.nvlink(g, None), g, None, have, expected[g],
                     f"`nvidia-smi topo -m` shows GPU {g} with {have} NVLinks where {graph.named} has "
                     f"{expected[g]}") for g, have in sorted(short.items())], []


def _direct(facts: Facts, graph: NodeGraph) -> list[Finding]:
    out = []
    seen = facts.pair_nvlinks()
    for (a, b), have in sorted(seen.items()):
        if gpu_node(a) not in graph.graph or gpu_node(b) not in graph.graph:
            continue
        want = graph.graph.number_of_edges(gpu_node(a), gpu_node(b))
        if graph.graph.nodes[gpu_node(b)].get("kind") == GPU and want > 0 and have < want:
            out.append(_finding(ComponentRef.nvlink(a, None, peer_gpu=b), a, b, have, want,
                                f"`nvidia-smi topo -m` shows GPU {a} - GPU {b} with {have} NVLinks where "
                                f"{graph.named} has {want}"))
    return out


def _finding(ref: ComponentRef, gpu: int, peer: int | None, have: int, want: int, message: str) -> Finding:
    crossing = Crossing(rule=BELOW_EXPECTED_RULE, counter="links", rate_per_hour=float(have), above=float(want),
                        unit=fmt.Unit.LINKS, severity=Severity.DOWN, message=message)
    return Finding(
        ref=ref, link_type=LinkType.NVLINK, link_id="nvlinks" if peer is None else f"nvlinks-to-gpu{peer}",
        gpu=gpu, peer_gpu=peer, peer=f"GPU {peer}" if peer is not None else "unknown", link_state=LinkState.DOWN,
        severity=Severity.DOWN, crossed=[crossing],
        evidence=[("1 NVLink is" if want - have == 1 else f"{want - have} NVLinks are") + " not up: down, or never "
                  "trained; " + _READ_WITH.format(gpu=gpu)])
