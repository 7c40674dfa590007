"""Which links a synthetic node has: the platform's topology graph, so names and ports match the analysis."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.platforms import platform_data
from ..topology import platform_graph


@dataclass(frozen=True)
class SynthLink:
    gpu: int
    link: int | None  # None for a GPU's PCIe upstream link
    link_type: str
    peer: str
    switch: str | None = None
    total: bool = False  # a GPU's total over all its NVLinks (Blackwell's NVLink5 counters): link None, no peer


def nvlinks(platform: str) -> list[SynthLink]:
    """Every GPU's NVLinks in link order, with the peer GPU or NVSwitch the template puts at the far end."""
    graph = platform_graph(platform)
    return [SynthLink(p.gpu, p.link, "nvlink", p.peer, p.switch)
            for gpu in graph.gpus for p in graph.links_of(gpu) if p.link_type == "nvlink" and p.link is not None]


def gpu_totals(platform: str) -> list[SynthLink]:
    """One row per GPU for the counters DCGM reports only as a GPU's total over its NVLinks (NVLink5)."""
    return [SynthLink(gpu, None, "nvlink", "", total=True) for gpu in platform_graph(platform).gpus]


def pcie_links(platform: str) -> list[SynthLink]:
    """Each GPU's PCIe link; none on a platform whose GPUs reach their CPU another way (GB200: NVLink-C2C)."""
    if "pcie" not in platform_data(platform):
        return []
    graph = platform_graph(platform)
    return [SynthLink(gpu, None, "pcie", graph.port_of(gpu, None, "pcie").peer) for gpu in graph.gpus]


def pcie_shape(platform: str) -> tuple[int, int]:
    """Maximum PCIe generation and width of the platform's GPUs."""
    pcie = platform_data(platform).get("pcie", {})
    return int(pcie.get("generation", 4)), int(pcie.get("width", 16))


def has_switches(platform: str) -> bool:
    return any(link.switch for link in nvlinks(platform))
