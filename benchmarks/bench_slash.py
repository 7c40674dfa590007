"""Slack latency through the local transport: `/fabric <node>` -> ack, summary posted, PNG uploaded;
and a "Draft ticket" click -> preview posted with the rules drafter; then the same under load: `--in-flight` slow
drafts (`--draft-seconds` each, as a Claude run with a few tool calls takes) running while `--concurrent` commands
arrive at once.

Budgets: ack under 200 ms (Slack gives 3 s), p95 from the command to the posted result under 1.5 s; from a
1,024-node store (`--store DIR`, e.g. the one `bench_store_window.py --data DIR` builds), the summary p95 under
500 ms; with 10 drafts of 8 s in flight, 20 commands at once: every ack under 1 s, summary p95 under 3 s. Runs the
real app over HTTP with signed requests against the mock Slack server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bot.audit import AuditLog
from bot.drafting import render_png
from bot.nodes import NodeSource, SnapshotNodeSource, StoreNodeSource, TableNodeSource
from bot.settings import Settings, default_analysis_processes
from bot.storage import open_db
from bot.transport.local import LocalSlack
from bot.transport.mock_slack import MockSlack
from bot.workflow.tracker import SqliteTracker
from diagnostics import Diagnosis
from diagnostics.synth.fleet import build
from diagnostics.tickets import RepairTicket, RulesDrafter

ROOT = Path(__file__).resolve().parent.parent
CHANNEL = "CBENCH"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def line(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"  {name:<28} p50 {statistics.median(ms):7.1f} ms   p95 {pct(ms, 0.95):7.1f} ms   "
            f"max {max(ms):7.1f} ms   (n={len(ms)})")


def _uploaded_in(slack: MockSlack, thread: str) -> list[Any]:
    return [c for c in slack.calls_to("files.completeUploadExternal") if c.params.get("thread_ts") == thread]


def run(source: NodeSource, nodes: list[str], commands: int, clicks: int, *,
        processes: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ack": [], "summary posted": [], "png uploaded": [], "draft ack": [],
                                   "\"Drafting...\" posted": [], "draft preview shown": []}
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp))
        slack = MockSlack()
        settings = Settings(drafts_per_minute=10_000, analysis_processes=processes)
        with LocalSlack(settings=settings, source=source, drafter=RulesDrafter(), tracker=SqliteTracker(db),
                        audit=AuditLog(db), renderer=render_png, slack=slack) as local:
            source.workers_serving(timeout=300)  # the workers start in the background: timed once they serve
            local.injector.command(nodes[0], user="UWARM", channel=CHANNEL)  # warm-up: imports, caches
            slack.wait_for(lambda s: len(s.calls_to("files.completeUploadExternal")) == 1, timeout=60)
            summaries = []
            for i in range(commands):
                posts = len(slack.calls_to("chat.postMessage"))
                start = time.monotonic()
                sent = local.injector.command(nodes[i % len(nodes)], user="UBENCH", channel=CHANNEL)
                out["ack"].append(sent.seconds)
                slack.wait_for(lambda s, n=posts: len(s.calls_to("chat.postMessage")) > n, timeout=60)
                out["summary posted"].append(slack.calls_to("chat.postMessage")[posts].at - start)
                summary = next(m for m in reversed(slack.messages) if m.thread_ts is None and not m.files)
                # its first picture in its thread (a node whose job has a history gets a second, the correlation)
                slack.wait_for(lambda s, ts=summary.ts: _uploaded_in(s, ts), timeout=60)
                out["png uploaded"].append(_uploaded_in(slack, summary.ts)[0].at - start)
                summaries.append(summary)
            faulty = [m for m in summaries if any(b["type"] == "actions" for b in m.blocks)]
            for i in range(clicks if faulty else 0):
                summary = faulty[i % len(faulty)]
                button = next(e for b in summary.blocks if b["type"] == "actions" for e in b["elements"])
                posts, edits = len(slack.calls_to("chat.postMessage")), len(slack.calls_to("chat.update"))
                start = time.monotonic()
                sent = local.injector.action(button, user="UBENCH", channel=CHANNEL, message_ts=summary.ts)
                out["draft ack"].append(sent.seconds)
                slack.wait_for(lambda s, n=edits: len(s.calls_to("chat.update")) > n, timeout=60)
                out["\"Drafting...\" posted"].append(slack.calls_to("chat.postMessage")[posts].at - start)
                out["draft preview shown"].append(slack.calls_to("chat.update")[edits].at - start)
    return out


class SlowDrafter(RulesDrafter):
    """The rules drafter taking `delay` seconds, as a Claude run does."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def draft(self, diagnosis: Diagnosis, **kwargs: Any) -> RepairTicket:
        time.sleep(self.delay)
        return super().draft(diagnosis, **kwargs)


def run_loaded(source: NodeSource, nodes: list[str], *, in_flight: int, draft_seconds: float, concurrent: int,
               rounds: int, processes: int) -> dict[str, list[float]]:
    """Each round: `in_flight` drafts clicked and running, then `concurrent` commands sent at once."""
    out: dict[str, list[float]] = {"draft click ack": [], "command ack": [], "summary posted": []}
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp))
        slack = MockSlack()
        settings = Settings(drafts_per_minute=10_000, draft_workers=max(in_flight, 1), analysis_processes=processes)
        with LocalSlack(settings=settings, source=source, drafter=SlowDrafter(draft_seconds),
                        tracker=SqliteTracker(db), audit=AuditLog(db), renderer=render_png, slack=slack) as local:
            source.workers_serving(timeout=300)
            def top_level() -> list[Any]:
                return [c for c in slack.calls_to("chat.postMessage") if not c.params.get("thread_ts")]

            def summaries() -> list[Any]:
                return [m for m in list(slack.messages) if m.thread_ts is None and m.ephemeral_to is None
                        and not m.files and m.user.startswith("UFABRICBOT")]

            acks: list[float] = []
            lock = threading.Lock()

            def command(node: str) -> None:
                sent = local.injector.command(node, user="UBENCH", channel=CHANNEL)
                with lock:
                    acks.append(sent.seconds)

            for _ in range(rounds):
                faulty = []
                for _ in range(in_flight):  # fresh summaries to click (a button drafts once while it runs)
                    n = len(top_level())
                    local.injector.command(nodes[0], user="UBENCH", channel=CHANNEL)
                    slack.wait_for(lambda s, n=n: len(top_level()) > n, timeout=60)
                    faulty.append(summaries()[-1])
                edits = len(slack.calls_to("chat.update"))
                for summary in faulty:
                    button = next(e for b in summary.blocks if b["type"] == "actions" for e in b["elements"])
                    out["draft click ack"].append(local.injector.action(button, user="UBENCH", channel=CHANNEL,
                                                                        message_ts=summary.ts).seconds)
                before = len(top_level())
                threads = [threading.Thread(target=command, args=(nodes[i % len(nodes)],)) for i in range(concurrent)]
                start = time.monotonic()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                slack.wait_for(lambda s, n=before: len(top_level()) >= n + concurrent, timeout=120)
                out["summary posted"].extend(c.at - start for c in top_level()[before:before + concurrent])
                slack.wait_for(lambda s, n=edits: len(s.calls_to("chat.update")) >= n + in_flight,
                               timeout=draft_seconds * 4 + 60)  # the drafts end before the next round
            out["command ack"] = acks
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--store", help="also a telemetry store (read per request, as the running bot does)")
    parser.add_argument("--in-flight", type=int, default=10, help="slow drafts running during the loaded rounds")
    parser.add_argument("--draft-seconds", type=float, default=8.0)
    parser.add_argument("--concurrent", type=int, default=20, help="commands sent at once in each loaded round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst-nodes", type=int, default=2,
                        help="how many different nodes the commands sent at once name (a node asked again while it "
                             "is being analysed shares that analysis)")
    parser.add_argument("--analysis-processes", type=int, default=default_analysis_processes(),
                        help="worker processes for node and job analyses (1: the bot's own process), as "
                             "FABRICBOT_ANALYSIS_PROCESSES sets them; default: the served bot's, one per core")
    args = parser.parse_args()
    seeds = SnapshotNodeSource.from_files([ROOT / "fixtures" / "seed_examples.json"])
    tables, truth = build(seed=0)
    fleet = TableNodeSource(tables, {n: v["platform"] for n, v in truth["nodes"].items()})
    cases = [("seed snapshots (2 nodes)", seeds, seeds.node_ids()),
             (f"synthetic fleet ({len(fleet.node_ids())} nodes x 8 h, analyze_tables)", fleet,
              ["hpc-gpu-node-12", "hpc-gpu-node-03"])]
    if args.store:
        stored = StoreNodeSource(args.store)
        names = stored.node_ids()
        cases.append((f"store {args.store} ({len(names)} nodes, read per request)", stored,
                      [names[i] for i in range(0, len(names), max(1, len(names) // 10))]))
    print(f"/fabric through the local transport, analyses in {args.analysis_processes} worker process(es), "
          f"{args.commands} commands and {args.clicks} draft clicks each, one at a time (budgets: ack < 200 ms, p95 "
          "command -> posted result < 1.5 s)")
    for name, source, nodes in cases:
        result = run(source, nodes, args.commands, args.clicks, processes=args.analysis_processes)
        alone = []
        for i in range(10):  # the same diagnoses without Slack, to tell the analysis from the bot
            start = time.monotonic()
            source.diagnose(nodes[i % len(nodes)])
            alone.append(time.monotonic() - start)
        result["analysis alone (no Slack)"] = alone
        print(name)
        for key, values in result.items():
            if values:
                print(line(key, values))
    print(f"under load: {args.in_flight} drafts of {args.draft_seconds:g} s in flight, {args.concurrent} commands at "
          f"once naming {args.burst_nodes} node(s), {args.rounds} rounds (budgets: every ack < 1 s, summary p95 < 3 s);"
          " load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    burst = ["hpc-gpu-node-12", "hpc-gpu-node-03",
             *[n for n in fleet.node_ids() if n not in ("hpc-gpu-node-12", "hpc-gpu-node-03")]][:args.burst_nodes]
    loaded = run_loaded(fleet, burst, in_flight=args.in_flight,
                        draft_seconds=args.draft_seconds, concurrent=args.concurrent, rounds=args.rounds,
                        processes=args.analysis_processes)
    print(f"synthetic fleet ({len(fleet.node_ids())} nodes x 8 h, analyze_tables)")
    for key, values in loaded.items():
        print(line(key, values))


if __name__ == "__main__":
    main()
