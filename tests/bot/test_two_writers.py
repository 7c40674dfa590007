"""Writers on one store at once: the bot filing, an `ingest --store` loop and two filers, each its own process.

Each round starts every writer at the same moment and then checks that nothing was lost: every filing made its
ticket, history row and audit entries, every ingest kept its file, no writer was told "database is locked". The
processes are started once and work in rounds: 20 rounds of 20 filings per filer (8 of 10 on a machine of fewer
than four cores, where the four processes share them); `FABRICBOT_SOAK=1` runs the long variant (100 rounds of 50
filings per filer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

from bot.audit import AuditLog
from bot.cli import main as cli
from bot.state import DRAFTS, BotState
from bot.storage import open_db
from bot.workflow import filing
from bot.workflow.tracker import SqliteTracker
from diagnostics.store import DB_NAME, TelemetryStore, connect

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "fixtures" / "seed_examples.json"
FILERS = ("filer-a", "filer-b")
SOAK = os.environ.get("FABRICBOT_SOAK") == "1"
# Four writer processes at once: on a machine of fewer than four cores they queue for a core, so the suite runs
# fewer rounds there (each round still starts all four at the same moment, which is where writers collide).
ROUNDS, FILINGS = (20, 20) if (os.cpu_count() or 1) >= 4 else (8, 10)


class Writer:
    def __init__(self, role: str, store: Path, n: int) -> None:
        self.role = role
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.bot.writer", role, str(store), str(n)], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    @property
    def _out(self) -> IO[str]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def ready(self) -> None:
        line = self._out.readline().strip()
        assert line == "ready", f"{self.role} did not start: {line!r}"

    def go(self, k: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"go {k}\n")
        self.proc.stdin.flush()

    def done(self, k: int) -> dict[str, Any]:
        line = self._out.readline().strip()
        assert line.startswith(f"done {k} "), f"{self.role} round {k}: {line!r}"
        result: dict[str, Any] = json.loads(line.split(" ", 2)[2])
        return result

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _run(tmp_path: Path, rounds: int, n: int) -> None:
    store = tmp_path / "store"
    assert cli(["ingest", str(SEEDS), "--store", str(store)]) == 0  # the bot's node, with its failing link
    writers = [Writer(role, store, n) for role in ("bot", "ingest", *FILERS)]
    bot_tickets: list[str] = []
    try:
        for w in writers:
            w.ready()
        for k in range(rounds):
            for w in writers:  # all four at once
                w.go(k)
            results = {w.role: w.done(k) for w in writers}
            lost = {role: r["failed"] for role, r in results.items() if r["failed"]}
            assert not lost, f"round {k}: writers lost work: {lost}"
            db = connect(store / DB_NAME)
            tracker, audit = SqliteTracker(db), AuditLog(db)
            filed = {e["detail"]["ticket"] for e in audit.entries("filing")}
            for role in FILERS:
                got = results[role]["filed"]
                assert len(got) == n, f"round {k}: {role} filed {len(got)} of {n}"
                for slug, ticket_id in got.items():
                    ticket = tracker.get(ticket_id)
                    assert ticket is not None and ticket.slug == slug, f"round {k}: {ticket_id} for {slug}"
                    assert tracker.history(ticket_id) and ticket_id in filed, f"round {k}: {ticket_id} half-filed"
            bot_tickets.append(results["bot"]["ticket"])
            assert tracker.get(bot_tickets[-1]) is not None and bot_tickets[-1] in filed
            node = results["ingest"]["node"]
            assert node in TelemetryStore(store).nodes(), f"round {k}: the ingest of {node} was lost"
            db.close()
    finally:
        for w in writers:
            w.stop()
    db = open_db(store)
    audit, tracker, state = AuditLog(db), SqliteTracker(db), BotState(db)
    tickets = tracker.tickets()
    assert len(tickets) == rounds * (2 * n + 1)  # every filing a ticket of its own
    numbers = [int(t.id.split("-")[1]) for t in tickets]
    assert numbers == list(range(1, len(tickets) + 1))  # numbered once each, none skipped
    assert len(set(bot_tickets)) == rounds
    assert not [d for d in db[DRAFTS].rows if d["status"] != "filed"]
    mended = filing.recover(state=state, tracker=tracker, audit=audit,
                            record=lambda kind, **kw: audit.record(kind, actor=kw.pop("actor"), detail=kw))
    assert not mended, f"the writers left states between: {mended}"
    stored = {r["file"] for r in db["ingests"].rows}
    assert {f"ingest-node-{k:02d}.json" for k in range(rounds)} <= {Path(f).name for f in stored}


def test_the_bot_an_ingest_loop_and_two_filers_on_one_store_lose_nothing(tmp_path: Path) -> None:
    _run(tmp_path, rounds=ROUNDS, n=FILINGS)


@pytest.mark.skipif(not SOAK, reason="the long variant: FABRICBOT_SOAK=1")
def test_the_writers_soak(tmp_path: Path) -> None:
    _run(tmp_path, rounds=100, n=50)


def test_the_store_database_is_wal_with_a_busy_timeout(tmp_path: Path) -> None:
    db = connect(tmp_path / DB_NAME)
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000
    TelemetryStore(tmp_path)  # the store's own connection finds the same
    assert open_db(tmp_path).journal_mode == "wal"


def test_a_transaction_that_reads_first_holds_the_write_lock_from_its_start(tmp_path: Path) -> None:
    """A second connection cannot write between this transaction's read and its write (deferred, it could, and
    the first would then fail "database is locked" on its write)."""
    first, second = connect(tmp_path / DB_NAME), connect(tmp_path / DB_NAME)
    first["t"].insert({"id": 1, "n": 0}, pk="id")
    second.conn.execute("PRAGMA busy_timeout = 50")
    with first.atomic():
        n = first.execute("select n from t").fetchone()[0]
        with pytest.raises(Exception, match="locked"):
            second.execute("update t set n = 99")
        first.execute("update t set n = ?", [n + 1])
    assert second.execute("select n from t").fetchone()[0] == 1
