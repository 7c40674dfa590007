"""Tables from files and folders of any ingestable format, with the node records their inventory files give."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..ingest.base import Source
from ..tables import TABLES
from .sources import read_sources


@dataclass
class Loaded:
    """What the inputs hold: the normalized tables (with `nodes`, the inventories' records, when any gave some) and
    what reading them said."""

    tables: dict[str, pd.DataFrame]
    warnings: list[str]
    banner_nodes: frozenset[str] = frozenset()  # `IngestResult.banner_nodes`, of every input

    @property
    def inventory(self) -> dict[str, str]:
        """node -> platform, as the inventory files give it."""
        nodes = self.tables.get("nodes")
        if nodes is None or "platform" not in nodes.columns:
            return {}
        return {str(n): str(p) for n, p in zip(nodes["node_id"], nodes["platform"], strict=True) if isinstance(p, str)}


def load_tables(paths: Iterable[str | Path | Source], *, node_id: str | None = None, fmt: str | None = None) -> Loaded:
    """Every table the inputs (files, folders, text already read: stdin) hold, concatenated, and the inventories'
    node records; `fmt` forces a reader for every file."""
    paths = list(paths)
    missing = [str(p) for p in paths if not isinstance(p, Source) and not Path(p).exists()]
    if missing:
        raise InputError("file or folder not found", source=missing[0])
    outcomes = read_sources(paths, node_id=node_id, fmt=fmt)
    results = [o.result for o in outcomes if o.result is not None]
    warnings = [f"{o.name}: {o.error}" for o in outcomes if o.status == "error"]
    warnings += [str(w) for r in results for w in r.warnings]
    tables: dict[str, pd.DataFrame] = {}
    for name, schema in TABLES.items():
        frames = [r[name] for r in results if name in r.tables and not r[name].empty]
        if frames:
            plain = [f.astype({c: "string" for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)})
                     for f in frames] if len(frames) > 1 else frames
            tables[name] = schema.conform(pd.concat(plain, ignore_index=True))
    records = [o.nodes for o in outcomes if o.nodes is not None and len(o.nodes)]
    if records:  # what a later file gives of a node wins; what it leaves out stays (a scrape cut short and the
        # inventory that names its platform)
        merged = pd.concat(records, ignore_index=True)
        tables["nodes"] = merged.groupby("node_id", sort=False, dropna=False).last().reset_index()
    if not any(name in tables for name in TABLES):
        raise InputError("no telemetry read from the inputs" + (f": {'; '.join(warnings[:3])}" if warnings else ""),
                         source=", ".join(o.name for o in outcomes[:3]) or "inputs")
    return Loaded(tables, warnings, frozenset(n for r in results for n in r.banner_nodes))


def load_inputs(paths: Iterable[str | Path], *, node_id: str | None = None) -> tuple[
        dict[str, pd.DataFrame], dict[str, str], list[str]]:
    """`load_tables` as (tables without the node records, node -> platform, warnings)."""
    loaded = load_tables(paths, node_id=node_id)
    tables = {k: v for k, v in loaded.tables.items() if k != "nodes"}
    return tables, loaded.inventory, loaded.warnings
