"""The scripted on-call conversation: the real app on the local transport, recorded as a transcript.

A faulty node, a healthy node, a job, a click, an approval, duplicate clicks and a mention, against the
bundled synthetic fleet (which holds the seed nodes and job 4411); then the alert channel: the watch loop's first
pass, a fault arriving on its own, a driver rollout on 40 more nodes collapsed into one incident and acknowledged,
and an Alertmanager webhook answered with the node's diagnosis, then resolved. Times come from a stepping clock (the
watch loop's passes from the readings they judge) and Slack timestamps from the mock's counter, so a rerun writes
the same files.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
from starlette.applications import Starlette

from diagnostics import synth
from diagnostics.analysis import Step
from diagnostics.service import Request, TableSource
from diagnostics.synth import build_life, build_storm, load_life, storm_inventory

from .alertmanager import PATH as AM_PATH
from .alertmanager import Enricher, route
from .alerts import AlertLoop
from .drafting import Renderer, render_png
from .nodes import TableNodeSource
from .runtime import Runtime, build_runtime
from .settings import Settings
from .transcript import Transcript
from .transport.local import LocalSlack
from .transport.loopback import LoopbackServer
from .transport.mock_slack import Message, MockSlack
from .workflow.tracker import SqliteTracker

CHANNEL = "COPS"
ALERTS = "CALERTS"  # the alert channel the watch loop and Alertmanager post to
ONCALL = "SFABRICOPS"  # mentioned on an urgent alert
STORM_END = "2026-09-17T08:00:00Z"  # the storm's readings end with the fleet's; its rollout lands at 07:40
PEOPLE = {"UALICE": "alice (on-call)", "UBOB": "bob (fabric lead)", "UCAROL": "carol (SRE)"}
GROUPS = {"SFABRICOPS": ["UALICE", "UBOB"]}
START = datetime(2026, 9, 17, 8, 0, tzinfo=UTC)
WAIT_S = 60.0


class StepClock:
    """A clock that moves on a fixed step each time it is read: deterministic times in order."""

    def __init__(self, start: datetime = START, step: timedelta = timedelta(seconds=3)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now

    def text(self) -> str:
        return self().isoformat(timespec="seconds")


def bundled(folder: Path | None = None) -> tuple[TableNodeSource, dict[str, Any]]:
    """The synthetic fleet (seed 0) with its life nodes (four days of restarts, slow failures and repairs), and
    the life nodes' truth: from `folder` when one was written, else generated in memory."""
    if folder is not None and folder.is_dir():
        tables, inventory = synth.load(folder)
        life = load_life(folder)
        lived, lives, truth = (life[0], life[1], life[2]) if life is not None else ({}, {}, {"nodes": {}})
    else:
        tables, fleet_truth = synth.build(seed=0)
        inventory = {n: v["platform"] for n, v in fleet_truth["nodes"].items()}
        lived, truth = build_life(seed=0, end=pd.Timestamp(fleet_truth["end"]))
        lives = {n: v["platform"] for n, v in truth["nodes"].items()}
    joined = {k: pd.concat([v, lived[k]], ignore_index=True) if k in lived else v for k, v in tables.items()}
    return TableNodeSource(joined, {**inventory, **lives}), truth["nodes"]


def bundled_fleet(folder: Path | None = None) -> TableNodeSource:
    """The bundled fleet alone (see `bundled`)."""
    return bundled(folder)[0]


class Replay(TableNodeSource):
    """The fleet as its readings arrive: every question is answered as of `until` (None: its newest reading), so
    the watch loop's passes see a fault begin, then a rollout, in the order they happened."""

    until: datetime | None = None

    def request(self, *, node: str | None = None, job: str | None = None, rack: str | None = None,
                window_hours: float | None = None) -> Request:
        return replace(super().request(node=node, job=job, rack=rack, window_hours=window_hours), end=self.until)


def watched_fleet(fleet: TableNodeSource) -> Replay:
    """The bundled fleet and, beside it, the storm's nodes (a driver rollout at 07:40 turning 40 nodes' Xid 74 at
    once; their inventory names each node's driver), for the alert channel's scenes."""
    tables = fleet.source
    assert isinstance(tables, TableSource)
    storm, truth = build_storm(seed=0, end=pd.Timestamp(STORM_END))
    joined = {k: pd.concat([v, storm[k]], ignore_index=True) if k in storm else v for k, v in tables.tables.items()}
    joined["nodes"] = storm_inventory(truth)
    return Replay(joined, {**tables.platforms(), **{n: v["platform"] for n, v in truth["nodes"].items()}})


def _fixed(stamp: str) -> Callable[[], str]:
    """A clock stopped at `stamp`."""
    return lambda: stamp


def earlier_shift(rt: Runtime, fleet: TableNodeSource, life: dict[str, Any]) -> list[str]:
    """Tickets an earlier shift filed on the life nodes whose parts were repaired 30 hours before the demo, each
    reported repaired then by a technician: one repair held, one did not. Returns what the transcript says."""
    said = []
    for node, t in sorted(life.items()):
        if t["scenario"] not in ("repair_holds", "repair_fails"):
            continue
        finding = next(f for f in fleet.diagnose(node).findings if f.ref.slug == t["component"])
        when = datetime.fromisoformat(t["onset"]) + timedelta(hours=2)  # the night shift filed it then
        night = SqliteTracker(rt.tracker.db, clock=_fixed(when.isoformat(timespec="seconds")))
        filed = night.file(node_id=node, component=finding.component, slug=t["component"],
                           title=f"{node}: {finding.component}", body=f"# {node}: {finding.component}",
                           priority="high", actor="UDAVE", evidence=[], parts=[t["component"]])
        repaired = datetime.fromisoformat(t["repaired_at"])
        at = repaired.isoformat(timespec="seconds")  # reported when done, on that day's clock
        SqliteTracker(rt.tracker.db, clock=_fixed(at)).report_repair(filed.ticket.id, actor="UDAVE", at=at,
                                                                      note="reseated the NVLink cable")
        subject = f"{node} / {finding.component}"
        rt.audit.record("filing", actor="fabricbot", subject=subject, at=when, detail={
            "ticket": filed.ticket.id, "created": True, "approved_by": "UDAVE", "shift": "night"})
        rt.audit.record("repair", actor="UDAVE", subject=subject, at=repaired, detail={
            "ticket": filed.ticket.id, "repaired_at": repaired.isoformat(timespec="seconds")})
        said.append(f"{filed.ticket.id} {node} / {finding.component}: reported repaired at "
                    f"{repaired:%Y-%m-%d %H:%M} UTC by dave (night shift)")
    return said


@dataclass
class DemoResult:
    transcript: Path
    action_log: Path
    images: list[Path]
    tickets: list[str]


class Script:
    """Steps of the conversation; each waits until the bot has finished answering."""

    def __init__(self, local: LocalSlack, transcript: Transcript) -> None:
        self.local = local
        self.slack: MockSlack = local.slack
        self.t = transcript

    def _wait(self, done: Callable[[MockSlack], bool]) -> None:
        if not self.slack.wait_for(done, timeout=WAIT_S):
            raise RuntimeError("the bot did not answer in time")

    def _top(self) -> list[Message]:
        return [m for m in self.slack.messages if m.user == "UFABRICBOT" and m.thread_ts is None
                and m.ephemeral_to is None]

    def command(self, user: str, text: str, *, expect_post: bool = True, pictures: int = 1) -> Message | None:
        before, uploads = len(self._top()), len(self.slack.calls_to("files.completeUploadExternal"))
        self.t.person(user, f"`/fabric {text}`", " (slash command)")
        sent = self.local.injector.command(text, user=user, channel=CHANNEL)
        self.t.note(f"fabricbot acknowledged at once, only to {PEOPLE[user]}: {sent.body}")
        if not expect_post:
            self._wait(lambda s: bool(s.calls_to("response_url")))
            self.t.collect()
            return None
        self._wait(lambda s: len(self._top()) > before)
        self._wait(lambda s: len(s.calls_to("files.completeUploadExternal")) >= uploads + pictures)
        self.t.collect()
        return self._top()[-1]

    def click(self, user: str, message: Message, label: str, done: Callable[[MockSlack], bool], *,
              pictures: int = 0) -> None:
        element = next(e for b in message.blocks if b["type"] == "actions" for e in b["elements"]
                       if e.get("text", {}).get("text", "").startswith(label))
        uploads = len(self.slack.calls_to("files.completeUploadExternal"))
        known = {m.ts for m in self.slack.messages}
        self.t.person(user, f"clicks `[{element['text']['text']}]`")
        self.local.injector.action(element, user=user, channel=CHANNEL, message_ts=message.ts,
                                   thread_ts=message.thread_ts)
        self._wait(done)
        snippets = sum(1 for m in list(self.slack.messages)  # a long ticket's whole text, beside its preview
                       if m.ts not in known and "the whole ticket is in the snippet" in m.shown_blocks)
        self._wait(lambda s: len(s.calls_to("files.completeUploadExternal")) >= uploads + pictures + snippets)
        self.t.collect()

    def alert_pass(self, loop: AlertLoop, source: Replay, until: datetime,
                   pictures: Callable[[str], int]) -> None:
        """One pass of the watch loop with the readings up to `until`, as the loop runs it every 5 minutes; each
        new alert's pictures (`pictures(node)`) waited for in its thread."""
        source.until = until
        uploads = len(self.slack.calls_to("files.completeUploadExternal"))
        self.t.note(f"The watch loop's pass with the readings up to {until:%H:%M} UTC, posting to #alerts:")
        done = loop.run_once()
        posted = sum(pictures(d.alert.node_id) for d in done.decisions if d.step is Step.NEW)
        self._wait(lambda s: len(s.calls_to("files.completeUploadExternal")) >= uploads + posted)
        self.t.collect()

    def alertmanager(self, url: str, body: dict[str, Any], token: str, *, pictures: int = 0) -> None:
        """Alertmanager's webhook, sent as Alertmanager sends it (payload version 4, the bearer token)."""
        uploads = len(self.slack.calls_to("files.completeUploadExternal"))
        alert = body["alerts"][0]
        self.t.note(f"Alertmanager sends a {body['status']} webhook: {alert['labels']['alertname']} on "
                    f"{alert['labels']['Hostname']} GPU {alert['labels']['gpu']}")
        answer = httpx.post(url, json=body, headers={"authorization": f"Bearer {token}"}, timeout=WAIT_S)
        answer.raise_for_status()
        self._wait(lambda s: len(s.calls_to("files.completeUploadExternal")) >= uploads + pictures)
        self.t.collect()

    def mention(self, user: str, text: str) -> None:
        self.t.person(user, f"@fabricbot {text}")
        self.local.injector.mention(text, user=user, channel=CHANNEL)
        asked = self.slack.messages[-1].ts
        self._wait(lambda s: any(m.thread_ts == asked and m.user == "UFABRICBOT" for m in s.messages))
        self.t.collect()


def _thread_messages(slack: MockSlack, ts: str) -> list[Message]:
    return [m for m in slack.messages if m.thread_ts == ts and m.user == "UFABRICBOT" and not m.files
            and m.ephemeral_to is None]


def _answered(slack: MockSlack, ts: str, count: int) -> bool:
    """The thread holds `count` bot messages and the last is final ("Drafting…" replaced)."""
    found = _thread_messages(slack, ts)
    return len(found) >= count and found[count - 1].edits > 0


def _ephemerals(slack: MockSlack) -> int:
    return sum(1 for m in slack.messages if m.ephemeral_to is not None)


def _planned_work(source: TableNodeSource) -> tuple[str, str]:
    """The node the demo puts in maintenance (the first failing one after the seed nodes' faulty one), and the
    part its repair replaces."""
    for node in source.node_ids():
        if node.startswith("hpc-gpu-node-") and node != "hpc-gpu-node-12":
            d = source.diagnose(node)
            if d.fault_detected and d.localization is not None:
                return node, d.isolated_component
    raise RuntimeError("the fleet holds no second failing node to put in maintenance")


def alerts_scenes(s: Script, local: LocalSlack, fleet: TableNodeSource, renderer: Renderer | None) -> None:
    """The alert channel: the watch's first pass, a fault arriving on its own, a driver rollout collapsed into one
    incident and acknowledged, and an Alertmanager alert answered with the node's diagnosis, then resolved."""
    assert local.app is not None
    services, t = local.app.services, s.t
    watched = watched_fleet(fleet)
    services.source = watched  # the readings now arrive: each pass sees them up to its time
    loop = AlertLoop(services, local.app.client, channel=ALERTS, every_s=300, oncall=ONCALL,
                     clock=lambda: watched.until or START)  # each pass at the time of its readings

    def pictures(node: str) -> int:
        """The node picture, and the correlation picture when its job has a history, as of the pass."""
        return 1 + (watched.diagnose(node).evidence is not None) if renderer is not None else 0

    def topology(node: str) -> int:
        """An alert's picture: the node's topology (its diagnosis is the sweep's, which draws no job history)."""
        return int(renderer is not None)

    t.heading("16. The watch begins: what is already failing, said once")
    s.alert_pass(loop, watched, datetime(2026, 9, 17, 7, 15, tzinfo=UTC), topology)
    t.heading("17. An alert arrives on its own")
    s.alert_pass(loop, watched, datetime(2026, 9, 17, 7, 35, tzinfo=UTC), topology)
    t.heading("18. A driver rollout: 40 nodes at once are one incident")
    s.alert_pass(loop, watched, datetime(2026, 9, 17, 8, 0, tzinfo=UTC), topology)
    incident = next(m for m in reversed(s.slack.messages) if m.channel == ALERTS and "*Incident:" in m.text)
    s.click("UALICE", incident, "Acknowledge incident", lambda m: "Acknowledged by" in (m.find(incident.ts) or
                                                                                         incident).text)
    t.heading("19. Alertmanager's alert, answered with the node's diagnosis")
    token = "demo-alertmanager-token"
    with LoopbackServer(Starlette(routes=[route(Enricher(services, local.app.client, ALERTS), token)])) as server:
        url = server.url + AM_PATH
        firing = alertmanager_body("firing")
        s.alertmanager(url, firing, token, pictures=pictures("hpc-gpu-node-12"))
        s.alertmanager(url, alertmanager_body("resolved"), token)


def alertmanager_body(status: str) -> dict[str, Any]:
    """The webhook Alertmanager sends for `fabricbot rules`' replay alert on hpc-gpu-node-12 (payload version 4)."""
    alert = {"status": status, "labels": {"alertname": "FabricbotNvlinkReplay", "Hostname": "hpc-gpu-node-12",
                                          "gpu": "2", "nvlink": "1", "severity": "failing",
                                          "fabricbot_rule": "nvlink_replay", "link_type": "nvlink"},
             "annotations": {"summary": "hpc-gpu-node-12 GPU 2 NVLink 1: replay at 8961 per hour (above 1000)"},
             "startsAt": "2026-09-17T07:05:00Z",
             "endsAt": "2026-09-17T08:40:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
             "generatorURL": "http://prometheus:9090/graph", "fingerprint": "5bb3b8258815fa7d"}
    return {"version": "4", "groupKey": '{}:{alertname="FabricbotNvlinkReplay", Hostname="hpc-gpu-node-12"}',
            "truncatedAlerts": 0, "status": status, "receiver": "fabricbot",
            "groupLabels": {"alertname": "FabricbotNvlinkReplay", "Hostname": "hpc-gpu-node-12"},
            "commonLabels": alert["labels"], "commonAnnotations": alert["annotations"],
            "externalURL": "http://alertmanager:9093", "alerts": [alert]}


def run_demo(out: Path, action_log: Path, *, fleet: TableNodeSource | None = None,
             life: dict[str, Any] | None = None, renderer: Renderer | None = render_png) -> DemoResult:
    """Run the conversation and write `out/demo.md`, its PNGs under `out/demo/`, and `action_log`. `life`: the life
    nodes' truth, for the tickets an earlier shift left verifying (none without it)."""
    clock = StepClock()
    settings = Settings(filing_usergroups=frozenset(GROUPS))
    images = out / "demo"
    for old in images.glob("*.png") if images.is_dir() else []:
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        if fleet is None:
            fleet, life = bundled()
        source = fleet

        def pictures(node: str | None = None, job: str | None = None) -> int:
            """The topology, and the correlation picture when the node's job has a history."""
            d = source.explain_job(job) if job else source.diagnose(node or "")
            return 1 + (d.evidence is not None) if renderer is not None else 0

        rt = build_runtime(settings, source=source, db_path=Path(tmp), clock=clock,
                           tracker_clock=clock.text)
        earlier = earlier_shift(rt, source, life or {})
        slack = MockSlack(users={u: n.split(" ")[0] for u, n in PEOPLE.items()}, usergroups=GROUPS)
        with LocalSlack(settings=settings, slack=slack, clock=clock, **rt.deps(renderer)) as local:
            t = Transcript(slack, {**{u: n.split(" ")[0] for u, n in PEOPLE.items()}, ONCALL: "fabric-oncall"},
                           images, "demo")
            s = Script(local, t)
            t.heading("1. A faulty node")
            faulty = s.command("UALICE", "hpc-gpu-node-12", pictures=pictures("hpc-gpu-node-12"))
            assert faulty is not None
            t.heading("2. A healthy node")
            s.command("UALICE", "hpc-gpu-node-03", pictures=pictures("hpc-gpu-node-03"))
            t.heading("3. Which node and link explain job 4411?")
            s.command("UBOB", "job 4411", pictures=pictures(job="4411"))
            t.heading("4. The fleet at a glance")
            s.command("UBOB", "fleet", pictures=1 if renderer is not None else 0)
            t.heading("5. A typo gets close matches")
            s.command("UCAROL", "hpc-gpu-node12", expect_post=False)
            t.heading("6. Draft the ticket")
            evidence = renderer is not None and source.diagnose("hpc-gpu-node-12").evidence is not None
            s.click("UALICE", faulty, "Draft ticket", lambda m: _answered(m, faulty.ts, 1), pictures=int(evidence))
            seen = copy.deepcopy(_thread_messages(slack, faulty.ts)[0])  # the preview as people see it
            live = slack.find(seen.ts)
            ephemerals = _ephemerals(slack)
            t.heading("7. Only the fabric on-call group may file")
            s.click("UCAROL", seen, "File ticket", lambda m: _ephemerals(m) > ephemerals)
            t.heading("8. Approval files the ticket")
            edits = live.edits if live is not None else 0
            s.click("UBOB", seen, "File ticket", lambda m: live is not None and live.edits > edits)
            t.heading("9. Duplicate clicks")
            ephemerals = _ephemerals(slack)
            s.click("UALICE", seen, "File ticket", lambda m: _ephemerals(m) > ephemerals)
            s.click("UCAROL", faulty, "Draft ticket", lambda m: _answered(m, faulty.ts, 2))
            t.heading("10. A question in the channel")
            s.mention("UCAROL", "why is job 4411 slow?")
            t.heading("11. Planned work pages nobody")
            planned, part = _planned_work(source)
            s.command("UBOB", f'maintenance {planned} 2h "replace {part}"', pictures=0)
            s.command("UALICE", planned, pictures=pictures(planned))
            t.heading("12. Early warning: what is climbing")
            s.command("UALICE", "watch", pictures=0)
            t.heading("13. The repair is done")
            filed = slack.find(seen.ts)
            assert filed is not None
            replies = len(_thread_messages(slack, faulty.ts))
            s.click("UALICE", filed, "Report repair", lambda m: len(_thread_messages(m, faulty.ts)) > replies)
            t.heading("14. Repairs verified")
            if earlier:
                t.note("Before this shift, the night shift had filed and reported repaired: " + "; ".join(earlier))
            s.command("UBOB", "verify", pictures=0)
            t.heading("15. The daily digest")
            s.command("UBOB", "digest", pictures=0)
            alerts_scenes(s, local, source, renderer)
        tickets = [f"{tk.id} {tk.node_id} / {tk.component} ({tk.status}, filed by {tk.filed_by})"
                   for tk in rt.tracker.tickets()]
        action_log.write_text(rt.audit.to_markdown("fabricbot action log (from `fabricbot demo`)"), encoding="utf-8")
    intro = ("A scripted on-call conversation, run by `fabricbot demo` against the local mock Slack server and the "
             "bundled synthetic fleet (seed 0; it holds `hpc-gpu-node-12` with a failing NVLink from GPU 2 and "
             "`hpc-gpu-node-03`, healthy); the alert channel's scenes add a driver rollout on 40 nodes beside it. "
             "Every request was signed and sent to the real app over HTTP, the Alertmanager webhook with its "
             "bearer token. "
             "Tickets filed in the mock tracker:\n\n" + "\n".join(f"- {x}" for x in tickets))
    out.mkdir(parents=True, exist_ok=True)
    path = out / "demo.md"
    path.write_text(t.text("fabricbot demo: an on-call conversation", intro), encoding="utf-8")
    return DemoResult(path, action_log, t.pictures, tickets)
