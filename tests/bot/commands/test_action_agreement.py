"""What `fabricbot analyze FILE` says to do (its text and its JSON) and what `fabricbot ticket FILE` lists as steps
are one plan: the parts the action names are the parts the ticket's steps touch, for the same reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.bot.commands.conftest import Cli
from tests.conftest import FIXTURES

NODE = "n1"


def _analyze(cli: Cli, *argv: str) -> tuple[str, dict[str, Any]]:
    """The text answer and the JSON answer."""
    code, text, err = cli("analyze", *argv)
    assert code in (0, 1), err
    code, out, err = cli("analyze", *argv, "--json")
    assert code in (0, 1), err
    return text, json.loads(out)


def _action(text: str) -> str:
    """The text answer's first action line: the isolated component's."""
    return next(line.split("action:", 1)[1].strip() for line in text.splitlines() if "action:" in line)


def _ticket(cli: Cli, *argv: str) -> dict[str, Any]:
    code, out, err = cli("ticket", *argv, "--json")
    assert code == 0, err
    ticket: dict[str, Any] = json.loads(out)
    return ticket


def _failing_direct_link(tmp_path: Path) -> Path:
    """A DGX-1's GPU 0 -> GPU 3 direct link replaying far over its threshold (the real reading, scaled up)."""
    text = (FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt").read_text()
    assert "Replay Errors: 104" in text
    path = tmp_path / "v100.txt"
    path.write_text(text.replace("Replay Errors: 104", "Replay Errors: 90104"))
    return path


def test_a_direct_links_two_modules_are_reseated_in_the_action_and_the_ticket_alike(cli: Cli,
                                                                                   tmp_path: Path) -> None:
    argv = (str(_failing_direct_link(tmp_path)), "--node", NODE, "--platform", "dgx1-v100-8gpu")
    text, answer = _analyze(cli, *argv)
    action, loc = _action(text), answer["localization"]
    assert loc["end"] is None, "no reading says which end received the errors: both modules are suspects"
    ends = f"GPU {loc['gpu']} and {loc['peer']}"
    assert loc["peer"] and loc["peer"].startswith("GPU ") and loc["peer"] != f"GPU {loc['gpu']}"
    assert action == answer["repair_action"] and f"modules of {ends}" in action
    ticket = _ticket(cli, *argv)
    assert ticket["peer"] == loc["peer"]
    reseat = [s["text"] for s in ticket["repair_steps"] if ", reseat " in s["text"]]
    assert len(reseat) == 1 and f"modules of {ends}" in reseat[0], reseat



def _suspect(answer: dict[str, Any], component: str) -> dict[str, Any]:
    return next(loc for loc in answer["localizations"] if loc["component"] == component)


def _xid_gpus(answer: dict[str, Any], *, fatal: bool) -> list[str]:
    """The GPUs whose one crossing is an NVLink Xid judged so."""
    return [f["component"] for f in answer["findings"]
            if [c["rule"] for c in f["crossed"]] == ["xid_nvlink"] and f["crossed"][0]["fatal"] is fatal]


def _suspect_action(text: str, component: str) -> str:
    """The action line under the text answer's suspect line of `component`."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"suspect:  {component} "))
    return lines[at + 1].split("action:", 1)[1].strip()


@pytest.mark.parametrize("platform", [None, "gb200-nvl72-compute-tray"])  # no board named, and a GB200 tray's host
def test_an_xid_145_not_logged_fatal_gets_the_catalogs_decode_not_a_fatal_xids_reset(cli: Cli,
                                                                                     platform: str | None) -> None:
    argv = (str(FIXTURES / "real" / "xid_145_149_log_1.txt"), "--node", NODE,
            *(["--platform", platform] if platform else []))
    text, answer = _analyze(cli, *argv)
    nonfatal, fatal = _xid_gpus(answer, fatal=False), _xid_gpus(answer, fatal=True)
    assert nonfatal and fatal
    for component in nonfatal:
        action = _suspect(answer, component)["action"]
        assert _suspect_action(text, component) == action
        assert "resets the GPU for a fatal NVLink Xid" not in action and "XID_154_EVAL" in action
        reset = f"reset {component} (`nvidia-smi -r -i "
        assert "only where the decode or the Xid 154 asks for it" in action.split(reset)[0]
        ticket = _ticket(cli, *argv, "--link", component)
        steps = [s["text"] for s in ticket["isolation_steps"] + ticket["repair_steps"]]
        assert "XID_154_EVAL" in steps[0 + len(ticket["isolation_steps"])]
        resets = [s for s in steps if reset in s]
        assert resets and all(s.startswith("Only where the decode says RESET_GPU") for s in resets), resets
        assert not any(s.startswith("Drain ") for s in steps), steps
    for component in fatal:  # a fatal one is still reset, for the catalog's reason
        assert "resets the GPU for a fatal NVLink Xid" in _suspect(answer, component)["action"]


@pytest.mark.parametrize("platform", [None, "gb200-nvl72-compute-tray"])
def test_a_step_that_resets_a_gpu_named_by_address_says_reset_and_names_the_part(
        cli: Cli, tmp_path: Path, platform: str | None) -> None:
    """A GPU a log names by its PCI address alone has no `nvidia-smi nvlink -e -i N` to read its links with: its
    step still says the reset its command makes (not "reboot it" beside `nvidia-smi -r`), and a tray's hardware
    step names the tray."""
    log = tmp_path / "kern.log"
    log.write_text("2026-05-13T11:00:00+0000 tray1 kernel: NVRM: Xid (PCI:0008:01:00): 145, Link 04 "
                   "(0x00000000 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n")
    ticket = _ticket(cli, str(log), "--rules", *(["--platform", platform] if platform else []))
    resets = [s for s in ticket["repair_steps"] if "nvidia-smi -r" in (s.get("command") or "")]
    assert resets and all("reset the GPU at PCI 0008:01:00.0 (`nvidia-smi -r -i 0008:01:00.0`)" in s["text"]
                          and "reboot it" not in s["text"] for s in resets), resets
    if platform:
        assert "open a hardware ticket for the GB200 compute tray" in ticket["repair_steps"][-1]["text"]
