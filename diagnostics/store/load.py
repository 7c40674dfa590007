"""Tables from files and folders of any ingestable format, with the node records their inventory files give."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import NoReturn

import pandas as pd

from .. import format as fmt
from ..errors import InputError
from ..ingest.base import IngestResult, Source
from ..tables import TABLES, as_text
from .sources import read_sources


@dataclass
class Loaded:
    """What the inputs hold: the normalized tables (with `nodes`, the inventories' records, when any gave some) and
    what reading them said."""

    tables: dict[str, pd.DataFrame]
    warnings: list[str]
    banner_nodes: frozenset[str] = frozenset()  # `IngestResult.banner_nodes`, of every input
    # per warning, the nodes the rows of the file it is about name; None: a file that gave no node, or rows of none
    # (a paste: the node asked about), so it is every node's
    about: list[frozenset[str] | None] | None = None
    named: frozenset[str] = frozenset()  # every node the files' rows name

    def said_of(self, node: str) -> list[str]:
        """What reading the files said that is the node's: its own files' warnings, and those of files that name no
        node; another node's file's are that node's (all of them when no file names this one: a tray renamed as its
        host)."""
        about = self.about or [None] * len(self.warnings)
        if node not in self.named:
            return list(self.warnings)
        return [w for w, a in zip(self.warnings, about, strict=True) if a is None or node in a]

    @property
    def inventory(self) -> dict[str, str]:
        """node -> platform, as the inventory files give it."""
        nodes = self.tables.get("nodes")
        if nodes is None or "platform" not in nodes.columns:
            return {}
        return {str(n): str(p) for n, p in zip(nodes["node_id"], nodes["platform"], strict=True) if isinstance(p, str)}


def load_tables(paths: Iterable[str | Path | Source], *, node_id: str | None = None, fmt: str | None = None,
                asked: str | None = None, until: datetime | None = None) -> Loaded:
    """Every table the inputs (files, folders, text already read: stdin) hold, concatenated, and the inventories'
    node records; `fmt` forces a reader for every file; `asked`: the node asked about, `until`: the end asked
    (`read_sources`)."""
    paths = list(paths)
    missing = [str(p) for p in paths if not isinstance(p, Source) and not Path(p).exists()]
    if missing:
        raise InputError("file or folder not found", source=missing[0])
    outcomes = read_sources(paths, node_id=node_id, fmt=fmt, asked=asked, until=until)
    if not outcomes:  # folders that hold no file
        raise InputError("no file to read in the folder" + ("s" if len(paths) > 1 else ""),
                         source=", ".join(str(p) for p in paths[:3]))
    one_machine_each([(o.name, o.result) for o in outcomes])
    results = [o.result for o in outcomes if o.result is not None]
    warnings = [f"{o.name}: {o.error}" for o in outcomes if o.status == "error"]
    about: list[frozenset[str] | None] = [None] * len(warnings)
    named: set[str] = set()
    for r in results:
        nodes = _named(r)
        warnings += [str(w) for w in r.warnings]
        about += [nodes] * len(r.warnings)
        named |= nodes or set()
    tables: dict[str, pd.DataFrame] = {}
    for name, schema in TABLES.items():
        frames = [r[name] for r in results if name in r.tables and not r[name].empty]
        if frames:
            plain = [f.assign(**{c: as_text(f[c]) for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)})
                     for f in frames] if len(frames) > 1 else frames
            tables[name] = schema.conform(pd.concat(plain, ignore_index=True))
    records = [o.nodes for o in outcomes if o.nodes is not None and len(o.nodes)]
    if records:  # what a later file gives of a node wins; what it leaves out stays (a scrape cut short and the
        # inventory that names its platform)
        merged = pd.concat(records, ignore_index=True)
        tables["nodes"] = merged.groupby("node_id", sort=False, dropna=False).last().reset_index()
    if not any(name in tables for name in TABLES):
        raise InputError("no telemetry read from the inputs" + (f": {'; '.join(warnings[:3])}" if warnings else ""),
                         source=", ".join(o.name for o in outcomes[:3]))
    return Loaded(tables, warnings, frozenset(n for r in results for n in r.banner_nodes), about, frozenset(named))


Place = tuple[str | None, int, int | None]  # (node, GPU index, time in ns): where one GPU is read


def one_machine_each(inputs: Sequence[tuple[str, IngestResult | None]]) -> None:
    """Refuses inputs that put two GPUs (two UUIDs) at one index of one node at one time: two machines' outputs read
    as one node (two pastes that name no host, given together or concatenated), or one machine's before and after a
    GPU was replaced with no time to order them. Merged, one output's link states hid the other's (which came last
    decided whether a down link showed). Within one file, one GPU's two UUIDs are a damaged header, which its reader
    says; two GPUs' are two machines."""
    seen: dict[Place, tuple[str, str]] = {}  # the UUID first read at each place, and its file
    for name, result in inputs:
        links = result.tables.get("link_samples") if result is not None else None
        if links is None or not len(links) or not {"gpu_uuid", "gpu", "node_id", "timestamp"} <= set(links.columns):
            continue
        known = links.loc[links["gpu_uuid"].notna() & links["gpu"].notna(), ["node_id", "gpu", "timestamp", "gpu_uuid"]]
        mine: dict[Place, list[str]] = {}
        for node, gpu, when, uuid in known.drop_duplicates().itertuples(index=False):
            place = (None if pd.isna(node) else str(node), int(gpu), None if pd.isna(when) else when.value)
            if str(uuid).lower() not in (u.lower() for u in mine.get(place, [])):  # hex: one UUID in either case
                mine.setdefault(place, []).append(str(uuid))
        twice = [(place, uuids) for place, uuids in mine.items() if len(uuids) > 1]
        far = [(place, uuids) for place, uuids in twice if _apart(*uuids[:2])]  # two cards, not one header damaged
        if far or len({(node, when) for (node, _, when), _ in twice}) < len(twice):  # or two GPUs of one reading
            place, uuids = (far or twice)[0]
            _refuse(place, (uuids[0], name), (uuids[1], name))
        for place, uuids in mine.items():
            first = seen.setdefault(place, (uuids[0], name))
            if first[0].lower() not in (u.lower() for u in uuids):
                _refuse(place, first, (uuids[0], name))
    _same_cards_over_time(seen)


def _same_cards_over_time(seen: dict[Place, tuple[str, str]]) -> None:
    """Refuses one node's readings at two times of two GPUs or more each with no GPU UUID in common: two machines'
    outputs, each dated (a `date` line above each), read as every GPU replaced between them, the first one's links
    gone from the answer. As a paste's second reading of another machine is refused (`pasted.py`)."""
    cards: dict[str | None, dict[int | None, dict[str, str]]] = {}  # node -> time -> UUID -> its file
    for (node, _, when), (uuid, name) in seen.items():
        cards.setdefault(node, {}).setdefault(when, {})[uuid.lower()] = name
    for node, times in cards.items():  # an undated reading last: it is taken as read at the end
        ordered = sorted(((t, u) for t, u in times.items() if len(u) >= 2), key=lambda r: (r[0] is None, r[0] or 0))
        for (before, one), (after, other) in pairwise(ordered):
            if not one.keys() & other.keys():
                of = f" of {node}" if node else ""
                said = [f"at {fmt.when(pd.Timestamp(t, tz='UTC'))}" if t is not None else "with no time"
                        for t in (before, after)]
                files = ", ".join(dict.fromkeys([*one.values(), *other.values()]))
                raise InputError(f"no GPU{of} read {said[0]} is among those read {said[1]} (their UUIDs differ): two "
                                 "machines' outputs read as one node, not every GPU replaced between them; analyze "
                                 "each on its own", source=files)


DAMAGED_CHARS = 4  # a header damaged in transit changes a few characters of its UUID; two cards' differ throughout


def _apart(one: str, other: str) -> bool:
    """Whether two UUIDs read at one GPU's place are two cards' (they differ in more characters than damage makes),
    not one card's with a damaged header (which its reader says)."""
    a, b = one.lower(), other.lower()
    return len(a) != len(b) or sum(x != y for x, y in zip(a, b, strict=True)) > DAMAGED_CHARS


def _refuse(place: Place, one: tuple[str, str], other: tuple[str, str]) -> NoReturn:
    node, gpu, when = place
    at = f"at {fmt.when(pd.Timestamp(when, tz='UTC'))}" if when is not None else "neither dated"
    where = (f"in {one[1]}" if one[1] == other[1] else f"in {one[1]} and {other[0]} in {other[1]}")
    said = (f"{one[0]} and {other[0]} {where}" if one[1] == other[1] else f"{one[0]} {where}")
    raise InputError(f"two GPUs at one place: GPU {gpu}{f' of {node}' if node else ''} is {said}, {at}: two machines' "
                     "outputs, or one machine's before and after a GPU was replaced with no time to order them; "
                     "analyze each on its own", source=", ".join(dict.fromkeys([one[1], other[1]])))


def _named(result: IngestResult) -> frozenset[str] | None:
    """The nodes a file's rows name (a job's steps, each of its hosts); None when it has a row that names none (it
    becomes the node asked about) or no row at all."""
    names: set[str] = set()
    for name, frame in result.tables.items():
        column = "node_ids" if name == "step_samples" else "node_id"
        if not len(frame) or column not in frame.columns:
            continue
        values = as_text(frame[column])
        if values.isna().any() or (values.str.strip() == "").any():
            return None
        names.update(n.strip() for v in values.unique() for n in str(v).split(",") if n.strip())
    return frozenset(names) or None


def load_inputs(paths: Iterable[str | Path], *, node_id: str | None = None) -> tuple[
        dict[str, pd.DataFrame], dict[str, str], list[str]]:
    """`load_tables` as (tables without the node records, node -> platform, warnings)."""
    loaded = load_tables(paths, node_id=node_id)
    tables = {k: v for k, v in loaded.tables.items() if k != "nodes"}
    return tables, loaded.inventory, loaded.warnings
