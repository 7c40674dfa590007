"""The same synthetic fleet through both doors: `sweep --store` and `sweep --prometheus` find the same offenders,
but only the store holds the jobs' step time. A server with no step-time metric set rates a slowed node by its links
alone (medium where the store says urgent), so its every answer says the slowdown was not weighed and how to weigh
it, and names its window as the store's does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.cli import main
from diagnostics.store import open_store
from diagnostics.synth.scenarios import SCENARIOS
from tests.prometheus.helpers import Server, Written, newest, promtool_missing, serve_written, written_fleet

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

SEED, HOURS = 0, 6.0
# faults the exporter's series carry (no Xid, no link state, no Fabric Manager log), so both doors judge the same
# links; two of them slow a job past the urgent step
MIX = ["replay_storm", "benign_crc_burst", "healthy", "pcie_riser_replays", "healthy", "flapping_link",
       "sku_12_of_18", "nvswitch_port_fault"]
UNREAD = "the jobs' step time was not read"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    assert set(MIX) <= set(SCENARIOS)
    fleet = written_fleet(tmp_path_factory.mktemp("synth"), seed=SEED, scenarios=MIX, hours=HOURS)
    open_store(fleet[2] / "store").ingest([fleet[2] / "fleet"])
    return fleet


@pytest.fixture(scope="module")
def served(written: Written) -> Iterator[Server]:
    yield from serve_written(written)


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FABRICBOT_PROMETHEUS_URL", "FABRICBOT_PROMETHEUS_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(args)
    return code, capsys.readouterr().out


def _offenders(result: dict[str, Any]) -> set[tuple[object, ...]]:
    """Each offending link and rule, by place (a door that knows the platform's wiring names the switch end too)."""
    return {(o["node_id"], o["link_type"], o["gpu"], o["link"], o["rule"]) for o in result["offenders"]}


def test_both_doors_find_the_same_offenders_and_the_server_says_the_slowdown_was_not_weighed(
        written: Written, served: Server, capsys: pytest.CaptureFixture[str]) -> None:
    tables, _, folder = written
    at = newest(tables).isoformat()
    code, out = _run(["sweep", "--store", str(folder / "store"), "--at", at, "--json"], capsys)
    stored = json.loads(out)
    code_p, out_p = _run(["sweep", "--prometheus", served.url, "--at", at, "--json"], capsys)
    pushed = json.loads(out_p)
    assert (code, code_p) == (1, 1) and stored["complete"] and pushed["complete"]
    local = {r.split(":")[0] for r in pushed["not_pushed_down"]}  # rules with no series: the store's alone
    assert _offenders(pushed) == {o for o in _offenders(stored) if o[-1] not in local}
    priority = {door: {n: d["ticket_priority"] for n, d in r["diagnoses"].items()}
                for door, r in (("store", stored), ("server", pushed))}
    slowed = {n for n, d in stored["diagnoses"].items() if d["degradation_pct"] is not None}
    assert slowed and all(pushed["diagnoses"][n]["degradation_pct"] is None for n in slowed)
    lower = {n for n in slowed if priority["store"][n] != priority["server"][n]}
    assert lower, priority  # the slowdown the store weighs moves a node's priority
    assert not any(UNREAD in w for w in stored["warnings"])
    assert [w for w in pushed["warnings"] if UNREAD in w and "[step_time] metric" in w]

    _, table = _run(["sweep", "--prometheus", served.url, "--at", at], capsys)
    assert UNREAD in table and "the server, window 1 h to " in table
    node = sorted(lower)[0]
    _, one = _run(["sweep", "--prometheus", served.url, "--at", at, "--node", node], capsys)
    assert UNREAD in one and f"priority={priority['server'][node]}" in one and "window 1 h to " in one
