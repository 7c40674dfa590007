"""A GPU off the bus takes its direct NVLinks down with it: each peer reads its link to the GPU inactive (the Xid
catalog's note on Xid 74: a GPU whose peer failed reports the link down). Those links are the GPU's evidence, not
faults of their own: every door (analyze, the sweep, the digest, the summary blocks, the picture) shows one part,
and the node's verdict, priority and part are those it has without them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd

from bot.blocks import diagnosis_blocks
from bot.digest import assemble
from bot.storage import open_db
from bot.workflow.tracker import SqliteTracker
from diagnostics import load_thresholds
from diagnostics.analysis import analyze_tables
from diagnostics.components import ComponentRef
from diagnostics.enums import FaultKind, Severity
from diagnostics.model import Diagnosis
from diagnostics.offenders import offenders_of
from diagnostics.render.scene import build_scene
from diagnostics.service import Request, files_source, sweep
from diagnostics.topology import platform_graph
from diagnostics.topology.graph import gpu_node
from tests.analysis.helpers import T0, events, link_series, links, steady

PLATFORM = "dgx1-v100-8gpu"  # direct GPU-to-GPU NVLinks: a peer sees its link to a lost GPU go down
LOST, N, GONE = 1, 6 * 12 + 1, 50  # GPU 1's series stop after sample 50 of six hours of 5-minute samples


def _tables(*, peers_down: bool = True, replays_to_lost: float = 0.0) -> dict[str, pd.DataFrame]:
    """GPU 1 falls off the bus (Xid 79, its series stop); its peers' links to it read inactive after (`peers_down`),
    and GPU 0's carries `replays_to_lost` replays an hour throughout."""
    graph = platform_graph(PLATFORM)
    frames = []
    for gpu in range(8):
        n = GONE + 1 if gpu == LOST else N
        for port in graph.links_of(gpu):
            if port.link_type != "nvlink":
                continue
            to_lost = port.peer == f"GPU {LOST}"
            rate = replays_to_lost if to_lost and gpu == 0 else 2.0
            frame = link_series(steady(rate, n), gpu=gpu, link=port.link, peer=str(port.peer))
            frame["link_state"] = ["inactive" if peers_down and to_lost and i > GONE else "up" for i in range(n)]
            frames.append(frame)
        frames.append(link_series(steady(0.0, n), gpu=gpu, link=None, link_type="pcie", peer="PCIe switch 0"))
    xid = events([{"timestamp": T0 + pd.Timedelta(minutes=5 * GONE), "gpu": LOST, "kind": "xid", "code": 79,
                   "text": "NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus."}])
    return {"link_samples": links(*frames), "events": xid}


def _analyze(tables: dict[str, pd.DataFrame]) -> Diagnosis:
    return analyze_tables(tables, node_id="n1", platform=PLATFORM, window=timedelta(hours=1))


def _peer_links() -> list[str]:
    """The links to GPU 1 as its peers read them ('GPU 0 -> GPU 1 NVLink 0')."""
    return [ComponentRef.nvlink(int(str(p.peer).split()[1]), p.peer_link, peer_gpu=LOST).name
            for p in platform_graph(PLATFORM).links_of(LOST) if p.link_type == "nvlink"]


def test_the_links_down_with_a_gpu_off_the_bus_are_its_evidence_not_more_faults() -> None:
    d = _analyze(_tables())
    bad = [f for f in d.findings if f.severity is not Severity.OK]
    assert [f.component for f in bad] == [f"GPU {LOST}"], [f.component for f in bad]
    said = " ".join(bad[0].evidence)
    assert len(_peer_links()) == 6 and all(name in said for name in _peer_links()), said
    rows = offenders_of(d)
    assert len({o.link_key for o in rows}) == 1 and rows[0].component.startswith(f"GPU {LOST} (Xid 79")
    # the node says what it says of a GPU off the bus whose peers' links read nothing: same part, priority, verdict
    alone = _analyze(_tables(peers_down=False))
    assert [(loc.ref, loc.fault) for loc in d.localizations] == [(loc.ref, loc.fault) for loc in alone.localizations]
    assert d.localizations[0].fault is FaultKind.GPU_OFF_BUS
    assert (d.ticket_priority, d.repair_action, d.verdict, d.isolated_component) == \
        (alone.ticket_priority, alone.repair_action, alone.verdict, alone.isolated_component)


def test_a_link_to_the_lost_gpu_that_failed_on_its_own_keeps_its_finding() -> None:
    d = _analyze(_tables(replays_to_lost=50_000.0))
    bad = {f.component: f for f in d.findings if f.severity is not Severity.OK}
    own = [name for name in bad if name.startswith("GPU 0 -> ")]
    assert len(own) == 1 and "nvlink_replay" in {c.rule for c in bad[own[0]].crossed}  # errors of its own: kept
    assert len(bad) == 2 and f"GPU {LOST}" in bad


def test_every_door_shows_one_part(tmp_path: Path) -> None:
    """The sweep of the files, the digest, the summary message and the picture agree with analyze: one part."""
    tables = _tables()
    for name, frame in tables.items():
        frame.to_parquet(tmp_path / f"{name}.parquet")
    pd.DataFrame({"node_id": ["n1"], "platform": [PLATFORM]}).to_csv(tmp_path / "nodes.csv", index=False)
    files, _, _ = files_source([tmp_path])
    end = tables["link_samples"]["timestamp"].max().to_pydatetime()
    swept = sweep(files, Request(end=end, window=timedelta(hours=1), thresholds=load_thresholds()))
    assert swept.found().startswith("1 offending GPU"), swept.found()
    d = swept.diagnoses["n1"]
    assert [f.component for f in d.findings if f.severity is not Severity.OK] == [f"GPU {LOST}"]
    digest = assemble(at=end, diagnoses=[d], tracker=SqliteTracker(open_db(None)), maintenance=[])
    assert [o.component for o in digest.new] == [f"GPU {LOST}"]
    shown = str([b.to_dict() for b in diagnosis_blocks(d, 1)])
    assert not [name for name in _peer_links() if f"*{name}*" in shown]  # no degraded-link line of its own
    scene = build_scene(platform_graph(PLATFORM), d)
    lost = gpu_node(LOST)
    assert not [h for h in scene.highlights if lost in (h.u, h.v)]  # no link to it drawn failing, no label piled
    gone = [b for b in scene.bundles if b.link_type == "nvlink" and lost in (b.u, b.v)]
    assert gone and not any(b.reporting for b in gone)  # drawn as the lost GPU's links: not reporting
