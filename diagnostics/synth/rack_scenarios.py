"""The labelled rack scenarios: each puts one fault (or none) into a synthetic rack, where an operator would see it.

- switch_port: one link, seen failing at its switch port (its effective BER at 1.1x-50x its limit, or the link going
  down 1-6 times an hour) and, four times in five, at its GPU end (replays at 1.1x-50x their limit);
- switch_chip: the links of 3-8 GPUs, in at least two compute trays, to one chip;
- switch_tray: the links of 2-4 GPUs to each of the two chips of one switch tray;
- cartridge: 4-10 links inside one cable cartridge, from at least two compute trays to at least two switch trays;
- compute_tray: 4-12 links of 2-4 GPUs of one compute tray, on at least three chips;
- one_gpu: 9-18 of one GPU's links, a fifth of them inactive, and half the time an Xid 149 on it;
- benign_burst: one interval of replays on one GPU link at 0.5x-0.95x the hourly limit: nothing fails;
- fanout_root: one link's recoveries for 2-5 hours, then a fatal Xid 149 on it and Xid 145 on 60-100 % of the
  other GPUs within 50 s: the link is the root, the others downstream;
- fanout_unresolved: fatal Xids on 60-100 % of the GPUs within 50 s with nothing to single one out (all one code,
  149 or 145, the first two under a second apart);
- rack_incident: half the compute trays or more (the rack file's `rack_min_share`) lose 1-4 GPUs off the bus at the
  same reading (Xid 79, a power or cooling event across the rack): no switch unit is common to them; the job stops;
- planned_reboot: the rack rebooted for planned work in the last hour, in NVIDIA's order: its job drained first, the
  switch trays restart, then the compute trays (silent for 1-2 readings, every counter starting over, the NVLinks
  inactive at the first reading back while they train, the GPUs' fabric state In Progress, then Completed); nothing
  is at fault and nothing may page;
- healthy_rack: background only.
Links failing at both ends count at both; the GPU's NVLink5 totals count the same errors half the time. A fault slows
the rack's job four times in five, by 5-60 %.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from ..components import ComponentRef
from ..enums import FaultKind, Severity
from .node import limit
from .rack import RackSim

RACK_SCENARIOS: tuple[str, ...] = ("healthy_rack", "switch_port", "switch_chip", "switch_tray", "cartridge",
                                   "compute_tray", "one_gpu", "benign_burst", "fanout_root", "fanout_unresolved",
                                   "rack_incident", "planned_reboot")
RACK_BENIGN = frozenset({"healthy_rack", "benign_burst", "planned_reboot"})
# What a scenario's diagnosis must say besides its part: (where, words), as the truth's caveats
RACK_CAVEATS: dict[str, list[tuple[str, str]]] = {
    "fanout_root": [("evidence", "downstream of it")],
    "fanout_unresolved": [("evidence", "root not identifiable")],
    "rack_incident": [("evidence", "the rack is the unit")],
    "planned_reboot": [("warnings", "restarted in this window")],
}


def _links(sim: RackSim) -> int:
    return sim.graph.spec.nvlinks_per_gpu


def _gpus(sim: RackSim) -> int:
    return sim.graph.spec.gpus_per_tray


def switch_port(sim: RackSim) -> None:
    g, rng = sim.graph, sim.rng
    tray, gpu, link = int(rng.choice(g.compute_trays)), int(rng.integers(_gpus(sim))), int(rng.integers(_links(sim)))
    on, factor, down = sim.onset(), sim.factor(), bool(rng.random() < 0.4)
    sim.fail_port(tray, gpu, link, on, float(rng.uniform(1, 6)) if down else factor, down=down)
    if rng.random() < 0.8:
        sim.fail_link(tray, gpu, link, on, sim.factor())
    end = g.end(tray, gpu, link)
    sim.fault("switch_port", end.port_ref, FaultKind.SWITCH_PORT, on, sim.slows(on), ratio=None if down else factor,
              tray=tray, gpu=gpu, link=link, switch_tray=end.switch_tray, chip=end.chip, port=end.port)


def switch_chip(sim: RackSim) -> None:
    g, rng = sim.graph, sim.rng
    link = int(rng.integers(_links(sim)))
    switch_tray, chip = g.chip_of(link)
    pool = [(t, gpu) for t in g.compute_trays for gpu in range(_gpus(sim))]
    while True:
        picked = [pool[i] for i in rng.choice(len(pool), size=int(rng.integers(3, 9)), replace=False)]
        if len({t for t, _ in picked}) >= 2:
            break
    on = sim.onset()
    factors = [_fail_both(sim, t, gpu, link, on) for t, gpu in picked]
    sim.fault("switch_chip", ComponentRef.switch_chip(str(switch_tray), chip), FaultKind.NVSWITCH, on, sim.slows(on),
              ratio=max(factors), switch_tray=switch_tray, chip=chip, gpus=sorted(picked))


def switch_tray(sim: RackSim) -> None:
    g, rng = sim.graph, sim.rng
    st = int(rng.choice(g.switch_trays))
    on = sim.onset()
    factors, picked = [], []
    for chip in range(1, g.spec.chips_per_switch_tray + 1):
        link = g.chip_index(st, chip)
        for i in rng.choice(g.spec.gpus, size=int(rng.integers(2, 5)), replace=False):
            tray, gpu = int(i) // _gpus(sim) + 1, int(i) % _gpus(sim)
            factors.append(_fail_both(sim, tray, gpu, link, on))
            picked.append((tray, gpu, link))
    sim.fault("switch_tray", ComponentRef.switch_tray_unit(str(st)), FaultKind.SWITCH_TRAY, on, sim.slows(on),
              ratio=max(factors), switch_tray=st, links=sorted(picked))


def cartridge(sim: RackSim) -> None:
    g, rng = sim.graph, sim.rng
    cart = g.spec.cartridge[int(rng.integers(len(g.spec.cartridge)))]
    trays = list(range(cart.compute_trays[0], cart.compute_trays[1] + 1))
    links = list(range(cart.links[0], cart.links[1] + 1))
    while True:
        count = int(rng.integers(4, 11))
        picked = {(int(rng.choice(trays)), int(rng.integers(_gpus(sim))), int(rng.choice(links))) for _ in range(count)}
        if len({t for t, _, _ in picked}) >= 2 and len({g.chip_of(lk)[0] for _, _, lk in picked}) >= 2 \
                and len(picked) >= 4:
            break
    on = sim.onset()
    factors = [_fail_both(sim, t, gpu, lk, on) for t, gpu, lk in sorted(picked)]
    sim.fault("cartridge", ComponentRef.cartridge_unit(cart.id), FaultKind.CARTRIDGE, on, sim.slows(on),
              ratio=max(factors), cartridge=cart.id, links=sorted(picked))


def compute_tray(sim: RackSim) -> None:
    g, rng = sim.graph, sim.rng
    tray = int(rng.choice(g.compute_trays))
    while True:
        gpus = rng.choice(_gpus(sim), size=int(rng.integers(2, _gpus(sim) + 1)), replace=False)
        picked = {(int(gpu), int(rng.integers(_links(sim)))) for gpu in gpus for _ in range(int(rng.integers(2, 4)))}
        if len({lk for _, lk in picked}) >= 3 and len({gpu for gpu, _ in picked}) >= 2 and len(picked) >= 4:
            break
    on = sim.onset()
    factors = [_fail_gpu_end(sim, tray, gpu, lk, on) for gpu, lk in sorted(picked)]
    sim.fault("compute_tray", ComponentRef.compute_tray(str(tray)), FaultKind.COMPUTE_TRAY, on, sim.slows(on),
              ratio=max(factors), tray=tray, links=sorted(picked))


def one_gpu(sim: RackSim) -> None:
    g, rng = sim.graph, sim.rng
    tray, gpu = int(rng.choice(g.compute_trays)), int(rng.integers(_gpus(sim)))
    count = int(rng.integers(_links(sim) // 2, _links(sim) + 1))
    links = sorted(int(lk) for lk in rng.choice(_links(sim), size=count, replace=False))
    on = sim.onset()
    down = {lk for lk in links if rng.random() < 0.2}
    factors = []
    for lk in links:
        factors.append(sim.factor())
        sim.fail_link(tray, gpu, lk, on, factors[-1], down=lk in down)
    fatal = bool(rng.random() < 0.5)  # a Link Fatal Xid 149: it stops the link until the GPU is reset
    if fatal:
        node = sim.trays[tray]
        node.events.append({"timestamp": sim.times[min(on + 2, len(sim.times) - 1)], "kind": "xid", "gpu": gpu,
                            "code": 149, "severity": "fatal",
                            "text": f"NVRM: Xid (PCI:0008:{gpu + 1:02x}:00): 149, NETIR_LINK_EVT Fatal error"})
    sim.fault("one_gpu", ComponentRef.of_gpu(gpu).in_tray(str(tray)), FaultKind.GPU_NVLINKS, on, sim.slows(on),
              ratio=None if down else max(factors), severity=Severity.DOWN if down else Severity.FAILING, tray=tray,
              gpu=gpu, links=links, fatal=fatal)


def _burst_at(sim: RackSim) -> int:
    """The sample a burst of Xids falls in: inside the last hour's window, with enough steps after it for the job's
    change point (at least four)."""
    return len(sim.times) - 1 - int(sim.rng.integers(5, 11))


def _xid(sim: RackSim, tray: int, gpu: int, at: pd.Timestamp, code: int, *, fatal: bool,
         link: int | None = None) -> None:
    """One NVLink5 Xid line as a GB200 driver writes it (the severity with several spaces, the link or -1)."""
    names = {145: "RLW_REMAP", 149: "NETIR_LINK_EVT", 146: "TLW_ERR", 144: "SAW_MVB"}
    said = "Fatal  " if fatal else "Nonfatal"
    sim.trays[tray].events.append({
        "timestamp": at, "kind": "xid", "gpu": gpu, "code": code, "link": link,
        "severity": "fatal" if fatal else "non-fatal",
        "text": f"NVRM: Xid (PCI:0008:{gpu + 1:02x}:00): {code}, {names.get(code, 'NVLINK')}  {said} XC0 i0 Link "
                f"{-1 if link is None else link} (0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"})


def _others(sim: RackSim, but: tuple[int, int] | None, lo: float) -> list[tuple[int, int]]:
    g = sim.graph
    pool = [(t, gpu) for t in g.compute_trays for gpu in range(_gpus(sim)) if (t, gpu) != but]
    count = int(sim.rng.integers(int(lo * len(pool)), len(pool) + 1))
    return [pool[i] for i in sorted(sim.rng.choice(len(pool), size=count, replace=False))]


def fanout_root(sim: RackSim) -> None:
    """One link recovering for hours, then a fatal Xid 149 on it, then Xid 145 on most other GPUs within a minute
    (the GB200 field report): the link is the root, the rest downstream; the job slows from the burst 4 times in
    5."""
    g, rng = sim.graph, sim.rng
    tray, gpu, link = int(rng.choice(g.compute_trays)), int(rng.integers(_gpus(sim))), int(rng.integers(_links(sim)))
    at = _burst_at(sim)
    node, i = sim.trays[tray], sim.link_row(tray, gpu, link)
    start = max(0, at - int(rng.integers(24, 60)))  # 2-5 hours of recoveries before
    node.per_link.add(("recovery_successful", i))
    node.drive("recovery_successful", i, start, float(rng.uniform(20, 120)))
    t0 = sim.times[at] + pd.Timedelta(seconds=float(rng.uniform(1, 60)))
    _xid(sim, tray, gpu, t0, 149, fatal=True, link=link)
    for t, other in _others(sim, (tray, gpu), 0.6):
        _xid(sim, t, other, t0 + pd.Timedelta(seconds=float(rng.uniform(1, 50))), 145, fatal=False)
    slows = _slows_at(sim, at)
    end = g.end(tray, gpu, link)
    sim.fault("fanout_root", ComponentRef.nvlink(gpu, link).in_tray(str(tray)), FaultKind.NVLINK, at, slows,
              ratio=None, tray=tray, gpu=gpu, link=link, switch_tray=end.switch_tray, chip=end.chip, port=end.port,
              fatal=True)


def fanout_unresolved(sim: RackSim) -> None:
    """Fatal Xids on most GPUs of the rack within a minute and nothing that singles one out: all one code (149 or
    145), the first two under a second apart; no link counted anything before."""
    rng = sim.rng
    at = _burst_at(sim)
    t0 = sim.times[at] + pd.Timedelta(seconds=float(rng.uniform(1, 60)))
    code = 149 if rng.random() < 0.5 else 145
    hit = _others(sim, None, 0.6)
    order = rng.permutation(len(hit))
    for n, k in enumerate(order):
        t, gpu = hit[int(k)]
        lag = float(rng.uniform(0, 0.5)) if n == 1 else 0.0 if n == 0 else float(rng.uniform(0.5, 50))
        _xid(sim, t, gpu, t0 + pd.Timedelta(seconds=lag), code, fatal=True,
             link=int(rng.integers(_links(sim))) if code == 149 else None)
    slows = _slows_at(sim, at)
    sim.fault("fanout_unresolved", ComponentRef.nvlink_domain(), FaultKind.FANOUT, at, slows, ratio=None,
              gpus=len(hit), fatal=True)


def _slows_at(sim: RackSim, at: int) -> bool:
    """The job slows from the burst (4 times in 5), by 5-60 %."""
    if sim.rng.random() >= 0.8:
        return False
    sim.slowdown = (at + 1, next(iter(sim.trays.values())).slowdown_pct(5.0, 60.0))
    return True


def rack_incident(sim: RackSim) -> None:
    """Half the compute trays or more lose GPUs off the bus at the same reading: their series stop, each GPU logs
    Xid 79 within a minute, the job stops. No switch tray, chip or cartridge is common to them."""
    g, rng = sim.graph, sim.rng
    least = math.ceil(g.spec.localize.rack_min_share * len(g.compute_trays))
    hit = sorted(int(t) for t in rng.choice(g.compute_trays, size=int(rng.integers(least, len(g.compute_trays) + 1)),
                                            replace=False))
    on = len(sim.times) - 1 - int(rng.integers(4, 10))  # the job then logs no step for over 3 intervals: stopped
    for tray in hit:
        node = sim.trays[tray]
        for gpu in sorted(int(x) for x in rng.choice(_gpus(sim), size=int(rng.integers(1, _gpus(sim) + 1)),
                                                      replace=False)):
            node.gone[[i for i, s in enumerate(node.links) if s.gpu == gpu], on + 1:] = True
            node.events.append({"timestamp": sim.times[on] + pd.Timedelta(seconds=float(rng.uniform(0, 60))),
                                "kind": "xid", "gpu": gpu, "code": 79,
                                "text": f"NVRM: Xid (PCI:0008:{gpu + 1:02x}:00): 79, pid='<unknown>', name=<unknown>, "
                                        "GPU has fallen off the bus."})
    sim.stopped = on + 1
    sim.fault("rack_incident", ComponentRef.nvlink_domain(), FaultKind.RACK_INCIDENT, on, False, ratio=None,
              severity=Severity.DOWN, trays=hit, rule="xid_off_bus")  # GPUs lost: every job on them stopped


def planned_reboot(sim: RackSim) -> None:
    """The rack rebooted for planned work, switch trays first: every tray's counters start over, the NVLinks read
    inactive at the compute trays' first reading back, their fabric state re-registers; the job was drained before."""
    rng = sim.rng
    back = len(sim.times) - 1 - int(rng.integers(3, 7))  # the compute trays' first reading after the reboot
    sim.stopped = back - 3
    for switch in sim.switches.values():
        switch.resets.append(back - 1)
        switch.keep[back - 2:back - 1] = False
    for node in sim.trays.values():
        node.resets.append(back)
        node.keep[back - int(rng.integers(1, 3)):back] = False
        node.inactive[node.nv_indices(), back] = True
        registered = next(str(e["text"]) for e in node.events if e["kind"] == "fabric_state")
        for gpu in range(_gpus(sim)):
            node.events.append({"timestamp": sim.times[back], "kind": "fabric_state", "gpu": gpu,
                                "text": "State: In Progress; Status: N/A"})
            node.events.append({"timestamp": sim.times[back + 1], "kind": "fabric_state", "gpu": gpu,
                                "text": registered})


def benign_burst(sim: RackSim) -> None:
    """One interval of replays on a GPU link, under the hourly limit: no fault."""
    g, rng = sim.graph, sim.rng
    tray, gpu, link = int(rng.choice(g.compute_trays)), int(rng.integers(_gpus(sim))), int(rng.integers(_links(sim)))
    node, i = sim.trays[tray], sim.link_row(tray, gpu, link)
    at = int(rng.integers(len(sim.times) // 2, len(sim.times) - 1))
    hours = (sim.times[at] - sim.times[at - 1]).total_seconds() / 3600
    ratio = float(rng.uniform(0.5, 0.95))
    room = limit("nvlink_replay") - 2 - float(node.rate["replay"][i].max())
    node.rate["replay"][i, at] = ratio * room / hours
    node.exact.add(("replay", i))
    node.near.append({"rule": "nvlink_replay", "ratio": round(ratio * room / limit("nvlink_replay"), 3), "gpu": gpu,
                      "link": link, "at": str(sim.times[at])})


def healthy_rack(sim: RackSim) -> None:
    """Background only (and, one time in two, a tray's GPU totals just under a limit)."""


def _fail_both(sim: RackSim, tray: int, gpu: int, link: int, on: int) -> float:
    """A link failing on the switch side of the spine: its GPU end counts replays, its port's BER rises half the
    time."""
    factor = _fail_gpu_end(sim, tray, gpu, link, on)
    if sim.rng.random() < 0.5:
        sim.fail_port(tray, gpu, link, on, sim.factor(), down=False)
    return factor


def _fail_gpu_end(sim: RackSim, tray: int, gpu: int, link: int, on: int) -> float:
    factor = sim.factor()
    sim.fail_link(tray, gpu, link, on, factor)
    return factor


APPLY: dict[str, Callable[[RackSim], None]] = {
    "healthy_rack": healthy_rack, "switch_port": switch_port, "switch_chip": switch_chip, "switch_tray": switch_tray,
    "cartridge": cartridge, "compute_tray": compute_tray, "one_gpu": one_gpu, "benign_burst": benign_burst,
    "fanout_root": fanout_root, "fanout_unresolved": fanout_unresolved, "rack_incident": rack_incident,
    "planned_reboot": planned_reboot,
}
