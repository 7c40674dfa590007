"""Readings a person pasted (tool output in a chat thread): one reading's totals, two readings' rates.

A single reading of cumulative counters is a total since reset, never a rate: `Reading.totals` diagnoses it as
such; with two readings of the same node, `rates_between` computes rates over the time between them. Rows without
a time of their own are stamped with the time the reading was posted. The engine gets what `analyze FILE` gives it
of the same output: the paste's own tables beside its link rows (its GPUs, whose model tells the board) and the
node's platform where the one who asks knows it. A reading keeps at most `max_rows` link rows, and only they are
stored, so what the bot stores per paste is bounded. A paste that holds more than one reading's counters (events,
a link read twice) is judged whole, as a file is (`judged_whole`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import pandas as pd

from .. import format as fmt
from ..errors import InputError
from ..ingest.base import IngestResult
from ..model import Diagnosis
from ..tables import LINK_IDENTITY, LINK_SAMPLES, TABLES
from ..values import limits
from .node import analyze_tables

PASTED_NODE = "pasted node"
MAX_ROWS = 5000  # an 8-GPU x 18-link reading is 144 rows; Blackwell per-lane counters stay far below this


def judged_whole(tables: Mapping[str, pd.DataFrame]) -> bool:
    """Whether a paste says more than one reading's totals, and is answered as `analyze FILE` answers it: it holds
    events (an Xid, an SXid, a fabric state) or a link read at two times (two dated readings, two scrapes)."""
    events = tables.get("events")
    if events is not None and len(events):
        return True
    links = tables.get("link_samples")
    if links is None or links.empty or "timestamp" not in links.columns:
        return False
    dated = links[links["timestamp"].notna()]
    keys = [c for c in LINK_IDENTITY if c in dated.columns]
    return bool(len(dated)) and bool(dated.drop_duplicates([*keys, "timestamp"]).duplicated(keys).any())


def pasted_hosts(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The nodes a paste's rows name, in the order they first appear."""
    return [str(n) for n in dict.fromkeys(n for frame in tables.values() if "node_id" in frame.columns
                                          for n in frame["node_id"].dropna())]


def pasted_node(tables: Mapping[str, pd.DataFrame], unnamed: str = PASTED_NODE) -> str | None:
    """The node a paste is of: the one its rows name, `unnamed` when they name none (an `nvidia-smi` output: the
    node its thread is about, else `PASTED_NODE`) or when it is one of several they name (a pdsh paste in that
    node's thread), else None when they name several."""
    named = pasted_hosts(tables)
    return unnamed if not named or (len(named) > 1 and unnamed in named) else named[0] if len(named) == 1 else None


BESIDE = ("events", "gpus", "topology")  # a paste's tables the engine reads beside its link rows


def _tables(links: pd.DataFrame, *beside: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    tables = {name: schema.empty() for name, schema in TABLES.items()}
    for name in BESIDE:
        frames = [b[name] for b in beside if name in b and len(b[name])]
        if frames:
            tables[name] = TABLES[name].conform(pd.concat(frames, ignore_index=True))
    return {**tables, "link_samples": LINK_SAMPLES.conform(links)}


def _named(frame: pd.DataFrame, node: str) -> pd.DataFrame:
    """A paste's rows that name no node, as `node`'s (an `nvidia-smi` output names none)."""
    if "node_id" not in frame.columns or not frame["node_id"].isna().any():
        return frame
    return frame.assign(node_id=frame["node_id"].astype(object).fillna(node))


def _platform(records: pd.DataFrame | None, node: str) -> str | None:
    """The platform the paste itself names for its node (a snapshot's), if any."""
    if records is None or "platform" not in records.columns:
        return None
    named = records[records["node_id"].astype("string") == node]["platform"].dropna()
    return str(named.iloc[-1]) if len(named) else None


@dataclass(frozen=True)
class Reading:
    """One pasted reading's link counters, every row stamped and named for one node, with what else the paste
    holds of the node (`beside`: its GPUs, events and topology) and the node's platform (None: the engine tells it
    from the GPUs' model, as `analyze FILE` does)."""

    node_id: str
    links: pd.DataFrame
    clipped: int = 0  # rows left out beyond `max_rows`
    stamped: bool = False  # its rows carry no time of their own: they are stamped with the time it was posted
    platform: str | None = None
    beside: Mapping[str, pd.DataFrame] = field(default_factory=dict, compare=False)
    cut: bool = False  # the paste stops short or covers some GPUs only: what it does not reach is not missing
    others: tuple[str, ...] = ()  # the other hosts of a paste of several (pdsh), not read into this one

    @classmethod
    def of(cls, result: IngestResult, posted_at: datetime, *, max_rows: int = MAX_ROWS,
           unnamed: str = PASTED_NODE, platforms: Mapping[str, str] | None = None) -> Reading | None:
        """The reading in a paste's tables, or None when it holds no link counters; rows that name no node are
        `unnamed`'s. Of a paste of several hosts (pdsh), one host's: `unnamed`'s where it is one of them (the
        thread's node), else the first; the others are said in `others`. `platforms`: the nodes' platforms as the
        one who asks knows them; a node not in them is on the platform the paste names, else the one its GPUs'
        model tells."""
        links = result["link_samples"]
        if links.empty:
            return None
        hosts = [str(n) for n in dict.fromkeys(links["node_id"].dropna())]
        others: tuple[str, ...] = ()
        if len(hosts) > 1:
            chosen = unnamed if unnamed in hosts else hosts[0]
            others = tuple(h for h in hosts if h != chosen)
            links = links[links["node_id"].astype(object).isin([chosen]).to_numpy(bool)]
        clipped = max(0, len(links) - max_rows)
        links = links.iloc[:max_rows].copy()
        stamped = bool(links["timestamp"].isna().any())
        links["timestamp"] = links["timestamp"].fillna(pd.Timestamp(posted_at))
        named = links["node_id"].dropna()
        node = str(named.iloc[0]) if len(named) else unnamed
        links["node_id"] = links["node_id"].astype(object).fillna(node)
        beside = {name: _named(result[name], node) for name in BESIDE if name in result.tables and len(result[name])}
        platform = (platforms or {}).get(node) or _platform(result.nodes, node)
        return cls(node, LINK_SAMPLES.conform(links), clipped, stamped, platform, beside, result.stops_short, others)

    def to_json(self) -> str:
        return str(self.links.to_json(orient="split", date_format="iso"))

    @classmethod
    def from_json(cls, node_id: str, text: str, *, stamped: bool = False) -> Reading:
        """A stored reading: its link rows alone (the reading it is rated with gives the rest: its platform, its GPUs,
        whether it stops short)."""
        return cls(node_id, LINK_SAMPLES.conform(pd.read_json(io.StringIO(text), orient="split")), stamped=stamped)

    def totals(self) -> Diagnosis:
        """The reading diagnosed as lifetime totals (its findings' `counts`)."""
        return analyze_tables(_tables(self.links, self.beside), node_id=self.node_id, platform=self.platform,
                              cut=self.cut)


def _hosts(reading: Reading) -> set[str]:
    return {str(n) for n in reading.links["node_id"].dropna()}


def _another_machine(earlier: Reading, later: Reading) -> str | None:
    """Why two readings are not of the same GPUs numbered alike, or None: no GPU UUID in common (two machines), a
    GPU's UUID under another index (one gone from the bus renumbers those after it), another UUID at an index (a GPU
    replaced between them), or two host names and no UUID to tell whether they are one host spelled two ways
    (`dgx01`, `dgx01.cluster`). Each GPU is its host's and index's; where each reading holds one host, its index
    alone (the host may be spelled two ways)."""
    one = len(_hosts(earlier)) == 1 and len(_hosts(later)) == 1

    def uuids(reading: Reading) -> dict[Any, str]:
        links = reading.links
        if "gpu_uuid" not in links.columns or "gpu" not in links.columns:
            return {}
        known = links.dropna(subset=["gpu_uuid", "gpu"])
        return {(int(g) if one else (str(n), int(g))): str(u)
                for n, g, u in zip(known["node_id"], known["gpu"], known["gpu_uuid"], strict=True)}

    def name(key: Any) -> str:
        return f"GPU {key}" if one else f"{key[0]} GPU {key[1]}"

    before, after = uuids(earlier), uuids(later)
    if before and after:
        if not set(before.values()) & set(after.values()):
            return "no GPU of the earlier reading is in this one (their UUIDs differ): counters of two machines"
        where = {u: k for k, u in before.items()}
        moved = sorted(((where[u], k, u) for k, u in after.items() if u in where and where[u] != k), key=str)
        if moved:
            gone = sorted(set(before.values()) - set(after.values()))
            why = (f"{', '.join(gone)} of the earlier reading {'is' if len(gone) == 1 else 'are'} not in this one "
                   "and " if gone else "")
            was, now, uuid = moved[0]
            return (f"{why}the GPUs are numbered otherwise ({uuid} was {name(was)}, is {name(now)}): a GPU gone from "
                    "the bus renumbers those after it, so no link compares with its own earlier count")
        for key in sorted(set(before) & set(after), key=str):
            if before[key] != after[key]:
                return (f"{name(key)} is {before[key]} in the earlier reading and {after[key]} in this one: a GPU "
                        "replaced between them, whose counters start afresh")
        return None
    if _hosts(earlier) != _hosts(later):
        return (f"the earlier reading is of {earlier.node_id} and this one of {later.node_id}, and no GPU UUID says "
                "whether they are one machine")
    return None


def rates_between(earlier: Reading, later: Reading) -> tuple[Diagnosis, float]:
    """The diagnosis of the rates between two readings of `later`'s node, and the minutes between them, on the
    platform either names (`later`'s first) with what either paste holds beside its links (a reading kept from an
    earlier message keeps its link rows alone, so it is `later`'s GPUs, platform and cut that count). Never between a
    reading with times of its own and one stamped when it was posted: their clocks differ."""
    if earlier.stamped != later.stamped:
        dated = "the earlier" if later.stamped else "this"
        raise InputError(f"{dated} reading carries its own time (a `date` line, a scrape's timestamps) and the other "
                         "only the time it was posted here; their clocks differ, so no rate between them is true: "
                         "paste both with a `date` line before them, or both without",
                         field="readings", value="one dated, one undated")
    several = sorted(_hosts(earlier) | _hosts(later)) if max(len(_hosts(earlier)), len(_hosts(later))) > 1 else []
    if several:  # a pdsh paste of several hosts: rated as one, only its first host would be judged
        raise InputError(f"the readings hold several hosts ({', '.join(several[:4])}"
                         f"{' ...' if len(several) > 4 else ''}): paste one node's output at a time, so each is rated "
                         "as its own", field="readings", value=f"{len(several)} hosts")
    other = _another_machine(earlier, later)
    if other is not None:
        raise InputError(f"{other}: no rate between them is true; paste a second reading of the same machine as "
                         "the first", field="readings", value="not one machine's GPUs")
    if _hosts(earlier) != _hosts(later) and len(_hosts(earlier)) == len(_hosts(later)) == 1:
        # one machine (its GPUs' UUIDs), its host spelled two ways: named as the later reading names it
        earlier = replace(earlier, node_id=later.node_id, links=earlier.links.assign(node_id=later.node_id))
    both = pd.concat([earlier.links, later.links], ignore_index=True)
    seconds = (both["timestamp"].max() - both["timestamp"].min()).total_seconds()
    shortest = limits().rate_min_interval_s
    if not seconds >= shortest:  # NaN (an undated reading) included
        apart = "no time" if pd.isna(seconds) else "under a second" if seconds < 1 else f"{fmt.number(seconds)} s"
        raise InputError(f"the two readings are {apart} apart; a rate needs readings at least "
                         f"{fmt.number(shortest)} s apart ([rate] min_interval_s in limits.toml): paste it again in a "
                         "few minutes", field="readings", value=apart)
    diagnosis = analyze_tables(_tables(both, earlier.beside, later.beside), node_id=later.node_id,
                               platform=later.platform or earlier.platform, cut=earlier.cut or later.cut)
    return diagnosis, float(seconds / 60)
