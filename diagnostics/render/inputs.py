"""What a picture is drawn from: a snapshot JSON's chosen case, a bare `topo -m` or NCCL XML, or a diagnosis with the
graph its node was judged on (a template or a generic graph when there was none). Every path ends in a graph that
can be drawn; what was uncertain comes back as warnings. The diagnosis itself comes from the service."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.platforms import all_platforms
from ..errors import ConfigError, InputError
from ..ingest import nccl_xml, topo_matrix
from ..ingest.base import Source
from ..ingest.detect import choose, read
from ..ingest.snapshot import looks_like_json, parse_json, read_cases, with_platform
from ..model import Diagnosis
from ..snapshots import DEFAULT_GPU_COUNT, Snapshot
from ..topology.build import generic_graph, graph_from_topology
from ..topology.graph import NodeGraph
from ..topology.templates import platform_graph
from .draw import render_with_warnings
from .rack import render_rack, wants_rack_view


@dataclass
class Drawable:
    """A picture's makings: the graph to draw on, the diagnosis drawn over it, and what choosing them said."""

    graph: NodeGraph
    diagnosis: Diagnosis | None = None
    warnings: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # why the answer drawn is not the whole one (its door's)

    def picture(self, fmt: str = "png", *, window: str | None = None) -> tuple[bytes, list[str]]:
        """The picture and what could not be drawn: the rack view for a rack, or for a tray whose suspect is its
        rack's (`wants_rack_view`), else the node's fabric on the graph. Every door draws through here."""
        d = self.diagnosis
        if d is not None and wants_rack_view(d):
            return render_rack(d, fmt=fmt), []
        if window is None and d is not None and d.window_end is not None:
            window = d.window_said()  # the window the diagnosis shows
        return render_with_warnings(self.graph, d, fmt=fmt, window=window)


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


def drawable_of(diagnosis: Diagnosis, graph: NodeGraph | None, *, warnings: list[str] | None = None,
                missing: str | None = None, incomplete: list[str] | None = None) -> Drawable:
    """A diagnosis drawn on the graph the service judged its node on (its own topology rows over its platform's
    template, as the engine's notes say); without one, on the platform the analysis settled on (its template, or a
    generic graph), `missing` saying why there was none. The one choice of graph for `render`, the bot's pictures,
    the console's clickable view and a draft's facts."""
    said = list(warnings or [])
    if graph is None:
        graph, more = graph_for_platform(diagnosis.platform, node_id=diagnosis.node_id)
        said += more
        if missing:
            said.append(f"{missing}; drawing " + ("its platform's template" if graph.platform else "a generic graph"))
    return Drawable(graph, diagnosis, [*said, *diagnosis.warnings], list(incomplete or []))


def snapshot_case(text: str, source: str, case: int | None, platform: str | None) -> tuple[Snapshot, list[str]]:
    """The snapshot of a file to draw (`case`, from 1; the first of several, said), on `platform` when known. A case
    naming an unknown platform is drawn without one, said."""
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
    if platform and platform not in all_platforms():
        known = ", ".join(sorted(all_platforms()))
        warnings.append(f"unknown platform {platform!r} (known: {known}); drawing a generic graph")
    elif platform and snapshot.platform and platform != snapshot.platform:
        warnings.append(f"--platform {platform} overrides the snapshot's platform {snapshot.platform}")
    return with_platform(snapshot, platform if platform in all_platforms() else None), warnings


def _raw_case(text: str, source: str, index: int) -> dict[str, Any]:
    data = parse_json(text, source)
    item = data[index] if isinstance(data, list) else data
    raw = item.get("input", item) if isinstance(item, dict) else item
    return dict(raw)


def read_snapshot_text(path: str | Path) -> str | None:
    """The file's text when it holds a snapshot JSON (an object or a list), else None."""
    source = Source.from_path(path)
    if not looks_like_json(source.head().decode("utf-8", "replace")):
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None


TOPOLOGY_READERS = (topo_matrix.READER_NAME, nccl_xml.READER_NAME)


def describes_topology(path: str | Path) -> bool:
    """Whether a file is a topology description (`nvidia-smi topo -m`, NCCL XML), drawn bare; any other telemetry
    is diagnosed before it is drawn. An input no reader knows is refused, naming the formats."""
    return choose(Source.from_path(path)).name in TOPOLOGY_READERS


def topology_drawable(path: str | Path | Source, *, platform: str | None = None,
                      node_id: str | None = None) -> Drawable:
    """A topology description (`nvidia-smi topo -m`, NCCL XML; a file, or its text already read) drawn bare: no
    diagnosis."""
    source = path if isinstance(path, Source) else Source.from_path(path)
    result = read(source, node_id=node_id)
    warnings = [str(w) for w in result.warnings]
    topology = result["topology"]
    if topology.empty:
        raise InputError("holds no topology to draw (give a snapshot JSON, `nvidia-smi topo -m` output or an "
                         "NCCL topology XML)", source=source.name)
    hint = platform if platform in all_platforms() else None
    if platform and hint is None:
        warnings.append(f"unknown platform {platform!r}: detecting the platform from the description instead")
    try:
        graph = graph_from_topology(topology, node_id=node_id, platform=hint)
    except ConfigError:
        graph = graph_from_topology(topology, node_id=node_id)
    return Drawable(graph, None, warnings)
