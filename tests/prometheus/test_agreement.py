"""Agreement on the analysis' own synthetic fleet: the push-down equals the local sweep from the written files.

The fleet (diagnostics.synth) draws rates near every threshold on purpose, so only a local `increase()` that
mirrors the server's extrapolation can agree link for link; the history analysis (its own rate estimator) agrees
on every pushed-down rule for this seed, and where it knows more (a link_state column) it says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from diagnostics import load_thresholds
from diagnostics.analysis import analyze_tables
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, sweep
from diagnostics.synth import fleet as synth
from tests.prometheus.helpers import Server, newest, promtool_missing, serve_samples
from tests.prometheus.mirror import failing_links

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

SEED, NODES, HOURS = 31, 12, 4.0
# replay, PCIe and recovery faults, a link inactive, and no Xid (not served); named, so new scenarios leave it be
MIX = ["replay_storm", "pcie_riser_replays", "flapping_link", "link_inactive", "nvswitch_port_fault", "healthy",
       "reboot_reset", "benign_crc_burst", "scrape_gaps", "outside_slowdown", "sku_12_of_18", "pcie_downtrain"]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, pd.DataFrame], dict[str, str], Path]:
    folder = tmp_path_factory.mktemp("synth")
    synth.generate(out=folder / "fleet", seed=SEED, nodes=NODES, hours=HOURS, scenarios=MIX)
    tables, inventory = synth.load(folder / "fleet")
    return tables, inventory, folder


@pytest.fixture(scope="module")
def served(written: tuple[dict[str, pd.DataFrame], dict[str, str], Path]) -> Iterator[Server]:
    tables, _, folder = written
    server = serve_samples(tables["link_samples"], folder)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pushed(written: tuple[dict[str, pd.DataFrame], dict[str, str], Path], served: Server) -> SweepResult:
    at = written[0]["link_samples"]["timestamp"].max().to_pydatetime()
    with PrometheusClient(load_config(served.url, env={})) as client:
        return sweep(client, load_thresholds(), at=at, window_hours=1.0, analyze=False)



def test_push_down_equals_the_local_sweep_from_the_files(
        written: tuple[dict[str, pd.DataFrame], dict[str, str], Path], pushed: SweepResult) -> None:
    local = failing_links(written[0]["link_samples"], load_thresholds(), newest(written[0]), 1.0)
    assert pushed.complete, pushed.incomplete_reasons
    assert {o.key for o in pushed.offenders} == {o.key for o in local}
    rules = {o.rule for o in pushed.offenders}
    assert {"nvlink_replay", "pcie_replay", "recovery_persistent"} <= rules  # rates and a persistence rule


def test_the_history_analysis_finds_the_same_links_for_every_pushed_rule(
        written: tuple[dict[str, pd.DataFrame], dict[str, str], Path], pushed: SweepResult) -> None:
    tables, inventory, _ = written
    names = {r.name for r in load_thresholds().rules} - {r.split(":")[0] for r in pushed.not_pushed_down}
    seen_by_state = 0
    for node in sorted(inventory):
        diagnosis = analyze_tables(tables, node_id=node, window=timedelta(hours=1), end=newest(written[0]),
                                   thresholds=load_thresholds(), platform=inventory[node])
        local = {(f.link_type.value, f.gpu, f.link, c.rule) for f in diagnosis.findings for c in f.crossed
                 if c.rule in names}
        remote = {(o.link_type.value, o.gpu, o.link, o.rule) for o in pushed.offenders if o.node_id == node}
        assert local == remote, node
        seen_by_state += sum(1 for f in diagnosis.findings for c in f.crossed if c.rule == "link_down")
    # a link_state column (nvidia-smi) is something dcgm-exporter's series do not carry
    assert seen_by_state > 0
