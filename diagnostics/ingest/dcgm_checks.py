"""What a dcgm-exporter scrape says about itself, checked once its samples are read (as arrays: a day of scrapes
is a million samples).

- A series has one sample per time: a second one (a line written twice, or two values for one series at one
  time) is said, naming both lines; the pivot would keep only one of them unsaid.
- The exporter writes every field it is given for every GPU, and each scrape's samples share its time: a GPU
  (node and index) named by under a quarter of the samples a time the GPU named most has, or such a time, is a label
  or timestamp damaged on its way here (or the scrape was cut), and is said.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import format as fmt
from .base import IngestWarning

SAID = 5  # lines named in one warning
FEW = 0.25  # a GPU or a time with under this share of the usual count of samples is suspect


def checks(parts: list[tuple[np.ndarray, ...]], entities: dict[tuple[Any, ...], int],
           files: list[str], mig: set[tuple[str, int]] | None = None) -> list[IngestWarning]:
    """The warnings for samples (time, entity, column, value, line, file) of `files`; `mig`: the GPUs whose series
    name MIG instances, whose device fields come once per instance (said once, not as samples written twice)."""
    if not parts:
        return []
    ts, ent, col, val, line, file = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    split = np.array([(e[0], e[1]) in (mig or ()) for e in entities], dtype=bool)  # per entity: a MIG GPU's
    out: list[IngestWarning] = []
    for f in np.unique(file):
        mine = file == f
        name = files[int(f)]
        migs = mine & split[ent]
        if migs.any():
            differ = _differing(ts, ent, col, val, migs)
            out.append(_instances(name, int(line[migs].min()), entities, ent[migs], bool(differ.any())))
            migs &= ~differ  # instances that disagree are samples written twice, said
        out += _repeated(name, ts[mine & ~migs], ent[mine & ~migs], col[mine & ~migs], line[mine & ~migs])
        gpu_of = np.array([hash((e[0], e[1])) if e[1] is not None else 0 for e in entities], dtype=np.int64)
        out += _few(name, gpu_of[ent[mine]], line[mine], "the GPU", _gpu_names(entities, ent[mine]), ts[mine])
        if len(np.unique(ts[mine])) > 1:
            out += _few(name, ts[mine], line[mine], "the time", None)
    return out


def _repeated(name: str, ts: np.ndarray, ent: np.ndarray, col: np.ndarray, line: np.ndarray) -> list[IngestWarning]:
    order = np.lexsort((line, ts, col, ent))
    key = np.stack([ent[order], col[order], ts[order]], axis=1)
    again = np.flatnonzero((key[1:] == key[:-1]).all(axis=1)) + 1
    if not len(again):
        return []
    first = line[order][again - 1]
    second = line[order][again]
    named = ", ".join(f"line {int(b)} (first at {int(a)})" for a, b in zip(first[:SAID], second[:SAID], strict=True))
    more = f" and {len(again) - SAID} more" if len(again) > SAID else ""
    return [IngestWarning(name, int(second[0]), f"a series sampled twice at one time: {named}{more}; the later "
                                                "sample is kept (a line written twice, or two scrapes in one file "
                                                "without timestamps?)")]


def _differing(ts: np.ndarray, ent: np.ndarray, col: np.ndarray, val: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Of `rows`, those whose series and time hold more than one value."""
    at = np.flatnonzero(rows)
    order = at[np.lexsort((val[at], ts[at], col[at], ent[at]))]
    key = np.stack([ent[order], col[order], ts[order]], axis=1)
    same = (key[1:] == key[:-1]).all(axis=1)
    other = same & (val[order][1:] != val[order][:-1])
    group = np.concatenate([[0], np.cumsum(~same)])  # one number per series and time
    bad = np.zeros(len(ts), dtype=bool)
    bad[order[np.isin(group, group[1:][other])]] = True
    return bad


def _instances(name: str, first: int, entities: dict[tuple[Any, ...], int], ent: np.ndarray,
               differ: bool) -> IngestWarning:
    """MIG GPUs said once: dcgm-exporter writes a GPU's device fields (its NVLink and PCIe counters) once per MIG
    instance, the same count in each, so one of each time is read; where instances disagree, that is said too."""
    gpus = sorted({f"{e[0]} GPU {e[1]}" for e in (list(entities)[i] for i in np.unique(ent))})
    shown = ", ".join(gpus[:SAID]) + (f" and {len(gpus) - SAID} more" if len(gpus) > SAID else "")
    said = ("; some instances disagree, a damaged line or a mixed scrape (the series sampled twice are named in "
            "the next warning): the later is kept" if differ else "")
    return IngestWarning(name, first, f"{shown} {'is' if len(gpus) == 1 else 'are'} split into MIG instances "
                                      "(GPU_I_ID labels): a device's counters come once per instance, the same count "
                                      f"in each; one per time is read{said}")


def _gpu_names(entities: dict[tuple[Any, ...], int], ent: np.ndarray) -> dict[int, str]:
    listed = list(entities)
    return {hash((listed[e][0], listed[e][1])): f"{listed[e][0]} GPU {listed[e][1]}" for e in np.unique(ent)
            if listed[e][1] is not None}


def _few(name: str, group: np.ndarray, line: np.ndarray, what: str, names: dict[int, str] | None,
         ts: np.ndarray | None = None) -> list[IngestWarning]:
    """Groups (GPUs, times) with under FEW of the largest group's samples, when there are two or more. Given the
    samples' times (`ts`), a group's samples are weighed per time it is sampled at: a GPU that fell off the bus
    half-way through a day's scrapes (its series stopped) has each scrape's full count while it reports."""
    keys, counts = np.unique(group, return_counts=True)
    if names is not None:  # switch-side samples name no GPU
        keep = np.isin(keys, list(names))
        keys, counts = keys[keep], counts[keep]
    if len(keys) < 2:
        return []
    weight = counts.astype(np.float64)
    if ts is not None:  # the times each group is sampled at: one sort, as the repeats are found
        order = np.lexsort((ts, group))
        g, t = group[order], ts[order]
        first = np.concatenate([[True], (g[1:] != g[:-1]) | (t[1:] != t[:-1])])
        held, times = np.unique(g[first], return_counts=True)
        weight = weight / times[np.searchsorted(held, keys)]
    usual = float(weight.max())
    per = " a time" if ts is not None else ""
    out = []
    for key, each in zip(keys, weight, strict=True):
        if each < FEW * usual:
            lines = np.sort(line[group == key])[:SAID]
            label = names[int(key)] if names is not None else "this time"
            out.append(IngestWarning(name, int(lines[0]), f"{label} has {fmt.count(round(each), 'sample')}{per} "
                                                          f"(lines {', '.join(str(int(n)) for n in lines)}) where "
                                                          f"{what} of this scrape with most has {usual:g}: a label "
                                                          "or timestamp damaged?"))
    return out
