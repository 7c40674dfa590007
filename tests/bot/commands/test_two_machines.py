"""Two machines' `nvidia-smi nvlink -s` outputs of one GPU model, neither naming its host nor dated, given as one
node's: merged, the second file's link states stood over the first's, so the order of the files decided whether a
down link showed (b then a: "fault=unknown", the inactive link gone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Cli


def _status(path: Path, card: str, down: tuple[int, int] | None = None) -> Path:
    lines = []
    for gpu in range(8):
        lines.append(f"GPU {gpu}: NVIDIA A100-SXM4-80GB (UUID: GPU-{card * 8}-0000-0000-0000-00000000000{gpu})")
        lines += [f"\t Link {link}: " + ("<inactive>" if down == (gpu, link) else "25 GB/s") for link in range(12)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("first", ["healthy", "down"])
def test_two_machines_given_as_one_node_are_refused_in_either_order(tmp_path: Path, cli: Cli, first: str) -> None:
    healthy = _status(tmp_path / "healthy.txt", "a")
    down = _status(tmp_path / "down.txt", "b", down=(3, 5))
    files = [healthy, down] if first == "healthy" else [down, healthy]
    both = tmp_path / "both.txt"  # `cat a b > both.txt`
    both.write_text("".join(f.read_text(encoding="utf-8") for f in files), encoding="utf-8")
    picture = str(tmp_path / "n.png")
    for door in (["analyze", *map(str, files)], ["analyze", str(both)], ["render", str(both), "-o", picture],
                 ["ticket", str(both), "--node", "n1"]):
        code, out, err = cli(*door)
        assert code == 2 and not out, (door, out)
        assert ("two GPUs at one place: GPU 0 is GPU-" in err and "neither dated: two machines' outputs, or one "
                "machine's before and after a GPU was replaced with no time to order them; analyze each on its own"
                in err), (door, err)
    code, out, _ = cli("analyze", str(down))  # each on its own is answered
    assert code == 0 and "fault=yes" in out and "GPU 3 NVLink 5" in out
    twice = cli("analyze", str(down), str(down))[1]  # the same machine's output twice is one machine's
    assert twice.splitlines()[:3] == out.splitlines()[:3]


def test_one_damaged_header_is_said_and_read_not_refused(tmp_path: Path, cli: Cli) -> None:
    """One GPU's UUID other in a second reading of the same machine is a damaged header (said by the reader), not
    two machines."""
    first = _status(tmp_path / "one.txt", "a").read_text(encoding="utf-8")
    second = first.replace("GPU-aaaaaaaa-0000-0000-0000-000000000002", "GPU-aaaaaaab-0000-0000-0000-000000000002")
    paste = tmp_path / "twice.txt"
    paste.write_text(first + second, encoding="utf-8")
    code, out, _ = cli("analyze", str(paste))
    assert code == 3 and "one of the two is damaged" in out
    assert "GPU 2 is GPU-aaaaaaab-0000-0000-0000-000000000002 here" in out


def test_one_gpu_of_each_machine_is_two_cards_not_a_damaged_header(tmp_path: Path, cli: Cli) -> None:
    """`nvidia-smi nvlink -s -i 3` on two hosts, concatenated: one GPU each, so no two GPUs clashed, and the second's
    wholly other UUID was read as one header damaged, its up links hiding the first's inactive ones."""
    first = _status(tmp_path / "a.txt", "a", down=(3, 5)).read_text(encoding="utf-8")
    second = _status(tmp_path / "b.txt", "b").read_text(encoding="utf-8")
    gpu3 = [text.split("GPU 3: ")[1].split("GPU 4: ")[0] for text in (first, second)]  # each one's GPU 3 alone
    paste = tmp_path / "gpu3.txt"
    paste.write_text("".join(f"GPU 3: {block}" for block in gpu3), encoding="utf-8")
    code, _, err = cli("analyze", str(paste))
    assert code == 2 and "two GPUs at one place: GPU 3 is GPU-aaaaaaaa" in err and "GPU-bbbbbbbb" in err, err


def test_one_machines_uuids_in_either_case_are_one_machines(tmp_path: Path, cli: Cli) -> None:
    """A UUID is hex: the same card written in capitals by another tool is the same card."""
    text = _status(tmp_path / "a.txt", "a").read_text(encoding="utf-8")
    paste = tmp_path / "twice.txt"
    paste.write_text(text + text.replace("GPU-aaaaaaaa", "GPU-AAAAAAAA"), encoding="utf-8")
    code, out, err = cli("analyze", str(paste))
    assert code in (0, 3) and "two GPUs at one place" not in err and out.startswith("unnamed-node"), err


def test_two_machines_dated_apart_are_not_every_gpu_replaced(tmp_path: Path, cli: Cli) -> None:
    """Each output under its own `date` line, minutes apart: read as every GPU replaced between them ("GPU 3 is
    another card from 02:55"), the first machine's inactive link gone from the answer."""
    first = _status(tmp_path / "a.txt", "a", down=(3, 5)).read_text(encoding="utf-8")
    second = _status(tmp_path / "b.txt", "b").read_text(encoding="utf-8")
    paste = tmp_path / "dated.txt"
    paste.write_text(f"Mon Dec  7 02:50:00 UTC 2026\n{first}Mon Dec  7 02:55:00 UTC 2026\n{second}", encoding="utf-8")
    code, _, err = cli("analyze", str(paste))
    assert code == 2 and ("no GPU read at 2026-12-07 02:50 UTC is among those read at 2026-12-07 02:55 UTC (their "
                          "UUIDs differ): two machines' outputs read as one node") in err, err
    one = tmp_path / "one.txt"  # one machine read twice, one GPU swapped between: a card replaced, as before
    swapped = first.replace("GPU-aaaaaaaa-0000-0000-0000-000000000002", "GPU-cccccccc-0000-0000-0000-000000000002")
    one.write_text(f"Mon Dec  7 02:50:00 UTC 2026\n{first}Mon Dec  7 02:55:00 UTC 2026\n{swapped}", encoding="utf-8")
    code, out, _ = cli("analyze", str(one))
    assert code == 0 and "GPU 2 is another card from" in out, out
