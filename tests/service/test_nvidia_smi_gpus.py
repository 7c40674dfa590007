"""Which GPUs an `nvidia-smi nvlink` output leaves out, and why: one narrowed with `-i` (or excerpted) judges none it
leaves out as missing, through the file and the store alike; a GPU nvidia-smi names as lost is a GPU off the bus;
an output of every GPU but the last, from GPU 0 (a GPU the driver never enumerated), is still judged."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from diagnostics import Diagnosis
from diagnostics.enums import Severity
from diagnostics.ingest.base import Source
from diagnostics.ingest.nvlink import READER
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store

NODE = "hpc-gpu-node-03"
LOST = "Unable to determine the device handle for GPU0000:4E:00.0: GPU is lost.  Reboot the system to recover this GPU"


def output(gpus: list[int], at: str, *, lost: int | None = None, replays: int = 0) -> str:
    """`nvidia-smi nvlink -e` of an H100 board after a stated time: these GPUs, and a lost one in its place."""
    lines = [at]
    for gpu in sorted([*gpus, *([lost] if lost is not None else [])]):
        if gpu == lost:
            lines.append(LOST)
            continue
        lines.append(f"GPU {gpu}: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababab{gpu:04d})")
        for link in range(18):
            lines += [f"         Link {link}: Replay Errors: {replays}", f"         Link {link}: Recovery Errors: 0",
                      f"         Link {link}: CRC Errors: 0", ""]
    return "\n".join(lines) + "\n"


def readings(folder: Path, gpus: list[int], **kw: int) -> list[Path]:
    """Two readings a quarter of an hour apart, as an engineer runs the command twice."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, at in enumerate(("2026-12-04T10:00:00Z", "2026-12-04T10:15:00Z")):
        path = folder / f"nvlink-{i}.txt"
        path.write_text(output(gpus, at, **kw), encoding="utf-8")
        paths.append(path)
    return paths


def answers(tmp_path: Path, gpus: list[int], **kw: int) -> tuple[object, object]:
    """The node's diagnosis through the files and through a store that ingested them."""
    return through_both(readings(tmp_path / "in", gpus, **kw), tmp_path)


def through_both(paths: list[Path], tmp_path: Path) -> tuple[Diagnosis, Diagnosis]:
    """The node's diagnosis of these files, read as files and through a store that ingested them one by one."""
    source, _, _ = files_source(paths, node=NODE)
    by_file = diagnose(source, Request(node=NODE)).diagnosis
    store = open_store(tmp_path / "store")
    for path in paths:
        store.ingest([path], node_id=NODE)
    by_store = diagnose(StoreSource(tmp_path / "store"), Request(node=NODE)).diagnosis
    return by_file, by_store


def test_an_output_of_one_gpu_judges_no_other_gpu_missing_through_file_and_store(tmp_path: Path) -> None:
    for got in answers(tmp_path, [0]):
        assert not got.fault_detected, got.findings
        assert not any("reports no telemetry" in str(f.crossed) for f in got.findings)
        assert any("nvidia-smi output of some GPUs" in w for w in got.warnings)


def test_an_output_of_gpus_not_numbered_from_0_is_narrowed(tmp_path: Path) -> None:
    said = READER.read(Source.from_text(output([2, 5], "2026-12-04T10:00:00Z"), name="two.txt"), node_id=NODE)
    assert said.partial and said.warnings == []
    whole = READER.read(Source.from_text(output(list(range(8)), "2026-12-04T10:00:00Z"), name="all.txt"))
    assert not whole.partial


def test_a_lost_gpu_is_off_the_bus_at_its_place_in_the_output(tmp_path: Path) -> None:
    said = READER.read(Source.from_text(output([0, 1, 2, 4, 5, 6, 7], "2026-12-04T10:00:00Z", lost=3),
                                        name="lost.txt"), node_id=NODE)
    events = said["events"]
    assert events[["gpu", "pci_bus_id", "code"]].values.tolist() == [[3, "0000:4e:00.0", 79]]
    assert not said.partial  # it listed every GPU it could reach
    for got in answers(tmp_path, [0, 1, 2, 4, 5, 6, 7], lost=3):
        assert got.fault_detected and got.ticket_priority == "urgent"
        assert got.isolated_component == "GPU 3"
        assert {f.component for f in got.findings if f.severity is Severity.DOWN} == {"GPU 3"}


def test_another_reason_names_the_gpu_and_its_bus() -> None:
    text = output([0, 1], "2026-12-04T10:00:00Z").replace(
        "GPU 1:", "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error\nGPU 2:")
    said = READER.read(Source.from_text(text, name="unknown.txt"), node_id=NODE)
    assert said["events"].empty
    assert any("could not reach GPU 1 at 0000:0b:00.0 (Unknown Error)" in w.message for w in said.warnings)


@pytest.mark.parametrize("gpus", [list(range(7)), list(range(8))])
def test_every_gpu_but_the_last_is_still_judged(tmp_path: Path, gpus: list[int]) -> None:
    """A GPU the driver never enumerated renumbers the rest: 7 of 8 from GPU 0 is one GPU missing, not an excerpt."""
    for got in answers(tmp_path, gpus):
        missing = [f.component for f in got.findings if "reports no telemetry" in str(f.crossed)]
        assert missing == (["GPU 7"] if len(gpus) == 7 else [])
        assert not any("some GPUs" in w for w in got.warnings)


def test_a_narrowed_output_placed_on_the_node_the_rest_of_its_paste_names_is_marked_so(tmp_path: Path) -> None:
    """A paste's nvidia-smi output names no node; the scrape beside it does: the store keeps the mark on that node."""
    scrape = ('# TYPE DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0 counter\n'
              f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{{gpu="1",Hostname="{NODE}"}} 3 1764842400000\n')
    paste = tmp_path / "paste.txt"
    paste.write_text("$ curl -s localhost:9400/metrics\n" + scrape + "$ nvidia-smi nvlink -e -i 0\n"
                     + output([0], "2026-12-04T10:00:00Z").split("\n", 1)[1], encoding="utf-8")
    store = open_store(tmp_path / "store")
    assert [f.status for f in store.ingest([paste]).files] == ["ingested"]
    assert store.db.execute("select node_id, reading from nodes").fetchall() == [(NODE, "cut short")]


ONE_GPU = Path(__file__).parents[2] / "fixtures" / "real" / "smi_q_one_gpu_h100_1.txt"


def test_a_q_output_of_one_gpu_is_stored_by_its_bus_and_said_alike_through_file_and_store(tmp_path: Path) -> None:
    """`nvidia-smi -q -i 0` prints one GPU of the eight attached and no index: the store keeps that GPU by its bus
    (its ingest ended in a traceback, the readings written but not listed), and both doors say its readings are
    judged as the GPU at that bus (one reading: totals, no rate) rather than that the node has none."""
    source, _, _ = files_source([ONE_GPU], node="q-node")
    by_file = diagnose(source, Request(node="q-node")).diagnosis
    store = open_store(tmp_path / "store")
    for at in (None, datetime(2024, 11, 14, 8, tzinfo=UTC)):  # the second replaces the first
        store.ingest([ONE_GPU], node_id="q-node", at=at)
    rows = list(store.db.query("select gpu, pci_bus_id, serial from gpus where node_id = 'q-node'"))
    assert rows == [{"gpu": None, "pci_bus_id": "0000:18:00.0", "serial": "1654423001593"}]
    by_store = diagnose(StoreSource(tmp_path / "store"), Request(node="q-node")).diagnosis
    for got in (by_file, by_store):
        [read] = got.findings
        assert read.component == "the GPU at PCI 0000:18:00.0 PCIe" and read.gpu is None and read.counts["replay"] == 7
        assert got.fault_said() == "unknown" and got.unrated()  # one reading: no rate judged
        assert list(got.bus_gpu_ids) == ["0000:18:00.0"] and got.bus_gpu_ids["0000:18:00.0"].serial == "1654423001593"


def test_a_paste_of_link_states_alone_asks_for_the_counters_not_a_second_reading(tmp_path: Path) -> None:
    """`nvidia-smi nvlink -s` reads speeds and states, no counter: a second reading of it gives no rate either, so
    the action asks for the error counters; an `nvlink -e` reading's asks for a second reading."""
    from diagnostics.analysis.diagnosis import LONE_READING_ACTION, STATES_ONLY_ACTION

    real = Path(__file__).parents[2] / "fixtures" / "real"
    for name, action in (("nvlink_s_a100_1.txt", STATES_ONLY_ACTION), ("nvlink_e_h100_1.txt", LONE_READING_ACTION)):
        source, node, _ = files_source([real / name], node="pasted")
        by_file = diagnose(source, Request(node=node)).diagnosis
        store = open_store(tmp_path / name)
        store.ingest([real / name], node_id="pasted", at=datetime(2026, 12, 4, 10, tzinfo=UTC))  # a paste: no time
        by_store = diagnose(StoreSource(tmp_path / name), Request(node="pasted")).diagnosis
        assert by_file.repair_action == by_store.repair_action == action, name


H100_Q = Path(__file__).parents[2] / "fixtures" / "real" / "smi_q_h100_8gpu_gpud_1.txt"  # 8 GPUs; the fifth at 97


def q_with_gpu4_lost() -> str:
    """The real 8-GPU `nvidia-smi -q`, its fifth GPU's section (bus 97) replaced by nvidia-smi's line for a GPU it
    could not reach, where that GPU's section stands."""
    text = H100_Q.read_text(encoding="utf-8")
    start = text.index("GPU 00000000:97:00.0")
    end = text.index("GPU 00000000:A8:00.0")
    return text[:start] + "Unable to determine the device handle for GPU 00000000:97:00.0: GPU is lost.  Reboot the " \
                          "system to recover this GPU\n\n" + text[end:]


def test_a_q_output_naming_a_lost_gpu_is_that_gpu_off_the_bus_through_file_and_store(tmp_path: Path) -> None:
    """`nvidia-smi -q` of a board with a GPU off the bus: its line stands in the GPU's place. Read as a line it did not
    understand, the answer was 'low, fault unknown' with 'Attached GPUs says 8 and the output holds 7' and no GPU
    given an index, where `nvidia-smi nvlink` of the same machine was urgent."""
    from diagnostics.ingest.smi_query import READER as Q

    said = Q.read(Source.from_text(q_with_gpu4_lost(), name="q.txt"), node_id=NODE)
    lost = said["events"][said["events"]["kind"] == "xid"]  # beside each GPU's fabric state
    assert lost[["gpu", "pci_bus_id", "code"]].values.tolist() == [[4, "0000:97:00.0", 79]]
    assert sorted(said["link_samples"]["gpu"].tolist()) == [0, 1, 2, 3, 5, 6, 7]  # the others keep their indexes
    assert not [w for w in said.warnings if "Attached GPUs" in w.message or "not read" in w.message], said.warnings
    paths = [tmp_path / "q.txt"]
    paths[0].write_text(q_with_gpu4_lost(), encoding="utf-8")
    for got in through_both(paths, tmp_path):
        assert got.fault_detected and got.ticket_priority == "urgent" and got.isolated_component == "GPU 4"


def test_a_lost_gpu_in_an_excerpt_of_q_keeps_its_bus_and_another_reason_is_said() -> None:
    """Without `Attached GPUs` no section has an index: the lost GPU is the GPU at its bus; a GPU nvidia-smi could not
    reach for another reason is said, not read as off the bus."""
    from diagnostics.ingest.smi_query import READER as Q

    text = q_with_gpu4_lost()
    excerpt = text[text.index("GPU 00000000:86:00.0"):]
    said = Q.read(Source.from_text(excerpt, name="cut.txt"), node_id=NODE)
    events = said["events"][said["events"]["kind"] == "xid"]
    assert events[["pci_bus_id", "code"]].values.tolist() == [["0000:97:00.0", 79]] and events["gpu"].isna().all()
    other = Q.read(Source.from_text(excerpt.replace("GPU is lost", "Unknown Error"), name="other.txt"), node_id=NODE)
    assert not (other["events"]["kind"] == "xid").any()
    assert any("could not reach the GPU at 0000:97:00.0 (Unknown Error" in w.message for w in other.warnings)


def test_a_lost_gpus_line_printed_before_the_sections_is_placed_by_its_bus() -> None:
    """`nvidia-smi -q &> file` puts the stderr line for an unreachable GPU first, before every section: read in
    output order it took index 0 and pushed each GPU after it up one, so the ticket named GPU 0 for bus 75 and GPU 1
    for GPU 0's readings. The sections run in bus order; the lost GPU takes its place by its bus. `nvidia-smi -L`
    spells the line `for gpu`."""
    from diagnostics.ingest.smi_query import READER as Q

    text = H100_Q.read_text(encoding="utf-8")
    start, end = text.index("GPU 00000000:75:00.0"), text.index("GPU 00000000:86:00.0")
    banner = text.index("==============NVSMI LOG")
    for spelled in ("GPU", "gpu"):
        line = f"Unable to determine the device handle for {spelled} 0000:75:00.0: GPU is lost.  Reboot the system\n"
        first = text[:banner] + line + text[banner:start] + text[end:]
        said = Q.read(Source.from_text(first, name="q.txt"), node_id=NODE)
        lost = said["events"][said["events"]["kind"] == "xid"]
        assert lost[["gpu", "pci_bus_id"]].values.tolist() == [[2, "0000:75:00.0"]]
        rows = said["link_samples"].sort_values("gpu")
        assert rows[["gpu", "pci_bus_id"]].values.tolist()[:3] == [[0, "0000:53:00.0"], [1, "0000:64:00.0"],
                                                                   [3, "0000:86:00.0"]]


def first(text: str) -> str:
    """The output as `nvidia-smi nvlink -e &> file` keeps it: the stderr line of the lost GPU above every GPU."""
    return LOST + "\n" + text.replace(LOST + "\n", "")


def test_a_lost_gpus_line_written_first_takes_the_index_the_listing_skips(tmp_path: Path) -> None:
    """Read in output order, the line above GPU 0 took index 0: the ticket isolated GPU 0, a GPU the same output lists
    with its links, and named it for swap-testing. NVML numbers GPUs in bus order and nvidia-smi lists the others
    under their own indexes, so the one the listing skips is the lost GPU's."""
    said = READER.read(Source.from_text(first(output([0, 1, 2, 4, 5, 6, 7], "2026-12-04T10:00:00Z", lost=3)),
                                        name="lost.txt"), node_id=NODE)
    assert said["events"][["gpu", "pci_bus_id", "code"]].values.tolist() == [[3, "0000:4e:00.0", 79]]
    folder = tmp_path / "in"
    paths = readings(folder, [0, 1, 2, 4, 5, 6, 7], lost=3)
    for path in paths:
        path.write_text(first(path.read_text(encoding="utf-8")), encoding="utf-8")
    for got in through_both(paths, tmp_path):
        assert got.fault_detected and got.isolated_component == "GPU 3"
        assert {f.component for f in got.findings if f.severity is Severity.DOWN} == {"GPU 3"}


@pytest.mark.parametrize("gpus", [[0], list(range(7))])
def test_a_lost_gpu_no_skipped_index_places_is_known_by_its_bus_not_another_gpus_index(tmp_path: Path,
                                                                                       gpus: list[int]) -> None:
    """Above a listing that skips no index (one GPU's, or a driver that numbered the rest from 0), the lost GPU is the
    GPU at its bus: GPU 0, listed with its links, is never the one named off the bus."""
    said = READER.read(Source.from_text(first(output(gpus, "2026-12-04T10:00:00Z")), name="lost.txt"),
                       node_id=NODE)
    events = said["events"]
    assert events[["pci_bus_id", "code"]].values.tolist() == [["0000:4e:00.0", 79]] and events["gpu"].isna().all()
    folder = tmp_path / "in"
    paths = readings(folder, gpus)
    for path in paths:
        path.write_text(first(path.read_text(encoding="utf-8")), encoding="utf-8")
    for got in through_both(paths, tmp_path):
        assert got.fault_detected and got.ticket_priority == "urgent"
        assert "GPU 0" not in {got.isolated_component, *(f.component for f in got.findings
                                                         if f.severity is Severity.DOWN)}, got.findings
        assert "0000:4e:00.0" in (got.isolated_component or "").lower() + " ".join(
            f.component.lower() for f in got.findings), (got.isolated_component, [f.component for f in got.findings])


@pytest.mark.parametrize(("gpus", "named"), [([0, 1, 2, 4, 5, 6, 7], "GPU 3 at 0000:4e:00.0"),
                                             (list(range(7)), "the GPU at 0000:4e:00.0")])
def test_a_gpu_not_reached_for_another_reason_written_first_is_named_as_a_lost_one_is(gpus: list[int],
                                                                                      named: str) -> None:
    """Its warning named GPU 0, a GPU the output lists with its links, for the line written above every GPU."""
    text = first(output(gpus, "2026-12-04T10:00:00Z")).replace("GPU is lost.  Reboot the system to recover this GPU",
                                                              "Unknown Error")
    said = READER.read(Source.from_text(text, name="other.txt"), node_id=NODE)
    assert said["events"].empty
    assert [w.message for w in said.warnings if "could not reach" in w.message] == [
        f"nvidia-smi could not reach {named} (Unknown Error): it may have fallen off the bus; check the kernel log "
        "for Xid 79 and `nvidia-smi -q`"]
