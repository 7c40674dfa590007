"""A paste in a node's thread and `fabricbot analyze FILE --node NODE` on the same output give one answer: the part
isolated, the priority and action, each link with its peer, a pinned counter's lower bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import bot.pastes as pastes
from bot.cli import main
from bot.demo import bundled
from bot.mrkdwn import esc
from bot.nodes import TableNodeSource
from bot.transport.blockkit import shown
from bot.transport.local import LocalSlack
from diagnostics.ingest import Source
from diagnostics.service import Request, TableSource, diagnose, files_source
from diagnostics.tickets import rules_answer
from tests.conftest import FIXTURES
from tests.shared import answered_exit

from .helpers import OPS, local_bot, posted, summary_for
from .test_pastes import _real

NODE = "hpc-gpu-node-27"  # a DGX-1 V100 node of the bundled fleet


@pytest.fixture(scope="module")
def fleet() -> TableNodeSource:
    return bundled(FIXTURES / "fleet")[0]


@pytest.fixture
def local(fleet: TableNodeSource) -> Iterator[LocalSlack]:
    tables = fleet.source
    assert isinstance(tables, TableSource)
    with local_bot(source=TableNodeSource(tables.tables, tables.platforms())) as bot:
        yield bot


def _thread(local: LocalSlack, *names: str) -> list[str]:
    """Each output pasted in turn in the node's summary thread, and the bot's replies."""
    root = summary_for(local, NODE)
    for n, name in enumerate(names, 1):
        local.injector.message(_real(name), user="UALICE", channel=OPS, thread_ts=root.ts)
        assert local.slack.wait_for(lambda s, n=n: len(posted(s, thread=root.ts)) >= n)  # type: ignore[misc]
    return [m.shown for m in posted(local.slack, thread=root.ts)]


def _file_door(name: str, platform: str | None = None) -> str:
    """The answer `fabricbot analyze FILE --node NODE [--platform P]` gives of the same output, as Slack shows it."""
    source, node, _ = files_source([Source.from_text(_real(name), name=name)], node=NODE)
    return shown(esc(rules_answer(diagnose(source, Request(node=node, platform=platform)).diagnosis)))


def test_the_fleet_knows_the_node_as_a_dgx1(fleet: TableNodeSource) -> None:
    assert fleet.source.platforms()[NODE] == "dgx1-v100-8gpu"


@pytest.mark.parametrize("platform", [None, "dgx1-v100-8gpu"])
def test_links_inactive_on_one_gpu_isolate_it_on_its_board_through_both_doors(local: LocalSlack,
                                                                              platform: str | None) -> None:
    """The thread judged link rows alone: "failing GPU 3 NVLink 3 ... Platform unknown ... identify the board",
    where the file door isolates GPU 3, resets GPUs 0-7 together and reseats its V100 module."""
    (reply,) = _thread(local, "nvlink_s_v100_inactive_1.txt")
    expected = _file_door("nvlink_s_v100_inactive_1.txt", platform)
    assert reply.splitlines()[0] == expected, (reply, expected)
    assert "has a failing GPU 3." in expected and "reseat GPU 3's V100 SXM2 module" in expected, expected
    assert "Platform unknown" not in reply


def _cli_totals(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The `total:` lines `fabricbot analyze FILE --node NODE` prints of the output."""
    path = tmp_path / name
    path.write_text(_real(name), encoding="utf-8")
    code = main(["analyze", str(path), "--node", NODE])
    out = capsys.readouterr().out
    assert code == answered_exit(out)
    return [line.split("total:", 1)[1].strip() for line in out.splitlines() if line.startswith("  total:")]


def test_a_lone_readings_totals_are_the_lines_the_file_door_prints(local: LocalSlack, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Totals said "GPU 2 NVLink 0: replays 148, CRC errors 65,535 since reset", where the file door names the peer
    ("GPU 2 -> GPU 0 NVLink 0") and says the CRC counter is pinned at 65,535 (its count a lower bound)."""
    (reply,) = _thread(local, "nvlink_e_v100_short_form_1.txt")
    said = [line.removeprefix("• ") for line in reply.splitlines() if line.startswith("• ")]
    cli = _cli_totals("nvlink_e_v100_short_form_1.txt", tmp_path, capsys)
    assert said == cli, (reply, cli)
    assert said[0].startswith("GPU 2 -> GPU 0 NVLink 0: replays 148, CRC errors 65,535 since reset (CRC flit errors "
                              "pinned at 65,535") and "lower bounds" in said[0], said


def test_two_dated_readings_pasted_one_at_a_time_are_rated_as_the_file_of_both(local: LocalSlack) -> None:
    """The rates between two pastes are judged on the node's board, as `analyze FILE` judges the file holding both
    readings: GPU 2 -> GPU 0 NVLink 0 warns, and no GPU the pastes leave out is said to be off the bus."""
    whole = (FIXTURES / "real" / "nvlink_e_v100_short_form_dated_2.txt").read_text(encoding="utf-8")
    body = [line for line in whole.splitlines() if not line.startswith("# ")]
    cut = next(i for i, line in enumerate(body) if i and line.startswith("Wed May"))
    root = summary_for(local, NODE)
    for n, part in enumerate((body[:cut], body[cut:]), 1):
        local.injector.message("\n".join(part), user="UALICE", channel=OPS, thread_ts=root.ts)
        assert local.slack.wait_for(lambda s, n=n: len(posted(s, thread=root.ts)) >= n)  # type: ignore[misc]
    rates = posted(local.slack, thread=root.ts)[1].shown
    expected = _file_door("nvlink_e_v100_short_form_dated_2.txt")
    assert rates.splitlines()[0] == f"Rates over the 30 minutes between your two readings: {expected}", rates
    assert "GPU 2 -> GPU 0 NVLink 0 warns" in rates, rates


def test_a_paste_judged_whole_is_judged_on_the_platform_the_bot_knows_for_the_node() -> None:
    """A paste of two readings is answered as `analyze FILE --node NODE --platform P` answers it, P the thread's
    node's platform; a node the bot knows no platform of is judged as the paste's GPUs' model tells."""
    name = "nvlink_e_v100_short_form_dated_2.txt"
    paste = [Source.from_text(_real(name), name="slack message")]
    known = shown(pastes.whole_answer(paste, NODE, {NODE: "dgx-a100-8gpu"})).splitlines()[0]
    assert known == _file_door(name, "dgx-a100-8gpu") and "NVSwitch" in known, known
    guessed = shown(pastes.whole_answer(paste, NODE, {"another-node": "dgx-a100-8gpu"})).splitlines()[0]
    assert guessed == _file_door(name) and "GPU 2 -> GPU 0 NVLink 0" in guessed, guessed
