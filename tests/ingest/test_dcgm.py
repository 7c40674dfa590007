"""dcgm-exporter reader: real scrapes, every label and name spelling, and every malformed input."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnostics.errors import InputError
from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import READER, read_scrapes
from diagnostics.ingest.detect import choose, read
from diagnostics.ingest.exposition import parse_labels
from tests.ingest.dcgm_helpers import gpu_labels, scrape

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def text(*lines: str) -> Source:
    return Source.from_text("\n".join(lines) + "\n", name="scrape.prom")


def links(result: pd.DataFrame) -> pd.DataFrame:
    return result[~result["gpu_total"].astype(bool) & (result["link_type"] == "nvlink")]


def test_real_a100_scrape_gives_nvlink_tx_bytes_per_gpu() -> None:
    result = read(REAL / "dcgm_metrics_a100_1.txt")
    rows = result["link_samples"]
    assert list(rows["gpu"]) == [0, 1, 2, 3]
    assert set(rows["node_id"]) == {"axa"}
    assert rows["gpu_total"].all() and rows["link"].isna().all()  # a GPU-wide gauge, not one link
    assert (rows["tx_bytes_per_s"] == 0).all() and rows["rx_bytes_per_s"].isna().all()
    assert rows["timestamp"].isna().all()  # the excerpt carries no times and none was given
    gpus = result["gpus"]
    assert gpus.loc[gpus["gpu"] == 2, "uuid"].item() == "GPU-fbd9a227-e473-b993-215f-8f39b3574fd0"
    assert set(gpus["model"]) == {"NVIDIA A100-SXM4-40GB"}
    assert rows["source"].iloc[0].endswith("dcgm_metrics_a100_1.txt:6")
    assert rows.loc[rows["gpu"] == 1, "gpu_uuid"].item() == "GPU-02348a17-a825-300c-0336-48e33d0dadb2"


def test_real_gb200_scrape_reads_blackwell_counters_and_flags_the_cut_off_line() -> None:
    result = read(REAL / "dcgm_metrics_gb200_1.txt")
    rows = result["link_samples"]
    assert set(rows["node_id"]) == {"3f546054f69d"}
    by_gpu = rows.set_index("gpu")
    assert by_gpu.loc[3, "tx_discards"] == 0 and by_gpu.loc[3, "recovery_successful"] == 0
    assert sorted(rows.loc[rows["recovery_successful"].notna(), "gpu"]) == [0, 1, 2, 3]
    assert rows["recovery_failed"].isna().all()  # its samples are cut off
    assert by_gpu.loc[2, "pci_bus_id"] == "0018:01:00.0"
    gpus = result["gpus"].set_index("gpu")
    assert gpus.loc[0, "pci_bus_id"] == "0008:01:00.0" and gpus.loc[0, "model"] == "NVIDIA GB200"
    [cut] = result.warnings
    assert cut.line == 10 and "LINK_RECOVERY_FAILED_EVENTS" in cut.message and "cut off" in cut.message


def test_per_link_names_both_spellings_and_gpu_totals_stay_apart() -> None:
    labels = gpu_labels(2)
    result = READER.read(text(
        f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3{{{labels}}} 7 1700000000000",
        f"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_L15_TOTAL{{{labels}}} 4 1700000000000",
        f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{labels}}} 11 1700000000000",
    ))
    rows = result["link_samples"].set_index(["gpu_total", "link"])
    assert rows.loc[(False, 3), "replay"] == 7
    assert rows.loc[(False, 15), "crc_flit"] == 4
    total = result["link_samples"][result["link_samples"]["gpu_total"]]
    assert len(total) == 1 and total["replay"].item() == 11 and pd.isna(total["link"].item())
    assert str(result["link_samples"]["timestamp"].iloc[0]) == "2023-11-14 22:13:20+00:00"


def test_link_entity_series_and_nvswitch_ports() -> None:
    result = READER.read(text(
        'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{gpu="1",nvlink="9",hostname="n1"} 5',
        'DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERRORS{nvswitch="2",nvlink="33",hostname="n1"} 8',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="1",hostname="n1"} 3',
    ))
    rows = result["link_samples"].set_index("link_type")
    assert rows.loc["nvlink", "link"] == 9 and rows.loc["nvlink", "crc_flit"] == 5
    assert not rows.loc["nvlink", "gpu_total"]
    assert rows.loc["nvswitch", "link"] == 33 and rows.loc["nvswitch", "nvswitch"] == "2"
    assert pd.isna(rows.loc["nvswitch", "gpu"]) and rows.loc["nvswitch", "replay"] == 8
    assert rows.loc["pcie", "replay"] == 3 and not rows.loc["pcie", "gpu_total"]


def test_label_spellings_map_to_one_identity() -> None:
    result = READER.read(text(
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",UUID="GPU-a",modelName="H100",Hostname="h"} 1',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="1",gpu_uuid="GPU-b",model_name="H100",hostname="h",'
        'pod="train-0",namespace="ml",container="main"} 2',
    ))
    gpus = result["gpus"].set_index("gpu")
    assert list(gpus["uuid"]) == ["GPU-a", "GPU-b"] and set(gpus["model"]) == {"H100"}
    assert gpus.loc[1, "pod"] == "train-0" and gpus.loc[1, "namespace"] == "ml"
    assert set(result["link_samples"]["node_id"]) == {"h"}


def test_labels_with_quotes_and_escapes() -> None:
    assert parse_labels(r'a="x\"y",b="back\\slash",c="line\nbreak",d="}{ ,"') == {
        "a": 'x"y', "b": "back\\slash", "c": "line\nbreak", "d": "}{ ,"}
    result = READER.read(text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="rack \\"7\\" node"} 4'))
    assert result["link_samples"]["node_id"].item() == 'rack "7" node'


def test_sentinel_is_no_value_and_saturation_is_flagged() -> None:
    result = READER.read(text(
        'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0{gpu="0",Hostname="h"} 9223372036854775794',
        'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{gpu="0",Hostname="h"} 65535',
        'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L1{gpu="0",Hostname="h"} 12',
    ))
    rows = result["link_samples"].set_index("link")
    assert pd.isna(rows.loc[0, "crc_flit"])
    assert rows.loc[0, "replay"] == 65535 and rows.loc[0, "saturated"]
    assert not rows.loc[1, "saturated"]
    assert any("sentinel" in w.message for w in result.warnings)


def test_a_number_a_float_cannot_tell_from_a_sentinel_is_no_sentinel() -> None:
    """2^63 - 1 is the same float as DCGM's int64 blanks: it had been read as "not supported", its row lost
    unsaid."""
    result = READER.read(text('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0{gpu="0",Hostname="h"} 9223372036854775807',
                              'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L1{gpu="0",Hostname="h"} 9223372036854775795'))
    rows = result["link_samples"]
    assert rows["link"].tolist() == [0] and rows["crc_flit"].item() > 9e18  # link 1's blank is no value
    assert [w.message.split(" held")[0] for w in result.warnings if "sentinel" in w.message] == ["1 sample"]


@pytest.mark.parametrize("sample", ["9223372036854775808", "9.223372036854775808e18", "18446744073709551615"])
def test_a_count_past_the_fields_63_bits_is_refused_though_a_float_rounds_it_to_the_top(sample: str) -> None:
    """DCGM's int64 counter holds at most 2^63 - 1; 2^63 is the same float, so a float compare held it as a count."""
    result = READER.read(text(f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0{{gpu="0",Hostname="h"}} {sample}',
                              'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L1{gpu="0",Hostname="h"} 9223372036854775807'))
    assert result["link_samples"]["link"].tolist() == [1]
    refused = [w for w in result.warnings if "is not a value this field can hold" in w.message]
    assert [w.line for w in refused] == [1] and sample in refused[0].message
    assert "from 0 to 9,223,372,036,854,775,807" in refused[0].message


def test_truncated_lines_warn_with_line_and_keep_the_rest() -> None:
    result = READER.read(text(
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="h"} 1',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="1",Hostname="h',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="2",Hostname="h"}',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="3",Hostname="h"} 1x',
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="4",Hostname="h"} -3',
    ))
    assert list(result["link_samples"]["gpu"]) == [0]
    assert sorted(w.line for w in result.warnings if w.line) == [2, 3, 4, 5]
    assert all(w.file == "scrape.prom" for w in result.warnings)


def test_binary_junk_and_other_formats_are_refused_clearly(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(InputError, match="binary"):
        read(junk)
    other = Source.from_text("GPU 0: NVIDIA H100\n\t Link 0: Replay Errors: 0\n", name="nvlink.txt")
    with pytest.raises(InputError, match="no dcgm-exporter samples"):
        read(other, fmt="dcgm")
    with pytest.raises(InputError, match="empty"):
        choose(Source.from_text("  \n", name="empty.txt"))


def test_openmetrics_seconds_and_eof() -> None:
    result = READER.read(text(
        "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter",
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total{gpu="0",Hostname="h"} 2 1700000000.5',
        "# EOF",
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total{gpu="1",Hostname="h"} 9 1700000000.5',
    ))
    rows = result["link_samples"]
    assert list(rows["gpu"]) == [0] and rows["timestamp"].item() == pd.Timestamp(1700000000500, unit="ms", tz="UTC")
    assert [w.line for w in result.warnings] == [4]


def test_xid_counter_increases_and_gauge_changes_are_events() -> None:
    labels = 'gpu="5",Hostname="h",pci_bus_id="00000000:9A:00.0"'
    result = READER.read(text(
        f'DCGM_EXP_XID_ERRORS_COUNT{{{labels},xid="79"}} 1 1700000000000',
        f'DCGM_EXP_XID_ERRORS_COUNT{{{labels},xid="79"}} 1 1700000060000',
        f'DCGM_EXP_XID_ERRORS_COUNT{{{labels},xid="79"}} 3 1700000120000',
        f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} 74 1700000000000",
        f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} 74 1700000060000",
        f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} 79 1700000120000",
    ))
    events = result["events"]
    # the gauge's change to 79 comes in the scrape whose counter counts those Xids: counted there, not once more
    assert list(zip(events["code"], events["count"].fillna(0), strict=True)) == [(79, 1), (79, 2)]
    assert set(events["gpu"]) == {5} and set(events["pci_bus_id"]) == {"0000:9a:00.0"}
    counted = [t for t in events["text"] if "counted" in t]  # each increase said in a count that agrees with it
    assert counted == ["Xid 79 counted 1 time since the exporter started (DCGM_EXP_XID_ERRORS_COUNT)",
                       "Xid 79 counted 2 times (DCGM_EXP_XID_ERRORS_COUNT)"]
    assert any("Xid 74" in w.message for w in result.warnings)  # the gauge's first value is not an event


def test_an_xid_counters_first_reading_is_marked_as_counting_since_the_exporter_started() -> None:
    """Its count covers every Xid until then (a kernel line long before it among them); a later increase only
    those since the reading before, in scrape files read one by one too."""
    labels = 'gpu="1",Hostname="h",xid="79"'
    first = f"DCGM_EXP_XID_ERRORS_COUNT{{{labels}}} 1 1700000000000"
    later = f"DCGM_EXP_XID_ERRORS_COUNT{{{labels}}} 3 1700000060000"
    together = READER.read(text(first, later))["events"]
    last: dict[tuple[object, ...], float] = {}
    apart = pd.concat([READER.read(text(t), xid_last=last)["events"] for t in (first, later)], ignore_index=True)
    for events in (together, apart):
        assert events["count"].tolist() == [1, 2]
        assert events["since_start"].fillna(False).tolist() == [True, False]


def test_xid_gauge_change_across_two_scrape_files() -> None:
    first = text('DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="h"} 0')
    second = text('DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="h"} 79')
    at = [pd.Timestamp("2026-03-01T00:00Z").to_pydatetime(), pd.Timestamp("2026-03-01T00:01Z").to_pydatetime()]
    result = read_scrapes(zip([first, second], at, strict=True))
    assert list(result["events"]["code"]) == [79]
    assert result["events"]["timestamp"].item() == pd.Timestamp("2026-03-01T00:01Z")


def test_full_scrape_has_18_links_per_gpu() -> None:
    result = READER.read(text(*scrape(ts_ms=1_700_000_000_000, value=2)))
    per_link = links(result["link_samples"])
    assert per_link.groupby("gpu")["link"].nunique().eq(18).all() and len(per_link) == 8 * 18
    assert (per_link[["crc_flit", "crc_data", "replay", "recovery"]] == 2).all().all()
    totals = result["link_samples"][result["link_samples"]["gpu_total"]]
    pcie = result["link_samples"][result["link_samples"]["link_type"] == "pcie"]
    assert len(pcie) == 8 and (pcie["replay"] == 36).all() and pcie["link"].isna().all()
    assert (totals["replay"] == 36).all() and (totals["tx_bytes_per_s"] == 1.5e10).all()


def test_node_override_and_missing_hostname_warning() -> None:
    plain = text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0"} 1')
    assert READER.read(plain, node_id="n9")["link_samples"]["node_id"].item() == "n9"
    result = READER.read(plain)  # no host label: the node asked about, as an nvidia-smi paste's rows are
    assert result["link_samples"]["node_id"].isna().all() and result["gpus"]["node_id"].isna().all()
    assert any("--node" in w.message for w in result.warnings)


def test_label_values_with_spaces_with_and_without_timestamps() -> None:
    labels = 'gpu="0",modelName="NVIDIA H100 80GB HBM3",Hostname="h"'
    result = READER.read(text(
        f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L1{{{labels}}} 5",
        f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L2{{{labels}}}\t6   1772323200000  ",
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER {{{labels}}} 7",
    ))
    rows = result["link_samples"].set_index("link")
    assert rows.loc[1, "replay"] == 5 and pd.isna(rows.loc[1, "timestamp"])
    assert rows.loc[2, "replay"] == 6 and rows.loc[2, "timestamp"] == pd.Timestamp("2026-03-01T00:00Z")
    assert result["gpus"]["model"].item() == "NVIDIA H100 80GB HBM3"
    assert [w.line for w in result.warnings] == [3]  # a space between name and labels is not the format


def test_large_input_path_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.prom"
    path.write_text("\n".join(scrape(gpus=2, links=4, ts_ms=1_772_323_200_000, value=1)) + "\nbroken{\n")
    small = READER.read(Source.from_path(path))
    monkeypatch.setattr("diagnostics.ingest.dcgm_lines.SMALL_INPUT", 0)  # stream through the CSV reader
    big = READER.read(Source.from_path(path))
    pd.testing.assert_frame_equal(small["link_samples"], big["link_samples"])
    assert [(w.line, w.message) for w in big.warnings] == [(w.line, w.message) for w in small.warnings]
    assert big.warnings[-1].line == sum(1 for _ in path.open())


def test_bytes_that_are_not_utf8_are_replaced_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mixed.prom"
    path.write_bytes(b'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="h\xff"} 3\n'
                     b'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="1",Hostname="h"} 4\n')
    monkeypatch.setattr("diagnostics.ingest.dcgm_lines.SMALL_INPUT", 0)
    result = READER.read(Source.from_path(path))
    assert list(result["link_samples"]["replay"]) == [3, 4]
    assert set(result["link_samples"]["node_id"]) == {"h\ufffd", "h"}


def test_scrapes_without_timestamps_take_the_given_time_per_file(tmp_path: Path) -> None:
    files = []
    for minute, value in enumerate([1, 4]):
        path = tmp_path / f"scrape{minute}.prom"
        path.write_text(f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{{gpu="0",Hostname="h"}} {value}\n')
        files.append((Source.from_path(path), pd.Timestamp(f"2026-03-01T00:0{minute}Z").to_pydatetime()))
    rows = read_scrapes(files)["link_samples"]
    assert list(rows["replay"]) == [1, 4]
    assert (rows["timestamp"].diff().dropna() == pd.Timedelta(minutes=1)).all()


def test_real_gb200_scrape_is_per_gpu_aggregates_never_links() -> None:
    rows = read(REAL / "dcgm_metrics_gb200_1.txt")["link_samples"]
    assert len(rows) == 4 and sorted(rows["gpu"]) == [0, 1, 2, 3]  # one row per GPU, not per link
    assert rows["gpu_total"].all() and rows["link"].isna().all() and rows["lane"].isna().all()
    assert set(rows["link_type"]) == {"nvlink"} and links(rows).empty


RENAMED = [  # (the name scrapes carry today, its DCGM 4.6 name, a value)
    ("DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS", "DCGM_FI_DEV_NVLINK_RX_SYMBOL_ERROR_TOTAL", "11"),
    ("DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS", "DCGM_FI_DEV_NVLINK_RECOVERY_FAILED_TOTAL", "2"),
    ("DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER_FLOAT", "DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO", "1.5e-13"),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL", "4"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", "9"),
]


def test_dcgm_4_6_names_read_as_the_old_ones() -> None:
    labels = gpu_labels(1)
    old, new = (READER.read(text(*(f"{names[i]}{{{labels}}} {names[2]}" for names in RENAMED)))["link_samples"]
                for i in (0, 1))
    keep = ["gpu", "link_type", "link", "gpu_total", "symbol_errors", "recovery_failed", "effective_ber", "crc_flit",
            "replay"]
    assert len(new) == 2 and new[keep].equals(old[keep])
    nvlink = new[new["link_type"] == "nvlink"].iloc[0]
    assert nvlink["gpu_total"] and pd.isna(nvlink["link"])  # NVLink5 fields: an aggregate across all links
    assert (nvlink["symbol_errors"], nvlink["recovery_failed"], nvlink["crc_flit"]) == (11, 2, 4)
    assert nvlink["effective_ber"] == 1.5e-13 and new.loc[new["link_type"] == "pcie", "replay"].item() == 9


def test_the_fec_histogram_is_not_read_and_the_raw_ber_is_not_a_ratio() -> None:
    labels = gpu_labels(0)
    result = READER.read(text(
        f"DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_0{{{labels}}} 123456",
        f"DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_15{{{labels}}} 2",
        f"DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER{{{labels}}} 4627730092099895296",  # encoded: not read as a ratio
        f"DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO{{{labels}}} 2.5e-9",
    ))
    (row,) = result["link_samples"].to_dict("records")
    assert row["symbol_ber"] == 2.5e-9 and row["gpu_total"] and pd.isna(row["link"])
    assert not [c for c in row if c.startswith("fec")]
    assert result.warnings == []


def test_a_per_link_field_needs_its_link_label() -> None:
    labels = gpu_labels(0)
    result = READER.read(text(
        f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL{{{labels},nvlink="3"}} 5',
        f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL{{{labels}}} 9",
        'DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERROR_TOTAL{nvswitch="2",nvlink="17",Hostname="n1"} 1',
    ))
    rows = result["link_samples"]
    per_link = rows[rows["link_type"] == "nvlink"]
    assert per_link[["link", "replay"]].values.tolist() == [[3, 5]] and not per_link["gpu_total"].any()
    switch = rows[rows["link_type"] == "nvswitch"].iloc[0]
    assert (switch["nvswitch"], switch["link"], switch["replay"]) == ("2", 17, 1)
    assert [(w.line, "without an nvlink label" in w.message) for w in result.warnings] == [(2, True)]


def test_per_link_nvlink_bytes_are_read_per_link_beside_the_gpu_total() -> None:
    result = READER.read(text(
        'DCGM_FI_PROF_NVLINK_L3_TX_BYTES{gpu="0",UUID="GPU-1",Hostname="n1"} 5000000000 1772366400000',
        'DCGM_FI_PROF_NVLINK_L17_RX_BYTES{gpu="0",UUID="GPU-1",Hostname="n1"} 7000000000 1772366400000',
        'DCGM_FI_PROF_NVLINK_TX_BYTES{gpu="0",UUID="GPU-1",Hostname="n1"} 9000000000 1772366400000'))
    rows = result.tables["link_samples"]
    per_link = links(rows).set_index("link")
    assert per_link.loc[3, "tx_bytes_per_s"] == 5e9 and per_link.loc[17, "rx_bytes_per_s"] == 7e9
    total = rows[rows["gpu_total"].astype(bool)]
    assert total["tx_bytes_per_s"].tolist() == [9e9] and total["link"].isna().all()


def test_a_value_the_exporter_could_not_convert_is_said_as_such_not_as_a_cut_line() -> None:
    """dcgm-exporter writes `ERROR - FAILED TO CONVERT TO STRING` where DCGM gives a field no value (a real A800
    scrape with MIG): a field fabricbot reads is refused naming that, one it does not read is passed over, and a
    scrape of no field it reads says so, naming its metrics, where it blamed cut lines."""
    with pytest.raises(InputError) as refused:
        read_scrapes([(Source.from_path(REAL / "refused" / "dcgm_metrics_a800_mig_unread_1.txt"), None)])
    said = str(refused.value)
    assert "cut-off" not in said and "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" in said
    assert "none that fabricbot reads" in said
    result = read_scrapes([(text(
        'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{gpu="0",Hostname="h"} ERROR - FAILED TO CONVERT TO STRING',
        'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{gpu="1",Hostname="h"} 3'), None)])
    assert list(result["link_samples"]["gpu"]) == [1] and list(result["link_samples"]["crc_flit"]) == [3]
    (warned,) = [w.message for w in result.warnings]
    assert "its value is text ('ERROR - FAILED TO CONVERT TO'" in warned and "cut-off" not in warned


def test_an_xid_both_counted_and_read_as_the_last_xid_in_one_scrape_is_one_event() -> None:
    """dcgm-exporter reports one Xid in two series: the counter's new series (or its increase) and the last-Xid
    gauge's change, in the same scrape; one Xid, as the Prometheus sweep counts it, not two."""
    labels = 'gpu="1",Hostname="h"'
    result = READER.read(text(
        f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} 0 1700000000000",
        f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} 79 1700000060000",
        f'DCGM_EXP_XID_ERRORS_COUNT{{{labels},xid="79"}} 1 1700000060000',
    ))
    events = result["events"]
    assert list(zip(events["code"], events["count"], strict=True)) == [(79, 1)]
    assert "DCGM_EXP_XID_ERRORS_COUNT" in events["text"].item()


def test_the_one_unreadable_line_past_those_said_is_counted_as_one() -> None:
    bad = [f'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{gpu="0",Hostname="h"}} x{i}' for i in range(51)]
    result = READER.read(text('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0",Hostname="h"} 1', *bad))
    assert result.warnings[-1].message == "1 more unreadable line", [w.message for w in result.warnings[-2:]]


def test_a_mig_gpus_counters_once_per_instance_are_read_once_and_said_so() -> None:
    """dcgm-exporter writes a MIG GPU's device fields once per GPU instance (GPU_I_ID), the same count in each: read
    once per GPU and time, said as MIG instances, not as "a series sampled twice" (a line written twice); instances
    that disagree are said as that."""
    path = Path(__file__).parents[2] / "fixtures" / "real" / "dcgm_mig_a30_pcie_replay_1.txt"
    result = read(path)
    assert len(result["link_samples"]) == 2 and sorted(result["link_samples"]["gpu"].tolist()) == [0, 1]
    said = [w.message for w in result.warnings]
    assert [m for m in said if "split into MIG instances (GPU_I_ID labels)" in m] and \
        not [m for m in said if "sampled twice" in m], said
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[5] = lines[5].rsplit(" ", 1)[0] + " 900"  # one instance of GPU 0 disagrees
    damaged = READER.read(Source.from_text("\n".join(lines) + "\n", name="damaged.txt"))
    assert [w for w in damaged.warnings if "sampled twice at one time" in w.message], damaged.warnings
    assert [w for w in damaged.warnings if "MIG instances" in w.message and "some instances disagree" in w.message]


def test_a_scrape_of_no_field_it_reads_names_its_samples_metrics_not_its_help_lines() -> None:
    """dcgm-exporter PR 239's quoted output announces DCGM_EXP_XID_ERRORS_COUNT and samples
    DCGM_FI_DEV_XID_ERRORS_ACTIVE: the refusal names the metric the samples carry (it named the HELP line's, which
    fabricbot does read)."""
    with pytest.raises(InputError) as refused:
        read_scrapes([(Source.from_path(REAL / "refused" / "dcgm_xid_active_pr239_1.txt"), None)])
    said = str(refused.value)
    assert "its metrics (DCGM_FI_DEV_XID_ERRORS_ACTIVE) are none that fabricbot reads" in said
    assert "DCGM_EXP_XID_ERRORS_COUNT" not in said
