"""`fabricbot render`: draw a node's fabric (PNG or SVG) from a file or from the telemetry store."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from diagnostics import InputError
from diagnostics import format as fmt
from diagnostics.config import load_thresholds, platform_name
from diagnostics.ingest import Source, detect
from diagnostics.render import (
    Drawable,
    describes_topology,
    drawable_of,
    read_snapshot_text,
    render_correlation,
    render_rack,
    snapshot_case,
    topology_drawable,
)
from diagnostics.service import UNNAMED_NODE, Request, SnapshotSource, StoreSource, diagnose, files_source

from ..options import END_OPTION, add_end_option, end_of, window_type
from ..storage import ENV_STORE
from . import SUMMARIES
from .output import said_incomplete

FORMATS = ("png", "svg")


def _format(args: argparse.Namespace) -> str:
    """The format asked for, or the output's suffix; a suffix that names another format is refused, not ignored."""
    suffix = Path(args.output).suffix.lower().lstrip(".") if args.output else ""
    if args.format:
        if suffix and suffix != args.format:
            raise InputError(f"-o names a .{suffix} file but --format is {args.format}", source=str(args.output))
        return str(args.format)
    if suffix and suffix not in FORMATS:
        raise InputError(f"cannot write .{suffix}: the picture is PNG or SVG (name the file .png or .svg, or give "
                         "--format)", source=str(args.output))
    return suffix or "png"


def cmd_render(args: argparse.Namespace) -> int:
    store = args.store or os.environ.get(ENV_STORE)
    if args.target is None:  # `render --store DIR --node NODE`, as `analyze` names a stored node
        if not (args.node and store):
            raise InputError("give a FILE to draw, or a node of the store (`render --store DIR NODE`, or `--node "
                             "NODE` as `analyze` takes it)", field="NODE|FILE")
        args.target = args.node
    target = Path(args.target)
    kind = _format(args)  # before any work: a wrong name fails at once
    if args.rack:
        return _rack(args, store, kind)
    drawable = drawable_for(args, store)
    if drawable.graph.node_id is None:
        drawable.graph.node_id = args.node or target.stem
    data, notes = drawable.picture(kind)
    node = drawable.diagnosis.node_id if drawable.diagnosis else drawable.graph.node_id
    output = Path(args.output or f"{node}.{kind}")
    try:
        output.write_bytes(data)
    except OSError as exc:
        raise InputError(f"cannot write the picture: {exc.strerror}", source=str(output)) from None
    seen: set[str] = set()
    for note in [*drawable.warnings, *notes]:
        if note not in seen:
            seen.add(note)
            print(f"warning: {note}", file=sys.stderr)
    platform = drawable.graph.either or "generic graph"
    diagnosis = drawable.diagnosis
    owner = f"; its suspect is ticketed on {diagnosis.ticket_owner}" \
        if diagnosis is not None and diagnosis.fault_detected and diagnosis.ticket_owner != node else ""
    print(f"wrote {output} ({kind}, {len(data) / 1024:.0f} KB): {node}, {platform}, "
          f"{len(drawable.graph.gpus)} GPUs{owner}")
    if diagnosis is not None and diagnosis.evidence is not None and not args.no_correlation:
        beside = Path(args.correlation or output.with_name(f"{output.stem}-correlation.png"))
        picture = render_correlation(diagnosis)
        try:
            beside.write_bytes(picture)
        except OSError as exc:
            raise InputError(f"cannot write the correlation picture: {exc.strerror}", source=str(beside)) from None
        print(f"wrote {beside} (png, {len(picture) / 1024:.0f} KB): job {diagnosis.evidence.job_id}'s step time "
              f"against {fmt.count(len(diagnosis.evidence.links), 'link')}")
    return said_incomplete(drawable.incomplete)  # drawn, but not an all-clear: the status analyze gives it


def drawable_for(args: argparse.Namespace, store: str | None) -> Drawable:
    """What `render` draws: a file (a snapshot analysed, a topology bare), or a node of the store as the service
    answers it, on the graph it was judged on."""
    target = Path(args.target)
    if target.is_file():
        return _from_file(target, args)
    if not store:
        raise InputError("no such file, and no --store (or FABRICBOT_STORE) to look the node up in",
                         source=args.target)
    answer = diagnose(StoreSource(store), Request(node=args.target, platform=args.platform, end=end_of(args),
                                                  window=args.window, end_option=END_OPTION))
    return drawable_of(answer.diagnosis, answer.graph, incomplete=answer.incomplete,
                       missing=f"the store holds no topology for {args.target} (ingest its `nvidia-smi topo -m` "
                               "or NCCL topology XML)")


def _from_file(target: Path, args: argparse.Namespace) -> Drawable:
    """A snapshot JSON is analysed and drawn with its findings; a topology description is drawn bare; any other
    telemetry `analyze` reads (an `nvidia-smi nvlink -s` or `-q` paste, a kernel log) is read as it reads it, the
    node it names (or --node) diagnosed and drawn."""
    text = read_snapshot_text(target)
    if text is not None:
        try:
            snapshot, warnings = snapshot_case(text, str(target), args.case, args.platform)
        except InputError:
            if not detect.telemetry_not_snapshot(target):  # a kernel log starts with `[`, as JSON does
                raise
        else:
            answer = diagnose(SnapshotSource([snapshot], label=str(target)), Request(node=snapshot.node_id))
            return drawable_of(answer.diagnosis, answer.graph, warnings=warnings, incomplete=answer.incomplete)
    try:
        bare = describes_topology(target)
    except InputError as exc:
        if not exc.reason.startswith("unrecognized format"):
            raise
        raise InputError("neither a snapshot JSON, a topology description (`nvidia-smi topo -m`, NCCL XML) nor "
                         "telemetry a reader recognizes (render's --format is the picture's: to force a reader, "
                         "`fabricbot ingest FILE --format NAME --node NODE --store DIR`, then render NODE from the "
                         "store)", source=str(target)) from None
    if bare:  # read once: the bare drawing and the diagnosis that may show a fault read the same text
        held = Source.from_path(target).in_memory()
        drawable = topology_drawable(held, platform=args.platform, node_id=args.node)
        # a description can itself show a fault (a GPU with fewer NVLinks than its platform): drawn as analyze says it
        source, node, warnings = files_source([held.in_memory()], until=end_of(args),
                                              node=args.node or drawable.graph.node_id or target.stem)
        answer = diagnose(source, Request(node=node, platform=args.platform, end=end_of(args), window=args.window,
                                          end_option=END_OPTION))
        if not answer.diagnosis.fault_detected:
            return drawable  # a description drawn bare: no reading to judge, so nothing called incomplete
        return drawable_of(answer.diagnosis, answer.graph, warnings=warnings, incomplete=answer.incomplete)
    source, node, warnings = files_source([target], node=args.node, until=end_of(args),
                                          unnamed=UNNAMED_NODE)  # as analyze answers it
    answer = diagnose(source, Request(node=node, platform=args.platform, end=end_of(args), window=args.window,
                                      end_option=END_OPTION))
    return drawable_of(answer.diagnosis, answer.graph, warnings=warnings, incomplete=answer.incomplete)


def _rack(args: argparse.Namespace, store: str | None, kind: str) -> int:
    """The rack view: compute trays by switch chips, from the store's rack inventory and telemetry."""
    if not store:
        raise InputError("--rack draws from the telemetry store: give --store DIR (or FABRICBOT_STORE)",
                         field="--rack", value=args.target)
    request = Request(rack=args.target, window=window_type("1h"), thresholds=load_thresholds())
    diagnosis = diagnose(StoreSource(store), request).diagnosis
    data = render_rack(diagnosis, fmt=kind)
    output = Path(args.output or f"{args.target}.{kind}")
    try:
        output.write_bytes(data)
    except OSError as exc:
        raise InputError(f"cannot write the picture: {exc.strerror}", source=str(output)) from None
    for note in diagnosis.warnings:
        print(f"warning: {note}", file=sys.stderr)
    print(f"wrote {output} ({kind}, {len(data) / 1024:.0f} KB): rack {args.target}, "
          f"{diagnosis.rack.platform if diagnosis.rack else diagnosis.platform}; suspected: "
          f"{diagnosis.localization.component if diagnosis.localization else 'none'}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    render = sub.add_parser("render", help=SUMMARIES["render"])
    render.add_argument("target", metavar="NODE|FILE", nargs="?",
                        help="a snapshot JSON, `nvidia-smi topo -m` output or NCCL topology XML, any telemetry "
                             "`analyze` reads (an `nvidia-smi nvlink -s` paste, a kernel log); or a node id in the "
                             "store")
    render.add_argument("-o", "--output", metavar="FILE", help="where to write the picture (default NODE.png)")
    render.add_argument("--format", choices=FORMATS, help="picture format (default: from -o, else png)")
    render.add_argument("--store", metavar="DIR", help="telemetry store folder (default $FABRICBOT_STORE)")
    render.add_argument("--platform", type=platform_name,
                        help="draw with this platform's template instead of detecting it")
    render.add_argument("--case", type=int, metavar="N", help="which snapshot of a list to draw (from 1)")
    render.add_argument("--node", metavar="ID", help="the node a file that names none is (a bare topology, a paste); "
                                                           "with --store and no FILE, the stored node to draw")
    render.add_argument("--window", type=window_type, default=None,
                        help="the window the node is judged over, as analyze takes it (6h, 90m, 2d; default 1 h); "
                             "the picture's title names it")
    add_end_option(render)
    render.add_argument("--correlation", metavar="FILE",
                        help="where to write the job's step time against its links' errors, when the node has a "
                             "job history (default: beside -o, NAME-correlation.png)")
    render.add_argument("--no-correlation", action="store_true", help="draw the topology only")
    render.add_argument("--rack", action="store_true",
                        help="NODE is a rack of the store's rack inventory: draw the rack view (trays x switch chips)")
    render.set_defaults(func=cmd_render)
