"""Fabric Manager's log (the file and its journal): its NVSwitch errors are the SXid events a kernel SXid line gives,
its other lines are skipped without a word, and an error line it cannot read is said with its line and text."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from diagnostics.config.datafiles import read_toml
from diagnostics.enums import EventKind
from diagnostics.ingest import detect, fm_lines
from diagnostics.ingest.base import Source

from .helpers import REAL, read, read_text

ROW = ["kind", "code", "pci_bus_id", "link", "severity"]


def _rows(events: pd.DataFrame) -> list[tuple[object, ...]]:
    return [tuple(None if pd.isna(v) else v for v in row) for row in events[ROW].itertuples(index=False)]


def test_the_real_log_gives_one_sxid_event_and_skips_its_multicast_lines_quietly() -> None:
    path = REAL / "fabricmanager_sxid12028_gpud_1.txt"
    assert detect.choose(Source.from_path(path)).name == "fabric_manager"
    result = read(path)
    events = result.tables["events"]
    assert _rows(events) == [("sxid", 12028, "0000:86:00.0", 61, "non-fatal")]
    assert list(events["nvswitch"]) == ["0000:86:00.0"]  # the log names the switch by its bus id
    assert "physical id 3" in events["text"].iloc[0]
    assert events["timestamp"].iloc[0] == pd.Timestamp("2025-02-27 15:10:02", tz="UTC")
    assert events["source"].iloc[0].endswith(":101")
    assert [w.message for w in result.warnings] == ["Fabric Manager's log times state no zone; read as UTC"]


def test_an_fm_error_is_the_event_the_kernel_sxid_line_of_the_same_fault_gives() -> None:
    fm = read_text("[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on "
                   "NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61\n")
    kernel = read_text("2025-02-27T15:10:02Z host kernel: nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, "
                       "Non-fatal, Link 61 egress non-posted PRIV error\n")
    assert _rows(fm.tables["events"]) == _rows(kernel.tables["events"])
    assert list(fm.tables["events"]["timestamp"]) == list(kernel.tables["events"]["timestamp"])


def test_fatal_and_non_fatal_are_read_and_an_unread_error_is_said_with_its_line() -> None:
    result = read(REAL / "fabricmanager_sxid20034_gpud_1.txt")
    assert _rows(result.tables["events"]) == [("sxid", 20034, "0000:86:00.0", 33, "fatal"),
                                              ("sxid", 12028, "0000:86:00.0", 61, "non-fatal")]
    unread = [(w.line, w.message) for w in result.warnings if "does not read" in w.message]
    assert len(unread) == 1 and unread[0][0] == 5 and "failed to find the GPU handle" in unread[0][1]


def test_a_damaged_nvswitch_error_is_said_with_its_line_and_text() -> None:
    result = read_text("[Jul 23 2024 07:53:54] [INFO] [tid 841] fabric manager started\n"
                       "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on "
                       "NVSwitch pci bus\n"
                       "[Jul 23 2024 07:53:56] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on "
                       "NVSwitch pci bus id 00000000:zz:00.0 physical id 3 port 33\n", fmt="fabric_manager")
    said = {w.line: w.message for w in result.warnings}
    assert "cannot be read" in said[2] and "pci bus" in said[2]
    assert "is no PCI bus id" in said[3]
    assert _rows(result.tables["events"]) == [("sxid", 20034, None, 33, "fatal")]  # kept without its switch


def test_the_journal_form_names_the_node_and_a_header_gives_the_year() -> None:
    text = ("-- Logs begin at Mon 2024-07-22 10:00:00 UTC, end at Wed 2024-07-24 10:00:00 UTC. --\n"
            "Jul 23 07:50:01 dgx-07 nv-fabricmanager[6313]: Connected to 1 node.\n"
            "Jul 23 07:53:55 dgx-07 nv-fabricmanager[6313]: detected NVSwitch fatal error 20034 on fid 0 on "
            "NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33\n"
            "Jul 23 07:54:00 dgx-07 nv-fabricmanager[6313]: request to query NVSwitch device information failed\n")
    result = read_text(text)
    events = result.tables["events"]
    assert _rows(events) == [(EventKind.SXID.value, 20034, "0000:86:00.0", 33, "fatal")]
    assert list(events["node_id"].astype(str)) == ["dgx-07"]
    assert events["timestamp"].iloc[0] == pd.Timestamp("2024-07-23 07:53:55", tz="UTC")
    assert [w.line for w in result.warnings if "does not read" in w.message] == [4]


def test_an_nvswitch_error_cut_before_its_port_is_kept_on_its_switch() -> None:
    """A fatal error whose line lost its port number was skipped whole, so the node read no fault, where the kernel's
    SXid line cut before its link is kept on its switch: the fault stands, its port unknown, and the line is said."""
    result = read_text("[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on "
                       "NVSwitch pci bus id 00000000:86:00.0 physical id 3 port\n", fmt="fabric_manager")
    assert _rows(result.tables["events"]) == [("sxid", 20034, "0000:86:00.0", None, "fatal")]
    cut = [w for w in result.warnings if w.cut]
    assert [w.line for w in cut] == [1] and "port" in cut[0].message, result.warnings


KERNEL_XID79 = ("2025-02-27T15:10:03+0000 host kernel: NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', "
                "name=<unknown>, GPU has fallen off the bus.\n")
FM_FATAL = ("2025-02-27T15:10:02+0000 host nv-fabricmanager[6313]: detected NVSwitch fatal error 20034 on fid 0 on "
            "NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61\n")


def test_the_systems_journal_gives_both_fabric_managers_and_the_kernels_events() -> None:
    """`journalctl` without `-u` interleaves both: the kernel's reader skipped Fabric Manager's fatal switch error as
    a line holding no Xid, and Fabric Manager's reader, where its lines filled the part detection reads, skipped the
    kernel's Xid 79 without a word."""
    kernel_first = read_text(KERNEL_XID79.replace("15:10:03", "15:09:03") + FM_FATAL, name="journal.txt")
    started = ("2025-02-27T15:00:00+0000 host nv-fabricmanager[6313]: [INFO] [tid 6313] Fabric Manager running, "
               "multicast group allocation proceeding for the partition\n") * 800  # past what detection reads
    manager_first = read_text(started + FM_FATAL + KERNEL_XID79, name="journal.txt")
    for result in (kernel_first, manager_first):
        events = result.tables["events"].sort_values("code")
        assert _rows(events) == [("xid", 79, "0000:91:00.0", None, None), ("sxid", 20034, "0000:86:00.0", 61, "fatal")]
        assert list(events["node_id"].astype(str)) == ["host", "host"]
        assert not [w for w in result.warnings if "skipped" in w.message]


def test_fabric_managers_own_file_with_a_kernel_line_far_below_keeps_its_errors() -> None:
    """Handed to the kernel log's reader at the kernel's line, the file's own `[date] [ERROR] [tid N]` lines were
    skipped as holding no Xid: both fatal switch errors were lost."""
    info = "[Jul 23 2024 07:50:01] [INFO] [tid 841] Fabric Manager starting, multicast group allocation pending\n"
    errors = "".join(f"[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on "
                     f"NVSwitch pci bus id 00000000:86:00.0 physical id 3 port {p}\n" for p in (33, 34))
    kernel = ("2024-07-23T07:54:00+0000 n1 kernel: nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, "
              "Link 40 LTSSM Fault Up\n")
    result = read_text(errors + info * 800 + kernel, name="fabricmanager.log")
    assert _rows(result.tables["events"].sort_values(["pci_bus_id", "link"])) == [
        ("sxid", 20034, "0000:06:00.0", 40, "fatal"), ("sxid", 20034, "0000:86:00.0", 33, "fatal"),
        ("sxid", 20034, "0000:86:00.0", 34, "fatal")]
    assert not [w for w in result.warnings if "hold no Xid" in w.message]


def test_a_journal_of_two_hosts_gives_each_line_to_its_host() -> None:
    """pdsh or a log server's journal: a fault logged on dgx-08 is dgx-08's, not the first host's."""
    text = ("dgx-07: Jul 23 07:50:01 dgx-07 nv-fabricmanager[6313]: Connected to 1 node.\n"
            "dgx-08: Jul 23 07:53:55 dgx-08 nv-fabricmanager[6313]: detected NVSwitch fatal error 20034 on fid 0 on "
            "NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33\n")
    events = read_text(text).tables["events"]
    assert list(events["node_id"].astype(str)) == ["dgx-08"]


def test_a_journal_naming_its_host_by_its_full_name_is_the_prompts_node() -> None:
    """`root@dgx-07:~# journalctl -u nvidia-fabricmanager`: lines logged by dgx-07.cluster.local (or localhost)
    are dgx-07's, so its fatal SXid meets the node's other pastes; a host of another name is its own."""
    head = "root@dgx-07:~# journalctl -u nvidia-fabricmanager --no-pager\n"
    fatal = ("nv-fabricmanager[6313]: detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id "
             "00000000:07:00.0 physical id 0 port 61\n")
    for logged, node in (("dgx-07.cluster.local", "dgx-07"), ("localhost", "dgx-07"), ("dgx-08", "dgx-08")):
        events = read_text(f"{head}Jul 23 07:53:55 {logged} {fatal}").tables["events"]
        assert list(events["node_id"].astype(str)) == [node], logged


def test_the_start_scripts_journal_lines_are_fabric_managers() -> None:
    """Newer packages start the daemon through `nvidia-fabricmanager-start.sh`, whose journal lines carry its
    messages: read under `nv-fabricmanager[pid]:` only, a forced format read nothing and named no line."""
    path = REAL / "fabricmanager_start_script_nothing_to_do_cubestudio_1.txt"
    assert detect.choose(Source.from_path(path)).name == "fabric_manager"
    said = {w.line: w.message for w in read(path, fmt="fabric_manager").warnings}
    assert "NV_WARN_NOTHING_TO_DO" in said[3] and "no NVSwitch" in said[3]
    assert "does not read" in said[4] and "Exit code: 1" in said[4]  # the script's own failure line


def test_a_forced_read_of_no_fabric_manager_line_names_the_first_lines() -> None:
    text = "".join(f"Sep 18 03:19:0{i} host other-daemon[12]: line {i}\n" for i in range(5))
    result = read_text(text, fmt="fabric_manager")
    assert result.tables["events"].empty
    assert [w.line for w in result.warnings] == [1, 2, 3, 4]
    assert "not a Fabric Manager line" in result.warnings[0].message and "line 0" in result.warnings[0].message
    assert "2 more lines" in result.warnings[3].message


def test_nothing_to_do_is_explained_with_what_to_check() -> None:
    """`NV_WARN_NOTHING_TO_DO` was said as an error this reader does not read: it is what Fabric Manager prints when
    it finds no NVSwitch to manage (data/fm_messages.toml), which a board without NVSwitches gives as well."""
    result = read(REAL / "fabricmanager_nothing_to_do_gpuop610_1.txt", fmt="fabric_manager")
    said = [w.message for w in result.warnings if "NV_WARN_NOTHING_TO_DO" in w.message]
    assert len(said) == 1 and "does not read" not in said[0]
    assert "no NVSwitch to manage" in said[0] and "lspci" in said[0] and "NVLSM" in said[0]


def test_each_known_message_names_its_sources() -> None:
    data = read_toml(fm_lines.MESSAGES_FILE, "Fabric Manager message file")
    for entry in fm_lines.known_messages():
        tags = re.findall(r"\[(\w+)\]", entry.source)
        assert tags and set(tags) <= set(data["sources"]), entry.token
        assert not entry.assumed or entry.note, entry.token  # an assumed entry says what is assumed


def test_the_imex_daemons_log_is_said_as_what_it_is_not_as_fabric_managers() -> None:
    """The nvidia-imex daemon logs in Fabric Manager's form: its log was read as hers and answered "Fabric Manager's
    log times state no zone", naming the wrong daemon (the log as kubernetes-sigs/dra-driver-nvidia-gpu PR 1465
    quotes it)."""
    from diagnostics.errors import InputError

    log = ("IMEX Log initializing at: 9/18/2026 06:40:33.561\n"
           "[Sep 18 2026 06:40:33] [INFO] [tid 77] IMEX version 580.159.04 is running with the following "
           "configuration options:\n[Sep 18 2026 06:40:33] [INFO] [tid 77] Logging level = 4\n")
    for text in (log, log.split("\n", 1)[1]):  # with its first line, and without
        with pytest.raises(InputError, match=r"this is the nvidia-imex daemon's log .* `nvidia-imex-ctl -N -H`"):
            detect.read(Source.from_text(text, name="imex.log"))


@pytest.mark.parametrize("mark", fm_lines.MARKS)
def test_each_mark_of_a_fabric_manager_line_holds_the_word_looked_for_first(mark: str) -> None:
    """A line is asked for the word first, then for each mark: a mark without the word would never be found."""
    line = f"Mar 02 10:00:01 node-07 {mark}4242]: detected NVSwitch non-fatal error"
    assert fm_lines.names_manager(line)
    assert not fm_lines.names_manager(line.replace(mark, "systemd["))
