"""A repair is judged on readings since it, window by window: held after a clean soak, failed when errors return."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.analysis.verify import Diagnostic, RepairVerdict, check_repair
from diagnostics.config.verification import load_verification
from diagnostics.enums import FaultKind
from diagnostics.errors import ConfigError
from diagnostics.repair import PlanFacts, repair_plan
from diagnostics.service import StoreSource, verify_repair
from diagnostics.store import open_store

from .helpers import T0, link_series, links, steady

PART = "gpu2-nvlink1"
SOAK = load_verification(soak_hours=6)
SAMPLES = 6 * 12 + 1  # six hours at 5 min


def _node(repaired: list[float] | dict[str, list[float]], *, n: int = SAMPLES) -> pd.DataFrame:
    """GPU 2 link 1 with `repaired` replay totals (or several counters) since the repair, beside a healthy link."""
    counters = repaired if isinstance(repaired, dict) else {"replay": repaired}
    return links(link_series({k: v[:n] for k, v in counters.items()}, gpu=2, link=1),
                 link_series(steady(2.0, n), gpu=0, link=0))


def _check(frame: pd.DataFrame, **kw: object):
    """The part judged with a job stepping on the node all soak: the part is under load."""
    return check_repair({"link_samples": frame, "step_samples": _job()}, node_id="n1", parts={PART},
                        repaired_at=T0.to_pydatetime(), now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(),
                        **{"policy": SOAK, **kw})


def test_a_clean_soak_holds() -> None:
    check = _check(_node(steady(3.0, SAMPLES)))
    assert check.verdict is RepairVerdict.HELD and (check.windows, check.covered) == (6, 6)
    assert check.summary.startswith("the repair held: 6 h of readings clean")


def test_errors_that_return_fail_the_repair_in_the_window_they_return() -> None:
    clean = steady(3.0, 37)  # three clean hours, then 6,000 replays an hour
    back = [clean[-1] + v for v in steady(6000.0, SAMPLES - 37 + 1)[1:]]
    check = _check(_node(clean + back))
    assert check.verdict is RepairVerdict.FAILED and check.windows == 4
    assert "GPU 2 NVLink 1" in check.evidence[0] and "2026-03-01 04:00" in check.evidence[0]
    assert check.summary.startswith("the repair did not hold: ")


def test_warnings_keep_it_verifying_by_default_and_reopen_it_when_asked() -> None:
    frame = _node({"replay": steady(3.0, SAMPLES), "crc_flit": steady(150.0, SAMPLES)})  # CRC over its warning rate
    lenient = _check(frame)
    strict = _check(frame, policy=load_verification(soak_hours=6, reopen_at="warning"))
    assert lenient.verdict is RepairVerdict.HELD and any("GPU 2 NVLink 1" in e for e in lenient.evidence)
    assert strict.verdict is RepairVerdict.FAILED


def test_a_soak_too_short_or_without_readings_of_the_part_is_still_verifying() -> None:
    early = check_repair({"link_samples": _node(steady(3.0, 13), n=13)}, node_id="n1", parts={PART},
                         repaired_at=T0.to_pydatetime(), now=(T0 + pd.Timedelta(hours=1)).to_pydatetime(),
                         policy=SOAK)
    assert early.verdict is RepairVerdict.HOLDING and (early.windows, early.covered) == (1, 1)
    other = links(link_series(steady(2.0, SAMPLES), gpu=0, link=0))  # the node reports, the part does not
    blind = _check(other)
    assert blind.verdict is RepairVerdict.HOLDING and blind.covered == 0
    assert "only 0 of 6 windows hold a reading of the part" in blind.evidence[0]


def test_errors_before_the_first_full_window_fail_the_repair_at_once() -> None:
    """Two readings two minutes after a reseat, replays climbing 4,000 between them: `analyze` paged the part, while
    the verification said "0 h clean of the soak" because no full hour had passed. The readings since the last full
    window are judged too, as `analyze` judges them; clean ones keep it verifying."""
    after = T0 + pd.Timedelta(minutes=1)
    back = links(link_series([10.0, 4010.0], gpu=2, link=1, step_min=2.0, start=after),
                 link_series([0.0, 0.0], gpu=0, link=0, step_min=2.0, start=after))
    now = (T0 + pd.Timedelta(minutes=3)).to_pydatetime()
    check = check_repair({"link_samples": back}, node_id="n1", parts={PART}, repaired_at=T0.to_pydatetime(), now=now,
                         policy=SOAK)
    assert check.verdict is RepairVerdict.FAILED and check.windows == 0, check
    assert "GPU 2 NVLink 1" in check.evidence[0] and "replays" in check.evidence[0]
    quiet = links(link_series([10.0, 10.0], gpu=2, link=1, step_min=2.0, start=after))
    held = check_repair({"link_samples": quiet}, node_id="n1", parts={PART}, repaired_at=T0.to_pydatetime(),
                        now=now, policy=SOAK)
    assert held.verdict is RepairVerdict.HOLDING and "no full 1 h window" in held.evidence[0]


def test_the_stored_check_reads_only_what_came_after_the_repair(tmp_path: Path) -> None:
    before = links(link_series(steady(9000.0, 13), gpu=2, link=1, start=T0 - pd.Timedelta(hours=1)))
    after = _node(steady(3.0, SAMPLES))
    csv, steps_csv = tmp_path / "links.csv", tmp_path / "steps.csv"
    pd.concat([before, after]).to_csv(csv, index=False)
    _job().to_csv(steps_csv, index=False)
    store = open_store(tmp_path / "store")
    assert [f.status for f in store.ingest([csv, steps_csv], fmt="tables").files] == ["ingested", "ingested"]
    check = verify_repair(StoreSource(store), node="n1", parts={PART}, repaired_at=T0.to_pydatetime(), policy=SOAK)
    assert check.verdict is RepairVerdict.HELD, check
    none_yet = verify_repair(StoreSource(store), node="n1", parts={PART},
                             repaired_at=(T0 + pd.Timedelta(hours=7)).to_pydatetime(), policy=SOAK)
    assert none_yet.verdict is RepairVerdict.HOLDING and none_yet.windows == 0


def test_a_bad_policy_names_its_field_and_value() -> None:
    with pytest.raises(ConfigError, match=r"soak_hours.*-1"):
        load_verification(soak_hours=-1)


# -- a repair holds only under load, and follows the module it was about --------------------------------------------
def _job(hours: float = 6.0) -> pd.DataFrame:
    from .helpers import steps
    return steps([180.0] * (int(hours * 12) + 1), nodes="n1")


def test_a_drained_idle_node_does_not_pass_the_soak() -> None:
    """The issue's case: a repair 'held' because the part had readings, though nothing ran on the drained node."""
    idle = check_repair({"link_samples": _node(steady(0.0, SAMPLES))}, node_id="n1", parts={PART},
                        repaired_at=T0.to_pydatetime(), now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(),
                        policy=SOAK)
    assert idle.verdict is RepairVerdict.HOLDING and (idle.covered, idle.loaded) == (6, 0)
    assert "no traffic on the part" in idle.evidence[0] and "dcgmi diag -r 3" in idle.evidence[0]
    busy = check_repair({"link_samples": _node(steady(0.0, SAMPLES)), "step_samples": _job()}, node_id="n1",
                        parts={PART}, repaired_at=T0.to_pydatetime(),
                        now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(), policy=SOAK)
    assert busy.verdict is RepairVerdict.HELD and busy.loaded == 6


def test_link_traffic_on_the_parts_gpu_counts_as_load_and_another_gpus_does_not() -> None:
    def with_traffic(gpu: int) -> pd.DataFrame:
        frame = _node(steady(0.0, SAMPLES))
        frame.loc[frame["gpu"] == gpu, "tx_bytes_per_s"] = 5e9
        return frame

    def judged(frame: pd.DataFrame) -> RepairVerdict:
        return check_repair({"link_samples": frame}, node_id="n1", parts={PART}, repaired_at=T0.to_pydatetime(),
                            now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(), policy=SOAK).verdict

    assert judged(with_traffic(2)) is RepairVerdict.HELD
    assert judged(with_traffic(0)) is RepairVerdict.HOLDING


def test_a_post_repair_diagnostic_proves_the_part_as_traffic_does() -> None:
    from diagnostics.analysis.verify import Diagnostic

    frame = {"link_samples": _node(steady(0.0, SAMPLES))}
    kw = dict(node_id="n1", parts={PART}, repaired_at=T0.to_pydatetime(),
              now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(), policy=SOAK)
    passed = check_repair(frame, diagnostic=Diagnostic(at=(T0 + pd.Timedelta(minutes=20)).to_pydatetime(),
                                                       passed=True), **kw)  # type: ignore[arg-type]
    assert passed.verdict is RepairVerdict.HELD and any("dcgmi diag -r 3` passed" in e for e in passed.evidence)
    failed = check_repair(frame, diagnostic=Diagnostic(at=(T0 + pd.Timedelta(minutes=20)).to_pydatetime(),
                                                       passed=False), **kw)  # type: ignore[arg-type]
    assert failed.verdict is RepairVerdict.FAILED and "failed" in failed.evidence[0]
    stale = check_repair(frame, diagnostic=Diagnostic(at=(T0 - pd.Timedelta(hours=1)).to_pydatetime(),
                                                      passed=True), **kw)  # type: ignore[arg-type]
    assert stale.verdict is RepairVerdict.HOLDING  # a diagnostic from before the repair proves nothing of it


def test_errors_that_moved_with_the_module_after_a_swap_reopen_its_ticket() -> None:
    """The issue's case: after a swap test the errors follow the module to another GPU index, and the ticket closed.
    The module is followed by its UUID: at GPU 2 before the repair, at GPU 5 after it, and failing there."""
    module, other = "GPU-aaaaaaaa-0000-0000-0000-000000000002", "GPU-bbbbbbbb-0000-0000-0000-000000000005"
    after = links(link_series(steady(0.0, SAMPLES), gpu=2, link=1, gpu_uuid=other),
                  link_series(steady(6000.0, SAMPLES), gpu=5, link=1, gpu_uuid=module))
    check = check_repair({"link_samples": after, "step_samples": _job()}, node_id="n1", parts={PART},
                         repaired_at=T0.to_pydatetime(), now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(),
                         policy=SOAK, uuids_before={2: module, 5: other})
    assert check.verdict is RepairVerdict.FAILED
    assert check.evidence[0].startswith("the errors followed the module: gpu2-nvlink1 moved to gpu5-nvlink1")
    # without the UUIDs the slot alone is judged: clean, and the ticket would close on a module still failing
    blind = check_repair({"link_samples": after, "step_samples": _job()}, node_id="n1", parts={PART},
                         repaired_at=T0.to_pydatetime(), now=(T0 + pd.Timedelta(hours=6)).to_pydatetime(),
                         policy=SOAK)
    assert blind.verdict is RepairVerdict.HELD


def test_the_stored_check_follows_the_uuid_it_read_before_the_repair(tmp_path: Path) -> None:
    module = "GPU-aaaaaaaa-0000-0000-0000-000000000002"
    before = links(link_series(steady(9000.0, 13), gpu=2, link=1, start=T0 - pd.Timedelta(hours=1),
                               gpu_uuid=module))
    after = links(link_series(steady(0.0, SAMPLES), gpu=2, link=1, gpu_uuid="GPU-cccccccc-0000-0000-0000-00000000000c"),
                  link_series(steady(6000.0, SAMPLES), gpu=5, link=1, gpu_uuid=module))
    csv = tmp_path / "links.csv"
    pd.concat([before, after]).to_csv(csv, index=False)
    store = open_store(tmp_path / "store")
    assert store.ingest([csv], fmt="tables").files[0].status == "ingested"
    check = verify_repair(StoreSource(store), node="n1", parts={PART}, repaired_at=T0.to_pydatetime(), policy=SOAK)
    assert check.verdict is RepairVerdict.FAILED and "followed the module" in check.evidence[0]


def test_the_diagnostic_a_repair_is_verified_by_is_the_one_its_ticket_runs() -> None:
    """A ticket's steps run `dcgmi diag -r 3` on the drained node; the verification asked for the result of `-r 2`, a
    run no step had told anyone to make."""
    plan = repair_plan("hgx-h100-8gpu", FaultKind.NVLINK, PlanFacts(node_id="n", gpu=2, link=1))
    assert Diagnostic(at=T0.to_pydatetime(), passed=True).command in [s.command for s in plan.repair]
