"""A component's identity: one typed reference, one name as people say it, one stable slug.

Every place that names a link, GPU, switch or the fabric software builds a `ComponentRef` and reads its `name`
(`GPU 2 -> GPU 3 NVLink 1`, `GPU 2 NVLink 1 -> NVSwitch 1 port 17`, `GPU 4 PCIe`, `NVSwitch 2`), so two places can
never spell one component two ways. The `slug` names the physical thing, not where it was seen landing: a link
keeps its slug whether its switch port is known or not, which is what the tracker deduplicates tickets on.

In a rack (GB200 NVL72) the same refs carry the compute tray (`Compute tray 7 GPU 2 NVLink 5 -> Switch tray 3 chip 2
port 27`), and the rack's own units have kinds of their own: `Compute tray 7`, `Switch tray 3`, `Cable cartridge 2`;
a switch chip is an NVSwitch named by its tray (`Switch tray 3 chip 2`).
"""

from __future__ import annotations

import re
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, model_validator

from .enums import ComponentKind, LinkType

FABRIC_SOFTWARE_NAME = "Fabric Manager / NVIDIA driver"
MESH_NAME = "the NVLink mesh (every GPU's NVLinks)"  # a node's NVLinks as one: no GPU or switch singled out
# a node's GPU-to-GPU paths as one collective measures them: NVLink, or PCIe or shared memory where P2P falls back
GPU_FABRIC_NAME = "the GPU-to-GPU fabric"
DOMAIN_SOFTWARE_NAME = "NVLink domain fabric software (NMX-Controller, IMEX)"  # a rack's: no host runs Fabric Manager
_GPU_PEER = re.compile(r"^\s*gpu[\s_-]*(\d+)\s*$", re.IGNORECASE)
_SWITCH_PEER = re.compile(r"^\s*(?:nv\s*switch|nvsw|sw)[\s_-]*([0-9a-f:.]+)\s*$", re.IGNORECASE)
_DRIVER_SWITCH = re.compile(r"^\s*nvswitch (\d+)\s*$", re.IGNORECASE)
_RACK_CHIP = re.compile(r"^\s*switch tray (?P<tray>\S+) chip (?P<chip>\d+)\s*$", re.IGNORECASE)


def chip_name(switch_tray: str, chip: int) -> str:
    """A rack's switch chip as people say it: 'Switch tray 3 chip 2'."""
    return f"{CHIP_PREFIX} {switch_tray} chip {chip}"


CHIP_PREFIX = "Switch tray"  # how every rack switch chip's name begins (`chip_name`)


def chip_named(name: object) -> tuple[str, int] | None:
    """The switch tray and chip a rack's switch chip name (`chip_name`) gives; None for any other name."""
    found = re.fullmatch(rf"{CHIP_PREFIX} (\S+) chip (\d+)", str(name or ""))
    return (found[1], int(found[2])) if found else None


def switch_name(label: object) -> str:
    """An NVSwitch as people say it ("NVSwitch 1"), from however a table or a log labels it ("1", "NVSwitch 1",
    "nvswitch-1"): the one place the name is written."""
    text = str(label).strip()
    named = _SWITCH_PEER.match(text)
    return f"NVSwitch {named[1] if named else text}"


def switch_label(name: str) -> str:
    """The label an NVSwitch's name carries ("NVSwitch 1" -> "1"): what a table's `nvswitch` column holds."""
    return name.removeprefix("NVSwitch ")


def tray_chip(name: str | None) -> int | None:
    """The chip of its switch tray that a switch tray host's NVSwitch is ("NVSwitch 1" -> 2): the host's driver counts
    the tray's chips from 0, the tray is marked from 1. None for a name that is not a driver's NVSwitch."""
    named = _DRIVER_SWITCH.match(name or "")
    return int(named[1]) + 1 if named else None


def is_rack_chip(name: str | None) -> bool:
    """Whether a peer name is a chip of a rack's NVLink switch tray ("Switch tray 3 chip 2")."""
    return bool(name) and _RACK_CHIP.match(str(name)) is not None


def is_switch(name: str | None) -> bool:
    """Whether a peer name is a switch: an NVSwitch of a board, or a chip of a rack's switch tray."""
    return bool(name) and (str(name).startswith("NVSwitch") or is_rack_chip(name))


def peer_name(text: str | None) -> str | None:
    """A peer as the graph names it ("GPU 3", "NVSwitch 1", "Switch tray 3 chip 2") from how tables write it
    ("GPU3", "nvswitch-1", "NVSwitch_1"); None when it names none of them (a CPU root port, "unknown")."""
    if not text:
        return None
    gpu = _GPU_PEER.match(text)
    if gpu:
        return f"GPU {int(gpu[1])}"
    chip = _RACK_CHIP.match(text)
    if chip:
        return chip_name(chip["tray"], int(chip["chip"]))
    return switch_name(text) if _SWITCH_PEER.match(text) else None


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
    tray: str | None = None  # in a rack: the compute tray (slot, or host where the slot is unknown) of a GPU or link
    switch_tray: str | None = None  # in a rack: the switch tray of a switch chip, port or switch tray
    chip: int | None = None  # in a rack: the chip (1-based, as the tray is marked) within its switch tray
    cartridge: str | None = None  # in a rack: the cable cartridge
    domain: bool | None = None  # fabric software: a rack's NVLink domain's (NMX-Controller, IMEX), not a host's

    @model_validator(mode="before")
    @classmethod
    def _rack_switch(cls, data: Any) -> Any:
        """A rack's chip is one name and two fields: either gives the other."""
        if not isinstance(data, dict):
            return data
        switch, tray, chip = data.get("switch"), data.get("switch_tray"), data.get("chip")
        if switch is None and tray is not None and chip is not None:
            data = {**data, "switch": chip_name(str(tray), int(chip))}
        elif switch is not None and tray is None and (named := _RACK_CHIP.match(str(switch))):
            data = {**data, "switch_tray": named["tray"], "chip": int(named["chip"])}
        return data

    @classmethod
    def nvlink(cls, gpu: int | None, link: int | None, *, peer_gpu: int | None = None, switch: str | None = None,
               port: int | None = None) -> Self:
        return cls(kind=ComponentKind.NVLINK, gpu=gpu, link=link, peer_gpu=peer_gpu, switch=switch, port=port)

    @classmethod
    def pcie(cls, gpu: int | None, *, bus: str | None = None) -> Self:
        """A GPU's PCIe link; one whose GPU no index places (`nvidia-smi -q -i N`) is named by its bus instead."""
        return cls(kind=ComponentKind.PCIE, gpu=gpu, bus=bus if gpu is None else None)

    @classmethod
    def of_gpu(cls, gpu: int | None, *, bus: str | None = None) -> Self:
        return cls(kind=ComponentKind.GPU, gpu=gpu, bus=bus if gpu is None else None)

    @classmethod
    def nvswitch(cls, switch: str | None, port: int | None = None) -> Self:
        return cls(kind=ComponentKind.NVSWITCH, switch=switch, port=port)

    @classmethod
    def fabric_software(cls, *, domain: bool = False) -> Self:
        return cls(kind=ComponentKind.FABRIC_SOFTWARE, domain=domain or None)

    @classmethod
    def nvlink_domain(cls) -> Self:
        return cls(kind=ComponentKind.NVLINK_DOMAIN)

    @classmethod
    def nvlink_mesh(cls) -> Self:
        """A node's NVLinks as one (no NVSwitch among them): what every GPU's links share."""
        return cls(kind=ComponentKind.NVLINK_MESH)

    @classmethod
    def gpu_fabric(cls) -> Self:
        """A node's GPU-to-GPU paths as one: what a collective's bandwidth measures, naming no link."""
        return cls(kind=ComponentKind.GPU_FABRIC)

    @classmethod
    def compute_tray(cls, tray: str) -> Self:
        return cls(kind=ComponentKind.COMPUTE_TRAY, tray=str(tray))

    @classmethod
    def switch_tray_unit(cls, switch_tray: str) -> Self:
        return cls(kind=ComponentKind.SWITCH_TRAY, switch_tray=str(switch_tray))

    @classmethod
    def switch_chip(cls, switch_tray: str, chip: int, port: int | None = None) -> Self:
        return cls(kind=ComponentKind.NVSWITCH, switch_tray=str(switch_tray), chip=chip, port=port)

    @classmethod
    def cartridge_unit(cls, cartridge: str) -> Self:
        return cls(kind=ComponentKind.CARTRIDGE, cartridge=str(cartridge))

    def in_tray(self, tray: str, **where: Any) -> Self:
        """This node-level GPU, link or PCIe ref as its rack sees it: in compute tray `tray`, landing where `where`
        (switch_tray, chip, port) says."""
        update: dict[str, Any] = {"tray": str(tray), **where}
        if "switch_tray" in where or "chip" in where:
            update["switch"] = None
        data = {**self.model_dump(), **update}
        return type(self).model_validate(data)

    @classmethod
    def of_link(cls, link_type: str, gpu: int | None, link: int | None, peer: str | None = None,
                port: int | None = None, *, bus: str | None = None) -> Self:
        """A link from its table row: type, GPU, link index and the peer column ("GPU 3", "NVSwitch 1", ...); a
        PCIe row's bus names its GPU where no index does."""
        if link_type == LinkType.PCIE:
            return cls.pcie(gpu, bus=bus)
        named = peer_name(peer)
        switch = named if is_switch(named) else None
        if link_type == LinkType.NVSWITCH or gpu is None:
            return cls.nvswitch(switch, link)
        if named is not None and named.startswith("GPU "):
            return cls.nvlink(gpu, link, peer_gpu=int(named.split()[1]))
        return cls.nvlink(gpu, link, switch=switch, port=port)

    @property
    def name(self) -> str:
        """The component as people say it."""
        kind = self.kind
        if kind is ComponentKind.COMPUTE_TRAY:
            return f"Compute tray {self.tray}"
        if kind is ComponentKind.SWITCH_TRAY:
            return f"Switch tray {self.switch_tray}"
        if kind is ComponentKind.CARTRIDGE:
            return f"Cable cartridge {self.cartridge}"
        if kind is ComponentKind.NVLINK_DOMAIN:
            return "The rack's NVLink domain"
        if kind is ComponentKind.NVLINK_MESH:
            return MESH_NAME
        if kind is ComponentKind.GPU_FABRIC:
            return GPU_FABRIC_NAME
        own = self._own_name()
        return f"Compute tray {self.tray} {own}" if self.tray is not None and kind in IN_TRAY else own

    def _own_name(self) -> str:
        kind = self.kind
        if kind is ComponentKind.FABRIC_SOFTWARE:
            return DOMAIN_SOFTWARE_NAME if self.domain else FABRIC_SOFTWARE_NAME
        if kind is ComponentKind.GPU:
            return self._gpu_name()
        if kind is ComponentKind.PCIE:
            return f"{self._gpu_name()} PCIe"
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

    def _gpu_name(self) -> str:
        """The GPU as people say it: by index, else by the PCI address a log or a lone section names it by."""
        if self.gpu is None:
            return f"the GPU at PCI {self.bus}" if self.bus else "a GPU of the node (index unknown)"
        return f"GPU {self.gpu}"

    @property
    def slug(self) -> str:
        """A stable key: the same physical component gives the same slug however much of its path is known."""
        kind = self.kind
        if kind is ComponentKind.COMPUTE_TRAY:
            return _tray_slug(self.tray)
        if kind is ComponentKind.SWITCH_TRAY:
            return f"switch-{_tray_slug(self.switch_tray)}"
        if kind is ComponentKind.CARTRIDGE:
            return f"cartridge{_slugify(str(self.cartridge))}"
        if kind is ComponentKind.NVLINK_DOMAIN:
            return "nvlink-domain"
        if kind is ComponentKind.NVLINK_MESH:
            return "nvlink-mesh"
        if kind is ComponentKind.GPU_FABRIC:
            return "gpu-fabric"
        if kind is ComponentKind.NVSWITCH and self.switch_tray is not None and self.chip is not None:
            base = f"switch-{_tray_slug(self.switch_tray)}-chip{self.chip}"
            return f"{base}-port{self.port}" if self.port is not None else base
        own = self._own_slug()
        return f"{_tray_slug(self.tray)}-{own}" if self.tray is not None and kind in IN_TRAY else own

    def _own_slug(self) -> str:
        kind = self.kind
        if kind is ComponentKind.FABRIC_SOFTWARE:
            return "fabric-software"
        if kind is ComponentKind.GPU:
            return self._gpu_slug()
        if kind is ComponentKind.PCIE:
            return f"{self._gpu_slug()}-pcie"
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

    def _gpu_slug(self) -> str:
        if self.gpu is None:
            return f"gpu-{_slugify(self.bus)}" if self.bus else "gpu-unknown"
        return f"gpu{self.gpu}"

    @property
    def peer_name(self) -> str | None:
        """The far end of a link as a node name ("GPU 3", "NVSwitch 1"), where known."""
        if self.peer_gpu is not None:
            return f"GPU {self.peer_gpu}"
        return self.switch if self.kind is ComponentKind.NVLINK else None

    def __str__(self) -> str:
        return self.name


IN_TRAY = (ComponentKind.GPU, ComponentKind.NVLINK, ComponentKind.PCIE)  # a rack's parts inside one compute tray


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unnamed"


def _tray_slug(tray: str | None) -> str:
    """'tray7' for a slot, 'tray-host-a' for a tray known only by its host."""
    label = str(tray)
    return f"tray{label}" if label.isdigit() else f"tray-{_slugify(label)}"
