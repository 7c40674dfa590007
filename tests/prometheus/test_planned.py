"""Against a real Prometheus: planned work holds a node out of the server's sweep as out of the store's. The
server knows no planned work; `fabricbot maintenance` keeps it in the store $FABRICBOT_STORE names, and the
server's sweep reads it there (it once listed a node under planned work as an offender, exit 1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli import main
from diagnostics.store import open_store
from tests.prometheus.helpers import Fleet, Server, generate_fleet, promtool_missing, serving

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

HELD = "node-001"  # its GPU 2 NVLink 5 replays 6,000/h: an offender but for its planned work


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return generate_fleet(nodes=2, hours=2.0, scrape_s=300)


@pytest.fixture(scope="module")
def server(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serving(fleet, tmp_path_factory, "planned")


@pytest.fixture(scope="module")
def store(server: Server, fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same series in a store, with planned work on HELD from half an hour before the fleet's end."""
    folder = tmp_path_factory.mktemp("planned-store") / "store"
    open_store(folder, create=True).ingest([server.data.parent / "fleet.om"])
    start = (fleet.end - timedelta(minutes=30)).isoformat()
    assert main(["maintenance", HELD, "2h", "swap the GPU 2 riser", "--by", "alice", "--at", start,
                 "--store", str(folder)]) == 0
    return folder


def _swept(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main(["sweep", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_node_under_planned_work_is_held_out_of_the_servers_sweep_as_the_stores(
        fleet: Fleet, server: Server, store: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    at = fleet.end.isoformat()
    monkeypatch.delenv("FABRICBOT_STORE", raising=False)
    _, bare = _swept(capsys, "--prometheus", server.url, "--at", at)
    assert HELD in {o["node_id"] for o in bare["offenders"]}  # the server alone knows no planned work
    monkeypatch.setenv("FABRICBOT_STORE", str(store))
    held = {door: _swept(capsys, *argv, "--at", at) for door, argv in
            (("server", ("--prometheus", server.url)), ("store", ("--store", str(store))))}
    for door, (_, out) in held.items():
        assert HELD not in {o["node_id"] for o in out["offenders"]}, door  # type: ignore[attr-defined]
        said = [w for w in out["warnings"] if "in maintenance" in w]  # type: ignore[attr-defined]
        assert len(said) == 1 and f"{HELD} in maintenance until" in said[0] and "swap the GPU 2 riser" in said[0], door
    assert held["server"][0] == held["store"][0]


def test_the_store_and_the_server_are_one_sweep_or_the_other(server: Server, store: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--store", str(store), "--prometheus", server.url]) == 2
    assert "not both" in capsys.readouterr().err
