"""`nvidia-imex-ctl -N` (and `-N -H`): the IMEX domain's state as one compute tray sees it.

NVIDIA's IMEX guide ("IMEX Service Command Service"): -N "Gets the full status of the entire IMEX domain", -H shows
each node's hostname beside its IP. The output lists the nodes (`Node #0 - 172.31.48.81 - READY - Version:
570.172`), a connectivity matrix (`C` connected, `N` never connected, `D` disconnected ...) and `Domain State: UP`.
Each node line becomes an `imex_state` event of that node (its hostname where -H gave one, else its IP: name the
hosts with -H so a rack's trays are matched), and the domain's state one event of the node the output was read on
(the paste's prompt or `--node`; else the first node listed). The output's own time line (`5/12/2025 06:08:10.580`,
local to the tray; read as UTC, said) or a `date` line before it dates them. The hostname layout of -H is assumed
(`10.0.0.1 (host)` or `host (10.0.0.1)`); nodes are matched on either.
"""

from __future__ import annotations

import re

import pandas as pd

from ..enums import EventKind
from .base import IngestResult, Source
from .textlines import Collector, classify, skip_shell

_NODE = re.compile(r"^\s*Node\s*#\s*(?P<index>\d+)\s+-\s+(?P<who>.+?)\s+-\s+(?P<state>[A-Z][A-Z_ ]*?)"
                   r"(?:\s+-\s+Version:\s*(?P<version>\S+))?\s*$")
_DOMAIN = re.compile(r"^\s*Domain State:\s*(?P<state>\S+)\s*$", re.IGNORECASE)
_CLOCK = re.compile(r"^\s*(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})\s+(?P<t>\d{1,2}:\d{2}:\d{2}(?:\.\d+)?)\s*$")
_WHO = re.compile(r"^(?P<a>[^\s()]+)(?:\s*\((?P<b>[^)]+)\))?$")
_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$|^[0-9a-f:]+:[0-9a-f:]*$", re.IGNORECASE)
_OTHER = re.compile(r"^\s*(Nodes:|Nodes From\\To|\d+\s+[A-Z!]|[A-Z!]+\s+-\s|Connectivity Table|READY|IMEX|stopAtReady|"
                    r"keepGoing|Finishing)", re.IGNORECASE)


def _host(who: str) -> tuple[str, str | None]:
    """(the name to key the node by, its IP): the hostname where -H gave one."""
    found = _WHO.match(who.strip())
    if not found:
        return who.strip(), None
    a, b = found["a"], found["b"]
    if b is None:
        return a, a if _IP.match(a) else None
    return (b, a) if _IP.match(a) else (a, b)


class ImexReader:
    name = "imex"
    reads_hosts = True  # through textlines.classify: a parallel shell's output each host's (`fanout`)

    def sniff(self, head: str) -> float:
        nodes = sum(1 for line in head.splitlines()[:400] if _NODE.match(line))
        domain = any(_DOMAIN.match(line) for line in head.splitlines()[:400])
        return 0.95 if nodes and domain else 0.7 if nodes else 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        out = Collector(source, "nvidia-imex-ctl -N", node_id)
        nodes: list[tuple[int, str, str | None, str, str | None]] = []  # (line, name, ip, state, version)
        domain: tuple[int, str] | None = None
        for line in classify(source, out):
            if skip_shell(line, out):
                continue
            if clock := _CLOCK.match(line.text):
                stamp = pd.Timestamp(f"{clock['y']}-{int(clock['m']):02d}-{int(clock['d']):02d} {clock['t']}",
                                     tz="UTC")
                out.timestamp = stamp
                out.once("clock", line.number, "nvidia-imex-ctl's time states no zone; read as UTC")
            elif node := _NODE.match(line.text):
                name, ip = _host(node["who"])
                nodes.append((line.number, name, ip, node["state"].strip(), node["version"]))
            elif found := _DOMAIN.match(line.text):
                domain = (line.number, found["state"].upper())
            elif not _OTHER.match(line.text):
                out.unread(line)
        for number, name, ip, state, version in nodes:
            said = f"IMEX node {state}" + (f" ({ip})" if ip and ip != name else "") + \
                (f", version {version}" if version else "")
            out.add("events", number, node_id=name, kind=EventKind.IMEX_STATE.value, text=said)
        if domain is not None:
            reporter = out.node_id or (nodes[0][1] if nodes else None)
            if reporter is None:
                out.warn(domain[0], "the IMEX domain's state names no node (give --node, or the node list)")
            else:
                out.add("events", domain[0], node_id=reporter, kind=EventKind.IMEX_STATE.value,
                        text=f"IMEX Domain State: {domain[1]}")
        elif nodes:
            out.warn(nodes[-1][0], "no `Domain State:` line: the output looks cut off; the domain's state is not "
                                   "known")
        if not nodes and domain is None:
            out.warn(None, "no IMEX node or domain state in the input")
        return out.result()


READER = ImexReader()
