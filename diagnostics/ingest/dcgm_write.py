"""link_samples rows -> dcgm-exporter exposition text (Prometheus text or OpenMetrics), with timestamps.

The synthetic fleet and the Prometheus backfill write through this, and `dcgm` reads it back to the same rows.
Names come from `data/dcgm.toml`: a per-link row uses the field's per-link name (`..._COUNT_L3`) where it has one,
else its plain name with an `nvlink` label; a GPU-total row the plain name; a switch-side row the NVSwitch field
with `nvswitch` and `nvlink` (port) labels. Samples of one metric are written together, as the format requires.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pandas as pd

from .dcgm_map import DcgmMap, Field, load_map


def _field_for(mapping: DcgmMap, column: str, link_type: str) -> Field | None:
    for fld in mapping.fields:
        if fld.column == column and fld.link_type.value == link_type:
            return fld
    if link_type == "nvswitch":  # a GPU-side field read from a switch entity
        return _field_for(mapping, column, "nvlink")
    return None


def _quote(series: pd.Series) -> pd.Series:
    text = series.astype("string")
    return text.str.replace("\\", "\\\\", regex=False).str.replace('"', '\\"', regex=False).str.replace(
        "\n", "\\n", regex=False)


def _samples(frame: pd.DataFrame, column: str, fld: Field, openmetrics: bool,
             models: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One exposition line per row of `frame` (all of one link type) that has `column`; `models` (node -> GPU
    model) adds the exporter's `modelName` label."""
    rows = frame[frame[column].notna()]
    if rows.empty:
        return pd.DataFrame(columns=["name", "line"])
    link = rows["link"].astype("Int64")
    total = rows["gpu_total"].fillna(False).astype(bool) | link.isna()
    switch = rows["nvswitch"].notna()
    if fld.per_link_name:
        head, _, tail = fld.write_name.partition("{link}")
        name = head + link.astype("string").fillna("") + tail
    else:
        name = pd.Series(fld.write_name, index=rows.index, dtype="string")
    plain = fld.total_name or fld.write_name
    name = name.where(~(total | switch | link.isna()), plain)
    labels = pd.Series("", index=rows.index, dtype="string")
    gpu = rows["gpu"].astype("Int64").astype("string")
    labels = labels.where(gpu.isna(), 'gpu="' + gpu + '",')
    labels = labels.where(~switch, 'nvswitch="' + _quote(rows["nvswitch"]) + '",')
    needs_link = link.notna() & (switch | (name == plain)) & ~total
    labels = labels.where(~needs_link, labels + 'nvlink="' + link.astype("string") + '",')
    labels = labels + 'Hostname="' + _quote(rows["node_id"]) + '"'
    if models:
        model = rows["node_id"].astype("string").map(dict(models)).astype("string")
        labels = labels.where(model.isna(), labels + ',modelName="' + _quote(model) + '"')
    value = rows[column].map(lambda v: f"{v:.17g}")
    ts = rows["timestamp"]
    if openmetrics:
        stamp = (ts.astype("int64") / 1e9).map(lambda s: f" {s:.3f}")
    else:
        stamp = " " + (ts.astype("int64") // 1_000_000).astype("string")
    stamp = stamp.where(ts.notna(), "")
    suffix = "_total" if openmetrics and fld.counter else ""
    line = name + suffix + "{" + labels + "} " + value + stamp
    return pd.DataFrame({"name": name, "line": line})


def format_exposition(frame: pd.DataFrame, *, openmetrics: bool = False,
                      mapping: DcgmMap | None = None, models: Mapping[str, str] | None = None) -> Iterator[str]:
    """Yield exposition lines (without newlines) for LINK_SAMPLES rows; `# EOF` ends OpenMetrics output."""
    mapping = mapping or load_map()
    parts: list[pd.DataFrame] = []
    kinds: dict[str, str] = {}
    for link_type, group in frame.groupby(frame["link_type"].astype("string"), sort=True):
        for column in dict.fromkeys(f.column for f in mapping.fields):
            if column not in group or not group[column].notna().any():
                continue
            fld = _field_for(mapping, column, str(link_type))
            if fld is None:
                continue
            part = _samples(group, column, fld, openmetrics, models)
            for name in part["name"].unique():
                kinds[str(name)] = "counter" if fld.counter else "gauge"
            parts.append(part)
    if parts:
        lines = pd.concat(parts, ignore_index=True)
        for name, group in lines.groupby("name", sort=True):
            yield f"# TYPE {name!s} {kinds[str(name)]}"
            yield from group["line"]
    if openmetrics:
        yield "# EOF"
