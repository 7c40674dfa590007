"""The driver's lines about a GPU itself: off-the-bus messages in each spelling, identity lines (bus -> UUID), and
NVLink5 Xid fields whatever their spacing. Each line is one a public source quotes, with the fact it states."""

from __future__ import annotations

import pandas as pd

from diagnostics.analysis.events import _fatal
from diagnostics.ingest.kernel_gpu import OFF_BUS_CODE
from tests.ingest.helpers import REAL, read, read_text, warning_lines

UUID = "GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e"


def _one_off_bus(text: str) -> pd.Series:
    events = read_text(text)["events"]
    assert len(events) == 1, events
    event = events.iloc[0]
    assert (event["kind"], event["code"]) == ("xid", OFF_BUS_CODE)
    assert _fatal(events, "xid").tolist() == [True]  # Xid 79 is fatal in the catalog: the line states no severity
    return event


def test_off_the_bus_with_a_domain() -> None:
    # gpud's Xid matcher: "single-line fallen-off-bus fallback without explicit Xid" -> Xid 79 on PCI:0000:29:00
    event = _one_off_bus("NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.\n")
    assert event["pci_bus_id"] == "0000:29:00.0"
    assert event["text"] == "GPU 0000:29:00.0: GPU has fallen off the bus."


def test_off_the_bus_without_a_domain_is_domain_zero() -> None:
    # gpud: "single-line fallen-off-bus fallback normalizes missing PCI domain" -> PCI:0000:18:00
    assert _one_off_bus("NVRM: GPU 18:00.0: GPU has fallen off the bus.\n")["pci_bus_id"] == "0000:18:00.0"


def test_the_multi_line_message_with_dmesg_indentation_is_one_event() -> None:
    # NVSentinel issue 155 and its gpufallen handler test: a fatal GPU_FALLEN_OFF_BUS on PCI 0000:b3:00.0
    text = ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
            "               NVRM: fallen off the bus and is not responding to commands.\n"
            "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    result = read_text(text)
    event = _one_off_bus(text)
    assert event["pci_bus_id"] == "0000:b3:00.0" and event["source"].endswith(":1")
    assert event["text"] == ("The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen "
                             "off the bus and is not responding to commands.")
    skipped = [w for w in result.warnings if "skipped" in w.message]
    assert [w.line for w in skipped] == [4] and "1 line holds no Xid" in skipped[0].message  # the probe line, no more


def test_the_multi_line_message_without_pci_id_or_indentation() -> None:
    # gpud: "multiline fallen-off-bus fallback without explicit Xid" -> Xid 79 on PCI:0000:18:00; NVSentinel:
    # "GPU Fallen Error without PCI ID" -> PCI 0000:b3:00.0
    text = ("NVRM: The NVIDIA GPU 0000:18:00.0\nNVRM: (PCI ID: 10de:2901) installed in this system has\n"
            "NVRM: fallen off the bus and is not responding to commands.\n")
    assert _one_off_bus(text)["pci_bus_id"] == "0000:18:00.0"
    text = ("Nov 29 16:00:01 gpu-n7 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "Nov 29 16:00:01 gpu-n7 kernel: NVRM: installed in this system has\n"
            "Nov 29 16:00:01 gpu-n7 kernel: NVRM: fallen off the bus and is not responding to commands.\n")
    event = _one_off_bus(text)
    assert (event["pci_bus_id"], event["node_id"]) == ("0000:b3:00.0", "gpu-n7")


def test_a_message_that_is_not_off_the_bus_or_names_no_bus_makes_no_event() -> None:
    # gpud: "fallen-off-bus text without valid BDF is ignored"
    result = read_text("NVRM: The NVIDIA GPU invalid-bdf.0\nNVRM: fallen off the bus and is not responding to "
                       "commands.\n", fmt="kernel_log")
    assert result["events"].empty
    # the same opening, then another message (an unsupported GPU): no event, its lines counted as skipped
    result = read_text("NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1b80)\n"
                       "NVRM: installed in this system is not supported by the\nNVRM: NVIDIA 535 driver release.\n"
                       "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n")
    assert result["events"]["pci_bus_id"].tolist() == ["0000:3b:00.0"]
    assert any("3 lines hold no Xid" in w.message and w.line == 1 for w in result.warnings)


def test_an_xid_79_line_and_its_message_are_one_event_in_either_order() -> None:
    # NVSentinel: "GPU Fallen Error with XID following - Should NOT match" (the Xid 79 already says it); a field
    # note (a public troubleshooting log): `Xid (PCI:0000:01:00): 79, ...` then `GPU 0000:01:00.0: ...`
    xid_first = ("Mar 21 20:18:56 pc kernel: [   65.315783] NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', "
                 "name=<unknown>, GPU has fallen off the bus.\n"
                 "Mar 21 20:18:56 pc kernel: [   65.315792] NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.\n")
    event = _one_off_bus(xid_first)
    assert event["source"].endswith(":1") and event["text"].startswith("Xid (PCI:0000:01:00): 79")
    assert event["text"].endswith("; GPU 0000:01:00.0: GPU has fallen off the bus.")
    message_first = ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                     "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                     "               NVRM: fallen off the bus and is not responding to commands.\n"
                     "NVRM: Xid (PCI:0000:b3:00.0): 79, pid=12345, GPU has fallen off the bus.\n")
    event = _one_off_bus(message_first)
    assert event["text"].startswith("Xid (PCI:0000:b3:00.0): 79, pid=12345") and "PCI ID: 10de:26b5" in event["text"]


def test_a_message_long_after_the_xid_or_on_another_bus_is_its_own_event() -> None:
    text = ("2026-11-29T16:00:01+00:00 NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
            "2026-11-29T16:30:01+00:00 NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.\n"
            "2026-11-29T16:30:02+00:00 NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n")
    events = read_text(text)["events"]
    assert events["pci_bus_id"].tolist() == ["0000:01:00.0", "0000:01:00.0", "0000:02:00.0"]
    assert set(events["code"]) == {OFF_BUS_CODE}


def test_the_message_that_names_no_gpu() -> None:
    # an older driver's form (a public note: `kernel: NVRM: GPU has fallen off the bus.` then crash dump lines)
    after_xid = ("kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
                 "kernel: NVRM: GPU has fallen off the bus.\n"
                 "kernel: NVRM: A GPU crash dump has been created. If possible, please run\n")
    result = read_text(after_xid)
    assert result["events"]["pci_bus_id"].tolist() == ["0000:3b:00.0"]  # one event: the Xid's
    alone = read_text("kernel: NVRM: GPU has fallen off the bus.\n")
    event = alone["events"].iloc[0]
    assert event["code"] == OFF_BUS_CODE and pd.isna(event["pci_bus_id"])
    assert warning_lines(alone) == [1] and "names no GPU" in alone.warnings[0].message


def test_identity_lines_name_the_gpu_of_later_events_on_their_bus() -> None:
    # `NVRM: GPU at PCI:0000:00:08.0: GPU-<uuid>`: the driver ties the bus to the GPU's UUID
    text = ("NVRM: Xid (PCI:0000:00:08): 13, pid=1, Graphics Exception\n"
            f"NVRM: GPU at PCI:0000:00:08.0: {UUID}\n"
            "NVRM: GPU Board Serial Number: 1563521020414\n"
            "NVRM: Xid (PCI:0000:00:08): 79, pid=1, GPU has fallen off the bus.\n"
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=2, GPU has fallen off the bus.\n"
            "NVRM: GPU at PCI:0000:3b:00: GPU-1234\n")
    result = read_text(text)
    events = result["events"]
    assert events["code"].tolist() == [13, 79, 79]
    assert pd.isna(events["gpu_uuid"].iloc[0])  # before the identity line: not guessed backwards
    assert events["gpu_uuid"].iloc[1] == UUID and pd.isna(events["gpu_uuid"].iloc[2])
    assert any(w.line == 6 and "'GPU-1234'" in w.message for w in result.warnings)  # a cut UUID, said


def test_nvlink5_xid_fields_whatever_the_spacing() -> None:
    # gpud's Xid matcher test lines (GB200): "XID 149 NETIR_LINK_EVT Fatal error" on PCI:0009:01:00, Link 01
    text = ("[171167.620236] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 "
            "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
            "[171168.109293] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 15 (0x0215e5c6 "
            "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
            "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE\tNonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008)\n"
            "[171167.621162] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
            "(Drain and Reset)\n")
    events = read_text(text)["events"]
    assert events["code"].tolist() == [149, 149, 145, 154]
    assert events["severity"].tolist()[:3] == ["fatal", "fatal", "non-fatal"] and pd.isna(events["severity"].iloc[3])
    assert events["subcode"].tolist()[:3] == ["NETIR_LINK_EVT", "NETIR_LINK_EVT", "RLW_RXPIPE"]
    assert pd.isna(events["subcode"].iloc[3])
    assert events["link"].tolist()[:3] == [1, 15, 13] and set(events["pci_bus_id"][:2]) == {"0009:01:00.0"}


def test_an_nvlink_xids_link_minus_one_names_no_link_without_a_warning() -> None:
    """The driver prints `Link -1` when an NVLink Xid names no single link: it was warned as a damaged index ("an
    index is never negative"), though the answer already reads it as the Xid naming none."""
    result = read(REAL / "kernel_xid14x_link_minus_one_gpud_1.txt")
    events = result.tables["events"]
    assert events["code"].tolist() == [149, 149, 145, 144, 94]
    assert pd.isna(events["link"].iloc[0]) and events["link"].tolist()[1:4] == [0, 13, 0]
    assert not [w for w in result.warnings if "negative" in w.message], result.warnings


def test_another_negative_link_of_an_xid_is_still_said() -> None:
    result = read_text("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -2 (0x000fe406 0x00000000)\n")
    assert pd.isna(result["events"]["link"].iloc[0])
    assert warning_lines(result) == [1] and "never negative" in result.warnings[0].message
