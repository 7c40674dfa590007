"""`fabricbot tickets`: a repair reported, then verified on the readings ingested since: closed or reopened."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from bot.cli import main
from bot.storage import open_db
from bot.workflow.tracker import SqliteTracker
from diagnostics import format as fmt
from diagnostics.store import open_store
from diagnostics.tables import COUNTERS
from tests.analysis.helpers import T0, link_series, links, steady

from .conftest import Cli

SOAK_SAMPLES = 24 * 12 + 1  # the default soak, a day at 5 min


def _ingest(store: Path, frame: pd.DataFrame, name: str) -> None:
    csv = store.parent / f"{name}.csv"
    counters = [c for c in COUNTERS if c in frame.columns]
    frame.assign(**{c: frame[c].round() for c in counters}).to_csv(csv, index=False)  # a counter is a whole number
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"


def _file(store: Path, gpu: int) -> str:
    """A ticket filed an hour before T0, the readings' time (a repair is never dated before its filing)."""
    filed = (T0 - pd.Timedelta(hours=1)).isoformat()
    result = SqliteTracker(open_db(store), clock=lambda: filed).file(
        node_id="n1", component=f"GPU {gpu} NVLink 1", slug=f"gpu{gpu}-nvlink1", title="t", body="b",
        priority="urgent", actor="UALICE", evidence=["replays 9,000/h"])
    return result.ticket.id


def _two_tickets(store: Path) -> tuple[str, str]:
    """GPU 2's and GPU 5's NVLink 1 failing in the two hours before T0, each ticketed."""
    before = T0 - pd.Timedelta(hours=2)
    _ingest(store, links(link_series(steady(9000.0, 25), gpu=2, link=1, start=before),
                         link_series(steady(9000.0, 25), gpu=5, link=1, start=before)), "before")
    return _file(store, 2), _file(store, 5)


def test_a_repair_that_holds_closes_and_one_that_does_not_reopens_escalated(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "store"
    held, failed = _two_tickets(store)
    for ticket in (held, failed):  # the node stays drained: a passing `dcgmi diag -r 3` is what proves the part
        code, out, _ = cli("tickets", "--store", str(store), "repaired", ticket, "--by", "UTECH",
                           "--at", "2026-03-01T00:00Z", "--note", "reseated the tray", "--diag", "pass",
                           "--diag-at", "2026-03-01T00:30Z")
        assert code == 0 and f"{ticket} is verifying" in out
    code, out, _ = cli("tickets", "--store", str(store), "verify")
    assert code == 0 and f"{held} verifying: 0 h clean of the 24 h soak" in out and "closed" not in out

    after = steady(3.0, SOAK_SAMPLES)
    back = [*steady(3.0, 61), *(v + 15.0 for v in steady(8000.0, SOAK_SAMPLES - 61))]  # errors back after 5 h
    _ingest(store, links(link_series(after, gpu=2, link=1), link_series(back, gpu=5, link=1)), "after")
    code, out, _ = cli("tickets", "--store", str(store), "verify")
    assert code == 0
    assert f"{held} closed: the repair held: 24 h of readings clean" in out
    assert f"{failed} open: the repair did not hold: GPU 5 NVLink 1" in out

    code, out, _ = cli("tickets", "--store", str(store), "show", failed)
    assert "escalated" in out.splitlines()[0]
    kept = SqliteTracker(open_db(store)).history(failed)
    said = [fmt.when(datetime.fromisoformat(h["at"])) for h in kept]  # as the bot's replies say times, not ISO
    assert [line.split("UTC", 1)[0] + "UTC" for line in out.splitlines()[1:]] == [f"  {w}" for w in said]
    assert [line.split("UTC", 1)[1].split()[0] for line in out.splitlines()[1:]] == [
        "open", "repair_reported", "verifying", "open"]
    code, out, _ = cli("tickets", "--store", str(store), "list", "--status", "closed")
    assert out.split()[0] == held and failed not in out
    kinds = [line for line in cli("audit", "--store", str(store))[1].splitlines()]
    assert sum('"kind": "verification"' in k for k in kinds) == 2 and sum('"kind": "repair"' in k for k in kinds) == 2


def test_a_drained_idle_node_stays_verifying_and_a_failed_diagnostic_reopens(tmp_path: Path, cli: Cli) -> None:
    """The issue's case: a repair 'held' because the part had readings, on a drained node nothing ran on."""
    store = tmp_path / "store"
    idle, failed = _two_tickets(store)
    assert cli("tickets", "--store", str(store), "repaired", idle, "--by", "UTECH", "--at", "2026-03-01T00:00Z")[0] == 0
    assert cli("tickets", "--store", str(store), "repaired", failed, "--by", "UTECH", "--at", "2026-03-01T00:00Z",
               "--diag", "fail")[0] == 0
    _ingest(store, links(link_series(steady(0.0, SOAK_SAMPLES), gpu=2, link=1),
                         link_series(steady(0.0, SOAK_SAMPLES), gpu=5, link=1)), "after")
    code, out, _ = cli("tickets", "--store", str(store), "verify")
    assert code == 0 and f"{idle} verifying" in out and "no traffic on the part" in out
    assert f"{failed} open: the repair did not hold: `dcgmi diag -r 3` failed" in out
    code, _, err = cli("tickets", "--store", str(store), "repaired", idle, "--by", "UTECH", "--diag-at", "2026-03-01")
    assert code != 0 and "--diag-at needs --diag" in err


def test_a_repair_is_reported_only_on_an_open_ticket_at_a_time_that_parses(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "store"
    _ingest(store, links(link_series(steady(9000.0, 13), gpu=2, link=1)), "before")
    ticket = _file(store, 2)
    code, _, err = cli("tickets", "--store", str(store), "repaired", ticket, "--by", "UTECH", "--at", "yesterday")
    assert code == 2 and "--at" in err and "yesterday" in err
    code, _, err = cli("tickets", "--store", str(store), "repaired", "FAB-0999", "--by", "UTECH")
    assert code == 2 and "FAB-0999" in err
    assert cli("tickets", "--store", str(store), "repaired", ticket, "--by", "UTECH")[0] == 0
    code, _, err = cli("tickets", "--store", str(store), "repaired", ticket, "--by", "UTECH")
    assert code == 2 and "verifying, not open" in err


def test_the_store_may_follow_the_action_as_every_other_command_takes_it(tmp_path: Path, cli: Cli) -> None:
    """`fabricbot tickets history SERIAL --store DIR` (as `ticket NODE --store DIR` is written) reads that store;
    before the action, as before."""
    store = tmp_path / "store"
    open_db(store)
    for argv in (("tickets", "history", "1652221012345", "--store", str(store)),
                 ("tickets", "--store", str(store), "history", "1652221012345"),
                 ("tickets", "list", "--store", str(store))):
        code, _, err = cli(*argv)
        assert code == 0, (argv, err)
    assert "GPU serial 1652221012345: 0 tickets" in cli("tickets", "history", "1652221012345", "--store",
                                                       str(store))[1]


def test_a_repair_dated_ahead_of_the_clock_or_before_the_filing_is_refused(tmp_path: Path, cli: Cli) -> None:
    """A repair dated years ahead would wait in verifying forever; one before the filing repaired nothing filed."""
    store = tmp_path / "store"
    _ingest(store, links(link_series(steady(9000.0, 13), gpu=2, link=1)), "before")
    ticket = _file(store, 2)
    code, _, err = cli("tickets", "--store", str(store), "repaired", ticket, "--by", "bob",
                       "--at", "2030-01-01T00:00:00Z")
    assert code == 2 and "'--at'" in err and "2030-01-01T00:00:00Z" in err and "ahead of the clock" in err
    code, _, err = cli("tickets", "--store", str(store), "repaired", ticket, "--by", "bob",
                       "--at", "2026-02-01T00:00:00Z")
    assert code == 2 and "'--at'" in err and "2026-02-01T00:00:00Z" in err
    assert f"before {ticket} was filed ({fmt.when(datetime(2026, 2, 28, 23, tzinfo=UTC))})" in err
    assert "Traceback" not in err
    code, out, _ = cli("tickets", "--store", str(store), "list")
    assert code == 0 and " open " in out and "verifying" not in out  # nothing was half-reported
    assert cli("tickets", "--store", str(store), "repaired", ticket, "--by", "bob", "--at", "2026-03-01T00:00Z")[0] == 0


def test_verifying_an_unknown_ticket_names_it_with_the_close_matches(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "store"
    _ingest(store, links(link_series(steady(9000.0, 13), gpu=2, link=1)), "before")
    ticket = _file(store, 2)
    code, out, err = cli("tickets", "--store", str(store), "verify", "FAB-9999")
    assert code == 2 and "no ticket 'FAB-9999'" in err and "no ticket is verifying" not in out
    code, _, err = cli("tickets", "--store", str(store), "verify", "FAB-001")
    assert code == 2 and f"did you mean {ticket}" in err
    code, _, err = cli("tickets", "--store", str(store), "show", "FAB-9999")
    assert code == 2 and "no ticket 'FAB-9999'" in err
    code, out, _ = cli("tickets", "--store", str(store), "verify", ticket)  # known, but open: nothing to judge
    assert code == 0 and f"{ticket} is open, not verifying" in out


def test_a_verifying_ticket_s_repair_time_is_said_as_every_other_time(tmp_path: Path, cli: Cli) -> None:
    """The repair's time in `repaired`'s answer, `list` and `show` reads as the bot's replies write times."""
    store = tmp_path / "store"
    _ingest(store, links(link_series(steady(9000.0, 13), gpu=2, link=1)), "before")
    ticket = _file(store, 2)
    said = fmt.when(datetime(2026, 3, 1, tzinfo=UTC))
    code, out, _ = cli("tickets", "--store", str(store), "repaired", ticket, "--by", "UTECH",
                       "--at", "2026-03-01T00:00Z")
    assert code == 0 and f"readings from {said} " in out
    for action in (("list",), ("show", ticket)):
        code, out, _ = cli("tickets", "--store", str(store), *action)
        assert code == 0
        assert out.splitlines()[0].endswith(f"verifying urgent  n1 / GPU 2 NVLink 1, repaired {said} by UTECH")


def test_a_mistyped_state_is_refused_with_the_states_not_answered_with_no_tickets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickets list --status verifyng` printed "no tickets" and exited 0: a typo read as an empty list."""
    with pytest.raises(SystemExit) as refused:
        main(["tickets", "--store", str(tmp_path / "store"), "list", "--status", "verifyng"])
    out, err = capsys.readouterr()
    assert refused.value.code == 2 and not out and "invalid choice: 'verifyng'" in err and "'verifying'" in err
