"""Each job explained once for the fleet: its slowdown from its steps, and, when it is slower, its nodes' flagged links
scored against its step time over the history that correlation needs (read from the tables or, when the engine is
given one, from a reader such as the store)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..components import ComponentRef
from ..config.thresholds import Thresholds
from ..enums import ComponentKind, Severity
from ..model import Finding
from ..tables import LINK_IDENTITY
from ..times import ns, utc_datetime
from .correlate import (
    ERROR_COUNTERS,
    ERROR_RATIOS,
    JobExplanation,
    UnscoredLink,
    job_slowdown,
    score_links,
    step_buckets,
    stopped,
    verdict,
)
from .findings import ref_of
from .metrics import records
from .prepared import KEYS, Prepared, key_codes, link_keys, prepare_rows
from .rows import ROW_CHOICE_COLUMNS, per_link_rows
from .steps import JobSteps, steps_span

LINK_KINDS = (ComponentKind.NVLINK, ComponentKind.PCIE, ComponentKind.NVSWITCH)  # what a job's step time is scored on
# what a link's history is scored on (`score_links`) and drawn from (`step_evidence`), beside its identity and time
HISTORY_COLUMNS = ("timestamp", *LINK_IDENTITY, *ERROR_COUNTERS, *ERROR_RATIOS, "link_state", "width", "max_width",
                   *ROW_CHOICE_COLUMNS)  # and what tells the rows the rates read (`per_link_rows`) from the others


@dataclass(frozen=True)
class LinkChoice:
    """The links a correlation reads from a history: those its findings name (node, component slug), each read
    whole, and only the columns it reads. A history of the whole fleet's day is mostly links no finding names."""

    wanted: frozenset[tuple[str, str]]
    columns: tuple[str, ...] = HISTORY_COLUMNS

    @classmethod
    def of(cls, links: Collection[tuple[str, ComponentRef]]) -> LinkChoice:
        return cls(frozenset((node, ref.slug) for node, ref in links))

    def rows(self, frame: pd.DataFrame) -> np.ndarray:
        """Per row of `frame` (its identity columns at least), whether it is a reading of a chosen link: every
        reading of a link (its keys) any of whose readings is named as a chosen one, so a link's series is whole.
        A link's name is the same on every node: it is made once per identity less the node, and the chosen
        (node, name) pairs are found among the rows' as numbers."""
        if not len(frame) or not self.wanted:
            return np.zeros(len(frame), dtype=bool)
        link = link_keys([key_codes(frame[c], None) if c in frame.columns else None for c in KEYS])
        rest = [c for c in LINK_IDENTITY if c != "node_id" and c in frame.columns]
        kind = pd.DataFrame({"link": link_keys([None, *(key_codes(frame[c], None) if c in frame.columns else None
                                                        for c in KEYS[1:])]),
                             **{c: key_codes(frame[c], None) for c in rest if c not in KEYS}})
        identity = kind.groupby(list(kind.columns), sort=False).ngroup().to_numpy()
        firsts = np.unique(identity, return_index=True)[1]
        slugs = [ref_of(row).slug for row in records(frame.iloc[firsts][rest], skip=())]
        slug_codes, names = pd.factorize(np.asarray(slugs, dtype=object))
        node = frame["node_id"]
        if isinstance(node.dtype, pd.CategoricalDtype):
            node_codes, nodes = node.cat.codes.to_numpy(), node.cat.categories
        else:
            node_codes, nodes = pd.factorize(node, use_na_sentinel=True)
        node_at, name_at = {str(n): i for i, n in enumerate(nodes)}, {str(n): i for i, n in enumerate(names)}
        pairs = [node_at[n] * len(names) + name_at[s] for n, s in self.wanted if n in node_at and s in name_at]
        named = np.isin(node_codes.astype(np.int64) * len(names) + slug_codes[identity], pairs) & (node_codes >= 0)
        return np.isin(link, np.unique(link[named]))


class History(Protocol):
    """A link's history for the correlation: (nodes, start, end) -> their link samples, each node's rows together;
    given `links`, those links' readings (at least) and the columns they name (at least); given `unreadable`, a node
    whose history could not be read (a damaged store part) is left out and said there (node -> why)."""

    def __call__(self, nodes: list[str], start: datetime, end: datetime, *, links: LinkChoice | None = None,
                 unreadable: dict[str, str] | None = None) -> pd.DataFrame: ...


def explain_jobs(chosen: Mapping[str, str], steps: JobSteps, found: Mapping[str, list[Finding]],
             links: pd.DataFrame, t: np.ndarray, end_ns: int, window: timedelta | None, thresholds: Thresholds,
             history: History | None, peers: Mapping[str, Sequence[str]] | None = None,
             unreadable: Mapping[str, str] | None = None) -> dict[str, JobExplanation]:
    """Each chosen job once: its slowdown from its steps, and, when it is slower (and, given a `window`, still
    running at the end), its nodes' flagged links scored, and those of each node's `peers` (a rack's switch trays,
    whose ports carry its compute trays' links). The links of a node whose readings could not be read (`unreadable`
    in the window, or in the history read here: node -> why) are named as not scored, never as not tracking it."""
    out: dict[str, JobExplanation] = {}
    for job_id in sorted(set(chosen.values())):
        out[job_id] = job_slowdown(steps.of(job_id), job_id, thresholds=thresholds, cleaned=True,
                                   nodes=steps.nodes.get(job_id))
        if window is not None:
            out[job_id] = stopped(steps.of(job_id), out[job_id], end_ns=end_ns, window=window,
                                  thresholds=thresholds)
    slowed = {j: e for j, e in out.items() if e.slowdown and e.nodes}
    wanted: dict[str, list[tuple[str, ComponentRef]]] = {}
    unread = dict(unreadable or {})
    for job_id, job in slowed.items():
        nodes = list(dict.fromkeys([*job.nodes, *(p for n in job.nodes for p in (peers or {}).get(n, []))]))
        wanted[job_id] = [(n, f.ref) for n in nodes for f in found.get(n, [])
                          if f.severity is not Severity.OK and f.ref.kind in LINK_KINDS]
        unscored = [UnscoredLink(node_id=n, why=unread[n]) for n in nodes if n in unread]
        if unscored:
            out[job_id] = job.model_copy(update={"unscored": unscored})
            out[job_id].verdict = verdict(out[job_id])
    needed = sorted({n for refs in wanted.values() for n, _ in refs})
    if not needed:
        return out
    spans = [s for s in (steps_span(steps.of(j), j, cleaned=True) for j in wanted) if s is not None]
    start = min(s[0] for s in spans) - 10 * 60 * 10**9 if spans else end_ns
    left: dict[str, str] = {}
    p = link_history(needed, start, end_ns, links, t, history,
                     LinkChoice.of([link for refs in wanted.values() for link in refs]), unreadable=left)
    index = segment_index(p)
    scored = [j for j in wanted if len(steps.of(j))]
    buckets = dict(zip(scored, step_buckets([steps.of(j) for j in scored]), strict=True))
    for job_id, refs in wanted.items():
        present = [(n, r) for n, r in refs if (n, r.slug) in index]
        segments = np.array([index[(n, r.slug)] for n, r in present], dtype=np.int64)
        unscored = [*out[job_id].unscored, *(UnscoredLink(node_id=n, ref=r, why=left[n]) for n, r in refs
                                             if n in left and n not in unread)]
        out[job_id] = score_links(slowed[job_id], steps.of(job_id), p, segments, present, thresholds, cleaned=True,
                                  unscored=unscored, buckets=buckets.get(job_id))
    return out


def link_history(nodes: list[str], start_ns: int, end_ns: int, links: pd.DataFrame, t: np.ndarray,
                 history: History | None, choice: LinkChoice | None = None,
                 unreadable: dict[str, str] | None = None) -> Prepared:
    """The chosen nodes' link samples over the jobs' span, prepared: from `history` when given, else the tables;
    given a `choice`, only the chosen links' (each link's index in `segment_index` is then among those); given
    `unreadable`, the nodes whose history could not be read are said there."""
    if history is not None:
        frame = history(nodes, utc_datetime(start_ns), utc_datetime(end_ns), links=choice, unreadable=unreadable)
        times = ns(frame["timestamp"]) if len(frame) else np.zeros(0, dtype=np.int64)
        return prepare_rows(frame, times, _chosen(frame, _read(frame, (times >= start_ns) & (times <= end_ns)), choice))
    mine = links["node_id"].isin(nodes).to_numpy(bool, na_value=False) & (t >= start_ns) & (t <= end_ns)
    return prepare_rows(links, t, _chosen(links, _read(links, mine), choice))


def _read(frame: pd.DataFrame, wanted: np.ndarray) -> np.ndarray:
    """Of the `wanted` rows, those the window's rates read (`per_link_rows`): a GPU's PCIe row, not the port above it
    nor a lane's (the same link's identity, other counts), whether the rows come from the tables or a history."""
    keep = per_link_rows(frame) if len(frame) else None
    if keep is not None:
        allowed = np.zeros(len(wanted), dtype=bool)
        allowed[keep] = True
        wanted = wanted & allowed
    return np.flatnonzero(wanted)


def _chosen(frame: pd.DataFrame, rows: np.ndarray, choice: LinkChoice | None) -> np.ndarray:
    """Of `rows`, those of the chosen links."""
    if choice is None or not len(rows):
        return rows
    named = [c for c in LINK_IDENTITY if c in frame.columns]
    return rows[choice.rows(pd.DataFrame({c: frame[c].array.take(rows) for c in named}))]


def segment_index(p: Prepared) -> dict[tuple[str, str], int]:
    """(node, component slug) -> the link's index in the prepared history."""
    if p.nseg == 0:
        return {}
    out: dict[tuple[str, str], int] = {}
    heads = p.heads().assign(gpu_total=_at_heads(p, "gpu_total"), peer=_at_heads(p, "peer"))
    for i, row in enumerate(records(heads, skip=())):
        out[(str(row["node_id"]), ref_of(row).slug)] = i
    return out


def _at_heads(p: Prepared, column: str) -> Any:
    """A column at each link's first row (a link's total flag and its peer name it, as its finding is named)."""
    if column not in p.source.columns:
        return None
    return p.source[column].array.take(p.positions(p.segment_starts))
