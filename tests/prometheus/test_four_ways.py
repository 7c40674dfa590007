"""Four ways of sweeping one fleet agree: one node at a time, the fleet engine in memory, `sweep --store` and the
Prometheus push-down with its read-back, on a fresh synthetic seed that holds a GPU off the bus (Xid 79: its series
stop, so the server sees a GPU missing) beside link faults of every kind the exporter carries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnostics import Diagnosis, Severity, analyze_fleet, load_thresholds
from diagnostics.analysis import analyze_tables
from diagnostics.prometheus import PrometheusClient, SweepResult, load_config, sweep
from diagnostics.service import Request, StoreSource
from diagnostics.service import sweep as sweep_source
from diagnostics.store import open_store
from tests.prometheus.helpers import Server, Written, newest, promtool_missing, serve_written, written_fleet

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))

SEED, HOURS = 6113, 6.0
SCENARIOS = ["xid79_gpu_lost", "replay_storm", "pcie_riser_replays", "nvswitch_port_fault", "gpu_wide_fault",
             "healthy", "flapping_link"]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    return written_fleet(tmp_path_factory.mktemp("synth"), seed=SEED, scenarios=SCENARIOS, hours=HOURS)


@pytest.fixture(scope="module")
def served(written: Written) -> Iterator[Server]:
    yield from serve_written(written)


@pytest.fixture(scope="module")
def read_back(written: Written, served: Server) -> SweepResult:
    """The push-down with its offending nodes read back and diagnosed by the engine."""
    with PrometheusClient(load_config(served.url, env={})) as client:
        return sweep(client, load_thresholds(), at=newest(written[0]), window_hours=1.0)


def test_the_four_ways_of_sweeping_agree(written: Written,
                                         read_back: SweepResult, tmp_path: Path) -> None:
    """One node at a time, the fleet engine in memory, `sweep --store` and the Prometheus push-down: the same
    failing links and, where the server's series say what the files say, the same localized components."""
    tables, inventory, folder = written
    thresholds = load_thresholds()
    end = newest(written[0])
    memory = analyze_fleet(tables, end=end, platforms=inventory, thresholds=thresholds)
    store = open_store(tmp_path / "store")
    store.ingest([folder / "fleet"])
    stored = sweep_source(StoreSource(store), Request(end=end, thresholds=thresholds))
    assert stored.complete, stored.incomplete_reasons

    def failing(d: Diagnosis) -> set[tuple[object, ...]]:
        return {(f.ref.slug, c.rule) for f in d.findings for c in f.crossed
                if f.severity in (Severity.FAILING, Severity.DOWN)}

    for node in sorted(inventory):
        alone = analyze_tables(tables, node_id=node, end=end, platform=inventory[node], platforms=inventory)
        assert failing(alone) == failing(memory.diagnoses[node]), node
        assert [loc.ref.slug for loc in alone.localizations] == \
            [loc.ref.slug for loc in memory.diagnoses[node].localizations], node
        if node in stored.diagnoses:
            assert failing(stored.diagnoses[node]) == failing(alone), node
            assert [loc.ref.slug for loc in stored.diagnoses[node].localizations] == \
                [loc.ref.slug for loc in alone.localizations], node
        else:
            assert not failing(alone), node
    # what the server can judge: the pushed rules less the Xid ones (these series carry no Xid counter), and the
    # built-in ones every sweep applies (series stopped, links or GPUs fewer than the platform's)
    pushed_rules = ({r.name for r in thresholds.rules if r.counter != "xid"}
                    - {r.split(":")[0] for r in read_back.not_pushed_down}
                    | {"link_missing", "links_below_expected", "gpus_missing"})
    state_only = {n for n, d in memory.diagnoses.items()  # the files' link_state column, which no exporter carries
                  if any(c.rule == "link_down" for f in d.findings for c in f.crossed)}
    for node, diagnosis in read_back.diagnoses.items():
        engine = memory.diagnoses[node]
        on_server = {(s, r) for s, r in failing(diagnosis) if r in pushed_rules}
        in_files = {(s, r) for s, r in failing(engine) if r in pushed_rules}
        assert on_server == in_files, node
        # the same parts where the server's series name the board (these carry no model label) and say no less than
        # the files; their order can differ: the server holds no step times here
        if node not in state_only and diagnosis.platform is not None:
            assert sorted(loc.ref.slug for loc in diagnosis.localizations) == \
                sorted(loc.ref.slug for loc in engine.localizations), node
    assert all(d.platform == inventory[n] for n, d in read_back.diagnoses.items())  # named from the model label
    offending = {o.node_id for o in read_back.offenders if o.severity in (Severity.FAILING, Severity.DOWN)}
    assert offending == {n for n, d in memory.diagnoses.items()
                         if {r for _, r in failing(d)} & pushed_rules}
    lost = [n for n, d in memory.diagnoses.items() if d.localization is not None
            and d.localization.fault is not None and d.localization.fault.value == "gpu-off-bus"]
    assert lost and all(n in offending for n in lost)  # the GPU off the bus, seen by all four
    for node in lost:
        assert read_back.diagnoses[node].localization is not None
        assert read_back.diagnoses[node].localization.ref == memory.diagnoses[node].localization.ref
