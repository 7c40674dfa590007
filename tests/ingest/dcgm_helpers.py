"""Builders of dcgm-exporter exposition text for tests and benchmarks."""

from __future__ import annotations

from collections.abc import Iterator

PER_LINK = (
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L{link}",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L{link}",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L{link}",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L{link}",
)
TOTALS = (
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
)


def gpu_labels(gpu: int, host: str = "node-a") -> str:
    return (f'gpu="{gpu}",UUID="GPU-0000{gpu}",pci_bus_id="00000000:{gpu + 0x18:02X}:00.0",device="nvidia{gpu}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="550.54.15"')


def scrape(*, gpus: int = 8, links: int = 18, ts_ms: int | None = None, host: str = "node-a",
           value: int = 0) -> Iterator[str]:
    """One scrape of an 8-GPU node: per-link error fields, totals, PCIe replays, NVLink utilization."""
    stamp = f" {ts_ms}" if ts_ms is not None else ""
    for template in PER_LINK:
        for link in range(links):
            name = template.format(link=link)
            yield f"# HELP {name} per-link counter"
            yield f"# TYPE {name} counter"
            for gpu in range(gpus):
                yield f"{name}{{{gpu_labels(gpu, host)}}} {value}{stamp}"
    for name in (*TOTALS, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"):
        yield f"# TYPE {name} counter"
        for gpu in range(gpus):
            yield f"{name}{{{gpu_labels(gpu, host)}}} {value * links}{stamp}"
    for name in ("DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"):
        yield f"# TYPE {name} gauge"
        for gpu in range(gpus):
            yield f"{name}{{{gpu_labels(gpu, host)}}} 1.5e+10{stamp}"
