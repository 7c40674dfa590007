"""nvidia-smi nvlink -e / -ec / -s / -R: the real samples and malformed inputs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest import detect
from diagnostics.ingest.base import Source
from diagnostics.ingest.nvlink import READER
from diagnostics.service import StoreSource, files_source
from diagnostics.store import open_store
from tests.ingest.helpers import REAL, SAMPLES, links_per_gpu, read, read_text, warning_lines


def test_h100_error_counters_and_speeds_merge_per_link() -> None:
    result = read(REAL / "nvlink_e_h100_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {0: [0, 1, 17]}  # the author elided links 2..16
    assert (links[["replay", "recovery", "crc_flit"]] == 0).all().all()
    assert set(links["gpu_uuid"]) == {"GPU-abcdefab-cdef-abdc-abcd-abababababab"}
    speeds = links.set_index("link")["speed_gbps"]
    assert speeds[0] == 26.562 and speeds[17] == 26.562 and pd.isna(speeds[1])
    assert links["timestamp"].isna().all()  # one reading of a cumulative counter: a lifetime total, no time
    assert set(links["link_type"]) == {"nvlink"}
    assert warning_lines(result) == [13, 22]  # the two `[...]` elisions, not the source lines


def test_a100_speeds_twelve_links_per_gpu_and_the_cut() -> None:
    result = read(REAL / "nvlink_s_a100_1.txt")
    per_gpu = links_per_gpu(result["link_samples"])
    assert per_gpu == {0: list(range(12)), 1: list(range(12)), 2: [0]}
    assert set(result["link_samples"]["speed_gbps"]) == {25.0}
    assert warning_lines(result) == [31]
    assert "cut off" in result.warnings[0].message


def test_v100_inactive_links() -> None:
    result = read(REAL / "nvlink_s_v100_inactive_1.txt")
    links = result["link_samples"].set_index("link")
    assert set(links["gpu"]) == {3}
    assert sorted(links.index[links["link_state"] == "inactive"]) == [3, 5]
    assert sorted(links.index[links["link_state"] == "up"]) == [0, 1, 2, 4]
    assert links.loc[[0, 1, 2, 4], "speed_gbps"].eq(25.781).all()
    assert links["gpu_uuid"].isna().all()  # `UUID: ...` is an elision, not a UUID
    assert warning_lines(result) == [4]


def test_a_gpu_whose_links_are_all_inactive_b200_real() -> None:
    """gpud #1085: NVML's one line instead of a B200's links; a B200 has 18 NVLinks (platform hgx-b200-8gpu)."""
    result = read(REAL / "nvlink_s_b200_all_inactive_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {2: list(range(18))}
    assert set(links["link_state"]) == {"inactive"} and links["speed_gbps"].isna().all()
    assert {s.rsplit(":", 1)[1] for s in links["source"]} == {"4"}  # NVML's line
    gpus = result["gpus"]
    assert gpus["model"].tolist() == ["NVIDIA B200"] and gpus["uuid"].isna().all()  # `GPU-xxx` is an elision
    assert result.warnings == []


ALL_DOWN = """GPU 5: Tesla V100-SXM2-32GB (UUID: GPU-5d1c6c2e-1a0b-4c1e-9c0e-0a7f1b2c3d45)
         Link 0: 25.781 GB/s
         Link 1: 25.781 GB/s
         Link 2: 25.781 GB/s
         Link 3: 25.781 GB/s
GPU 6: Tesla V100-SXM2-32GB (UUID: GPU-6d1c6c2e-1a0b-4c1e-9c0e-0a7f1b2c3d45)
{line}
"""


@pytest.mark.parametrize("line", [
    "NVML: Unable to retrieve NVLink information as all links are inActive",  # NVML's own spelling
    "NVML: Unable to retrieve NVLink information as all links are inactive",  # as health checks match it
    "NVML:Unable to retrieve Nvlink information as all links are inActive",  # open-gpu-kernel-modules #1150
    "\tNVML: Unable to retrieve NVLink information as all links are inActive.",
])
def test_each_spelling_of_all_inactive_is_every_link_of_that_gpu(line: str) -> None:
    """As many links as the other GPUs of the paste list (4 here, though a V100 has 6: the paste is the fact)."""
    result = read_text(ALL_DOWN.format(line=line))
    links = result["link_samples"]
    assert links_per_gpu(links) == {5: [0, 1, 2, 3], 6: [0, 1, 2, 3]}
    assert set(links.loc[links["gpu"] == 6, "link_state"]) == {"inactive"}
    assert set(links.loc[links["gpu"] == 5, "link_state"]) == {"up"}
    assert set(links.loc[links["gpu"] == 6, "gpu_uuid"]) == {"GPU-6d1c6c2e-1a0b-4c1e-9c0e-0a7f1b2c3d45"}
    assert result.warnings == []


def test_alone_its_model_counts_the_links_and_an_unknown_model_is_said() -> None:
    alone = read_text("\n".join(ALL_DOWN.splitlines()[5:]).format(
        line="NVML: Unable to retrieve NVLink information as all links are inActive"))
    assert links_per_gpu(alone["link_samples"]) == {6: list(range(6))}  # dgx1-v100-8gpu: 6 NVLinks per V100
    unknown = read_text("GPU 0: NVIDIA Graphics Device (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
                        "NVML: Unable to retrieve NVLink information as all links are inActive\n", fmt="nvlink")
    assert unknown["link_samples"].empty and warning_lines(unknown) == [2]
    assert "how many links a 'NVIDIA Graphics Device' has is not known" in unknown.warnings[0].message


def test_gb300_tab_indented_counters_from_a_job_capture() -> None:
    """srt-slurm #307: `nvidia-smi nvlink -e` on a GB300 inside a job's hwinfo capture: tab-indented link lines,
    a GPU header without its UUID, other commands around it (said with their lines, not read)."""
    result = read(REAL / "nvlink_e_gb300_hwinfo_1.txt")
    links = result["link_samples"]
    assert links_per_gpu(links) == {0: [0]}
    assert links[["replay", "recovery", "crc_flit"]].iloc[0].tolist() == [0, 0, 0]
    assert result["gpus"]["model"].tolist() == ["NVIDIA GB300"] and result["gpus"]["uuid"].isna().all()
    assert warning_lines(result) == [3, 14]  # the capture's banner (said: see test_textlines) and the `ls` error


def test_remote_ends_become_topology_rows() -> None:
    topo = read(SAMPLES / "nvlink_R_h100.txt")["topology"]
    assert list(topo["relation"].unique()) == ["remote"]
    gpu0 = topo[topo["a"] == "GPU0"]
    assert list(gpu0["b"]) == ["NVSwitch"] * 3 and list(gpu0["remote_port"]) == [12, 13, 40]
    gpu1 = topo[topo["a"] == "GPU1"]
    assert set(gpu1["b"]) == {"0000:d5:00.0"} and list(gpu1["link"]) == [0, 1, 2]
    assert list(gpu1["remote_port"]) == [0, 1, 6]


def test_per_lane_crc_and_saturation() -> None:
    links = read(SAMPLES / "nvlink_ec_a100.txt")["link_samples"]
    assert len(links) == 8 and links["lane"].notna().all()
    hot = links[links["crc_flit"] > 0]
    assert [(int(r.link), int(r.lane), r.crc_flit) for r in hot.itertuples()] == [(0, 2, 17.0), (1, 1, 65535.0)]
    assert list(links[links["saturated"]]["lane"]) == [1]


def test_links_with_no_errors_shorthand() -> None:
    text = "GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-5261e3df)\n         Links 0-5: No errors\n"
    links = read_text(text)["link_samples"]
    assert list(links["link"]) == [0, 1, 2, 3, 4, 5]
    assert (links[["replay", "recovery", "crc_flit"]] == 0).all().all()


E_BLOCK = """GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)
         Link 0: Replay Errors: 4
         Link 0: Recovery Errors: 1
         Link 0: CRC Errors: 9
         Link 1: Replay Errors: 2
         Link 1: Recovery Errors: 0
"""


def test_truncated_block_warns_at_the_cut() -> None:
    result = read_text(E_BLOCK)
    links = result["link_samples"].set_index("link")
    assert links.loc[0, "replay"] == 4 and links.loc[0, "crc_flit"] == 9
    assert links.loc[1, "replay"] == 2 and pd.isna(links.loc[1, "crc_flit"])
    assert warning_lines(result) == [6]
    assert "crc_flit" in result.warnings[0].message


def test_truncated_line_without_value() -> None:
    result = read_text(E_BLOCK + "         Link 1: CRC Errors:")
    assert 7 in warning_lines(result)
    assert pd.isna(result["link_samples"].set_index("link").loc[1, "crc_flit"])


def test_garbage_in_the_middle_is_warned_and_the_rest_read() -> None:
    lines = E_BLOCK.splitlines()
    lines.insert(3, "\x1b[0m%%%% garbled ��� line")
    result = read_text("\n".join(lines) + "\n         Link 1: CRC Errors: 0\n", fmt="nvlink")
    assert len(result["link_samples"]) == 2
    assert warning_lines(result) == [4]
    assert result["link_samples"].set_index("link").loc[0, "crc_flit"] == 9


def test_unknown_counter_label_is_named_not_guessed() -> None:
    result = read_text(
        "GPU 0: X (UUID: GPU-0)\n  Link 0: Replay Errors: 1\n  Link 0: Frobnication Errors: 5\n"
        "  Link 0: Recovery Errors: 0\n  Link 0: CRC Errors: 0\n"
    )
    assert result["link_samples"]["replay"].tolist() == [1.0]
    assert warning_lines(result) == [3] and "Frobnication" in result.warnings[0].message


def test_another_format_gives_no_rows() -> None:
    result = READER.read(Source.from_path(REAL / "nccl_allreduce_1.txt"))
    assert result.empty and result.warnings


def test_empty_input() -> None:
    assert READER.read(Source.from_text("")).empty
    with pytest.raises(InputError, match="empty"):
        detect.read(Source.from_text("  \n"))


def test_a_stated_time_dates_the_reading() -> None:
    result = read_text("2026-11-29T16:09:49Z\n" + E_BLOCK + "         Link 1: CRC Errors: 0\n")
    assert set(result["link_samples"]["timestamp"]) == {pd.Timestamp("2026-11-29 16:09:49", tz="UTC")}
    assert result.warnings == []
    naive = read_text("Sun Nov 29 16:09:49 2026\n" + E_BLOCK + "         Link 1: CRC Errors: 0\n")
    assert warning_lines(naive) == [1] and "no zone" in naive.warnings[0].message


def test_remote_ends_name_the_peer_of_link_rows() -> None:
    text = (SAMPLES / "nvlink_R_h100.txt").read_text() + (
        "$ nvidia-smi nvlink -s\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
        "         Link 0: 26.562 GB/s\n         Link 7: 26.562 GB/s\n"
    )
    links = read_text(text)["link_samples"].set_index("link")
    assert links.loc[0, "peer"] == "NVSwitch" and links.loc[7, "peer"] == "unknown"


def test_two_readings_in_one_paste_stay_two_rows() -> None:
    block = E_BLOCK + "         Link 1: CRC Errors: 0\n"
    later = block.replace("Replay Errors: 4", "Replay Errors: 7")
    text = "2026-11-29T16:00:00Z\n" + block + "2026-11-29T16:21:00Z\n" + later
    links = read_text(text)["link_samples"]
    link0 = links[links["link"] == 0]
    assert link0["replay"].tolist() == [4, 7]  # two readings 21 minutes apart: what a rate needs
    assert link0["timestamp"].diff().iloc[1] == pd.Timedelta(minutes=21)


def test_gpu_identity_rows() -> None:
    gpus = read(REAL / "nvlink_s_a100_1.txt")["gpus"]
    assert gpus["gpu"].tolist() == [0, 1, 2]
    assert gpus["uuid"].tolist()[1] == "GPU-0c512562-871f-8257-6187-b5ae1b986d5e"
    assert set(gpus["model"]) == {"NVIDIA A100-SXM4-80GB"}


B200 = REAL / "nvlink_s_b200_all_inactive_1.txt"


@pytest.mark.parametrize("headers", [1, 2])
def test_gpu_headers_with_no_link_line_are_said_as_an_output_cut_before_its_links(headers: int,
                                                                                  tmp_path: Path) -> None:
    """The real B200 output cut after its header line (and a second GPU's header): not "unrecognized format",
    through the files and the store alike; nothing is read, its GPUs included."""
    header = next(line for line in B200.read_text(encoding="utf-8").splitlines() if line.startswith("GPU 2:"))
    path = tmp_path / "cut.txt"
    path.write_text("\n".join([header, header.replace("GPU 2:", "GPU 3:")][:headers]) + "\n", encoding="utf-8")
    count = "a GPU header line" if headers == 1 else "2 GPU header lines"
    with pytest.raises(InputError) as refused:
        files_source([path], node="n1")
    said = str(refused.value)
    assert f"holds {count} ('GPU 2: NVIDIA B200 (UUID: GPU-xxx)') and no link lines" in said, said
    assert "cut before its links" in said and "unrecognized" not in said
    report = open_store(tmp_path / "store").ingest([path], node_id="n1")
    assert [f.format for f in report.files] == ["nvlink"] and report.result.empty
    assert any(f"holds {count}" in str(w) for w in report.warnings) and not StoreSource(tmp_path / "store").nodes()


def test_nvlink_c_output_is_said_as_the_links_capabilities_not_as_an_output_cut_before_its_links() -> None:
    """`nvidia-smi nvlink -c` prints a header and what each link supports: it was said to be an output cut before
    its links (or `nvidia-smi -L`), sending the person to look for the rest of an output that was whole."""
    result = read_text("GPU 0: NVIDIA H800 (UUID: GPU-34bf77d1-c686-6821-79a8-32d326c5039c)\n"
                       + "".join(f"         Link {n}, {what}: {value}\n" for n in (0, 1) for what, value in (
                           ("P2P is supported", "true"), ("Access to system memory supported", "true"),
                           ("P2P atomics supported", "true"), ("System memory atomics supported", "true"),
                           ("SLI is supported", "true"), ("Link is supported", "false"))))
    assert result.empty
    said = result.warnings[0]
    assert "`nvidia-smi nvlink -c` output" in said.message and "nvidia-smi nvlink -e" in said.message
    assert "cut" not in said.message and not said.cut, said


@pytest.mark.parametrize("kind", ["Data", "Raw"])
def test_nvlink_gt_output_is_said_as_the_links_throughput_not_as_a_cut_output(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`nvidia-smi nvlink -gt d` (or -gt r) prints each link's Tx and Rx in KiB: it was said to be an output cut
    before its links whose GPU header lines were missing ('GPU 0 link 0 stated again')."""
    text = "".join(f"GPU {g}: NVIDIA H800 (UUID: GPU-34bf77d1-c686-6821-79a8-32d326c5039{g})\n"
                   + "".join(f"         Link {n}: {kind} {way}: {1390774681 + n} KiB\n" for n in range(8)
                             for way in ("Tx", "Rx")) for g in (0, 1))
    result = read_text(text)
    assert result.empty
    said = result.warnings[0]
    assert "`nvidia-smi nvlink -gt d` (or -gt r) output" in said.message and "nvidia-smi nvlink -e" in said.message
    assert not said.cut and not any("stated again" in w.message or "cut" in w.message for w in result.warnings)
    path = tmp_path / "gt.txt"
    path.write_text(text, encoding="utf-8")
    from bot.cli import main

    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert "throughput alone" in err and "stated again" not in err
    report = open_store(tmp_path / "store").ingest([path], node_id="n1")
    assert report.result.empty and any("throughput alone" in str(w) for w in report.warnings)


def test_a_header_whose_gpu_nvidia_smi_names_as_all_links_down_is_not_a_cut() -> None:
    result = read(B200)
    assert len(result["link_samples"]) and not [w for w in result.warnings if "no link lines" in w.message]


@pytest.mark.parametrize(("last", "state", "speed"), [("<inactive>", "inactive", None), ("25 GB/s", "up", 25.0)])
def test_a_link_state_line_last_without_a_newline_is_whole_and_read(last: str, state: str, speed: float | None,
                                                                     tmp_path: Path) -> None:
    """A file saved without a final newline (an editor's default, the gpud A100 output) whose last line is a link's
    state: `<inactive>` and `GB/s` end only a whole line, so the link is read, not dropped as cut (a down link
    lost there was answered low, nothing found). A counter's value last stays unread: 45 may be 45120 cut."""
    path = tmp_path / "s.txt"
    path.write_text("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)\n"
                    f"         Link 0: 25 GB/s\n         Link 1: {last}", encoding="utf-8")
    result = read(path)
    row = result["link_samples"].set_index("link").loc[1]
    assert row["link_state"] == state and (pd.isna(row["speed_gbps"]) if speed is None else row["speed_gbps"] == speed)
    assert not [w for w in result.warnings if w.cut], result.warnings
    path.write_text("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)\n"
                    "         Link 0: CRC Errors: 0\n         Link 1: CRC Errors: 45", encoding="utf-8")
    assert any(w.cut and "'45'" in w.message for w in read(path).warnings)


def test_nvmls_all_links_inactive_line_last_without_a_newline_is_whole(tmp_path: Path) -> None:
    """The real B200 output as `$(...)` or `echo -n` hands it on, its last line NVML's for GPU 2: read as cut, its
    last word dropped, GPU 2's down links were lost ("no telemetry read", exit 2) where the file with its newline
    is high, GPU 2."""
    whole = read(B200)
    path = tmp_path / "b200.txt"
    path.write_text(B200.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    bare = read(path)
    assert not [w for w in bare.warnings if w.cut], bare.warnings
    columns = ["gpu", "link", "link_state"]
    assert bare["link_samples"][columns].values.tolist() == whole["link_samples"][columns].values.tolist()
    assert (bare["link_samples"]["gpu"] == 2).any()


V100_DATED = REAL / "nvlink_e_v100_short_form_dated_2.txt"


def test_the_real_output_cut_at_half_names_no_model_from_its_cut_gpu_header(tmp_path: Path) -> None:
    """Cut at half, the real V100 output ends `GPU 2: Tesla V1`: its `Tesla` was read as GPU 2's model (and shown
    as one the platform was taken from). GPU 2 is counted, its model not read, and the cut said."""
    text = V100_DATED.read_text(encoding="utf-8")
    path = tmp_path / "half.txt"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    assert path.read_text(encoding="utf-8").endswith("GPU 2: Tesla V1")
    result = read(path)
    gpus = result["gpus"].set_index("gpu")
    assert sorted(gpus.index) == [0, 2] and pd.isna(gpus.loc[2, "model"])
    last = text[: len(text) // 2].count("\n") + 1
    said = [w for w in result.warnings if w.line == last]
    assert len(said) == 1 and said[0].cut and "GPU 2's header" in said[0].message, said
    assert "model may be cut too and is not read" in said[0].message


@pytest.mark.parametrize("whole_end", [False, True])
def test_a_gpu_header_cut_anywhere_names_its_whole_model_or_none(whole_end: bool) -> None:
    """Every cut inside a UUID-form header line, as a file cut there (no final newline) and as a paste that ends
    there: the GPU's model is the whole model (where `(UUID:` follows it) or none, never a part of it, and the cut
    is said (a cut warning at that line)."""
    text = V100_DATED.read_text(encoding="utf-8")
    start = text.index("GPU 2:")
    end = text.index(")", start)
    whole = "Tesla V100-SXM2-32GB-LS"
    # a file's cut last line is read up to its last space (`Tail`): its index stands once the space after it is in
    for cut in range(start + len("GPU 2:" if whole_end else "GPU 2: "), end):
        result = READER.read(Source.from_text(text[:cut], "cut.txt", whole_end=whole_end))
        models = result.tables["gpus"].set_index("gpu")["model"]
        assert models.loc[0] == whole and (pd.isna(models.loc[2]) or models.loc[2] == whole), (cut, models)
        line = text[:cut].count("\n") + 1
        assert [w for w in result.warnings if w.line == line and w.cut], (cut, result.warnings)
        assert not [w for w in result.warnings if "not as nvidia-smi prints it" in w.message], result.warnings


def test_a_header_without_the_uuid_the_headers_above_close_is_cut_and_one_in_a_paste_without_uuids_is_whole() -> None:
    """A paste that ends `GPU 1: NVIDIA H1` (Slack trims the newline, so the end does not show the cut): the
    header above closes its UUID, so this one is cut. Headers that carry no UUID at all keep their models."""
    cut = read_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)\n"
                    "         Link 0: 26.562 GB/s\nGPU 1: NVIDIA H1")
    models = cut["gpus"].set_index("gpu")["model"]
    assert models.loc[0] == "NVIDIA H100 80GB HBM3" and pd.isna(models.loc[1])
    assert [w.line for w in cut.warnings if w.cut and "GPU 1's header" in w.message] == [3], cut.warnings
    plain = read_text("GPU 0: NVIDIA H100 80GB HBM3\n         Link 0: 26.562 GB/s\n"
                      "GPU 1: NVIDIA H100 80GB HBM3\n         Link 0: 26.562 GB/s")
    assert set(plain["gpus"]["model"]) == {"NVIDIA H100 80GB HBM3"} and not [w for w in plain.warnings if w.cut]


_DATED = (REAL / "nvlink_e_v100_short_form_dated_2.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(("zone", "hour"), [("CEST", 9), ("PDT", 18), ("AM UTC", 11)])
def test_date_lines_in_another_zone_or_locale_give_the_readings_their_times(zone: str, hour: int) -> None:
    """They were lines not read: the two readings shared no time, and the warning asked for the `date` lines."""
    result = read_text(_DATED.replace("UTC 2026", f"{zone} 2026"))
    times = sorted(set(result["link_samples"]["timestamp"]))
    assert times == [pd.Timestamp(f"2026-05-13 {hour:02d}:00", tz="UTC"), pd.Timestamp(f"2026-05-13 {hour:02d}:30",
                                                                                       tz="UTC")]
    assert not any("date" in w.message for w in result.warnings), result.warnings


def test_date_lines_not_read_are_named_instead_of_asking_for_them() -> None:
    result = read_text(_DATED.replace("Wed May 13", "Mi 13. Mai").replace("UTC 2026", "CEST 2026"))
    said = [w for w in result.warnings if "readings of the same links" in w.message]
    assert [w.line for w in result.warnings if "looks like a `date` line" in w.message] == [3, 11]
    assert len(said) == 1 and "(lines 3, 11) are not read" in said[0].message
    assert "put a `date` line" not in said[0].message


def _capture(node: str, uuids: tuple[str, str]) -> str:
    """A node's before and after readings under srt-slurm hwinfo banners, from the dated board test."""
    body = _DATED.split("\n", 2)[2]
    before, after = body.split("Wed May 13 11:30:00 UTC 2026\n")
    before = before.replace("Wed May 13 11:00:00 UTC 2026\n", "")
    text = (f"===== {node} | before | 2026-05-13T11:00:00Z =====\n{before}"
            f"===== {node} | after | 2026-05-13T11:30:00Z =====\n{after}")
    return text.replace("GPU-bd0738fc", uuids[0]).replace("GPU-926a4a2e", uuids[1])


def test_two_nodes_in_one_file_are_each_checked_against_their_own_readings() -> None:
    """Node02's GPU 0 was compared with node01's (another UUID: 'one of the two is damaged') and its first reading
    taken as a second reading of node01's links at the same time."""
    text = _capture("node01", ("GPU-bd0738fc", "GPU-926a4a2e")) + _capture("node02", ("GPU-aaaa38fc", "GPU-bbbb4a2e"))
    result = read_text(text)
    assert not [w for w in result.warnings if "damaged" in w.message or "readings of the same links" in w.message]
    links = result["link_samples"]
    assert links.groupby("node_id", observed=True)["timestamp"].nunique().to_dict() == {"node01": 2, "node02": 2}


def test_another_uuid_for_a_gpu_in_a_later_reading_is_a_replaced_card_not_damage() -> None:
    """A later reading whose GPU 0 names another UUID found another card there (replaced between the readings): the
    rows keep each reading's UUID, from which the analysis rates the new card on its own, and no header is damaged."""
    text = _capture("node01", ("GPU-bd0738fc", "GPU-926a4a2e"))
    after = text.index("| after |")
    text = text[:after] + text[after:].replace("GPU-bd0738fc", "GPU-aaaa38fc")
    result = read_text(text)
    assert not [w for w in result.warnings if "damaged" in w.message]
    links = result["link_samples"]
    gpu0 = links[links["gpu"] == 0]
    named = gpu0.groupby("timestamp")["gpu_uuid"].unique().map(lambda uuids: [u[:12] for u in uuids]).tolist()
    assert named == [["GPU-bd0738fc"], ["GPU-aaaa38fc"]]


def _session(host: str, date: str, uuid: str, replays: int) -> str:
    return (f"root@{host}:~# date\n{date}\nroot@{host}:~# nvidia-smi nvlink -e\n"
            f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-{uuid}-434f-4a42-28e0-d699cb37f301)\n"
            f"         Link 0: Replay Errors: {replays}\n         Link 0: Recovery Errors: 0\n"
            "         Link 0: CRC Errors: 0\n")


# shell sessions on two nodes, told apart by their prompts, pasted interleaved: nodeA's link 0 replays 0 -> 9000
TWO_NODES = (_session("nodeA", "Wed May 13 11:00:00 AM EDT 2026", "aaaaaaaa", 0)
             + _session("nodeB", "Wed 13 May 16:00:00 BST 2026", "bbbbbbbb", 7)
             + _session("nodeA", "Wed May 13 12:00:00 PM EDT 2026", "aaaaaaaa", 9000)
             + _session("nodeB", "Wed 13 May 17:00:00 BST 2026", "bbbbbbbb", 7))


def test_prompts_of_two_hosts_file_each_session_s_readings_under_its_host() -> None:
    result = read_text(TWO_NODES)
    links = result["link_samples"]
    read_of = {node: [(str(t), r) for t, r in zip(rows["timestamp"], rows["replay"], strict=True)]
               for node, rows in links.groupby(links["node_id"].astype(str))}
    assert read_of == {"nodeA": [("2026-05-13 15:00:00+00:00", 0.0), ("2026-05-13 16:00:00+00:00", 9000.0)],
                       "nodeB": [("2026-05-13 15:00:00+00:00", 7.0), ("2026-05-13 16:00:00+00:00", 7.0)]}
    assert set(links["gpu_uuid"][links["node_id"] == "nodeB"]) == {"GPU-bbbbbbbb-434f-4a42-28e0-d699cb37f301"}
    assert not any("damaged" in w.message or "share one time" in w.message for w in result.warnings)
    gpus = result["gpus"]
    assert sorted(zip(gpus["node_id"].astype(str), gpus["uuid"], strict=True))[1][0] == "nodeB"


def test_a_host_s_readings_keep_the_time_its_own_date_line_stated_else_the_one_stated_before() -> None:
    """nodeB's output with no `date` of its own takes the time stated last (a `date` typed at a login host before
    `ssh nodeB` is when nodeB was read); back on nodeA, its readings take nodeA's own time, not one nodeB stated."""
    text = (_session("nodeA", "Wed May 13 11:00:00 UTC 2026", "aaaaaaaa", 0)
            + _session("nodeB", "", "bbbbbbbb", 7).replace("root@nodeB:~# date\n\n", "")
            + _session("nodeC", "Wed May 13 11:05:00 UTC 2026", "cccccccc", 1)
            + _session("nodeA", "", "aaaaaaaa", 5).replace("root@nodeA:~# date\n\n", ""))
    links = read_text(text)["link_samples"]
    timed = list(zip(links["node_id"].astype(str), links["timestamp"], strict=True))
    eleven, later = pd.Timestamp("2026-05-13T11:00:00Z"), pd.Timestamp("2026-05-13T11:05:00Z")
    assert timed == [("nodeA", eleven), ("nodeB", eleven), ("nodeC", later), ("nodeA", eleven)], timed


def test_a_containers_shell_opened_on_a_node_is_that_node_s() -> None:
    """`docker exec -it train bash` on node01: the prompts after it name the container's id, not a node; its
    readings and its `date` are node01's."""
    text = _session("node01", "Wed May 13 11:00:00 UTC 2026", "aaaaaaaa", 0).replace(
        "root@node01:~# nvidia-smi", "root@node01:~# docker exec -it train bash\nroot@3f2a1b9c8d7e:/w# nvidia-smi")
    text += _session("3f2a1b9c8d7e", "Wed May 13 12:00:00 UTC 2026", "aaaaaaaa", 9000)
    links = read_text(text)["link_samples"]
    assert set(links["node_id"].astype(str)) == {"node01"}
    assert links["timestamp"].tolist() == [pd.Timestamp("2026-05-13T11:00:00Z"), pd.Timestamp("2026-05-13T12:00Z")]


def test_the_lines_before_the_first_prompt_are_the_first_host_s_and_a_bare_prompt_keeps_the_host() -> None:
    text = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-434f-4a42-28e0-d699cb37f301)\n"
            "         Link 0: Replay Errors: 1\n"
            "root@nodeA:~# nvidia-smi nvlink -e -i 1\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaab-434f-4a42-"
            "28e0-d699cb37f301)\n         Link 0: Replay Errors: 2\n"
            "$ nvidia-smi nvlink -e -i 2\nGPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaac-434f-4a42-28e0-"
            "d699cb37f301)\n         Link 0: Replay Errors: 3\n"
            "root@nodeB:~# nvidia-smi nvlink -e -i 0\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbbbbbb-434f-4a42-"
            "28e0-d699cb37f301)\n         Link 0: Replay Errors: 4\n")
    links = read_text(text)["link_samples"]
    assert list(zip(links["node_id"].astype(str), links["replay"], strict=True)) == [
        ("nodeA", 1.0), ("nodeA", 2.0), ("nodeA", 3.0), ("nodeB", 4.0)]


def test_a_node_given_holds_every_session_whatever_its_prompt_names() -> None:
    result = READER.read(Source.from_text(TWO_NODES, name="paste.txt"), node_id="asked")
    assert set(result["link_samples"]["node_id"].astype(str)) == {"asked"}


def test_prompts_of_one_host_and_its_capture_banner_are_that_host_s() -> None:
    text = ("===== node01 | before | 2026-05-13T11:00:00Z =====\n"
            + _session("node01", "Wed May 13 11:00:00 UTC 2026", "aaaaaaaa", 0).split("\n", 2)[2]
            + "===== node01 | after | 2026-05-13T12:00:00Z =====\n"
            + _session("node01", "Wed May 13 12:00:00 UTC 2026", "aaaaaaaa", 9000).split("\n", 2)[2])
    links = read_text(text)["link_samples"]
    assert set(links["node_id"].astype(str)) == {"node01"}
    assert links["replay"].tolist() == [0.0, 9000.0]
    assert links["timestamp"].tolist() == [pd.Timestamp("2026-05-13T11:00:00Z"), pd.Timestamp("2026-05-13T12:00:00Z")]


def test_nvlink_r_far_ends_and_all_inactive_gpus_stay_with_their_host() -> None:
    text = ("root@nodeA:~# nvidia-smi nvlink -R\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-434f-4a42-28e0-"
            "d699cb37f301)\n         Link 0: Remote Device NVSWITCH: Link 5\n"
            "root@nodeB:~# nvidia-smi nvlink -s\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbbbbbb-434f-4a42-28e0-"
            "d699cb37f301)\n         Link 0: 26.562 GB/s\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbbbbbc-434f-4a42-28e0-d699cb37f301)\n"
            "         NVML: Unable to retrieve NVLink information as all links are inActive\n"
            "root@nodeA:~# nvidia-smi nvlink -s\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-434f-4a42-28e0-"
            "d699cb37f301)\n         Link 0: 26.562 GB/s\n")
    links = read_text(text)["link_samples"]
    by = {(str(n), g): (p, s) for n, g, p, s in zip(links["node_id"], links["gpu"], links["peer"],
                                                     links["link_state"], strict=True)}
    assert by[("nodeB", 1)][1] == "inactive" and ("nodeA", 1) not in by
    assert by[("nodeB", 0)][0] == "unknown" and by[("nodeA", 0)][0] != "unknown"


def test_a_command_run_over_ssh_from_a_login_host_is_the_remote_hosts() -> None:
    """`ssh node01 nvidia-smi nvlink -e` typed at login01 prints node01's links, as `ssh -p 2222 root@node02 ...`
    prints node02's; the login host's `date` times them."""
    def run(host: str, replays: int) -> str:
        return (f"user@login01:~$ {host} nvidia-smi nvlink -e\n"
                f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-{'a' if 'node01' in host else 'b'}aaaaaaa-434f-4a42-28e0-"
                f"d699cb37f301)\n         Link 0: Replay Errors: {replays}\n")
    text = ("user@login01:~$ date -u\nWed May 13 11:00:00 UTC 2026\n" + run("ssh node01", 0)
            + run("ssh -p 2222 root@node02", 7) + "user@login01:~$ date -u\nWed May 13 12:00:00 UTC 2026\n"
            + run("ssh node01", 9000) + run("ssh -p 2222 root@node02", 7))
    links = read_text(text)["link_samples"]
    assert list(zip(links["node_id"].astype(str), links["replay"], links["timestamp"].dt.hour, strict=True)) == [
        ("node01", 0.0, 11), ("node02", 7.0, 11), ("node01", 9000.0, 12), ("node02", 7.0, 12)]


def test_two_machines_outputs_pasted_as_one_are_said_to_be_two() -> None:
    """`cat` of an A100 box's `nvlink -s` and a DGX-1's: one node of four GPUs and two models, judged against one
    board without a word; said where the second model starts. One machine's own output says nothing of it."""
    a100, v100 = (REAL / "nvlink_s_a100_1.txt").read_text(), (REAL / "nvlink_s_v100_inactive_1.txt").read_text()
    mixed = read_text(a100 + v100)
    said = [w for w in mixed.warnings if "models in one node's output" in w.message]
    assert len(said) == 1 and "GPUs 0, 1, 2 NVIDIA A100-SXM4-80GB; GPU 3 Tesla V100-SXM2-32GB" in said[0].message
    second = next(line for line in v100.splitlines() if line.startswith("GPU 3"))
    assert said[0].line == (a100 + v100).splitlines().index(second) + 1
    for alone in (a100, v100, v100 + v100):
        assert not [w for w in read_text(alone).warnings if "models in one node's output" in w.message]
