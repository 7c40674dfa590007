"""Common-cause localization per scenario, over the platform topology graph."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnostics import format as fmt
from diagnostics.analysis import analyze_tables
from diagnostics.analysis.localize import localize, localize_all
from diagnostics.analysis.placed import placed
from diagnostics.analysis.urgency import urgent_first
from diagnostics.components import ComponentRef
from diagnostics.enums import ComponentKind, FaultKind, LinkType, PortSource, Severity
from diagnostics.model import Crossing, Finding
from diagnostics.topology import NodeGraph, PortInfo, graph_from_topology, platform_graph
from tests.analysis.helpers import events, link_series, links, node_links, steady
from tests.topology.test_build import nv_matrix


def bad(gpu: int, link: int, peer: str, **kw: object) -> Finding:
    crossing = Crossing(rule="nvlink_replay", counter="replay", rate_per_hour=5000.0, above=1000.0,
                        severity=Severity.FAILING, message="replay 5,000/h > 1,000/h")
    return Finding(ref=ComponentRef.of_link("nvlink", gpu, link, peer), link_type=LinkType.NVLINK,
                   link_id=f"nvlink-{link}",
                   link=link, gpu=gpu, peer=peer, crossed=[crossing], severity=Severity.FAILING, worst_ratio=5.0,
                   switch=peer if peer.startswith("NVSwitch") else None,
                   peer_gpu=int(peer.split()[1]) if peer.startswith("GPU") else None, **kw)  # type: ignore[arg-type]


def test_one_link_alone_is_its_port_pair_with_the_port_from_the_graph() -> None:
    loc = localize([bad(2, 1, "NVSwitch 0")], platform_graph("hgx-h100-8gpu"))
    assert loc is not None and loc.kind is ComponentKind.NVLINK
    assert loc.component == "GPU 2 NVLink 1 -> NVSwitch 0 port 9" and loc.switch_port == 9
    assert loc.port_source is PortSource.ASSUMED


def test_all_links_of_one_gpu_point_to_the_gpu() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    switch_of = {p.link: p.peer for p in graph.links_of(5) if p.link_type == "nvlink"}
    findings = [bad(5, k, switch_of[k]) for k in range(18)]
    loc = localize(findings, graph)
    assert loc is not None and loc.kind is ComponentKind.GPU and loc.gpu == 5
    assert len(localize_all(findings, graph)) == 1


def test_same_switch_across_gpus_points_to_the_switch() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    findings = [bad(g, 5, "NVSwitch 1") for g in (0, 3, 6)]
    locs = localize_all(findings, graph)
    assert [(loc.kind, loc.switch) for loc in locs] == [(ComponentKind.NVSWITCH, "NVSwitch 1")]


def test_two_independent_faults_give_two_parts() -> None:
    graph = platform_graph("hgx-h100-8gpu")
    locs = localize_all([bad(1, 0, "NVSwitch 0"), bad(6, 17, "NVSwitch 3")], graph)
    assert sorted((loc.gpu, loc.link) for loc in locs) == [(1, 0), (6, 17)]


def test_both_ends_of_a_direct_link_count_once() -> None:
    graph = platform_graph("h100-nvl-8gpu")
    locs = localize_all([bad(2, 1, "GPU 3"), bad(3, 1, "GPU 2")], graph)
    assert len(locs) == 1 and locs[0].component == "GPU 2 -> GPU 3 NVLink 1"


def test_per_lane_counters_pinpoint_the_lane() -> None:
    frame = links(link_series(steady(4000.0), lane=2), link_series(steady(1.0), lane=0),
                  link_series(steady(1.0), link=1))
    d = analyze_tables({"link_samples": frame}, node_id="n1")
    assert d.localization is not None and d.localization.lanes == [2]
    assert "per-lane counters point to lane 2" in d.localization.evidence


def test_the_evidence_counts_in_words_that_agree_with_the_number() -> None:
    """A GPU's other failing links and the lanes its counters name read right for one and for more."""
    graph = platform_graph("hgx-h100-8gpu")
    switch_of = {p.link: p.peer for p in graph.links_of(2) if p.link_type == "nvlink"}
    for others in (1, 2):
        locs = localize_all([bad(2, k, switch_of[k]) for k in range(others + 1)], graph)
        said = fmt.count(others, "other failing link")
        assert locs and all(f"GPU 2 has {said} on other paths" in loc.evidence for loc in locs), locs
    frame = links(link_series(steady(4000.0), lane=2), link_series(steady(4000.0), lane=3),
                  link_series(steady(1.0), lane=0), link_series(steady(1.0), link=1))
    d = analyze_tables({"link_samples": frame}, node_id="n1")
    assert d.localization is not None and "per-lane counters point to lanes 2, 3" in d.localization.evidence


def test_gpu_wide_fault_end_to_end() -> None:
    frame = node_links({(4, k): 2500.0 for k in range(18)})
    d = analyze_tables({"link_samples": frame}, node_id="n1", platform="hgx-h100-8gpu")
    assert d.localization is not None and d.localization.kind is ComponentKind.GPU and d.localization.gpu == 4
    assert d.isolated_component == "GPU 4"
    assert "GPU 4" in d.repair_action


def test_a_gpu_suspected_on_its_nvlinks_holds_the_nvlink_xid_logged_on_it() -> None:
    """GPU 6 failing on every NVLink with an Xid 74 on it: the Xid was no link of the GPU's suspect, so every fleet
    list put it after the GPU's 18 links. It is the suspect's own event, listed with it and first of its rows."""
    frame = node_links({(4, k): 2500.0 for k in range(18)})
    end = frame["timestamp"].max()
    xid = events([{"timestamp": end - pd.Timedelta(minutes=10), "kind": "xid", "gpu": 4, "code": 74,
                   "text": "NVLink error", "source": "kern.log:1"}])
    d = analyze_tables({"link_samples": frame, "events": xid}, node_id="n1", platform="hgx-h100-8gpu")
    assert d.localization is not None and d.isolated_component == "GPU 4"
    own = [f.component for f in d.findings if any(c.rule == "xid_nvlink" for c in f.crossed)]
    assert own and set(own) <= set(d.localization.links) and len(d.localizations) == 1
    assert urgent_first(d)[0][1].component in own


def test_no_failing_link_no_localization() -> None:
    assert localize([], None) is None


def test_without_a_platform_the_peer_column_still_names_the_shared_switch() -> None:
    """Eight GPUs' failing links name `nvswitch-1` in the tables' own spelling: that switch is the common end."""
    frame = links(*(link_series(steady(5000), gpu=g, link=3, peer="nvswitch-1") for g in range(8)),
                  *(link_series(steady(0), gpu=g, link=4, peer="nvswitch-2") for g in range(8)))
    d = analyze_tables({"link_samples": frame}, node_id="n1")
    assert d.platform is None and d.localization is not None
    assert d.localization.kind is ComponentKind.NVSWITCH and d.localization.component == "NVSwitch 1"
    assert {f.switch for f in d.failing} == {"NVSwitch 1"}


def test_a_switch_ticket_stands_for_the_links_it_explains_and_a_link_ticket_for_itself() -> None:
    frame = links(*(link_series(steady(5000), gpu=g, link=3, peer="nvswitch-1") for g in range(4)),
                  *(link_series(steady(0), gpu=g, link=4, peer="nvswitch-2") for g in range(4)))
    d = analyze_tables({"link_samples": frame}, node_id="n1")
    assert d.localization is not None
    switch = d.localization.ref.slug
    assert d.parts_of(switch) == sorted({switch, *(f"gpu{g}-nvlink3" for g in range(4))})
    assert d.parts_of("gpu0-nvlink4") == ["gpu0-nvlink4"]  # a healthy link's ticket watches only that link


def _failing(graph_name: str, gpus: range | list[int], switches: set[str] | None = None) -> list[Finding]:
    """Every NVLink of `gpus` failing alike (only those landing on `switches`, where given)."""
    graph = platform_graph(graph_name)
    return [bad(g, p.link, p.peer) for g in gpus for p in graph.links_of(g)
            if p.link_type == "nvlink" and p.link is not None and (switches is None or p.peer in switches)]


def test_every_gpu_failing_alike_is_the_shared_switches_not_eight_gpus() -> None:
    """All 8 GPUs of an HGX H100 failing on every link gave 8 GPU suspects at 0.95: no one GPU explains it."""
    for name in ("hgx-h100-8gpu", "dgx-a100-8gpu"):
        graph = platform_graph(name)
        locs = localize_all(_failing(name, range(8)), graph)
        assert len(locs) == 1, [loc.component for loc in locs]
        (loc,) = locs
        assert loc.kind is ComponentKind.NVSWITCH and loc.switch is None and loc.gpu is None
        assert loc.confidence < 0.9  # the baseboard, or the driver, firmware or power: not yet told apart
        assert "driver" in " ".join(loc.evidence) and len(loc.links) == 8 * graph.expected_links(0)


def test_switches_most_gpus_fail_on_are_the_suspects_before_the_gpus() -> None:
    """Two of four switches failing for every GPU is 10 of each GPU's 18 links: the switches, not 8 GPUs; one switch
    for every GPU stays that switch; two GPUs failing on every link stay two GPUs."""
    graph = platform_graph("hgx-h100-8gpu")
    two = localize_all(_failing("hgx-h100-8gpu", range(8), {"NVSwitch 1", "NVSwitch 2"}), graph)
    assert sorted(loc.component for loc in two) == ["NVSwitch 1", "NVSwitch 2"]
    (one,) = localize_all(_failing("hgx-h100-8gpu", range(8), {"NVSwitch 1"}), graph)
    assert one.component == "NVSwitch 1"
    gpus = localize_all(_failing("hgx-h100-8gpu", [2, 5]), graph)
    assert sorted(loc.gpu for loc in gpus if loc.kind is ComponentKind.GPU) == [2, 5] and len(gpus) == 2


def test_two_links_down_to_different_peers_make_the_gpu_the_suspect() -> None:
    """A DGX-1's GPU 3 with its NVLinks to GPU 2 and GPU 7 down (a real `nvlink -s`): they share GPU 3 alone, so the
    GPU is the suspect, not the link to GPU 2 with the link to GPU 7 beside it; two links down to one peer stay
    a pair."""
    graph = platform_graph("dgx1-v100-8gpu")
    peer = {p.link: p.peer for p in graph.links_of(3) if p.link_type == "nvlink"}

    def down(link: int) -> Finding:
        return bad(3, link, peer[link]).model_copy(update={"severity": Severity.DOWN})

    (loc,) = localize_all([down(3), down(5)], graph)
    assert loc.kind is ComponentKind.GPU and loc.gpu == 3, loc.component
    assert all(str(p) in " ".join(loc.evidence) for p in (peer[3], peer[5]))
    same = [k for k in peer if peer[k] == peer[3]]
    assert len(same) == 2  # the hybrid cube mesh doubles some pairs
    assert all(loc.kind is ComponentKind.NVLINK for loc in localize_all([down(k) for k in same], graph))


def test_the_gpu_wide_counts_are_the_thresholds_files() -> None:
    """A user who raises gpu_wide_min_down_links in the thresholds file keeps two down links as links."""
    from diagnostics.config.thresholds import load_thresholds

    graph = platform_graph("dgx1-v100-8gpu")
    peer = {p.link: p.peer for p in graph.links_of(3) if p.link_type == "nvlink"}
    findings = [bad(3, k, peer[k]).model_copy(update={"severity": Severity.DOWN}) for k in (3, 5)]
    strict = load_thresholds()
    strict = strict.model_copy(update={"settings": {**strict.settings, "gpu_wide_min_down_links": 3.0}})
    assert all(loc.kind is ComponentKind.NVLINK for loc in localize_all(findings, graph, thresholds=strict))


def test_every_gpu_of_a_direct_mesh_failing_alike_is_the_mesh_not_eight_gpus() -> None:
    """A DGX-1 (direct NVLinks, no NVSwitch) with every link of all 8 GPUs replaying gave GPU 0 and 7 more GPUs:
    no one GPU explains it, what every link shares does (the board's NVLink mesh, the driver, power): one suspect.
    One GPU failing on every link stays that GPU."""
    graph = platform_graph("dgx1-v100-8gpu")
    findings = _failing("dgx1-v100-8gpu", range(8))
    locs = localize_all(findings, graph)
    assert len(locs) == 1, [loc.component for loc in locs]
    (loc,) = locs
    assert loc.kind is ComponentKind.NVLINK_MESH and loc.gpu is None and loc.fault is FaultKind.NVLINK_SHARED
    assert loc.confidence < 0.9 and len(loc.links) == len(findings)
    assert "driver" in " ".join(loc.evidence) and "NVSwitch" not in " ".join(loc.evidence)
    one = localize_all(_failing("dgx1-v100-8gpu", [3]), graph)
    assert [loc.gpu for loc in one if loc.kind is ComponentKind.GPU] == [3]


def test_without_a_platform_every_gpu_failing_alike_is_one_shared_cause_naming_no_part() -> None:
    """The per-GPU path (no graph): every GPU failing on all its links is one shared suspect, said as likely shared,
    with no part named."""
    findings = [bad(g, k, "unknown") for g in range(8) for k in range(6)]
    locs = localize_all(findings, None)
    assert len(locs) == 1, [loc.component for loc in locs]
    (loc,) = locs
    assert loc.kind is ComponentKind.NVLINK_MESH and loc.fault is FaultKind.NVLINK_SHARED
    assert "likely" in " ".join(loc.evidence) and "baseboard" not in " ".join(loc.evidence).lower()


def test_a_link_placed_then_localized_asks_its_graph_for_its_port_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Placing a flagged link on its switch port and weighing it among the node's suspects ask the same port of the
    same graph: it is looked up once, and the suspect is the one the graph gives."""
    graph = platform_graph("hgx-h100-8gpu").copy()  # a graph of its own: no port of it looked up before
    asked: list[tuple[int, int | None]] = []
    port_of = NodeGraph.port_of

    def counted(self: NodeGraph, gpu: int, link: int | None, link_type: str = "nvlink") -> PortInfo:
        asked.append((gpu, link))
        return port_of(self, gpu, link, link_type)

    monkeypatch.setattr(NodeGraph, "port_of", counted)
    findings = [placed(bad(2, 1, "NVSwitch 0"), graph), placed(bad(5, 7, "NVSwitch 1"), graph)]
    locs = localize_all(findings, graph)
    assert sorted(asked) == [(2, 1), (5, 7)]
    assert sorted(loc.component for loc in locs) == ["GPU 2 NVLink 1 -> NVSwitch 0 port 9",
                                                     "GPU 5 NVLink 7 -> NVSwitch 1 port 28"]


def test_links_on_a_fabric_whose_chips_are_not_told_share_no_one_chip() -> None:
    """A graph fitted to boards alike (or a description that names no chip) has one NVSwitch fabric: two GPUs' links
    on it were 'the switch (its baseboard)', though they may land on two chips. They stay two links; most GPUs
    failing on it is still what every link shares, one suspect."""
    graph = graph_from_topology(nv_matrix(8, 18))
    assert graph.switches("nvswitch") == ["NVSwitch fabric"]
    two = localize_all([bad(1, 0, "NVSwitch fabric"), bad(6, 17, "NVSwitch fabric")], graph)
    assert sorted((loc.kind, loc.gpu, loc.link) for loc in two) == [(ComponentKind.NVLINK, 1, 0),
                                                                       (ComponentKind.NVLINK, 6, 17)]
    every = [bad(g, k, "NVSwitch fabric") for g in range(8) for k in range(18)]
    (shared,) = localize_all(every, graph)
    assert shared.fault is FaultKind.NVSWITCH_SHARED and "on the node's NVSwitches alike" in shared.evidence[0]
