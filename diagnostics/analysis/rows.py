"""Which link samples the rates read: a GPU's total over its links only where nothing per link carries its counters,
no lane a reader observed failing (it is named on its link instead), no far end of a GPU's PCIe link (read by
`ends`), no PCIe device that is no GPU; the GPU index of PCIe rows read by bus id alone (lspci), and the GPUs no
index places (`nvidia-smi -q -i N`) kept apart by their bus."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise

import numpy as np
import pandas as pd

from ..enums import LinkEnd, LinkType
from ..metrics import COUNTERS, GAUGES
from .prepared import key_codes

ROW_CHOICE_COLUMNS = ("lane_error", "end", "pci_bus_id", "device_kind")  # what `per_link_rows` reads beyond a link's
# identity and counters: a read of some columns (a job's history) keeps them, so it chooses the rows the window does


def per_link_rows(links: pd.DataFrame) -> np.ndarray | None:
    """Rows the rates read, or None for all. Dropped: a GPU's total over its links where the GPU's per-link rows
    carry every counter it carries (it would count each error twice; kept where it holds a counter they lack, as
    Blackwell's NVLink5 totals do beside the per-link replays), a lane a reader observed failing (`observed_lanes`
    puts it on its link), and a PCIe device that is no GPU."""
    drop = np.zeros(len(links), dtype=bool)
    if "gpu_total" in links.columns:
        total = links["gpu_total"].to_numpy(bool, na_value=False)
        if total.any():
            drop |= _repeated_totals(links, total)
    if "lane_error" in links.columns and "lane" in links.columns:
        drop |= links["lane_error"].notna().to_numpy() & links["lane"].notna().to_numpy()
    if "end" in links.columns:
        drop |= links["end"].notna().to_numpy() & (links["end"] != LinkEnd.GPU.value).to_numpy(bool, na_value=False)
    pcie = (links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)
    drop |= pcie & links["gpu"].isna().to_numpy() & ~unplaced_gpus(links)
    return np.flatnonzero(~drop) if drop.any() else None


def unplaced_gpus(links: pd.DataFrame) -> np.ndarray:
    """The PCIe rows of a GPU's own section that no index places (`nvidia-smi -q -i N` prints none, and neither an
    inventory nor the bus order placed it): judged as the GPU at that bus, as an Xid naming it by its bus is."""
    if "pci_bus_id" not in links.columns:
        return np.zeros(len(links), dtype=bool)
    own = links["device_kind"].isna().to_numpy() if "device_kind" in links.columns else True  # lspci's: not a GPU
    return own & links["gpu"].isna().to_numpy() & links["pci_bus_id"].notna().to_numpy() \
        & (links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)


def by_bus_apart(links: pd.DataFrame) -> pd.DataFrame:
    """The unplaced GPUs' PCIe rows (`unplaced_gpus`) with their bus's place among the node's such buses in `link`,
    which a PCIe link leaves empty: the rates key a link by its index columns, so two GPUs known by their bus alone
    stay two links (the link's name takes its bus, never this number)."""
    rows = unplaced_gpus(links)
    if not rows.any():
        return links
    held = links[rows]
    place = held.groupby(held["node_id"].astype("string"), sort=False)["pci_bus_id"].transform(
        lambda bus: pd.Series(pd.factorize(bus.str.lower(), sort=True)[0], index=bus.index))
    link = links["link"].astype("Int16").to_numpy(copy=True) if "link" in links.columns else \
        pd.array([pd.NA] * len(links), dtype="Int16").to_numpy()
    link[np.flatnonzero(rows)] = place.to_numpy()
    return links.assign(link=pd.array(link, dtype="Int16"))


def _repeated_totals(links: pd.DataFrame, total: np.ndarray) -> np.ndarray:
    """The GPU totals whose every counter the same GPU's per-link rows also carry: each row's (node, GPU, link type)
    packed in one integer, looked up among the few the totals have, then per counter only the rows found read."""
    node = key_codes(links["node_id"], None).astype(np.int64)
    if len(node) and int(node.max()) >= len(node):  # node ids given as numbers: their order of first sight instead
        node = pd.factorize(node)[0].astype(np.int64)
    with_totals = np.zeros(int(node.max()) + 2, dtype=bool)  # the nodes with a total (NA, -1, the last): only their
    with_totals[node[total]] = True  # rows are read on
    rows = np.flatnonzero(with_totals[node])
    key = (node[rows] << 24) | (links["gpu"].iloc[rows].to_numpy(np.float64, na_value=-1).astype(np.int64) + 1) << 8 \
        | (key_codes(links["link_type"], rows).astype(np.int64) + 1)
    mine = total[rows]
    keys = np.unique(key[mine])
    at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
    beside = np.flatnonzero(~mine & links["link"].iloc[rows].notna().to_numpy() & (keys[at] == key))  # its GPU's links
    totals = np.flatnonzero(mine)

    def held(these: np.ndarray) -> np.ndarray:
        """Per total's key, whether some of `these` rows has it."""
        found = np.zeros(len(keys), dtype=bool)
        found[at[these]] = True
        return found

    covered = held(beside)[at[totals]]  # a total beside per-link rows of its GPU
    for column in (*COUNTERS, *(m.column for m in GAUGES.values() if m.maximum is None)):
        if not covered.any():
            break
        if column not in links.columns:
            continue
        values = links[column]
        own = covered & values.iloc[rows[totals]].notna().to_numpy()
        if own.any():  # a total holding this counter repeats the links only if they hold it too
            covered[own] = held(beside[values.iloc[rows[beside]].notna().to_numpy()])[at[totals[own]]]
    out = np.zeros(len(links), dtype=bool)
    out[rows[totals]] = covered
    return out


def numbered_by_bus(links: pd.DataFrame, buses: Mapping[str, Mapping[str, int]]) -> tuple[pd.DataFrame, dict[str, str]]:
    """PCIe rows read from a GPU's bus id with no GPU index (lspci) take the index the node's GPU table gives that
    bus; with no table, the GPUs' PCI bus order, as nvidia-smi numbers them by default, said in a warning per node."""
    if not len(links) or "pci_bus_id" not in links.columns or "device_kind" not in links.columns:
        return links, {}
    unnamed = links["gpu"].isna().to_numpy() & links["pci_bus_id"].notna().to_numpy() \
        & (links["link_type"] == LinkType.PCIE.value).to_numpy(bool, na_value=False)
    if not unnamed.any():
        return links, {}
    rows = links[unnamed]
    bus = rows["pci_bus_id"].astype("string").str.lower()
    node = rows["node_id"].astype("string")
    gpus = (rows["device_kind"].astype("string") == "gpu").to_numpy(bool, na_value=False)
    index = pd.Series(pd.NA, index=rows.index, dtype="Int16")
    warnings: dict[str, str] = {}
    for name in sorted(set(node.dropna())):
        mine = (node == name).to_numpy(bool, na_value=False)
        known = buses.get(name)
        if not known:
            order = sorted(set(bus[mine & gpus].dropna()))
            known = {b: i for i, b in enumerate(order)}
            if known:
                warnings[name] = ("GPU numbers taken from PCI bus order (" + ", ".join(
                    f"{b} = GPU {i}" for b, i in known.items()) + "), as nvidia-smi numbers GPUs by default; "
                    "`nvidia-smi --query-gpu=index,pci.bus_id --format=csv` confirms them")
        else:
            strays = sorted(set(bus[mine & gpus].dropna()) - set(known))
            if strays:
                warnings[name] = (f"{', '.join(strays)}: a GPU the node's GPU table does not list (off the bus, or "
                                  "a table of some GPUs only): its PCIe readings are not numbered, so not judged")
        index[mine] = bus[mine].map(known).astype("Int16")
    gpu = links["gpu"].astype("Int16").to_numpy(copy=True)
    gpu[np.flatnonzero(unnamed)] = index.to_numpy()
    return links.assign(gpu=pd.array(gpu, dtype="Int16")), warnings


def node_pieces(frame: pd.DataFrame, rows: int) -> list[tuple[int, int]]:
    """Row ranges of about `rows` rows, cut only where the node changes; the whole table as one range unless each
    node's rows lie together (a link split across two pieces would lose its history)."""
    whole = [(0, len(frame))]
    if len(frame) <= rows or not isinstance(frame["node_id"].dtype, pd.CategoricalDtype):
        return whole
    codes = frame["node_id"].cat.codes.to_numpy()
    heads = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    if len(heads) == 0 or len(np.unique(codes[np.concatenate(([0], heads))])) != len(heads) + 1:
        return whole  # some node comes back later in the table
    cuts = np.unique(heads[np.minimum(np.searchsorted(heads, np.arange(rows, len(frame), rows)), len(heads) - 1)])
    bounds = [0, *cuts.tolist(), len(frame)]
    return list(pairwise(bounds))

