"""What a picture is drawn from: a snapshot JSON (with its diagnosis), a bare `topo -m` or NCCL XML, or a node in
the telemetry store. Every path ends in a graph that can be drawn; what was uncertain comes back as warnings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..analysis.snapshot import analyze_snapshot
from ..config.platforms import all_platforms
from ..errors import ConfigError, InputError
from ..ingest.base import Source
from ..ingest.detect import read
from ..ingest.snapshot import read_cases, with_platform
from ..model import DEFAULT_GPU_COUNT, Diagnosis, Snapshot
from ..topology.build import generic_graph, graph_from_topology
from ..topology.graph import NodeGraph
from ..topology.templates import platform_graph


@dataclass
class Drawable:
    graph: NodeGraph
    diagnosis: Diagnosis | None = None
    warnings: list[str] = field(default_factory=list)


def graph_for_platform(platform: str | None, *, node_id: str | None = None,
                       gpus: int = DEFAULT_GPU_COUNT) -> tuple[NodeGraph, list[str]]:
    """The platform's template graph, or a generic one (with a warning) when the platform is absent or unknown."""
    if platform and platform in all_platforms():
        graph = platform_graph(platform).copy()
        graph.node_id = node_id
        return graph, []
    warnings = []
    if platform:
        known = ", ".join(sorted(all_platforms()))
        warnings.append(f"unknown platform {platform!r} (known: {known}); drawing a generic graph")
    return generic_graph(gpus, node_id=node_id), warnings


def _snapshot(text: str, source: str, case: int | None, platform: str | None) -> Drawable:
    cases = read_cases(text, source)
    if case is not None and not 1 <= case <= len(cases):
        raise InputError(f"there is no case {case}; the file holds {len(cases)}", source=source, field="--case")
    chosen = cases[(case or 1) - 1]
    warnings = [] if case or len(cases) == 1 else [f"{source} holds {len(cases)} snapshots; drawing the first "
                                                   "(choose one with --case N)"]
    snapshot = chosen.snapshot
    if snapshot is None and any("unknown platform" in e.reason for e in chosen.errors):
        raw: Any = _raw_case(text, source, chosen.index)
        named = raw.pop("platform", None)
        snapshot = Snapshot.model_validate(raw)
        warnings.append(f"unknown platform {named!r}: analysed and drawn without a platform")
    if snapshot is None:
        raise chosen.errors[0]
    if platform and snapshot.platform and platform != snapshot.platform:
        warnings.append(f"--platform {platform} overrides the snapshot's platform {snapshot.platform}")
    snapshot = with_platform(snapshot, platform if platform in all_platforms() else None)
    diagnosis = analyze_snapshot(snapshot)
    graph, more = graph_for_platform(platform or snapshot.platform, node_id=snapshot.node_id)
    return Drawable(graph, diagnosis, warnings + more)


def _raw_case(text: str, source: str, index: int) -> dict[str, Any]:
    from ..ingest.snapshot import parse_json

    data = parse_json(text, source)
    item = data[index] if isinstance(data, list) else data
    raw = item.get("input", item) if isinstance(item, dict) else item
    return dict(raw)


def drawable_from_file(path: str | Path, *, platform: str | None = None, case: int | None = None,
                       node_id: str | None = None) -> Drawable:
    """A snapshot JSON is analysed and drawn with its findings; a topology description is drawn bare."""
    source = Source.from_path(path)
    head = source.head().lstrip()
    if head[:1] in (b"{", b"["):
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None
        return _snapshot(text, str(path), case, platform)
    result = read(source, node_id=node_id)
    warnings = [str(w) for w in result.warnings]
    topology = result["topology"]
    if topology.empty:
        raise InputError("holds no topology to draw (give a snapshot JSON, `nvidia-smi topo -m` output or an "
                         "NCCL topology XML)", source=str(path))
    hint = platform if platform in all_platforms() else None
    if platform and hint is None:
        warnings.append(f"unknown platform {platform!r}: detecting the platform from the description instead")
    graph = graph_from_topology(topology, node_id=node_id, platform=hint)
    return Drawable(graph, None, warnings)


def drawable_from_store(store_dir: str | Path, node_id: str, *, platform: str | None = None,
                        window: timedelta = timedelta(hours=1), end: datetime | None = None) -> Drawable:
    """A stored node's window analysed and drawn with its findings, on its topology as the store holds it (its
    platform's template, or a generic graph, when it holds none). `platform` wins over the stored one."""
    from ..analysis import analyze_tables
    from ..analysis.stored import read_node, stored_diagnosis
    from ..store.telemetry import open_store

    got = read_node(open_store(store_dir, create=False), node_id, end=end, window=window)
    platform = platform or got.platforms.get(node_id)
    topology = got.tables["topology"]
    topology = topology[(topology["node_id"] == node_id).to_numpy(bool, na_value=False)]
    warnings: list[str] = []
    graph: NodeGraph | None = None
    if not topology.empty:
        try:
            graph = graph_from_topology(topology, node_id=node_id, platform=platform)
        except ConfigError:
            graph = graph_from_topology(topology, node_id=node_id)
            graph.warnings.append(f"unknown platform {platform!r}: detected from the description instead")
    known = (graph.platform if graph is not None else None) or (platform if platform in all_platforms() else None)
    diagnosis = stored_diagnosis(analyze_tables(got.tables, node_id=node_id, window=window, end=got.end,
                                                graph=graph, platform=known), got, window)
    if graph is None:  # the platform the analysis settled on (given, stored, or from the GPU model) is drawn
        graph, warnings = graph_for_platform(diagnosis.platform, node_id=node_id)
        warnings.append(f"the store holds no topology for {node_id} (ingest its `nvidia-smi topo -m` or NCCL "
                        "topology XML); drawing " + ("its platform's template" if graph.platform else
                                                     "a generic graph"))
    return Drawable(graph, diagnosis, [*warnings, *diagnosis.warnings])
