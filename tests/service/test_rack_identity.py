"""A tray asked about through its rack knows who its parts are, as the same host asked as a plain node does: its GPUs'
serials and UUIDs (a ticket's part history follows them) and its NVSwitches' bus addresses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from diagnostics.service import Request, StoreSource, diagnose
from diagnostics.store import open_store
from tests.analysis.helpers import T0

TRAY = "r1-c01"


def _write(folder: Path, *, racked: bool) -> Path:
    """Two GB200 compute trays' NVLinks for two hours, tray 1's GPU 0 NVLink 1 failing; the GPUs' identities; the
    trays placed in rack r1 when `racked`."""
    rows = [{"timestamp": (T0 + pd.Timedelta(minutes=5 * i)).isoformat(), "node_id": node, "gpu": gpu,
             "link_type": "nvlink", "link": link, "replay": i * 200.0 if (node, gpu, link) == (TRAY, 0, 1) else 0.0}
            for node in (TRAY, "r1-c02") for i in range(25) for gpu in range(4) for link in range(18)]
    folder.mkdir()
    pd.DataFrame(rows).to_csv(folder / "links.csv", index=False)
    pd.DataFrame([{"node_id": TRAY, "gpu": g, "uuid": f"GPU-0000000{g}-aaaa-bbbb-cccc-dddddddddddd",
                   "serial": f"165000000{g}", "pci_bus_id": f"0000:0{g + 1}:00.0"} for g in range(4)]).to_csv(
        folder / "gpus.csv", index=False)
    inventory = [folder / "links.csv", folder / "gpus.csv"]
    if racked:
        (folder / "nodes.csv").write_text("node_id,platform,rack,tray\n" + "".join(
            f"{n},gb200-nvl72-compute-tray,r1,{i + 1}\n" for i, n in enumerate((TRAY, "r1-c02"))), encoding="utf-8")
        inventory.append(folder / "nodes.csv")
    store = folder / "store"
    open_store(store).ingest(inventory)
    return store


def test_a_tray_asked_through_its_rack_names_its_gpus_as_the_plain_node_does(tmp_path: Path) -> None:
    racked = diagnose(StoreSource(_write(tmp_path / "racked", racked=True)), Request(node=TRAY)).diagnosis
    alone = diagnose(StoreSource(_write(tmp_path / "alone", racked=False)),
                     Request(node=TRAY, platform="gb200-nvl72-compute-tray")).diagnosis
    assert racked.tray is not None and alone.tray is None  # the first through its rack, the second as a node
    assert alone.gpu_ids[0].serial == "1650000000"
    assert racked.gpu_ids == alone.gpu_ids
