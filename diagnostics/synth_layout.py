"""Which links a synthetic node has, read from the platform files (switched or direct NVLinks, and PCIe)."""

from __future__ import annotations

from dataclasses import dataclass

from .platforms import platform_data


@dataclass(frozen=True)
class SynthLink:
    gpu: int
    link: int | None  # None for a GPU's PCIe upstream link
    link_type: str
    peer: str
    switch: str | None = None


def nvlinks(platform: str) -> list[SynthLink]:
    """A GPU's NVLinks in link-index order: through `[nvswitch] links_per_switch`, or `[nvlink] direct` pairs."""
    data = platform_data(platform)
    gpus = int(data["gpu_count"])
    per_gpu = int(data.get("nvlinks_per_gpu", 0))
    out: list[SynthLink] = []
    direct = data.get("nvlink", {}).get("direct")
    if direct:
        next_link = dict.fromkeys(range(gpus), 0)
        for pair in direct:
            a, b = pair["gpus"]
            for _ in range(int(pair.get("count", 1))):
                for gpu, peer in ((a, b), (b, a)):
                    out.append(SynthLink(gpu, next_link[gpu], "nvlink", f"GPU {peer}"))
                    next_link[gpu] += 1
        return sorted(out, key=lambda s: (s.gpu, s.link))
    if per_gpu == 0:
        return out
    switch = data.get("nvswitch", {})
    counts = switch.get("links_per_switch")
    if not counts:  # a platform file without a layout: spread the links over its switches evenly
        n = int(switch.get("count", 4))
        counts = [per_gpu // n + (1 if i < per_gpu % n else 0) for i in range(n)]
    for gpu in range(gpus):
        link = 0
        for s, count in enumerate(counts):
            for _ in range(int(count)):
                out.append(SynthLink(gpu, link, "nvlink", f"NVSwitch {s}", f"NVSwitch {s}"))
                link += 1
    return out


def pcie_links(platform: str) -> list[SynthLink]:
    data = platform_data(platform)
    cpus = int(data.get("pcie", {}).get("cpus", 2))
    gpus = int(data["gpu_count"])
    return [SynthLink(g, None, "pcie", f"CPU {g * cpus // gpus} root port") for g in range(gpus)]


def pcie_shape(platform: str) -> tuple[int, int]:
    """Maximum PCIe generation and width of the platform's GPUs."""
    pcie = platform_data(platform).get("pcie", {})
    return int(pcie.get("generation", 4)), int(pcie.get("width", 16))


def has_switches(platform: str) -> bool:
    return any(link.switch for link in nvlinks(platform))
