"""NVIDIA's XID 144-150 Decode by the line's own words (its intrInfo and error status): a Xid 149 whose subcode the
table sends to the link's other end (gpud PR 1174's line, 0x025001c6: INVESTIGATE_PEER_DEVICE) is said so in the
finding, the action and the ticket; a status the table ignores (SAW_MVB 0x8, RLW_RXPIPE 0x8) is not judged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from diagnostics.config.catalogs import load_xid_catalog
from diagnostics.enums import CodeSeverity
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from diagnostics.tickets.build import select
from diagnostics.tickets.catalog import plan_for
from diagnostics.tickets.commands import commands_in, held, plan_commands
from diagnostics.tickets.isolation import unsafe_steps
from diagnostics.tickets.rules import RulesDrafter
from tests.conftest import FIXTURES

GB = FIXTURES / "real" / "kernel_xid14x_gpud_1.txt"  # Xid 149 (two), 145, 144, 94 as gpud's tests quote them
LOGGED = datetime(2026, 3, 1, 12, tzinfo=UTC)  # when the log (printed without dates) was taken


def test_the_decode_rows_key_on_the_lines_words_and_fall_back_without_them() -> None:
    catalog = load_xid_catalog()
    peer = catalog.entry(149).row("NETIR_LINK_EVT", "fatal", 0x025001C6, 0)
    assert peer is not None and (peer.action, peer.investigate, peer.severity) == \
        ("RESET_GPU", "INVESTIGATE_PEER_DEVICE", CodeSeverity.FATAL)
    for intr in (0x000FE406, None):  # NETIR_INT (subcode 0), or a line that gives no words: today's fatal row
        row = catalog.entry(149).row("NETIR_LINK_EVT", "fatal", intr, 0)
        assert row is not None and row.action == "RESET_GPU" and not row.investigate
    assert catalog.entry(144).decoded("SAW_MVB", "non-fatal", 0x1, 0x8) == (CodeSeverity.INFO, "IGNORE")
    status = catalog.entry(144).row("SAW_MVB", "fatal", 0x1, 0x2)
    assert status is not None and status.error_status == 0x2 and status.severity is CodeSeverity.FATAL
    said = catalog.entry(144).row("SAW_MVB", "fatal", 0x1, 0x1)  # the table's non-fatal status on a line stated
    assert said is not None and said.error_status is None and said.severity is CodeSeverity.FATAL  # fatal: the line
    assert catalog.entry(145).decoded("RLW_RXPIPE", "non-fatal", 0x0409A0C2, 0x8) == (CodeSeverity.INFO, "IGNORE")
    assert catalog.entry(145).decoded("RLW_RXPIPE", "non-fatal")[0] is CodeSeverity.WARNING  # no words: as before


def test_a_peer_subcode_sends_the_action_and_the_ticket_to_the_links_other_end_alike_through_file_and_store(
        tmp_path: Path) -> None:
    """The answer blamed the GPU at 0000:00:00.0 and said reset it, with nothing of the decode's INVESTIGATE_PEER_
    DEVICE: the table's Link Fatal row for subcode 37 says the other end of the link is the source."""
    files, node, _ = files_source([GB], node="gb1")
    open_store(tmp_path / "store").ingest([GB], node_id="gb1", at=LOGGED)  # no time: the store is told when
    request = Request(node=node, end=LOGGED, window=timedelta(hours=1))
    answers = [diagnose(files, request).diagnosis, diagnose(StoreSource(tmp_path / "store"), request).diagnosis]
    says = load_xid_catalog().entry(149).row("NETIR_LINK_EVT", "fatal", 0x025001C6, 0)
    assert says is not None and says.says
    for d in answers:
        assert {c for f in d.findings for x in f.crossed for c in x.codes} == {149}  # 145 0x8 and 144 0x8: IGNORE
        by_bus = {loc.ref.bus: loc for loc in d.localizations}
        peer, other = by_bus["0000:00:00.0"], by_bus["0019:01:00.0"]
        assert peer.action is not None and says.says in peer.action and "reset" in peer.action
        assert other.action is not None and says.says not in other.action  # NETIR_INT: the GPU's own reset alone
        assert says.says in d.repair_action
        ticket = RulesDrafter().draft(d, component=peer.component).to_markdown()
        assert "INVESTIGATE_PEER_DEVICE" in ticket and says.says in ticket
    assert answers[0].repair_action == answers[1].repair_action


def test_a_peer_subcode_puts_the_far_end_in_the_repair_steps_before_any_reseat_or_swap_of_the_gpu(
        tmp_path: Path) -> None:
    """The decode's advice reached the one-line action alone: the ticket's repairs went reset, diag, reseat, swap the
    GPU, replace, so a healthy GPU was swapped for a fault at the link's other end. The catalog's step for
    INVESTIGATE_PEER_DEVICE comes right after the reset and the diagnostic, through the file and the store alike,
    and the commands it names are the plan's own."""
    files, node, _ = files_source([GB], node="gb1")
    open_store(tmp_path / "store").ingest([GB], node_id="gb1", at=LOGGED)
    request = Request(node=node, end=LOGGED, window=timedelta(hours=1))
    for d in (diagnose(files, request).diagnosis, diagnose(StoreSource(tmp_path / "store"), request).diagnosis):
        chosen, _ = select(d, "the GPU at PCI 0000:00:00.0", None)
        plan = plan_for(d, chosen)
        texts = [s.text for s in plan.repair]
        far = next(i for i, t in enumerate(texts) if "INVESTIGATE_PEER_DEVICE" in t)
        assert far >= 1 and texts[far - 1].startswith("Run `dcgmi diag") and plan.repair[0].command == \
            "nvidia-smi -r -i 0000:00:00.0"  # after the reset and the diagnostic that follows it
        assert all(not t.startswith(("With the node powered off, reseat", "To tell", "Replace"))
                   for t in texts[:far])  # nothing of this GPU is reseated, swapped or replaced before it
        assert plan.repair[far].command == "nvidia-smi nvlink -R -i 0000:00:00.0"
        assert all(held(c, plan_commands(plan)) for c in commands_in(plan.repair[far].text))
        assert not unsafe_steps(plan)
        ticket = RulesDrafter().draft(d, component="the GPU at PCI 0000:00:00.0").to_markdown()
        steps = ticket.split("## Repair, in order", 1)[1].split("##", 1)[0]
        assert "`nvidia-smi nvlink -R -i 0000:00:00.0` names that end" in steps
        assert steps.index("INVESTIGATE_PEER_DEVICE") < steps.index("reseat what carries")
    other = next(c for c in select(d, None, None)[1] if c.ref.bus == "0019:01:00.0")  # NETIR_INT: its own reset
    assert not any("INVESTIGATE_PEER_DEVICE" in s.text for s in plan_for(d, other).repair)
