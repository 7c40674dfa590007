"""One identity per component: the name people say and a slug that does not change with how much is known."""

from __future__ import annotations

import pytest

from diagnostics import ComponentKind, ComponentRef


@pytest.mark.parametrize(("ref", "name", "slug"), [
    (ComponentRef.nvlink(2, 1, peer_gpu=3), "GPU 2 -> GPU 3 NVLink 1", "gpu2-nvlink1"),
    (ComponentRef.nvlink(2, 1, switch="NVSwitch 1", port=17), "GPU 2 NVLink 1 -> NVSwitch 1 port 17", "gpu2-nvlink1"),
    (ComponentRef.nvlink(2, 1, switch="NVSwitch 1"), "GPU 2 NVLink 1 -> NVSwitch 1", "gpu2-nvlink1"),
    (ComponentRef.nvlink(2, 1), "GPU 2 NVLink 1", "gpu2-nvlink1"),
    (ComponentRef.nvlink(3, None), "GPU 3 NVLinks", "gpu3-nvlinks"),
    (ComponentRef.nvlink(2, None, peer_gpu=3), "GPU 2 -> GPU 3 NVLink (index unknown)", "gpu2-nvlink-to-gpu3"),
    (ComponentRef.pcie(4), "GPU 4 PCIe", "gpu4-pcie"),
    (ComponentRef.of_gpu(5), "GPU 5", "gpu5"),
    (ComponentRef.nvswitch("NVSwitch 2"), "NVSwitch 2", "nvswitch-2"),
    (ComponentRef.nvswitch("NVSwitch 2", 17), "NVSwitch 2 port 17", "nvswitch-2-port17"),
    (ComponentRef.fabric_software(), "Fabric Manager / NVIDIA driver", "fabric-software"),
    (ComponentRef.gpu_fabric(), "the GPU-to-GPU fabric", "gpu-fabric"),
])
def test_each_component_has_one_name_and_one_slug(ref: ComponentRef, name: str, slug: str) -> None:
    assert (ref.name, ref.slug, str(ref)) == (name, slug, name)


def test_a_table_row_names_its_link_from_the_peer_column() -> None:
    assert ComponentRef.of_link("nvlink", 2, 1, "GPU 3").peer_gpu == 3
    assert ComponentRef.of_link("nvlink", 2, 1, "NVSwitch 0").switch == "NVSwitch 0"
    assert ComponentRef.of_link("nvlink", 2, 1, "unknown").name == "GPU 2 NVLink 1"
    assert ComponentRef.of_link("pcie", 4, None, "CPU 0 root port").kind is ComponentKind.PCIE
    assert ComponentRef.of_link("nvswitch", None, 5, "NVSwitch 1").name == "NVSwitch 1 port 5"


def test_a_link_keeps_its_slug_whether_or_not_its_port_is_known() -> None:
    seen = {ComponentRef.nvlink(2, 1).slug, ComponentRef.nvlink(2, 1, switch="NVSwitch 0", port=9).slug}
    assert seen == {"gpu2-nvlink1"}
    assert ComponentRef.nvlink(2, 1).slug != ComponentRef.nvlink(2, 2).slug != ComponentRef.nvlink(3, 1).slug
