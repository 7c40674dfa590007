"""Tables from files and folders of any ingestable format, with the platforms their inventory files give."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..tables import TABLES
from .sources import read_sources


def load_inputs(paths: Iterable[str | Path], *, node_id: str | None = None) -> tuple[
        dict[str, pd.DataFrame], dict[str, str], list[str]]:
    """Every table the inputs (files, folders) hold, concatenated; the platforms their inventory files give
    (`nodes.csv` and the like); warnings."""
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise InputError("file or folder not found", source=missing[0])
    outcomes = read_sources(paths, node_id=node_id)
    results = [o.result for o in outcomes if o.result is not None]
    warnings = [f"{o.name}: {o.error}" for o in outcomes if o.status == "error"]
    warnings += [str(w) for r in results for w in r.warnings]
    inventory = {str(n): str(p) for o in outcomes if o.nodes is not None
                 for n, p in zip(o.nodes["node_id"], o.nodes["platform"], strict=True) if isinstance(p, str)}
    tables: dict[str, pd.DataFrame] = {}
    for name, schema in TABLES.items():
        frames = [r[name] for r in results if name in r.tables and not r[name].empty]
        if frames:
            plain = [f.astype({c: "string" for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)})
                     for f in frames] if len(frames) > 1 else frames
            tables[name] = schema.conform(pd.concat(plain, ignore_index=True))
    if not tables:
        raise InputError("no telemetry read from the inputs" + (f": {'; '.join(warnings[:3])}" if warnings else ""),
                         source=", ".join(o.name for o in outcomes[:3]) or "inputs")
    return tables, inventory, warnings
