"""Subcommands of the `fabricbot` command line."""

from __future__ import annotations

# One module per subcommand (`<name>.py`, defining `register(subparsers)` that sets `func`), with its one-line help:
# here, for `fabricbot --help` and the module's own parser alike. Only the module of the command being run is
# imported, so `fabricbot analyze` never pays for the Slack, model and plotting libraries.
SUMMARIES: dict[str, str] = {
    "analyze": "diagnose interconnect snapshots or counter histories",
    "ingest": "read telemetry files (dcgm-exporter, tables, snapshots, shell outputs)",
    "compact": "merge a store's days held in many small parts (a store fed scrape by scrape) into one part each",
    "render": "draw a node's NVLink/NVSwitch/PCIe fabric with its degraded links",
    "synth": "write a synthetic fleet with labelled faults and ground truth",
    "eval": "score detection, localization, headline, verdict, priority, part fit and caveats per scenario on a "
            "synthetic fleet",
    "ticket": "draft the repair ticket for the isolated component (or one link)",
    "sweep": "find offending links fleet-wide: the local store, or Prometheus (push-down)",
    "rules": "write a Prometheus rules file (recording and alerting rules) from the thresholds",
    "serve": "run the Slack bot (Socket Mode, HTTP, or the local mock without a token)",
    "demo": "run a scripted Slack conversation locally; write transcripts/demo.md",
    "audit": "print the audit trail (JSON lines, or Markdown with --markdown)",
    "tickets": "list tickets, report a repair, verify repaired parts",
    "watch": "links trending toward a failing threshold, with the projected time",
    "maintenance": "planned work on a node: no page and no ticket from it for a while",
    "digest": "the daily digest: new failing parts, watch list, repairs verifying, maintenance",
    "console": "run the ops channel and a clickable topology in your browser, on loopback (no Slack needed)",
}
