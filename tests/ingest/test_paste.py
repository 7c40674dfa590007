"""Mixed pastes: sections read by the registered readers, the rest warned with the paste's own line numbers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics import values
from diagnostics.ingest import detect
from diagnostics.ingest.base import IngestResult, Source
from diagnostics.model import Diagnosis
from diagnostics.service import Request, StoreSource, diagnose, files_source
from diagnostics.store import open_store
from tests.ingest.helpers import REAL, SAMPLES, read, read_text, warning_lines


def test_mixed_markdown_paste() -> None:
    result = read(SAMPLES / "mixed_paste.md")
    links = result["link_samples"]
    nvlink = links[links["link_type"] == "nvlink"].set_index("link")
    assert nvlink["link_state"].to_dict() == {0: "up", 1: "inactive"}
    pcie = links[links["link_type"] == "pcie"].iloc[0]
    assert (pcie["replay"], pcie["replay_rollovers"], pcie["pci_bus_id"]) == (7, 1, "0000:19:00.0")
    assert result["events"]["code"].tolist() == [74] and result["events"]["link"].tolist() == [1]
    assert set(links["node_id"]) | set(result["events"]["node_id"]) == {"gpu-node-07"}  # from the prompt
    assert links["source"].tolist() == [f"{SAMPLES / 'mixed_paste.md'}:{n}" for n in (6, 7, 15)]
    assert warning_lines(result) == [2, 9, 11]  # the prose, dmesg's boot-relative times, `uptime`'s output


def test_paste_wins_only_when_sections_really_mix() -> None:
    mixed = (SAMPLES / "mixed_paste.md").read_text()
    assert detect.choose(Source.from_text(mixed)).name == "paste"
    for path in [*REAL.iterdir(), *SAMPLES.iterdir()]:
        if path.name != "mixed_paste.md" and path.is_file():
            assert detect.choose(Source.from_path(path)).name != "paste", path.name


def test_two_outputs_without_prompts_split_at_blank_lines() -> None:
    nvlink = (REAL / "nvlink_s_v100_inactive_1.txt").read_text().splitlines()[4:]
    xid = (REAL / "xid_145_149_log_1.txt").read_text().splitlines()[2:4]
    result = read_text("\n".join([*xid, "", *nvlink]))
    assert result.rows["events"] == 2 and result.rows["link_samples"] == 6
    assert result["link_samples"]["source"].iloc[0] == "paste.txt:5"  # line 4 is the GPU header


def test_unread_output_and_a_command_without_output_are_named() -> None:
    result = read_text("$ ls\nfoo bar\n$ nvidia-smi nvlink -s\nGPU 0: X (UUID: GPU-0)\n  Link 0: 25 GB/s\n"
                       "$ dmesg | grep Xid\nkernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, off the bus\n"
                       "$ nvidia-smi -q\n", fmt="paste")
    assert result.rows["link_samples"] == 1 and result.rows["events"] == 1
    assert warning_lines(result) == [2, 8]  # `ls`'s output, and `nvidia-smi -q` with nothing after it


def test_a_date_before_an_output_times_it() -> None:
    text = ("$ date\nSun Nov 29 16:09:49 UTC 2026\n$ nvidia-smi nvlink -e\nGPU 0: X (UUID: GPU-0)\n"
            "  Link 0: Replay Errors: 3\n  Link 0: Recovery Errors: 0\n  Link 0: CRC Errors: 0\n"
            "$ dmesg\n[5.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n")
    result = read_text(text)
    assert result["link_samples"]["timestamp"].tolist() == [pd.Timestamp("2026-11-29 16:09:49", tz="UTC")]
    assert result["events"]["timestamp"].isna().all()  # dmesg counts from boot: no time, and not the date's
    assert warning_lines(result) == [9]


class _LaterReader:
    """A reader registered after the paste reader was written: the paste must reach it through the registry."""

    name = "later"

    def sniff(self, head: str) -> float:
        return 0.95 if "LATER FORMAT" in head else 0.0

    def read(self, source: Source, *, node_id: str | None = None) -> IngestResult:
        rows = [{"a": "GPU0", "b": "GPU1", "relation": "NV", "nvlinks": 18, "node_id": node_id,
                 "source": f"{source.name}:{n}"} for n, text in source.lines() if text.startswith("LATER FORMAT")]
        return IngestResult.of(topology=pd.DataFrame(rows))


def test_sections_reach_readers_registered_later(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = {**detect.readers(), "later": _LaterReader()}
    monkeypatch.setattr(detect, "readers", lambda: registry)
    text = "me@node-3:~$ later-tool\nLATER FORMAT row\nme@node-3:~$ nvidia-smi nvlink -s\n" \
           "GPU 0: X (UUID: GPU-0)\n  Link 0: <inactive>\n"
    result = read_text(text)
    assert result["topology"]["source"].tolist() == ["paste.txt:2"]
    assert set(result["topology"]["node_id"]) == {"node-3"}
    assert result["link_samples"]["link_state"].tolist() == ["inactive"]


def test_a_paste_of_more_outputs_than_the_limit_reads_the_first_and_names_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limits_file = tmp_path / "limits.toml"
    shipped = (Path(values.__file__).parent / "data" / "limits.toml").read_text()
    limits_file.write_text(shipped.replace("max_outputs = 200", "max_outputs = 2"))
    monkeypatch.setenv(values.ENV_FILE, str(limits_file))
    sample = (SAMPLES / "mixed_paste.md").read_text()
    result = detect.read(Source.from_text(sample * 3, name="paste.md"))
    over = [w for w in result.warnings if "max_outputs" in w.message]
    assert len(over) == 1 and over[0].line is not None
    assert f"lines {over[0].line}-{(sample * 3).count(chr(10))} not read" in over[0].message
    assert over[0].line <= sample.count("\n")  # two outputs of the first copy, then the cap
    first = detect.read(Source.from_text(sample, name="paste.md"))
    assert len(result["link_samples"]) <= len(first["link_samples"])


def _body(name: str) -> list[str]:
    """A real fixture's lines without its provenance comments."""
    return [line for line in (REAL / name).read_text().splitlines() if not line.startswith(("# source:", "# note:"))]


def _doors(path: Path, tmp: Path) -> tuple[Diagnosis, Diagnosis]:
    """The same question through the files and through the store they were ingested into."""
    files, node, _ = files_source([path], node="n1")
    open_store(tmp / "store").ingest([path], node_id="n1")
    request = Request(node=node)
    return diagnose(files, request).diagnosis, diagnose(StoreSource(tmp / "store"), request).diagnosis


def test_a_pastes_undated_events_take_its_newest_time_in_the_store_as_in_the_file(tmp_path: Path) -> None:
    """A `date`d nvlink output with a dmesg (seconds since boot) after it: ingest stores the log's events at the
    paste's newest time and says so, as `analyze FILE` takes them; the same log alone states no time, and is kept
    without one (no window places it)."""
    nvlink, kernel = _body("nvlink_e_v100_short_form_dated_2.txt"), _body("kernel_xid79_sxid20034_gpud_1.txt")
    paste, alone = tmp_path / "paste.txt", tmp_path / "alone.txt"
    paste.write_text("\n".join([*nvlink, "$ dmesg", *kernel]) + "\n")
    alone.write_text("\n".join(kernel) + "\n")
    newest = read(paste)["link_samples"]["timestamp"].max()
    for path, placed in ((paste, True), (alone, False)):
        store = open_store(tmp_path / f"store-{path.stem}")
        report = store.ingest([path], node_id="n1")
        said = [w.message for w in report.warnings]
        times = pd.to_datetime(store.events("n1")["timestamp"], utc=True, format="ISO8601")
        assert len(times) == 6
        if placed:
            assert (times == newest).all(), times
            assert any(m.startswith("6 events state no time: taken as printed at the input's newest time") for m in
                       said), said
        else:
            assert times.isna().all()
            assert any(m.startswith("6 events state no time: the store keeps them") for m in said), said


def test_a_kernel_log_pasted_right_after_an_nvlink_output_is_read_as_one(tmp_path: Path) -> None:
    """No blank line and no prompt between them: the kernel log's prefixed NVRM line starts its own output, so the
    GPU that fell off the bus is the answer, as it is with a `$ dmesg` line between them."""
    nvlink, kernel = _body("nvlink_e_v100_short_form_dated_2.txt"), _body("kernel_xid79_sxid20034_gpud_1.txt")
    joined, prompted = tmp_path / "joined.txt", tmp_path / "prompted.txt"
    joined.write_text("\n".join([*nvlink, *kernel]) + "\n")
    prompted.write_text("\n".join([*nvlink, "$ dmesg", *kernel]) + "\n")
    result = read(joined)
    assert result.rows["events"] == read(prompted).rows["events"] == 6
    assert result["link_samples"]["timestamp"].nunique() == 2  # both readings keep their `date`
    assert not [w for w in result.warnings if "not read" in w.message], result.warnings
    answers = []
    for path in (joined, prompted):
        files, stored = _doors(path, tmp_path / path.stem)
        assert files.model_dump(exclude={"warnings"}) == stored.model_dump(exclude={"warnings"})
        assert files.ticket_priority.value == "urgent" and files.fault_detected
        assert files.localizations[0].component == "the GPU at PCI 0000:91:00.0"
        answers.append((files.ticket_priority, [loc.component for loc in files.localizations]))
    assert answers[0] == answers[1]


def test_bare_xid_lines_pasted_right_after_an_nvlink_output_are_read_as_theirs(tmp_path: Path) -> None:
    """Xid lines quoted without a log prefix (as issues and tickets quote them), pasted right after `nvidia-smi
    nvlink -s` with no blank line: they were lines the nvlink reader did not know, and the GPU's fatal NVLink Xid
    149 was lost (low, fault unknown); with a blank line between, it was read. No other tool prints `NVRM: Xid`."""
    nvlink, kernel = _body("nvlink_s_a100_1.txt"), _body("kernel_xid14x_gpud_1.txt")
    joined, apart = tmp_path / "joined.txt", tmp_path / "apart.txt"
    joined.write_text("\n".join([*nvlink, *kernel]) + "\n")
    apart.write_text("\n".join([*nvlink, "", *kernel]) + "\n")
    result = read(joined)
    assert result.rows == read(apart).rows and result.rows["events"] and result.rows["link_samples"]
    assert not [w for w in result.warnings if "not read as" in w.message], result.warnings


def test_outputs_pasted_one_after_another_split_where_a_line_opens_another_format() -> None:
    dcgm = _body("dcgm_metrics_a100_1.txt")
    kernel = _body("sxid_24007_xid_a100_1.txt")
    smi = _body("smi_q_fabric_unhealthy_1.txt")
    alone = {name: read_text("\n".join(lines)).rows for name, lines in
             (("dcgm", dcgm), ("kernel", kernel), ("smi", smi))}
    assert alone["kernel"]["events"] and alone["dcgm"]["link_samples"]
    for order in ([*smi, *kernel, *dcgm], [*kernel, *dcgm], [*dcgm, *kernel]):
        joined = read_text("\n".join(order))
        parts = [alone[name] for name, lines in (("dcgm", dcgm), ("kernel", kernel), ("smi", smi)) if lines[0] in order]
        assert joined.rows == {table: sum(part[table] for part in parts) for table in joined.rows}


def test_a_line_another_format_prints_inside_an_output_it_does_not_take_stays_in_that_output() -> None:
    """A prefixed NVRM line that is no event on its own, after an nvlink output: no kernel log follows, so the
    nvlink reader keeps it and names it, as it does without the split."""
    nvlink = _body("nvlink_e_v100_short_form_1.txt")
    result = read_text("\n".join([*nvlink, "[12.5] NVRM: loading NVIDIA UNIX x86_64 Kernel Module"]))
    assert detect.choose(Source.from_text("\n".join(nvlink))).name == "nvlink"
    assert result.rows["events"] == 0 and result.rows["link_samples"] > 0
    assert [w.message for w in result.warnings if "not read as nvidia-smi nvlink" in w.message]


def _bare(name: str) -> list[str]:
    """A real fixture's output as the tool printed it into a file: no provenance, prompt or blank lines."""
    return [line for line in _body(name) if line.strip() and not line.startswith("$ ")]


@pytest.mark.parametrize(("first", "second"), [
    (_body("nvlink_s_v100_inactive_1.txt"), _body("topo_m_dgx1_v100_1.txt")),
    (_bare("nvlink_e_h100_1.txt"), _body("topo_m_hgx_h100_1.txt")),
    (_body("topo_m_hgx_h100_1.txt"), _bare("nvlink_e_h100_1.txt")),
], ids=["nvlink -s then topo -m", "nvlink -e then topo -m", "topo -m then nvlink -e"])
def test_two_outputs_concatenated_with_no_prompt_are_both_read(first: list[str], second: list[str]) -> None:
    """`cat a.txt b.txt`: a `topo -m` header or an nvlink GPU header right after the other output's last line starts
    its own output, so neither is lost to the reader of the other."""
    parts = [read_text("\n".join(lines)).rows for lines in (first, second)]
    joined = read_text("\n".join([*first, *second]))
    assert joined.rows == {table: sum(part[table] for part in parts) for table in joined.rows}
    assert joined.rows["link_samples"] and joined.rows["topology"]


def test_an_nvlink_output_concatenated_before_a_topology_is_judged_at_every_door(tmp_path: Path) -> None:
    """The two inactive links of GPU 3 in the nvlink part are the answer, through the file and through the store."""
    path = tmp_path / "cat.txt"
    path.write_text((REAL / "nvlink_s_v100_inactive_1.txt").read_text() + (REAL / "topo_m_dgx1_v100_1.txt").read_text())
    at = pd.Timestamp("2025-06-02T10:00:00Z").to_pydatetime()
    files, node, _ = files_source([path], node="n1")
    open_store(tmp_path / "store").ingest([path], node_id="n1", at=at)
    request = Request(node=node, end=at)
    answers = [diagnose(source, request).diagnosis for source in (files, StoreSource(tmp_path / "store"))]
    assert answers[0].model_dump(exclude={"warnings"}) == answers[1].model_dump(exclude={"warnings"})
    assert answers[0].fault_detected and answers[0].localizations[0].component == "GPU 3"


def _past_the_head(tmp_path: Path) -> dict[str, Path]:
    """Outputs pasted after one that fills the 64 KiB head detection reads: a whole 8-GPU `nvidia-smi -q` (some 65
    KB) then a kernel log under its command, and 700 kernel-log lines then `nvidia-smi nvlink -s` under its own."""
    q = _body("smi_q_h100_8gpu_gpud_1.txt")
    kernel = _body("kernel_off_bus_no_xid_nvsentinel_1.txt")
    noise = [f"[{i:6d}.000000] NVRM: Persistence mode is deprecated and will be removed in a future release. Please "
             "use nvidia-persistenced instead." for i in range(700)]
    links = _body("nvlink_s_b200_all_inactive_1.txt")
    pastes = {"q-then-dmesg": ["$ nvidia-smi -q", *q, "$ sudo dmesg | grep NVRM", *kernel],
              "log-then-nvlink": ["$ dmesg", *noise, "$ nvidia-smi nvlink -s", *links]}
    out = {}
    for name, lines in pastes.items():
        out[name] = tmp_path / f"{name}.txt"
        out[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_an_output_pasted_after_the_head_is_split_off_and_read(tmp_path: Path) -> None:
    """The outputs past the head were lines the first output's reader did not know: the kernel log's GPU off the
    bus ('urgent' alone) read as 'low, fault unknown', the B200's down links as 'no telemetry read'."""
    pastes = _past_the_head(tmp_path)
    assert all(p.stat().st_size > 64 * 1024 for p in pastes.values())
    mixed = read(pastes["q-then-dmesg"])
    assert (mixed["events"]["code"] == 79).any() and len(mixed["link_samples"])
    assert not [w for w in mixed.warnings if "not read as nvidia-smi -q" in w.message], mixed.warnings
    later = read(pastes["log-then-nvlink"])
    assert (later["link_samples"]["link_state"] == "inactive").any()
    for got in _doors(pastes["q-then-dmesg"], tmp_path):
        assert got.fault_detected and got.ticket_priority == "urgent"


def test_a_long_input_of_one_output_is_still_read_by_its_own_reader(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A file past the head with no command past it, or longer than the limits' [paste] sniff_bytes, is read as the
    one format its head shows (a paste's reader holds its input whole)."""
    long_q = tmp_path / "q.txt"
    long_q.write_text("\n".join(_body("smi_q_h100_8gpu_gpud_1.txt")) + "\n", encoding="utf-8")
    assert long_q.stat().st_size > 64 * 1024 and detect.choose(Source.from_path(long_q)).name != "paste"
    limits_file = tmp_path / "limits.toml"
    shipped = (Path(values.__file__).parent / "data" / "limits.toml").read_text()
    limits_file.write_text(shipped.replace("sniff_bytes = 4194304", "sniff_bytes = 70000"))
    monkeypatch.setenv(values.ENV_FILE, str(limits_file))
    assert detect.choose(Source.from_path(_past_the_head(tmp_path)["q-then-dmesg"])).name != "paste"
