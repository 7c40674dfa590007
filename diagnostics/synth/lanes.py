"""Scenarios below the link: a failing lane and the end that sees it, written as the readers write them.

A PCIe lane fault: from its onset (inside the history the rules read, after a reading there, so the sticky status is
dated by the clear reading before it) the Lane Error Status of the receiving end (the GPU's port, or the switch or
root port above it) names one lane, that end's AER counts receiver errors and bad DLLPs, and the other end counts
the replay timer timeouts of its resends (as lspci and sysfs AER give them); where the port above receives them, the
GPU's own PCIe replay counter climbs too (under its rule), and only then may the job slow.

An NVLink lane fault: one lane's CRC data errors (as `nvidia-smi nvlink -ec` gives them per lane) over the failing
CRC-data rule, the link's own count with them, read at the GPU end only (the truth names the lane, not the end).

A fault seen from the switch end: a GPU link and the NVSwitch port it lands on (dcgm-exporter's `nvswitch`
series), one end counting the CRC data errors it receives and the other the replays it sends, both over their
rules, and the node's `nvidia-smi nvlink -R` (every GPU link's remote port) read, so the two ends are joined by an
observed map: the end that receives them is the truth's (an assumed map names no end).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..enums import FaultKind, LinkEnd
from ..topology import platform_graph
from .node import NodeSim, limit


def pcie_lane_errors(sim: NodeSim) -> None:
    gpu = int(sim.rng.integers(0, 8))
    lane = int(sim.rng.integers(0, sim.max_width))
    end = LinkEnd.GPU if sim.rng.random() < 0.5 else LinkEnd.UPSTREAM
    on = sim.onset_in_span()  # the status reads clear before it in the span the rules read: dated, so failing
    rate = float(sim.rng.uniform(2, 200))  # receiver errors per hour at the receiving end
    sim.ports.append({"gpu": gpu, "lane": lane, "end": end.value, "onset": on, "rate": rate})
    slows = False
    if end is LinkEnd.UPSTREAM:  # the GPU sends what arrives in error: its own replay counter climbs (under its rule)
        sim.drive("replay", sim.pcie_index(gpu), on, float(sim.rng.uniform(0.3, 0.9)) * limit("pcie_replay"))
        slows = sim.slows(on, 3.0, 30.0, 0.5)
    sim.fault("pcie_lane_errors", "pcie", on, slows, fault=FaultKind.PCIE_REPLAYS, ratio=None,
              gpu=gpu, lanes=[lane], end=end.value, rule="pcie_lane_error")


def nvlink_lane_errors(sim: NodeSim) -> None:
    i = int(sim.rng.choice(sim.nv_indices()))
    s = sim.links[i]
    lane = int(sim.rng.integers(0, 4))  # NVLink4 links are x2 per direction, earlier x4..x8: 0-3 exist on all
    on, factor = sim.onset(), sim.factor()
    rate = factor * limit("nvlink_crc_data")
    sim.drive("crc_data", i, on, rate)
    sim.lanes.append({"index": i, "lane": lane, "onset": on, "rate": rate})
    sim.fault("nvlink_lane_errors", "nvlink", on, sim.slows(on), fault=FaultKind.NVLINK, ratio=factor, gpu=s.gpu,
              link=s.link, switch=s.switch, peer=s.peer, lanes=[lane], rule="nvlink_crc_data")


def nvswitch_end_fault(sim: NodeSim) -> None:
    i = int(sim.rng.choice([j for j in sim.nv_indices() if sim.links[j].switch]))
    s = sim.links[i]
    port = platform_graph(sim.platform).port_of(s.gpu, s.link, "nvlink").switch_port
    end = LinkEnd.NVSWITCH if sim.rng.random() < 0.5 else LinkEnd.GPU
    on, factor = sim.onset(), sim.factor()
    if end is LinkEnd.NVSWITCH:  # the switch receives the errors, the GPU replays what it sent
        sim.drive("replay", i, on, factor * limit("nvlink_replay"))
        counter, rate = "crc_data", sim.factor() * limit("nvlink_crc_data")
    else:  # the GPU receives them, the switch port replays
        sim.drive("crc_data", i, on, factor * limit("nvlink_crc_data"))
        counter, rate = "replay", sim.factor() * limit("nvswitch_replay")
    sim.switch_ports.append({"switch": str(s.switch).split()[-1], "port": port, "onset": on, counter: rate})
    sim.fault("nvswitch_end_fault", "nvlink", on, sim.slows(on), fault=FaultKind.NVLINK, ratio=factor, gpu=s.gpu,
              link=s.link, switch=s.switch, peer=s.peer, end=end.value,
              rule="nvlink_replay" if end is LinkEnd.NVSWITCH else "nvlink_crc_data")


def _cumulative(times: pd.DatetimeIndex, onset: int, rate: float) -> np.ndarray:
    hours = (times - times[onset]).total_seconds().to_numpy() / 3600
    return np.floor(np.clip(hours, 0, None) * rate)


def extra_rows(sim: NodeSim, frame: pd.DataFrame) -> pd.DataFrame:
    """The node's link rows with what its lane and end scenarios add: per-lane rows, the GPU's port status, the
    port above it, the NVSwitch ports."""
    if not (sim.ports or sim.lanes or sim.switch_ports):
        return frame
    times = sim.times[sim.keep]
    base: dict[str, Any] = {"timestamp": times, "node_id": sim.node_id, "source": "synth", "gpu_total": False}
    rows: list[pd.DataFrame] = []
    for p in sim.ports:
        on = int(np.searchsorted(times, sim.times[p["onset"]]))
        errs = _cumulative(times, on, p["rate"])
        after = np.arange(len(times)) >= on
        ends = {LinkEnd.GPU.value: None, LinkEnd.UPSTREAM.value: f"0000:{0x17 + 2 * p['gpu']:02x}:00.0"}
        for end, peer in ends.items():
            receiving = end == p["end"]
            status = {"rx_err": errs if receiving else 0.0, "bad_dllp": np.floor(errs / 3) if receiving else 0.0,
                      "replay_timeout": 0.0 if receiving else np.floor(errs / 2), "lane_error": after & receiving}
            if end == LinkEnd.GPU.value:  # on the GPU's own PCIe row: the reader puts them there
                mine = ((frame["gpu"] == p["gpu"]) & (frame["link_type"] == "pcie")).to_numpy(bool)
                stamp = frame.loc[mine, "timestamp"].to_numpy()
                at = np.searchsorted(times.to_numpy(), stamp)
                for column, value in status.items():
                    values = np.broadcast_to(np.asarray(value), len(times))[at]
                    full = np.full(len(frame), None if column == "lane_error" else np.nan, dtype=object)
                    if column in frame.columns:
                        full[:] = frame[column].to_numpy(dtype=object)
                    full[mine] = values
                    frame = frame.assign(**{column: pd.array(full, dtype="boolean" if column == "lane_error"
                                                             else "float64")})
            else:
                rows.append(pd.DataFrame({**base, "gpu": p["gpu"], "link_type": "pcie", "peer": peer, "end": end,
                                          "device_kind": "pcie_switch", **status}))
            if receiving:
                rows.append(pd.DataFrame({**base, "gpu": p["gpu"], "link_type": "pcie", "peer": peer,
                                          "end": None if end == LinkEnd.GPU.value else end, "lane": p["lane"],
                                          "lane_error": True})[after])
    for lane in sim.lanes:
        s = sim.links[lane["index"]]
        on = int(np.searchsorted(times, sim.times[lane["onset"]]))
        rows.append(pd.DataFrame({**base, "gpu": s.gpu, "link_type": "nvlink", "link": s.link, "lane": lane["lane"],
                                  "peer": s.peer, "crc_data": _cumulative(times, on, lane["rate"])}))
    for sp in sim.switch_ports:
        on = int(np.searchsorted(times, sim.times[sp["onset"]]))
        counts = {c: _cumulative(times, on, sp.get(c, 0.0)) + 7 for c in ("replay", "crc_data", "crc_flit")}
        rows.append(pd.DataFrame({**base, "gpu": None, "link_type": "nvswitch", "nvswitch": sp["switch"],
                                  "link": sp["port"], "peer": "unknown", "link_state": "up", **counts}))
    return pd.concat([frame, *rows], ignore_index=True)


def remote_rows(sim: NodeSim) -> pd.DataFrame | None:
    """The node's `nvidia-smi nvlink -R` as topology rows (every GPU NVLink's switch and port), where a scenario
    joins a GPU link to its switch port; None elsewhere."""
    if not sim.switch_ports:
        return None
    graph = platform_graph(sim.platform)
    return pd.DataFrame([{"node_id": sim.node_id, "a": f"GPU{g}", "b": p.switch, "relation": "remote",
                          "link": p.link, "remote_port": p.switch_port, "source": "synth nvlink -R"}
                         for g in graph.gpus for p in graph.links_of(g) if p.link_type == "nvlink" and p.switch])
