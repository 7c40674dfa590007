"""Which of several suspects as certain is isolated: the one whose ticket is the most urgent, never the first by PCI
address (a Link Fatal Xid 149 on one GPU beside an Xid 145 that names no subcode on another)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from diagnostics.analysis import analyze_tables
from diagnostics.model import Diagnosis, Localization
from diagnostics.repair import RepairPlan
from diagnostics.tickets import RulesDrafter
from tests.analysis.helpers import T0, node_links
from tests.ingest.helpers import read_text

# as a real kernel log has them (NVIDIA/open-gpu-kernel-modules issue 1150): the Xid 45 that ends each job names
# the NVLink Xid before it, and no subcode
LINES = ["NVRM: Xid (PCI:0000:1b:00): 45, pid=1818987, name=python3, Ch 00000003 caused by previous Xid 145",
         "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149"]


def _diagnose(gpus: tuple[int, int]) -> Diagnosis:
    events = read_text("".join(f"[  100.00000{i}] {line}\n" for i, line in enumerate(LINES)))["events"]
    events["timestamp"] = T0 + pd.Timedelta(minutes=30)
    events["node_id"] = "b200-07"
    events["gpu"] = [gpus[0] if bus.startswith("0000:1b") else gpus[1] for bus in events["pci_bus_id"]]
    return analyze_tables({"link_samples": node_links(node="b200-07", switches=(9, 9)), "events": events},
                          node_id="b200-07", platform="hgx-b200-8gpu")


def test_the_gpu_a_fatal_xid_stopped_is_isolated_before_one_an_xid_145_only_failed() -> None:
    for gpus in [(1, 5), (5, 1)]:  # whichever comes first by index or address
        d = _diagnose(gpus)
        assert d.localization is not None and d.localization.gpu == gpus[1], d.localizations
        default = RulesDrafter().draft(d)
        assert default.gpu_index == gpus[1]
        # the default ticket is that part's, with its own priority: as drafted by name
        assert default.priority == RulesDrafter().draft(d, component=default.candidate_id).priority
        assert RulesDrafter().draft(d, component=f"gpu{gpus[0]}").priority != default.priority


def test_each_suspects_repair_plan_is_built_once_for_its_action_and_its_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node's suspects each get one plan: the one that gives its action also says whether its ticket is held."""
    import diagnostics.analysis.diagnosis as diagnosis

    built: list[str] = []
    real = diagnosis.localization_plan

    def counted(loc: Localization, **kwargs: Any) -> RepairPlan:
        built.append(loc.component)
        return real(loc, **kwargs)

    monkeypatch.setattr(diagnosis, "localization_plan", counted)
    d = _diagnose((1, 5))
    assert len(d.localizations) >= 2 and all(loc.action for loc in d.localizations)
    assert sorted(built) == sorted(loc.component for loc in d.localizations)
    assert d.held is None  # the headline's plan applies: its ticket is not held


def test_an_xid_known_only_from_a_later_line_says_so_through_the_file_and_the_store(tmp_path: Path) -> None:
    """`Xid 45 ... caused by previous Xid 149` was headlined "1 Xid 149 on the GPU", as if its line, with its status,
    had been read; it was inferred. Both doors say it is."""
    from diagnostics.ingest import Source
    from diagnostics.service import Request, StoreSource, diagnose, files_source
    from diagnostics.store import open_store

    log = tmp_path / "kern.log"
    log.write_text("".join(f"2026-05-18T10:00:0{i}+00:00 b200-07 kernel: {line}\n" for i, line in enumerate(LINES)))
    end = datetime(2026, 5, 18, 10, 30, tzinfo=UTC)
    source, node, _ = files_source([Source.from_path(log)], node="b200-07")
    by_file = diagnose(source, Request(node=node, end=end)).diagnosis
    store = open_store(tmp_path / "store")
    store.ingest([log])
    by_store = diagnose(StoreSource(tmp_path / "store"), Request(node="b200-07", end=end)).diagnosis
    for d in (by_file, by_store):
        said = {f.component: f.crossed[0].message for f in d.findings if f.crossed}
        assert said["the GPU at PCI 0000:dc:00.0"] == ("1 Xid 149 on the GPU at PCI 0000:dc:00.0, named by a later "
                                                        "Xid 45 (its own line is not in the input) (xid_nvlink)"), said
