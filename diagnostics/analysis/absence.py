"""Links and GPUs that stopped or never reported: each node's view of its links from the fleet's metrics table (what
reported, what fell silent, what restarted), and the findings absence makes. Checked on the whole table at once."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import format as fmt
from ..components import CHIP_PREFIX, ComponentRef
from ..config.thresholds import (
    BELOW_EXPECTED_RULE,
    GPU_MISSING_RULE,
    OFF_BUS_RULE,
    Thresholds,
)
from ..enums import ComponentKind, LinkState, LinkType, Severity
from ..metrics import COUNTERS, applies
from ..model import Crossing, Finding
from ..times import ns
from .prepared import deltas

DCGM_ABSENT = "a missing series is never healthy: dcgm-exporter drops the series of a link that is down"
NMXT_ABSENT = ("a missing series is never healthy: NMX-T lists every port of the NVLink domain it reaches, a down one "
               "as DOWN, so a port it does not list is one it does not reach at all (the GPU, its tray or the link's "
               "management path)")


@dataclass
class NodeView:
    """Per node, what the metrics table says beyond each link's rules."""

    stale: np.ndarray  # per metrics row: the series stopped while the node kept reporting
    silent: dict[str, dict[int, int]] = field(default_factory=dict)  # node -> GPU -> when its series stopped (ns)
    # ... less the staleness limit: an Xid 79 logged from then on is the silence's
    last_heard: dict[str, dict[int, int]] = field(default_factory=dict)  # node -> silent GPU -> its last reading (ns)
    gpus_seen: dict[str, set[int]] = field(default_factory=dict)  # node -> GPUs with any series
    nvlinks_seen: dict[str, dict[int, set[int]]] = field(default_factory=dict)  # node -> GPU -> NVLink indices
    nvlinks_live: dict[str, dict[int, set[int]]] = field(default_factory=dict)  # ... of series still reporting
    nvlink_totals: dict[str, set[int]] = field(default_factory=dict)  # node -> GPUs with error counters over all
    # their NVLinks (a GPU total, no link index)
    all_inactive: dict[str, str] = field(default_factory=dict)  # node -> why every NVLink reads inactive
    restarted: dict[str, str] = field(default_factory=dict)  # node -> its reboot or driver reload in the window
    listed_ports: set[str] = field(default_factory=set)  # nodes whose NVLink rows name a rack's switch chip as their
    # far end: an NMX-T scrape's (it reads each GPU port's link partner), which lists every port, a down one as DOWN


def _floats(series: pd.Series) -> np.ndarray:
    return np.asarray(pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=np.nan))


def node_view(metrics: pd.DataFrame, end_ns: int, thresholds: Thresholds) -> NodeView:
    """Stopped series, silent GPUs, the GPUs and NVLinks each node reports, all NVLinks inactive: per node at once.

    A series has stopped when it is silent for `stale_after_intervals` of its node's sampling interval while its
    node kept reporting up to the end of the window (a dead link's series disappears; a dead exporter is not that).
    """
    n = len(metrics)
    if n == 0:
        return NodeView(stale=np.zeros(0, dtype=bool))
    node_ids = metrics["node_id"]
    if isinstance(node_ids.dtype, pd.CategoricalDtype):  # the keys keep their dtypes: no strings to hash
        codes, found = node_ids.cat.codes.to_numpy(), node_ids.cat.categories
    else:
        codes, found = pd.factorize(node_ids.astype("string"), use_na_sentinel=True)
    names = [str(n) for n in found]  # looked up once per link below: a list, not an index
    last = ns(metrics["last_seen"]).astype(np.float64)
    last[last < -9e18] = np.nan
    interval = pd.Series(metrics["interval_ns"].to_numpy(np.float64)).groupby(codes).median()
    limit = interval.reindex(range(len(names))).to_numpy(np.float64) * thresholds.setting("stale_after_intervals")
    node_last = pd.Series(last).groupby(codes).max().reindex(range(len(names))).to_numpy(np.float64)
    row_limit, row_node_last = limit[codes], node_last[codes]
    with np.errstate(invalid="ignore"):
        stale = (row_node_last - last > row_limit) & (row_node_last >= end_ns - row_limit)
    stale = np.nan_to_num(stale, nan=0).astype(bool)
    view = NodeView(stale=stale)
    gpu = _floats(metrics["gpu"])
    has_gpu = ~np.isnan(gpu)
    pairs, at = _groups(codes[has_gpu], gpu[has_gpu].astype(np.int64))
    all_stale_of = np.bincount(at, weights=~stale[has_gpu], minlength=len(pairs)) == 0
    newest_of = np.full(len(pairs), np.nan)
    np.fmax.at(newest_of, at, last[has_gpu])  # NaN where the GPU's links have no time
    for (node, g), all_stale, newest in zip(pairs, all_stale_of.tolist(), newest_of.tolist(), strict=True):
        name = str(names[node])
        view.gpus_seen.setdefault(name, set()).add(int(g))
        if all_stale:
            view.silent.setdefault(name, {})[int(g)] = int(newest - limit[node])
            view.last_heard.setdefault(name, {})[int(g)] = int(newest)
    link_type = metrics["link_type"].astype("string").fillna("").to_numpy(object)  # a row of none: no NVLink
    link = _floats(metrics["link"])
    nv = (link_type == LinkType.NVLINK.value) & has_gpu & ~np.isnan(link)
    named = np.where(codes < 0, len(names) - 1, codes)  # a row without a node: the last node's, as the GPUs above
    for held, rows in ((view.nvlinks_seen, nv), (view.nvlinks_live, nv & ~stale)):
        pairs, at = _groups(named[rows], gpu[rows].astype(np.int64))
        order = np.argsort(at, kind="stable")
        bounds = np.searchsorted(at[order], np.arange(len(pairs) + 1))
        numbers = link[rows].astype(np.int64)[order].tolist()
        for (node, g), lo, hi in zip(pairs, bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            held.setdefault(str(names[node]), {})[int(g)] = set(numbers[lo:hi])
    if "peer" in metrics.columns:
        chips = metrics["peer"].astype("string").str.startswith(CHIP_PREFIX).fillna(False).to_numpy(bool) & nv
        view.listed_ports = {str(names[c]) for c in np.unique(named[chips]).tolist()}
    errors = [c for c in (f"{m}_total" for m in COUNTERS if applies(m, LinkType.NVLINK.value)) if c in metrics]
    if errors:
        counted = np.zeros(n, dtype=bool)
        for column in errors:
            counted |= metrics[column].notna().to_numpy()
        totals = (link_type == LinkType.NVLINK.value) & has_gpu & np.isnan(link) & counted
        for node, g in _groups(named[totals], gpu[totals].astype(np.int64))[0]:
            view.nvlink_totals.setdefault(str(names[node]), set()).add(int(g))
    _restarts(view, metrics, codes, names, nv)
    if "link_state" in metrics.columns:
        state = metrics["link_state"].astype("string").fillna("up").to_numpy(object)
        down = np.isin(state, ["inactive", "down"])
        nodes, at = _groups(codes[nv])
        links = np.bincount(at, minlength=len(nodes))
        all_down = np.bincount(at, weights=~down[nv], minlength=len(nodes)) == 0
        node_gpus, _ = _groups(at, gpu[nv].astype(np.int64))
        gpus_of = np.bincount([pair[0] for pair in node_gpus], minlength=len(nodes))
        dead = np.flatnonzero(all_down & (links >= 2) & (gpus_of > 1))
        for (node,), count, gpus in zip([nodes[i] for i in dead], links[dead].tolist(), gpus_of[dead].tolist(),
                                        strict=True):
            if str(names[node]) not in view.restarted:
                every = "both" if gpus == 2 else f"all {fmt.number(gpus)}"
                view.all_inactive[str(names[node])] = (f"all {fmt.number(count)} NVLinks on {every} GPUs are inactive "
                                                       "at once")
    return view


RESTART_SHARE = 0.9  # of a node's links whose counters restart in one window: the node (or its driver) restarted


def _groups(*keys: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The distinct combinations of integer keys, in order (as a groupby sorts them), and each row's among them:
    what a groupby gives, without its cost on the few rows of one node's links."""
    if not len(keys[0]):
        return [], np.zeros(0, dtype=np.int64)
    columns = [np.asarray(k, dtype=np.int64) for k in keys]
    lows = [int(c.min()) for c in columns]
    spans = [int(c.max()) - low + 1 for c, low in zip(columns, lows, strict=True)]
    if float(np.prod(np.asarray(spans, dtype=np.float64))) < 2.0 ** 62:  # packed in one integer: a 1-D unique
        packed = np.zeros(len(columns[0]), dtype=np.int64)
        for c, low, span in zip(columns, lows, spans, strict=True):
            packed = packed * span + (c - low)
        _, first, at = np.unique(packed, return_index=True, return_inverse=True)
        return [tuple(row) for row in np.stack([c[first] for c in columns], axis=1).tolist()], at.reshape(-1)
    stacked = np.stack(columns, axis=1)
    distinct, at = np.unique(stacked, axis=0, return_inverse=True)
    return [tuple(row) for row in distinct.tolist()], at.reshape(-1)


def _restarts(view: NodeView, metrics: pd.DataFrame, codes: np.ndarray, names: list[str], nv: np.ndarray) -> None:
    """Nodes whose NVLink counters nearly all restarted in the window: a reboot or driver reload, planned or not.
    Links reading down together right after it are the restart, not a fault; still down a window later, they are."""
    if "resets" not in metrics.columns or not nv.any():
        return
    reset = metrics["resets"].to_numpy(np.float64, na_value=0.0) > 0
    share = pd.Series(reset[nv]).groupby(codes[nv]).mean()
    for node, part in zip(share.index.tolist(), share.tolist(), strict=True):
        if part >= RESTART_SHARE:
            view.restarted[str(names[node])] = (
                f"the counters of {part:.0%} of its NVLinks restarted in this window: a reboot or driver reload "
                "(links down right after it are the restart, not a fault; still down a window later, they are)")


def missing_links(findings: list[Finding], seen: Mapping[int, set[int]], live: Mapping[int, set[int]],
                  expected: Mapping[int, int], warnings: list[str], totals: Collection[int] = (),
                  listed_ports: bool = False) -> list[Finding]:
    """A missing series is never healthy: a GPU reporting fewer NVLinks than its platform has is short of each
    link it lacks (the evidence says why as the input's reader has it: dcgm-exporter drops the series of a link
    that is down; NMX-T, `listed_ports`, lists a down port as DOWN, so one it leaves out is one it does not reach
    at all): a link never seen gets a finding of its
    own, a link whose series stopped keeps its finding and is counted. A GPU with no NVLink series at all is not
    collected, which is said as a warning; one with only its error counters' total over its links (`totals`, a
    pre-Blackwell exporter given the `..._TOTAL` fields alone) is judged on that total, and the warning says that
    which of its links fails, or whether one is down, is unknown."""
    wanted = {gpu for gpu, count in expected.items() if count}
    if wanted and not seen:
        if wanted & set(totals):
            warnings.append(
                "per-link NVLink counters not collected on this node, only each GPU's total over its NVLinks "
                "(enable the per-link fields in dcgm-exporter's counters file): a GPU's totals are judged, but which "
                "of its links fails, or whether one is down, is unknown")
            warnings.extend(f"GPU {gpu}: NVLink counters not collected" for gpu in sorted(wanted - set(totals)))
        else:
            warnings.append("NVLink counters not collected on this node (enable them in dcgm-exporter's counters "
                            "file): NVLink health is unknown, not healthy")
        return findings
    out = list(findings)
    for gpu, count in sorted(expected.items()):
        if not seen.get(gpu) and count:
            warnings.append(f"GPU {gpu}: per-link NVLink counters not collected, only its total over its NVLinks: "
                            "which of its links fails, or whether one is down, is unknown" if gpu in totals
                            else f"GPU {gpu}: NVLink counters not collected")
            continue
        have = live.get(gpu, set())
        if len(have) >= count:
            continue
        short = f"GPU {gpu} reports {len(have)} of its {count} NVLinks"

        def crossing(message: str, have: set[int] = have, count: int = count) -> Crossing:
            return Crossing(rule=BELOW_EXPECTED_RULE, counter="links", rate_per_hour=float(len(have)),
                            above=float(count), unit=fmt.Unit.LINKS, severity=Severity.DOWN, message=message)

        stopped = seen.get(gpu, set()) - have
        for i, f in enumerate(out):
            if f.gpu == gpu and f.link in stopped and f.ref.kind is ComponentKind.NVLINK:
                out[i] = f.model_copy(update={"crossed": [*f.crossed, crossing(f"{short}: link {f.link} stopped")]})
        for link in sorted(set(range(count)) - seen.get(gpu, set())):
            out.append(Finding(
                ref=ComponentRef.nvlink(gpu, link), link_type=LinkType.NVLINK, link_id=f"nvlink-{link}", link=link,
                gpu=gpu, link_state=LinkState.UNKNOWN, severity=Severity.DOWN,
                crossed=[crossing(f"{short}: no series for link {link}")],
                evidence=[NMXT_ABSENT if listed_ports else DCGM_ABSENT]))
    return out


def gpu_gone(finding: Finding) -> bool:
    """Whether a finding says its GPU is gone: an Xid 79 (it fell off the bus) or every series of it silent. Its
    links then report nothing: not healthy, whatever they last read."""
    return any(c.rule in (OFF_BUS_RULE, GPU_MISSING_RULE) for c in finding.crossed)


def unfitted_note(platform: str | None, count: int, reporting: set[int]) -> str:
    """What a PCIe server's GPUs never read are said as: not judged missing (its count is what such a server may
    hold, not what this one holds), with the read that tells a card gone from a slot never fitted."""
    never = sorted(set(range(count)) - reporting)
    return (f"{platform} holds up to {count} GPUs and the readings name {fmt.count(len(reporting), 'GPU')} "
            f"({_indices(sorted(reporting))}): {fmt.noun(len(never), 'GPU')} {_indices(never)} never reported, not "
            "judged missing (a PCIe server holds the cards fitted to it); if one should be there, `nvidia-smi -L` and "
            "`lspci -d 10de:` tell a card gone from a slot never fitted")


def smaller_board_note(platform: str | None, guess: str, count: int, reporting: set[int]) -> str:
    """What GPUs never read on a platform only told from the GPU model are said as, where those read make a whole
    board the model is also built into (GPUs 0-3 of an H100 SXM5: a 4-GPU board): not judged missing."""
    never = sorted(set(range(count)) - reporting)
    return (f"the readings name {fmt.count(len(reporting), 'GPU')} ({_indices(sorted(reporting))}), a whole board of "
            f"the {len(reporting)} the GPU model is also built into: read as one, so {fmt.noun(len(never), 'GPU')} "
            f"{_indices(never)} of {platform} ({guess}) {'is' if len(never) == 1 else 'are'} not judged missing; "
            "name the platform with --platform or a nodes.csv (`nvidia-smi -L` tells a GPU gone from the bus)")


def _indices(gpus: list[int]) -> str:
    """GPU indices with each run of three or more as a range: `0, 1`, `2-7`."""
    runs: list[list[int]] = []
    for gpu in gpus:
        if runs and gpu == runs[-1][-1] + 1:
            runs[-1].append(gpu)
        else:
            runs.append([gpu])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def missing_gpus(reporting: set[int], gpu_count: int | None, stopped: Mapping[int, int]) -> list[Finding]:
    """GPUs that report nothing: those whose every series stopped inside the span (`stopped`: GPU -> its last
    reading), and, when the platform's GPU count is known, those that never reported. Never healthy: a GPU off the
    bus is silent."""
    gone = set(stopped) | (set(range(gpu_count)) - reporting if gpu_count and reporting else set())
    out = []
    for gpu in sorted(gone):
        how = (f"GPU {gpu} stopped reporting after {fmt.when(pd.Timestamp(stopped[gpu], tz='UTC'))}"
               if gpu in stopped else f"GPU {gpu} reports no telemetry")
        live = len(reporting - gone)
        count = (f": {live} of {gpu_count} GPUs report" if gpu_count
                 else f" while {fmt.count(live, 'other GPU')} {'reports' if live == 1 else 'report'}")
        out.append(Finding(
            ref=ComponentRef.of_gpu(gpu), link_type=LinkType.PCIE, link_id="gpu", gpu=gpu,
            link_state=LinkState.UNKNOWN, severity=Severity.DOWN,
            crossed=[Crossing(rule=GPU_MISSING_RULE, counter="gpus", rate_per_hour=float(live),
                              above=float(gpu_count) if gpu_count else None, unit=fmt.Unit.GPUS, severity=Severity.DOWN,
                              message=how + count)],
            evidence=["check `nvidia-smi -L` and the kernel log for Xid 79: a GPU off the bus stops every series"]))
    return out


def silent_pcie_rows(links: pd.DataFrame, t: np.ndarray, silent: Mapping[str, Collection[int]],
                     end_ns: int) -> dict[tuple[str, int], np.ndarray]:
    """(node, GPU) -> the rows of each silent GPU's PCIe link up to `end_ns`, in table order: the table scanned once
    for all of them, not once per GPU."""
    if links.empty or "replay" not in links.columns or not any(silent.values()):
        return {}
    at = np.flatnonzero((links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False) & (t <= end_ns)
                        & links["node_id"].isin([n for n, gpus in silent.items() if gpus]).to_numpy(bool,
                                                                                                 na_value=False))
    nodes, gpus = links["node_id"].iloc[at], links["gpu"].iloc[at]
    out: dict[tuple[str, int], np.ndarray] = {}
    for node, stopped in silent.items():
        here = (nodes == node).to_numpy(bool, na_value=False)
        for gpu in stopped:
            rows = at[here & (gpus == gpu).to_numpy(bool, na_value=False)]
            if len(rows):
                out[(node, int(gpu))] = rows
    return out


def replays_before_silence(links: pd.DataFrame, t: np.ndarray, at: np.ndarray, gpu: int, window_ns: int,
                           thresholds: Thresholds) -> str | None:
    """What a GPU's PCIe link counted in the window before its series stopped (`at`: its rows, from
    `silent_pcie_rows`): a replaying PCIe link (riser, slot) is the usual cause of a GPU falling off the bus, so its
    history is the evidence of the Xid 79, not a fault of its own. None when the link counted no replay then."""
    if len(at) < 2:
        return None
    order = at[np.argsort(t[at], kind="stable")]
    times = t[order]
    last = int(times[-1])
    keep = times >= last - window_ns
    keep[max(int(np.argmax(keep)) - 1, 0)] = True  # the reading before the window is its starting point
    values = links["replay"].iloc[order].to_numpy(np.float64, na_value=np.nan)[keep]
    starts = np.zeros(len(values), dtype=bool)
    starts[0] = True
    counted = float(deltas(values, starts)[0].sum())
    if counted <= 0:
        return None
    span_h = max((last - int(times[keep][0])) / 3.6e12, 1e-9)
    rule = next((r for r in thresholds.rules if r.counter == "replay" and r.applies_to(LinkType.PCIE.value)), None)
    limit = f"; {rule.name} fails above {fmt.value(rule.above, rule.unit)}" if rule is not None else ""
    return (f"GPU {gpu}'s PCIe link counted {fmt.number(counted)} replays in the {fmt.hours(span_h)} before its "
            f"series stopped ({fmt.value(counted / span_h, fmt.Unit.PER_HOUR)}{limit}): PCIe replay history before the "
            "Xid 79, the PCIe path (riser, cable, slot) first")
