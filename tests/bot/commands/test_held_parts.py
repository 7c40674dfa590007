"""Held is a part's, not the node's: on a node stated pcie-8gpu, its NVLink part's plan does not fit the platform (its
ticket is held, do not drain) while its GPU's PCIe part's does (its ticket stands). Every door that says a part's
priority says the NVLink part held and the PCIe part at its plain level, as each part's ticket does; the doors gave
the held part a bare level whenever the other part kept the node from being held as a whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from diagnostics import Diagnosis
from diagnostics import format as fmt
from tests.bot.commands.conftest import Cli
from tests.tickets.helpers import SEED_INPUT

# GPU 5's PCIe replays just over their limit (the NVLink part, which explains the slowdown, heads the node), or far
# over it (the PCIe part heads it)
_AT = datetime(2026, 3, 2, tzinfo=UTC)
PCIE_REPLAYS = {"nvlink-headline": 1_500, "pcie-headline": 20_000}


def _mixed(tmp_path: Path, replays: int) -> Path:
    path = tmp_path / "mixed.json"
    pcie = {"gpu_src": 5, "link_id": "pcie", "crc_errors": 0, "replay_count": replays}
    path.write_text(json.dumps(SEED_INPUT | {"platform": "pcie-8gpu",
                                             "fabric_errors": [*SEED_INPUT["fabric_errors"], pcie]}))
    return path


def _diagnosis(cli: Cli, path: Path) -> Diagnosis:
    code, out, err = cli("analyze", str(path), "--json")
    assert code in (0, 1), err
    return Diagnosis.model_validate_json(out)


def _tickets(cli: Cli, path: Path, d: Diagnosis) -> dict[str, dict[str, Any]]:
    """Each suspect's rules ticket as JSON, by its slug."""
    out: dict[str, dict[str, Any]] = {}
    for loc in d.localizations:
        code, said, err = cli("ticket", str(path), "--link", loc.ref.slug, "--rules", "--json")
        assert code == 0, err
        out[loc.ref.slug] = json.loads(said)
    return out


def _ticket_said(ticket: dict[str, Any]) -> str:
    return fmt.priority(ticket["priority"], held=ticket["held"] is not None)


def _digest_said(cli: Cli, path: Path, store: Path, d: Diagnosis) -> dict[str, str]:
    """Each new failing part's priority as `fabricbot digest` lists it, by its slug."""
    code, _, err = cli("ingest", str(path), "--store", str(store))
    assert code == 0, err
    code, out, err = cli("digest", "--store", str(store))
    assert code in (0, 3), err
    said = {}
    for loc in d.localizations:
        (line,) = [line for line in out.splitlines() if f" {d.node_id} / {loc.component}:" in line]
        said[loc.ref.slug] = line.split(f" {d.node_id} / ")[0].strip()
    return said


@pytest.mark.parametrize("replays", PCIE_REPLAYS.values(), ids=PCIE_REPLAYS.keys())
def test_analyze_and_the_digest_say_the_held_part_held_and_the_other_at_its_level(cli: Cli, tmp_path: Path,
                                                                                  replays: int) -> None:
    path = _mixed(tmp_path, replays)
    d = _diagnosis(cli, path)
    tickets = _tickets(cli, path, d)
    held = {slug for slug, t in tickets.items() if t["held"]}
    assert held and held != set(tickets), "one part's ticket is held, the other's is not"
    assert d.held is None, "the node is not held as a whole: a part's ticket stands"
    assert d.localization is not None
    headline = tickets[d.localization.ref.slug]
    code, out, err = cli("analyze", str(path))
    assert code in (0, 1), err
    assert f"priority={_ticket_said(headline)}  " in out.splitlines()[0], out
    digest = _digest_said(cli, path, tmp_path / "store", d)
    for slug, ticket in tickets.items():
        assert digest[slug] == _ticket_said(ticket), (slug, digest)
        assert digest[slug].startswith("held") is (slug in held)


@pytest.mark.parametrize("replays", PCIE_REPLAYS.values(), ids=PCIE_REPLAYS.keys())
def test_the_slack_summary_says_the_headline_parts_priority_as_its_ticket(cli: Cli, tmp_path: Path,
                                                                          replays: int) -> None:
    from bot.blocks import diagnosis_blocks, fallback_text

    path = _mixed(tmp_path, replays)
    d = _diagnosis(cli, path)
    assert d.localization is not None
    said = _ticket_said(_tickets(cli, path, d)[d.localization.ref.slug])
    fields = [f["text"] for b in diagnosis_blocks(d, 1) for f in b.to_dict().get("fields") or []]
    assert f"*Priority*\n{said}" in fields, fields
    assert f"{d.localization.component} {d.localization.severity.value}, {said} priority" in fallback_text(d)


def test_every_door_says_each_parts_priority_as_its_ticket_does(cli: Cli, tmp_path: Path) -> None:
    """The ticket, its tracker field, the digest, the alert loop's status line and the thread answer's facts agree
    part by part; the alert of the held part names the part, not the node, as what waits on the inventory."""
    from bot.alerts import _status
    from bot.digest import assemble, digest_lines
    from bot.storage import open_db
    from bot.workflow.tracker import SqliteTracker
    from diagnostics.analysis import Step, failing_parts
    from diagnostics.store import Alert, AlertStatus
    from diagnostics.tickets.answers import facts

    path = _mixed(tmp_path, PCIE_REPLAYS["nvlink-headline"])
    d = _diagnosis(cli, path)
    tickets = _tickets(cli, path, d)
    digest = digest_lines(assemble(at=_AT,
                                   diagnoses=[d], tracker=SqliteTracker(open_db(None)), maintenance=[]))
    parts = {p.slug: p for p in failing_parts([d])}
    for slug, ticket in tickets.items():
        said = _ticket_said(ticket)
        assert ticket["tracker_priority"] == ("held" if ticket["held"] else ticket["priority"])
        (line,) = [line for line in digest if f" / {parts[slug].component}:" in line]
        assert line.strip().startswith(said)
        part = parts[slug]
        assert part.priority_said() == said
        alert = Alert(part.node_id, slug, part.component, AlertStatus.OPEN, part.rank, opened_at=_AT, failing_at=_AT)
        status = _status(Step.NEW, alert, part, _AT, None)
        assert f"({part.severity.value}, {said})" in status
        assert ("Held:" in status) is bool(ticket["held"])
        assert "Do not drain" not in status, "the node's other part stands: only the held part waits"
    assert d.localization is not None and facts(d)["priority"] == _ticket_said(tickets[d.localization.ref.slug])



@pytest.mark.parametrize("replays", PCIE_REPLAYS.values(), ids=PCIE_REPLAYS.keys())
def test_analyze_lists_each_suspect_with_its_own_tickets_priority(cli: Cli, tmp_path: Path, replays: int) -> None:
    """A node's history lists its suspects one a line, each with the priority its ticket says: the held part held
    whether or not it heads the node, the other part at its plain level."""
    path = _mixed(tmp_path, replays)
    d = _diagnosis(cli, path)
    tickets = _tickets(cli, path, d)
    store = tmp_path / "store"
    code, _, err = cli("ingest", str(path), "--store", str(store))
    assert code == 0, err
    code, out, err = cli("analyze", "--store", str(store), "--node", d.node_id)
    assert code in (0, 3), err
    within = sum(f.severity.value == "ok" for f in d.findings)
    assert f"  ({fmt.count(within, 'more link')} within thresholds)" in out.splitlines(), out
    for loc in d.localizations:
        (line,) = [line for line in out.splitlines() if line.startswith(f"  suspect:  {loc.component} (")]
        said = _ticket_said(tickets[loc.ref.slug])
        assert line.endswith(f"), priority {said}"), line
        assert said.startswith("held") is bool(tickets[loc.ref.slug]["held"])
