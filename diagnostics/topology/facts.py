"""What TOPOLOGY rows say about one node, gathered once: GPUs, NVLink counts, switches, NUMA, NICs.

Rows come from `nvidia-smi topo -m` (relation NV with `nvlinks`, PCIe path kinds, affinities), the NCCL topology
XML (relation nvlink from a GPU to a GPU or an NVSwitch bus id) and `nvidia-smi nvlink -R` (relation remote).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

_DEVICE = re.compile(r"^(GPU|NIC) ?(\d+)$")
_SWITCH = re.compile(r"^NVSwitch (.+)$")


def _index(name: object, kind: str = "GPU") -> int | None:
    if not isinstance(name, str):
        return None
    match = _DEVICE.match(name.strip())
    return int(match[2]) if match and match[1] == kind else None


def _text(value: object) -> str | None:
    return None if value is None or value is pd.NA or (isinstance(value, float) and value != value) else str(value)


@dataclass
class Facts:
    node_id: str | None = None
    gpus: list[int] = field(default_factory=list)
    direct: dict[tuple[int, int], int] = field(default_factory=dict)  # NV# or direct NVLinks per GPU pair
    to_switch: dict[str, dict[int, int]] = field(default_factory=dict)  # NVSwitch bus id -> GPU -> links
    device_ids: set[str] = field(default_factory=set)
    gpu_bus_ids: dict[int, str] = field(default_factory=dict)
    numa: dict[int, int] = field(default_factory=dict)
    nic_names: dict[int, str] = field(default_factory=dict)
    has_remote: bool = False
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_rows(cls, topology: pd.DataFrame) -> Facts:
        facts = cls()
        nodes: list[str] = (list(topology["node_id"].dropna().astype(str).unique())
                            if "node_id" in topology else [])
        if len(nodes):
            facts.node_id = str(nodes[0])
            if len(nodes) > 1:
                facts.warnings.append(f"the topology describes {len(nodes)} nodes; using {facts.node_id}")
                topology = topology[topology["node_id"].astype(str) == facts.node_id]
        gpus: set[int] = set()
        for row in topology.itertuples(index=False):
            facts._add(row, gpus)
        facts.gpus = sorted(gpus)
        return facts

    def _add(self, row: object, gpus: set[int]) -> None:
        a, b = _text(getattr(row, "a", None)), _text(getattr(row, "b", None))
        relation = _text(getattr(row, "relation", None)) or ""
        count = getattr(row, "nvlinks", None)
        detail = _text(getattr(row, "detail", None)) or ""
        ga, gb = _index(a), _index(b)
        for g in (ga, gb):
            if g is not None:
                gpus.add(g)
        if relation == "gpu" and ga is not None:
            if b:
                self.gpu_bus_ids[ga] = b.lower()
            match = re.search(r"device=(0x[0-9a-fA-F]+)", detail)
            if match:
                self.device_ids.add(match[1].lower())
        elif relation == "nic":
            nic = _index(a, "NIC")
            if nic is not None and b:
                self.nic_names[nic] = b
        elif relation in ("NV", "nvlink") and ga is not None and count is not None and count is not pd.NA:
            switch = _SWITCH.match(b or "")
            if gb is not None and gb != ga:
                pair = (min(ga, gb), max(ga, gb))
                self.direct[pair] = max(self.direct.get(pair, 0), int(count))
            elif switch:
                self.to_switch.setdefault(switch[1].lower(), {})[ga] = int(count)
        elif relation in ("PIX", "PXB", "PHB", "NODE", "SYS") and ga is not None and gb is not None and ga != gb:
            self.direct.setdefault((min(ga, gb), max(ga, gb)), 0)
        elif relation == "numa_affinity" and ga is not None and detail.strip().isdigit():
            self.numa[ga] = int(detail)
        elif relation == "remote":
            self.has_remote = True

    def pair_nvlinks(self) -> dict[tuple[int, int], int]:
        """NVLinks between each described GPU pair, as `topo -m` shows them (through a switch: the GPU's total)."""
        pairs = dict(self.direct)
        if self.to_switch:
            totals: dict[int, int] = defaultdict(int)
            for per_gpu in self.to_switch.values():
                for g, n in per_gpu.items():
                    totals[g] += n
            for a in totals:
                for b in totals:
                    if a < b:
                        pairs[(a, b)] = pairs.get((a, b), 0) + min(totals[a], totals[b])
        return pairs

    def switch_spread(self) -> dict[int, tuple[int, ...]]:
        per_gpu: dict[int, list[int]] = defaultdict(list)
        for links in self.to_switch.values():
            for g, n in links.items():
                per_gpu[g].append(n)
        return {g: tuple(sorted(ns)) for g, ns in per_gpu.items()}

    def switch_ids(self) -> list[str]:
        return sorted(self.to_switch)

    def switch_links(self) -> dict[str, dict[int, int]]:
        return self.to_switch

    def describe_links(self) -> str:
        counts = sorted({n for n in self.pair_nvlinks().values()})
        if not counts or counts == [0]:
            return "no NVLinks"
        return "NVLink counts " + "/".join(f"NV{n}" for n in counts if n)
