"""A component's identity: one typed reference, one name as people say it, one stable slug.

Every place that names a link, GPU, switch or the fabric software builds a `ComponentRef` and reads its `name`
(`GPU 2 -> GPU 3 NVLink 1`, `GPU 2 NVLink 1 -> NVSwitch 1 port 17`, `GPU 4 PCIe`, `NVSwitch 2`), so two places can
never spell one component two ways. The `slug` names the physical thing, not where it was seen landing: a link
keeps its slug whether its switch port is known or not, which is what the tracker deduplicates tickets on.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import BaseModel, ConfigDict

from .enums import ComponentKind, LinkType

FABRIC_SOFTWARE_NAME = "Fabric Manager / NVIDIA driver"
_GPU_PEER = re.compile(r"^\s*gpu[\s_-]*(\d+)\s*$", re.IGNORECASE)
_SWITCH_PEER = re.compile(r"^\s*(?:nv\s*switch|nvsw|sw)[\s_-]*([0-9a-f:.]+)\s*$", re.IGNORECASE)


def peer_name(text: str | None) -> str | None:
    """A peer as the graph names it ("GPU 3", "NVSwitch 1") from how tables write it ("GPU3", "nvswitch-1",
    "NVSwitch_1"); None when it names neither (a CPU root port, "unknown")."""
    if not text:
        return None
    gpu = _GPU_PEER.match(text)
    if gpu:
        return f"GPU {int(gpu[1])}"
    switch = _SWITCH_PEER.match(text)
    return f"NVSwitch {switch[1]}" if switch else None


class ComponentRef(BaseModel):
    """What a finding, localization or ticket is about."""

    model_config = ConfigDict(frozen=True)

    kind: ComponentKind
    gpu: int | None = None
    link: int | None = None
    peer_gpu: int | None = None  # the GPU at the far end of a direct NVLink
    switch: str | None = None  # the switch a link lands on, or the switch itself ("NVSwitch 1")
    port: int | None = None  # the switch port, where known
    bus: str | None = None  # a GPU's PCI address, when a log names the GPU by it and nothing gives its index

    @classmethod
    def nvlink(cls, gpu: int | None, link: int | None, *, peer_gpu: int | None = None, switch: str | None = None,
               port: int | None = None) -> Self:
        return cls(kind=ComponentKind.NVLINK, gpu=gpu, link=link, peer_gpu=peer_gpu, switch=switch, port=port)

    @classmethod
    def pcie(cls, gpu: int | None) -> Self:
        return cls(kind=ComponentKind.PCIE, gpu=gpu)

    @classmethod
    def of_gpu(cls, gpu: int | None, *, bus: str | None = None) -> Self:
        return cls(kind=ComponentKind.GPU, gpu=gpu, bus=bus if gpu is None else None)

    @classmethod
    def nvswitch(cls, switch: str | None, port: int | None = None) -> Self:
        return cls(kind=ComponentKind.NVSWITCH, switch=switch, port=port)

    @classmethod
    def fabric_software(cls) -> Self:
        return cls(kind=ComponentKind.FABRIC_SOFTWARE)

    @classmethod
    def of_link(cls, link_type: str, gpu: int | None, link: int | None, peer: str | None = None,
                port: int | None = None) -> Self:
        """A link from its table row: type, GPU, link index and the peer column ("GPU 3", "NVSwitch 1", ...)."""
        if link_type == LinkType.PCIE:
            return cls.pcie(gpu)
        named = peer_name(peer)
        switch = named if named is not None and named.startswith("NVSwitch") else None
        if link_type == LinkType.NVSWITCH or gpu is None:
            return cls.nvswitch(switch, link)
        if named is not None and named.startswith("GPU "):
            return cls.nvlink(gpu, link, peer_gpu=int(named.split()[1]))
        return cls.nvlink(gpu, link, switch=switch, port=port)

    @property
    def name(self) -> str:
        """The component as people say it."""
        kind = self.kind
        if kind is ComponentKind.FABRIC_SOFTWARE:
            return FABRIC_SOFTWARE_NAME
        if kind is ComponentKind.GPU:
            if self.gpu is None:
                return f"the GPU at PCI {self.bus}" if self.bus else "a GPU of the node (index unknown)"
            return f"GPU {self.gpu}"
        if kind is ComponentKind.PCIE:
            return f"GPU {self.gpu} PCIe"
        if kind is ComponentKind.NVSWITCH:
            switch = self.switch or "NVSwitch"
            return f"{switch} port {self.port}" if self.port is not None else switch
        if self.link is None:
            if self.peer_gpu is not None:
                return f"GPU {self.gpu} -> GPU {self.peer_gpu} NVLink (index unknown)"
            if self.switch is not None:
                return f"GPU {self.gpu} NVLink (index unknown) -> {self.switch}"
            return f"GPU {self.gpu} NVLinks"  # a GPU's total over all its links: which link is not known
        if self.peer_gpu is not None:
            return f"GPU {self.gpu} -> GPU {self.peer_gpu} NVLink {self.link}"
        if self.switch is not None:
            port = f" port {self.port}" if self.port is not None else ""
            return f"GPU {self.gpu} NVLink {self.link} -> {self.switch}{port}"
        return f"GPU {self.gpu} NVLink {self.link}"

    @property
    def slug(self) -> str:
        """A stable key: the same physical component gives the same slug however much of its path is known."""
        kind = self.kind
        if kind is ComponentKind.FABRIC_SOFTWARE:
            return "fabric-software"
        if kind is ComponentKind.GPU:
            if self.gpu is None:
                return f"gpu-{_slugify(self.bus)}" if self.bus else "gpu-unknown"
            return f"gpu{self.gpu}"
        if kind is ComponentKind.PCIE:
            return f"gpu{self.gpu}-pcie"
        if kind is ComponentKind.NVSWITCH:
            base = _slugify(self.switch or "nvswitch")
            return f"{base}-port{self.port}" if self.port is not None else base
        if self.link is not None:
            return f"gpu{self.gpu}-nvlink{self.link}"
        if self.peer_gpu is not None:  # a link whose index is not known: named by where it goes
            return f"gpu{self.gpu}-nvlink-to-gpu{self.peer_gpu}"
        if self.switch is not None:
            return f"gpu{self.gpu}-nvlink-to-{_slugify(self.switch)}"
        return f"gpu{self.gpu}-nvlinks"

    @property
    def peer_name(self) -> str | None:
        """The far end of a link as a node name ("GPU 3", "NVSwitch 1"), where known."""
        if self.peer_gpu is not None:
            return f"GPU {self.peer_gpu}"
        return self.switch if self.kind is ComponentKind.NVLINK else None

    def __str__(self) -> str:
        return self.name


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unnamed"
