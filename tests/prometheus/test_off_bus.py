"""A GPU that fell off the bus (inside the window, or before it: it stays lost), on a real Prometheus and in a
store ingested from the same file: the server sees its Xid 79, its links' series stop and its node short of a GPU
(a count that names no GPU); the node's read-back shows which GPU is gone, so the sweep lists it as one row naming
every rule it broke, as the store's sweep does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from bot.cli import main
from diagnostics.enums import LinkType, Severity
from diagnostics.ingest.dcgm_map import load_map
from diagnostics.offenders import Offender, gone_gpus_folded
from diagnostics.store import open_store
from diagnostics.tables import LINK_SAMPLES
from tests.prometheus.helpers import (
    MODEL,
    Fleet,
    Server,
    backfill,
    generate_fleet,
    promtool_missing,
    start_server,
    write_openmetrics,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

NODE, LOST = "node-001", 5
XID_COUNTER = next(iter(load_map().xid_counter))


@pytest.fixture(scope="module", params=[30, 90], ids=lambda m: f"gone {m} min")
def off_bus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Fleet, Path]:
    """The fleet with GPU 5 of node-001 gone for the last 30 minutes, or 90 (its Xid 79 before the 1 h window: a
    GPU off the bus stays lost, so the Xid still counts), its Xid 79 counted when it went."""
    base = generate_fleet(nodes=2, hours=4.0, scrape_s=300, columns=("replay",))
    went = pd.Timestamp(base.end) - pd.Timedelta(minutes=request.param)
    samples = base.samples
    gone = (samples["node_id"] == NODE) & (samples["gpu"] == LOST) & (samples["timestamp"] > went)
    fleet = Fleet(LINK_SAMPLES.conform(samples[~gone].reset_index(drop=True)), base.gpus, base.start, base.end)
    om = tmp_path_factory.mktemp("off-bus") / "fleet.om"
    write_openmetrics(fleet, om)
    labels = f'Hostname="{NODE}",gpu="{LOST}",modelName="{MODEL}",xid="79"'
    steps = int((base.end - base.start) / timedelta(minutes=5)) + 1
    stamps = [base.start + i * timedelta(minutes=5) for i in range(steps)]
    xid = [f"{XID_COUNTER}{{{labels}}} {int(t >= went)} {t.timestamp():.0f}" for t in stamps]
    lines = om.read_text(encoding="utf-8").splitlines()
    om.write_text("\n".join([*lines[:-1], f"# TYPE {XID_COUNTER} gauge", *xid, lines[-1]]) + "\n", encoding="utf-8")
    return fleet, om


@pytest.fixture(scope="module")
def off_bus_server(off_bus: tuple[Fleet, Path]) -> Iterator[Server]:
    om = off_bus[1]
    backfill(om, om.parent / "data")
    server = start_server(om.parent / "data")
    yield server
    server.stop()


def _rows(args: list[str], capsys: pytest.CaptureFixture[str]) -> set[tuple[object, ...]]:
    """The node's rows of a sweep: what each names and every rule it stands for."""
    main([*args, "--json"])
    swept = json.loads(capsys.readouterr().out)
    return {(o["node_id"], o["gpu"], o["nvswitch"], o["link"], o["xid"], tuple(sorted([o["rule"], *o["also"]])))
            for o in swept["offenders"] if o["node_id"] == NODE}


def test_a_gpu_off_the_bus_is_one_row_on_the_server_as_in_the_store(off_bus: tuple[Fleet, Path],
                                                                    off_bus_server: Server, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    fleet, om = off_bus
    store = tmp_path / "store"
    open_store(store, create=True).ingest([om])
    at = fleet.end.isoformat()
    stored = _rows(["sweep", "--store", str(store), "--at", at], capsys)
    served = _rows(["sweep", "--prometheus", off_bus_server.url, "--at", at], capsys)
    assert served == stored
    gone = [r for r in served if r[1] == LOST]
    assert len(gone) == 1 and {"xid_off_bus", "gpus_missing"} <= set(gone[0][5])
    assert not [r for r in served if r[1] is None]  # the node's GPU count is the gone GPU's row
    main(["sweep", "--prometheus", off_bus_server.url, "--at", at])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"  {NODE} ")]
    assert len([line for line in lines if f"GPU {LOST}" in line]) == 1, lines


def test_the_nodes_gpu_count_stays_where_the_gpus_shown_gone_do_not_make_up_its_shortfall() -> None:
    """Two GPUs missing, one shown gone by the read-back: the count still says a GPU is missing that no row names."""
    def row(rule: str, gpu: int | None, **more: object) -> Offender:
        return Offender(node_id=NODE, link_type=LinkType.PCIE, gpu=gpu, rule=rule, severity=Severity.DOWN, **more)

    count = row("gpus_missing", None, rate_per_hour=6.0, above=8.0)
    pushed = [row("xid_off_bus", LOST, xid=79), count]
    gone = row("xid_off_bus", LOST, xid=79, also=("gpus_missing",))
    assert gone_gpus_folded(pushed, [gone]) == [count, gone]
    assert gone_gpus_folded([pushed[0], count.model_copy(update={"rate_per_hour": 7.0})], [gone]) == [gone]


def test_the_servers_xid_79_row_without_read_back_is_the_stores(off_bus: tuple[Fleet, Path], off_bus_server: Server,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Unread (`--no-analyze`), the server keeps a silent GPU's Xid 79 over the span the rules read, as the store
    keeps it while the GPU stays off the bus: gone 90 minutes, its Xid came before the 1 h window."""
    fleet, om = off_bus
    store = tmp_path / "store"
    open_store(store, create=True).ingest([om])
    at = fleet.end.isoformat()

    def xid_rows(args: list[str]) -> set[tuple[object, ...]]:
        main([*args, "--at", at, "--json"])
        swept = json.loads(capsys.readouterr().out)
        return {(o["node_id"], o["gpu"], o["xid"], o["rule"], o["rate_per_hour"], o["unit"])
                for o in swept["offenders"] if o["rule"] == "xid_off_bus"}

    stored = xid_rows(["sweep", "--store", str(store)])
    assert stored == {(NODE, LOST, 79, "xid_off_bus", 1.0, "events")}
    assert xid_rows(["sweep", "--prometheus", off_bus_server.url, "--no-analyze"]) == stored
