"""A ticket's priority, cost and one-line summary are its own part's: a second failing part on a node whose slowdown
another part explains is neither urgent nor charged the slowdown, and the summary quotes the part's worst crossing."""

from __future__ import annotations

from typing import Any

from diagnostics.analysis import part_priority
from diagnostics.components import ComponentRef
from diagnostics.config import load_thresholds
from diagnostics.config.thresholds import PriorityRow
from diagnostics.enums import Priority, Severity, priority_rank
from diagnostics.model import Crossing, Diagnosis
from diagnostics.tickets import ClaudeDrafter, RulesDrafter, candidates_for
from diagnostics.tickets.build import ticket_priority
from diagnostics.tickets.markdown import ticket_markdown
from tests.tickets.helpers import good_answer, scripted, seed_diagnosis

EXPLAINS = "GPU 2 -> GPU 3 NVLink 1"  # the seed's failing link, which explains its job's +89.2%
OTHER = "GPU 5 -> GPU 6 NVLink 0"


def _crossing(rule: str, counter: str, rate: float, above: float, severity: Severity = Severity.FAILING) -> Crossing:
    return Crossing(rule=rule, counter=counter, rate_per_hour=rate, above=above, severity=severity,
                    message=f"{counter} {rate:,.0f}/h > {above:,.0f}/h ({rule})")


def _second_part(**update: Any) -> Diagnosis:
    """The seed's node with a second failing link, GPU 5 -> GPU 6, whose errors do not track the step time."""
    d = seed_diagnosis()
    seed = next(f for f in d.findings if f.component == EXPLAINS)
    other = seed.model_copy(update={
        "ref": ComponentRef.nvlink(5, 0, peer_gpu=6), "gpu": 5, "link": 0, "peer_gpu": 6, "peer": "GPU 6",
        "link_id": "nvlink-0", "crossed": [_crossing("nvlink_replay", "replays", 1393, 1000)], "worst_ratio": 1.393,
        "explains_slowdown": False, "correlation_score": 0.09,
        "evidence": ["its errors do not track job snapshot:hpc-gpu-node-12's step time"], **update})
    assert other.component == OTHER
    return d.model_copy(update={"findings": [*d.findings, other]})


def test_a_part_that_does_not_explain_the_slowdown_is_not_urgent_nor_charged_it() -> None:
    d = _second_part()
    assert d.ticket_priority is Priority.URGENT
    t = RulesDrafter().draft(d, component="gpu5-nvlink0")
    assert t.priority is Priority.MEDIUM  # failing, without a slowdown it explains
    cost = t.estimated_cost
    assert cost.gpu_hours_per_day is None and cost.lost_fraction is None
    assert cost.not_charged is not None and EXPLAINS in cost.not_charged
    assert "+89.2%" not in t.summary.replace(f"({d.degradation_pct:+.1f}%) is charged to {EXPLAINS}", "")
    assert f"is charged to {EXPLAINS}" in t.summary and "Priority medium" in t.summary
    assert f"none charged to this part: job {d.job_id}'s slowdown (+89.2%) is charged to {EXPLAINS}" \
        in ticket_markdown(t)
    assert "GPU-hours lost per day" not in ticket_markdown(t)


def test_the_part_that_explains_the_slowdown_keeps_urgent_and_its_cost() -> None:
    d = _second_part().model_copy(update={"job_gpus": 16})
    t = RulesDrafter().draft(d)
    assert t.component == EXPLAINS and t.priority is Priority.URGENT
    assert t.estimated_cost.not_charged is None and t.estimated_cost.gpu_hours_per_day is not None
    assert "step time +89.2% against baseline" in t.summary
    again = RulesDrafter().draft(d, component="gpu2-nvlink1")
    assert again.priority is Priority.URGENT and again.estimated_cost == t.estimated_cost


def test_a_down_second_part_is_high_and_a_lost_gpu_urgent_without_the_slowdown() -> None:
    down = _second_part(severity=Severity.DOWN, worst_ratio=None,
                        crossed=[Crossing(rule="link_down", counter="link_state", severity=Severity.DOWN,
                                          message="link is down")])
    assert RulesDrafter().draft(down, component="gpu5-nvlink0").priority is Priority.HIGH
    lost = _second_part(severity=Severity.DOWN, crossed=[Crossing(rule="xid_off_bus", counter="xid", above=0,
                                                                  rate_per_hour=1, severity=Severity.DOWN,
                                                                  message="Xid 79 (xid_off_bus)")])
    assert RulesDrafter().draft(lost, component="gpu5-nvlink0").priority is Priority.URGENT


def test_every_door_gives_a_part_the_priority_of_its_ticket() -> None:
    """The ticket, the digest's and alert loop's `part_priority` over a localization and the Claude drafter's facts
    agree."""
    d = _second_part()
    found = {c.id: c for c in candidates_for(d)}
    assert ticket_priority(d, found["gpu5-nvlink0"]) is Priority.MEDIUM
    assert ticket_priority(d, found["gpu2-nvlink1"]) is Priority.URGENT
    assert part_priority(d, [OTHER], headline=False) is Priority.MEDIUM
    assert part_priority(d, [EXPLAINS], headline=True) is Priority.URGENT
    # planned work keeps every part low
    assert part_priority(d.model_copy(update={"ticket_priority": Priority.LOW}), [OTHER], headline=False) \
        is Priority.LOW


def test_the_claude_drafter_may_not_call_the_second_part_urgent() -> None:
    d = _second_part()
    urgent = good_answer("gpu5-nvlink0") | {
        "summary": "GPU 5 -> GPU 6 NVLink 0 replays 1,393/h; urgent priority.",
        "why": "GPU 5 -> GPU 6 NVLink 0 is failing.", "alternatives": [], "hypotheses": []}
    ticket = ClaudeDrafter(model=scripted(lambda m, i: urgent), retries=1).draft(d, component="gpu5-nvlink0")
    assert ticket.drafted_by == "rules" and ticket.priority is Priority.MEDIUM
    medium = urgent | {"summary": "GPU 5 -> GPU 6 NVLink 0 replays 1,393/h; medium priority."}
    ticket = ClaudeDrafter(model=scripted(lambda m, i: medium), retries=1).draft(d, component="gpu5-nvlink0")
    assert ticket.drafted_by == "scripted-claude" and ticket.priority is Priority.MEDIUM


def test_the_summary_quotes_the_crossing_furthest_over_its_limit_severity_first() -> None:
    """GPU 2's ticket over two of its links: the second link's 49,994 replays/h, not the first link's first
    crossing (a count over a zero limit), nor a warning further over its own."""
    d = seed_diagnosis()
    seed = next(f for f in d.findings if f.component == EXPLAINS)
    first = seed.model_copy(update={"crossed": [_crossing("effective_errors", "effective errors", 14, 0),
                                                _crossing("nvlink_replay", "replays", 1226, 1000)]})
    second = seed.model_copy(update={
        "ref": ComponentRef.nvlink(2, 2, peer_gpu=4), "link": 2, "peer_gpu": 4, "peer": "GPU 4", "link_id": "nvlink-2",
        "crossed": [_crossing("crc", "CRC errors", 900_000, 100, Severity.WARNING),
                    _crossing("effective_ber", "effective BER", 5.3, 1),
                    _crossing("nvlink_replay", "replays", 49_994, 1000)]})
    gpu = d.model_copy(update={"findings": [first, second]})
    summary = RulesDrafter().draft(gpu, component="gpu2").summary
    assert summary.startswith("GPU 2 on hpc-gpu-node-12: replays 49,994/h > 1,000/h (nvlink_replay);"), summary
    # a link's own ticket quotes its own worst
    assert RulesDrafter().draft(gpu, component="gpu2-nvlink1").summary.startswith(
        f"{EXPLAINS} on hpc-gpu-node-12: replays 1,226/h > 1,000/h (nvlink_replay);")


def test_a_ticket_takes_its_priority_from_the_policy_the_diagnosis_was_judged_by() -> None:
    """Under a policy that puts any failing link at high, the second part's ticket is high, not the default's
    medium, from either drafter: the Claude drafter's words are held to the same policy."""
    default = load_thresholds()
    policy = default.model_copy(update={"priority": [PriorityRow(level=Priority.HIGH, when="failing"),
                                                     *default.priority]})
    d = _second_part()
    assert RulesDrafter().draft(d, component="gpu5-nvlink0").priority is Priority.MEDIUM
    assert RulesDrafter().draft(d, component="gpu5-nvlink0", thresholds=policy).priority is Priority.HIGH
    high = good_answer("gpu5-nvlink0") | {
        "summary": "GPU 5 -> GPU 6 NVLink 0 replays 1,393/h; high priority.",
        "why": "GPU 5 -> GPU 6 NVLink 0 is failing.", "alternatives": [], "hypotheses": []}
    ticket = ClaudeDrafter(model=scripted(lambda m, i: high), retries=1).draft(d, component="gpu5-nvlink0",
                                                                               thresholds=policy)
    assert ticket.drafted_by == "scripted-claude" and ticket.priority is Priority.HIGH


def test_the_most_urgent_part_heads_the_node_and_its_default_ticket() -> None:
    """A node whose link telemetry alone (no kernel log) shows GPU 3 gone and another GPU's link inactive: the two
    are down alike and the link is seen more surely, but the lost GPU is what makes the node urgent. The lost GPU
    heads the node (its headline, its action, its default ticket at the node's urgent), and the link's own ticket is
    a down link's high, as the digest and the alert loop rank each part."""
    import pandas as pd

    from diagnostics.enums import ComponentKind
    from diagnostics.service import Request, TableSource, diagnose
    from diagnostics.synth.fleet import build

    tables, truth = build(seed=3, nodes=1, hours=2, scenarios=["xid79_gpu_lost"])
    ((node, facts),) = truth["nodes"].items()
    lost = facts["faults"][0]["gpu"]
    links = tables["link_samples"]
    other = (lost + 2) % 8
    late = links["timestamp"] >= links["timestamp"].max() - pd.Timedelta("50min")
    down = (links["gpu"] == other) & (links["link"] == 2) & (links["link_type"] == "nvlink") & late
    links["link_state"] = links["link_state"].astype(str).where(~down, "inactive")
    source = TableSource({k: v for k, v in tables.items() if k != "events"},
                         platforms={node: facts["platform"]})
    d = diagnose(source, Request(node=node)).diagnosis
    assert d.ticket_priority is Priority.URGENT and not any(f.explains_slowdown for f in d.findings)
    assert d.localization is not None and d.localization.gpu == lost and d.isolated_component == f"GPU {lost}"
    assert d.repair_action == d.localization.action
    headline = next(c for c in candidates_for(d) if c.isolated)
    assert headline.kind is ComponentKind.GPU and headline.gpu == lost
    ticket = RulesDrafter().draft(d)
    assert ticket.candidate_id == headline.id and ticket.priority is d.ticket_priority
    assert ticket.priority is part_priority(d, headline.findings, headline=True)
    link = next(loc for loc in d.localizations if loc.gpu == other)
    assert part_priority(d, link.links, headline=False) is Priority.HIGH


def test_a_warning_link_that_explains_the_slowdown_does_not_make_a_down_one_urgent() -> None:
    """Synthetic seed 7's hpc-gpu-node-07 under tighter replay and CRC rules: GPU 5 NVLink 3 is inactive and its
    errors do not track job 4404's slowdown; GPU 7 NVLink 15 is only at a warning and does. The node read urgent
    (the slowdown counted through the warning link, the failing one through the down link), while every ticket of
    it said high: the node is now its most urgent part's priority, as its ticket is."""
    from diagnostics.service import Request, TableSource, diagnose
    from diagnostics.synth.fleet import build

    tables, truth = build(seed=7, nodes=30, hours=8)
    node = "hpc-gpu-node-07"
    mine = {k: v[v["node_id"].astype(str) == node] if "node_id" in v.columns else v for k, v in tables.items()}
    source = TableSource(mine, platforms={node: truth["nodes"][node]["platform"]})
    strict = load_thresholds().with_overrides({"nvlink_replay": 5000, "crc": 10000})
    d = diagnose(source, Request(node=node, thresholds=strict)).diagnosis
    assert d.degradation_pct is not None and d.degradation_pct >= 20
    assert any(f.explains_slowdown and f.severity is Severity.WARNING for f in d.findings)
    assert any(f.severity is Severity.DOWN and not f.explains_slowdown for f in d.findings)
    assert d.ticket_priority is Priority.HIGH
    assert RulesDrafter().draft(d).priority is d.ticket_priority
    for c in candidates_for(d):
        assert priority_rank(ticket_priority(d, c)) <= priority_rank(d.ticket_priority)


def test_a_part_that_only_warns_beside_a_failing_one_is_drafted_when_named() -> None:
    """Every degraded part of a summary has its Draft button; one that only warns, beside a failing one, was no
    candidate: its button answered "no such component among this node's candidates" (a rack's downstream GPUs,
    69 of 71 controls). Named, it is drafted as asked, and the isolated part stays the failing one."""
    d = _second_part(crossed=[_crossing("nvlink_replay", "replays", 420, 300, Severity.WARNING)],
                     severity=Severity.WARNING, worst_ratio=0.42)
    assert OTHER not in {c.component for c in candidates_for(d)}
    t = RulesDrafter().draft(d, component=OTHER)
    assert t.component == OTHER and t.priority is not Priority.URGENT
    assert RulesDrafter().draft(d).component == EXPLAINS
