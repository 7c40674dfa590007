"""The daily digest over a real store: new failing parts, the watch list, repairs verifying, maintenance."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from bot.cli import main
from bot.commands.output import INCOMPLETE
from bot.digest import SHOWN, Digest, NewOffender, build_digest, digest_lines, next_run
from bot.lifecycle import digest_of
from bot.mrkdwn import esc
from bot.nodes import StoreNodeSource
from bot.services import Services
from bot.storage import open_db
from bot.workflow.tracker import SqliteTracker
from diagnostics import InputError, load_thresholds
from diagnostics.service import Request, StoreSource, sweep
from diagnostics.store import Maintenance, open_store
from tests.bot.helpers import local_bot, lone_and_cut_store, slash
from tests.shared import copy_store

FLEET = Path(__file__).resolve().parents[2] / "fixtures" / "fleet"


@pytest.fixture
def store_dir(bundled_store: Path, tmp_path: Path) -> Path:
    """A copy per test: tickets and maintenance windows written by one test are not seen by another."""
    return copy_store(bundled_store, tmp_path / "store")


def _digest(folder: Path) -> Digest:
    return build_digest(StoreSource(folder), SqliteTracker(open_db(folder)), thresholds=load_thresholds())


def test_the_digest_names_new_parts_urgent_first_and_the_slow_failures_coming(store_dir: Path) -> None:
    d = _digest(store_dir)
    slugs = {(o.node_id, o.slug) for o in d.new}
    assert ("hpc-gpu-node-12", "gpu2-nvlink1") in slugs
    order = [o.priority for o in d.new]
    assert order == sorted(order, key=["urgent", "high", "medium", "low"].index)
    truth = json.loads((FLEET / "life" / "ground_truth.json").read_text())
    slow = {(n, v["component"]) for n, v in truth["nodes"].items() if v["scenario"] == "slow_degradation"}
    assert {(w.node_id, w.ref.slug) for w in d.watches} == slow
    assert d.verifying == [] and d.maintenance == [] and d.ticketed == 0
    lone = [n for n, v in json.loads((FLEET / "ground_truth.json").read_text())["nodes"].items()
            if v["scenario"] == "single_scrape"]
    assert lone and all(any(n in r for r in d.incomplete) for n in lone)  # the node holding one scrape


def test_a_part_the_slowdown_is_not_charged_to_is_listed_at_its_tickets_priority(
        store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """hpc-gpu-node-17's job is slowed by GPU 6's PCIe link; its inactive GPU 7 NVLink 9 is high (a down link),
    not the node's urgent, in the digest as in its ticket, which is charged none of the slowdown."""
    new = {(o.node_id, o.slug): o.priority for o in _digest(store_dir).new}
    assert new[("hpc-gpu-node-17", "gpu6-pcie")] == "urgent"
    assert new[("hpc-gpu-node-17", "gpu7-nvlink9")] == "high"
    for slug, priority in (("gpu7-nvlink9", "high"), ("gpu6-pcie", "urgent")):
        assert main(["ticket", "hpc-gpu-node-17", "--store", str(store_dir), "--link", slug, "--rules",
                     "--json"]) == 0
        ticket = json.loads(capsys.readouterr().out)
        assert ticket["priority"] == priority
        charged = ticket["estimated_cost"]["not_charged"]
        if slug == "gpu6-pcie":
            assert charged is None and "step time +50.7% against baseline" in ticket["summary"]
        else:
            assert "is charged to GPU 6 PCIe" in charged and "is charged to GPU 6 PCIe" in ticket["summary"]
            assert "step time +50.7%" not in ticket["summary"]


def test_a_ticketed_part_is_not_new_and_a_repaired_one_waits_for_verification(store_dir: Path) -> None:
    tracker = SqliteTracker(open_db(store_dir))
    filed = tracker.file(node_id="hpc-gpu-node-12", component="GPU 2 -> GPU 3 NVLink 1", slug="gpu2-nvlink1",
                         title="t", body="b", priority="urgent", actor="alice", evidence=[])
    before = _digest(store_dir)
    assert ("hpc-gpu-node-12", "gpu2-nvlink1") not in {(o.node_id, o.slug) for o in before.new}
    assert before.ticketed == 1
    tracker.report_repair(filed.ticket.id, actor="bob", note="reseated the bridge")
    after = _digest(store_dir)
    assert [t.id for t in after.verifying] == [filed.ticket.id]
    assert any(filed.ticket.id in line and "repaired" in line for line in digest_lines(after))


def test_a_node_in_maintenance_is_listed_not_paged(store_dir: Path) -> None:
    store = open_store(store_dir, create=False)
    end = store.newest()
    assert end is not None
    store.maintenance.set("hpc-gpu-node-07", start=end - timedelta(hours=2), span=timedelta(hours=6),
                          reason="swap GPU 4 riser", set_by="carol")
    d = _digest(store_dir)
    assert "hpc-gpu-node-07" not in {o.node_id for o in d.new}
    assert [w.node_id for w in d.maintenance] == ["hpc-gpu-node-07"]
    assert any("hpc-gpu-node-07" in line and "swap GPU 4 riser" in line for line in digest_lines(d))


def test_a_quiet_digest_says_nothing_is_new() -> None:
    lines = digest_lines(Digest(at=datetime(2026, 3, 1, 8, tzinfo=UTC)))
    assert lines[0] == "Fabric digest for 2026-03-01 08:00 UTC" and lines[1].startswith("Nothing new")


def test_a_list_cut_short_names_the_command_that_lists_every_one() -> None:
    at = datetime(2026, 3, 1, 8, tzinfo=UTC)
    nodes = [f"node-{n:02d}" for n in range(SHOWN + 3)]
    d = Digest(at=at, new=[NewOffender(n, "GPU 0 NVLink 1", "gpu0-nvlink1", "high", "replays") for n in nodes],
               maintenance=[Maintenance(n, at - timedelta(hours=1), at + timedelta(hours=1), "riser", "carol")
                            for n in nodes],
               not_watched=[f"{n}: one reading per link" for n in nodes], watch_judged=False)
    lines = digest_lines(d)
    for heading, where in (("New failing parts", "fabricbot digest --json"), ("Watch", "fabricbot watch"),
                           ("In maintenance", "fabricbot maintenance")):
        at_heading = next(i for i, line in enumerate(lines) if line.startswith(heading))
        assert f"… and 3 more (`{where}`)" in lines[at_heading:], (heading, lines)
    assert "... and 3 more" not in lines


def test_the_schedule_is_the_next_time_of_day_in_utc() -> None:
    now = datetime(2026, 3, 1, 7, 30, tzinfo=UTC)
    assert next_run(now, "08:00") == datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    assert next_run(now, "07:30") == datetime(2026, 3, 2, 7, 30, tzinfo=UTC)  # not now: tomorrow
    with pytest.raises(InputError, match="HH:MM"):
        next_run(now, "25:00")


def test_the_cli_prints_the_digest_and_its_json(store_dir: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    capsys.readouterr()
    # the bundled fleet holds a node of one reading and nodes too new for a trend: the digest says so, and its exit
    # status says it is not the whole fleet's, as `sweep` and `watch` of it do
    assert main(["digest", "--store", str(store_dir)]) == INCOMPLETE
    text = capsys.readouterr().out
    assert text.startswith("Fabric digest for ") and "Watch (3):" in text and "hpc-gpu-node-12" in text
    assert "Incomplete: 1 node holds one reading per link" in text
    assert main(["digest", "--store", str(store_dir), "--json"]) == INCOMPLETE
    data = json.loads(capsys.readouterr().out)
    assert len(data["watches"]) == 3 and any(o["node_id"] == "hpc-gpu-node-12" for o in data["new"])
    assert main(["digest"]) == 2  # no store named


def test_an_empty_store_s_digest_says_once_that_it_holds_nothing(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    open_store(tmp_path / "empty").db.close()
    capsys.readouterr()
    assert main(["digest", "--store", str(tmp_path / "empty")]) == INCOMPLETE  # an empty store is no all-clear
    said = capsys.readouterr()
    text = said.out
    assert text.count("holds no readings") == 1 and "Watch: cannot judge yet: the store holds no readings" in text
    assert "Incomplete: the source holds no link samples and no events" in text
    assert said.err.startswith("fabricbot: digest INCOMPLETE") and said.err.count("\n") == 1


def test_slack_says_the_incomplete_lines_the_cli_says(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A store with a node of one reading per link and a node whose part was cut after it was written: `fabricbot
    digest` and the signed `/fabric digest` (the scheduled post says the same) say the same digest, its
    "Incomplete" lines naming the part and the lone node, where Slack said none."""
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    store, part = lone_and_cut_store(tmp_path, cut=True)
    capsys.readouterr()
    assert main(["digest", "--store", str(store)]) == INCOMPLETE  # as `sweep` and `watch` of this store
    lines = capsys.readouterr().out.splitlines()
    assert main(["sweep", "--store", str(store)]) == main(["watch", "--store", str(store)]) == INCOMPLETE
    capsys.readouterr()
    assert main(["digest", "--store", str(store), "--json"]) == INCOMPLETE
    said = json.loads(capsys.readouterr().out)
    assert len(said["incomplete"]) == 2 and said["complete"] is False
    incomplete = [line for line in lines if line.startswith("Incomplete: ")]
    assert len(incomplete) == 2 and f"node-3 ({part}" in incomplete[0] and incomplete[1].endswith(": node-1")
    with local_bot(source=StoreNodeSource(store)) as local:
        said = slash(local, "digest")
    assert said == "\n".join([f"*{esc(lines[0])}*", *(esc(line) for line in lines[1:])])


DOWN_IS_MEDIUM = """
# the default policy, but a down link alone is medium, not high
[[priority]]
level = "urgent"
when = "failing"
min_degradation_pct = 20.0

[[priority]]
level = "urgent"
when = "gpu_lost"

[[priority]]
level = "high"
when = "failing"
min_degradation_pct = 5.0

[[priority]]
level = "medium"
when = "down"

[[priority]]
level = "medium"
when = "failing"

[[priority]]
level = "medium"
when = "warning"

[[priority]]
level = "low"
when = "none"
"""


def test_a_digest_under_a_user_policy_ranks_each_part_by_that_policy(
        store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """hpc-gpu-node-17's down GPU 7 NVLink 9 is high by the default policy; under a policy that puts a down link
    at medium, `fabricbot digest --thresholds` and the digest of a bot run with it (`/fabric digest`, the scheduled
    post) list it at medium, as its ticket would be filed, while the part its job's slowdown is charged to keeps the
    node's urgent; the part's ticket drafted under the policy has the priority the digest listed."""
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    policy = tmp_path / "policy.toml"
    policy.write_text(DOWN_IS_MEDIUM)
    default = {(o.node_id, o.slug): o.priority for o in _digest(store_dir).new}
    assert default[("hpc-gpu-node-17", "gpu7-nvlink9")] == "high"
    capsys.readouterr()
    main(["digest", "--store", str(store_dir), "--thresholds", str(policy), "--json"])
    new = {(o["node_id"], o["slug"]): o["priority"] for o in json.loads(capsys.readouterr().out)["new"]}
    assert new[("hpc-gpu-node-17", "gpu7-nvlink9")] == "medium"
    assert new[("hpc-gpu-node-17", "gpu6-pcie")] == "urgent"
    bot = SimpleNamespace(source=StoreNodeSource(store_dir, thresholds=load_thresholds(policy)),
                          tracker=SqliteTracker(open_db(store_dir)))
    posted = {(o.node_id, o.slug): o.priority for o in digest_of(cast(Services, bot)).new}
    assert posted == new
    for slug in ("gpu7-nvlink9", "gpu6-pcie"):  # the ticket drafted under the policy says what the digest said
        assert main(["ticket", "hpc-gpu-node-17", "--store", str(store_dir), "--link", slug, "--rules", "--json",
                     "--thresholds", str(policy)]) == 0
        assert json.loads(capsys.readouterr().out)["priority"] == new[("hpc-gpu-node-17", slug)]


def test_a_held_nodes_new_part_is_said_held_as_its_ticket_says() -> None:
    """A node whose input contradicts its platform (NVLink errors on a pcie-8gpu server) has its ticket held; the
    digest said its part bare 'urgent', as if someone should act on it now."""
    from bot.digest import assemble
    from tests.tickets.helpers import seed_diagnosis

    d = seed_diagnosis(platform="pcie-8gpu")
    digest = assemble(at=datetime(2026, 3, 2, tzinfo=UTC), diagnoses=[d], tracker=SqliteTracker(open_db(None)),
                      maintenance=[])
    line = next(line for line in digest_lines(digest) if d.node_id in line)
    assert d.held and line.split()[0] == "held" and d.priority_said() in line


def test_each_nodes_default_ticket_has_the_priority_the_digest_lists_its_part_at(
        store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The digest lists the part a node's default ticket is for (its headline) at that ticket's priority:
    hpc-gpu-node-05's Fabric Manager part (its state beside its inactive links) read medium in the digest, weighed
    over its links alone, and high in its ticket."""
    listed = {(o.node_id, o.slug): o.priority for o in _digest(store_dir).new}
    checked = []
    for node in sorted({n for n, _ in listed}):
        assert main(["ticket", node, "--store", str(store_dir), "--rules", "--json"]) == 0
        said = json.loads(capsys.readouterr().out)
        ticket = said[0] if isinstance(said, list) else said
        if (node, ticket["candidate_id"]) in listed:
            checked.append((node, ticket["candidate_id"], ticket["priority"]))
    assert ("hpc-gpu-node-05", "fabric-software", "high") in checked
    assert [(n, c, listed[(n, c)]) for n, c, _ in checked] == checked


def test_the_digest_lists_the_nodes_of_a_priority_in_the_order_the_sweep_does(store_dir: Path) -> None:
    """Within a priority the sweep ranks a GPU off the bus (down) before replays (failing); the digest listed its
    nodes by name, and a GPU off the bus fell into "... and 21 more" behind nodes of replays."""
    source = StoreSource(store_dir)
    swept = sweep(source, Request(thresholds=load_thresholds()))
    d = _digest(store_dir)
    nodes = list(dict.fromkeys(o.node_id for o in d.new))
    ranked = [n for n in swept.ranked() if n in nodes]
    for priority in ("urgent", "high", "medium", "low"):
        mine = list(dict.fromkeys(o.node_id for o in d.new if o.priority == priority))
        assert mine == [n for n in ranked if n in mine], priority
    urgent = [o for o in d.new if o.priority == "urgent"]
    assert urgent and urgent[0].node_id == swept.ranked()[0]
