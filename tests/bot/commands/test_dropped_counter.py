"""A paste cut inside its last number (`500100` kept as `50`, the newline after it, as a chat client keeps it): the
CRC count fell while the same link's replays held, read as a restart from zero, so a failing link was "warnings
only", fault=no, exit 0, at every door. A restart (a reboot, a GPU reset, a driver reload) zeroes every counter of
the link; a count that falls alone is a damaged or cut number, and its rate is not known."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli


def _reading(when: str, crc: int, replays: int, reset: int | None = None) -> str:
    """Every link of eight GPUs with `replays`, GPU 7's link 17 with `crc`; GPU `reset`'s counters all zero."""
    lines = [f"{when}\n$ nvidia-smi nvlink -e\n"]
    for gpu in range(8):
        lines.append(f"GPU {gpu}: NVIDIA H100 80GB HBM3 (UUID: GPU-1111111{gpu}-2222-3333-4444-555555555555)\n")
        for link in range(18):
            last = gpu == 7 and link == 17
            lines.append(f"\t Link {link}: Replay Errors: {0 if gpu == reset else replays}\n"
                         f"\t Link {link}: Recovery Errors: 0\n\t Link {link}: CRC Errors: {crc if last else 0}\n")
    return "".join(lines)


def _paste(tmp_path: Path, second_crc: int, second_replays: int = 500, reset: int | None = None) -> Path:
    path = tmp_path / "two.txt"
    path.write_text(_reading("Mon Dec  7 01:00:00 UTC 2026", 100, 500)
                    + _reading("Mon Dec  7 01:20:00 UTC 2026", second_crc, second_replays, reset), encoding="utf-8")
    return path


def test_a_count_that_falls_while_the_links_others_hold_is_no_restart_and_no_all_clear(tmp_path: Path,
                                                                                       cli: Cli) -> None:
    whole = _paste(tmp_path, 500_100)
    code, out, _ = cli("analyze", str(whole), "--node", "h1")
    assert code == 0 and "fault=yes" in out  # 1.5M CRC errors an hour: failing
    cut = _paste(tmp_path, 50)
    code, out, err = cli("analyze", str(cut), "--node", "h1")
    assert code == 3 and "fault=unknown" in out and "restarted from zero" not in out, out
    assert ("GPU 7 NVLink 17: CRC flit errors read lower than the reading before while the link's other counters "
            "held theirs: a restart zeroes every counter, so this is a damaged or cut number, and its rate is not "
            "known") in out
    assert "1 link with a counter read lower than before, no restart" in err
    store = tmp_path / "store"
    assert cli("ingest", str(cut), "--store", str(store), "--node", "h1")[0] == 0
    code, out, _ = cli("analyze", "--store", str(store), "--node", "h1", "--json")
    answer = json.loads(out)
    assert code == 3 and answer["dropped"] == 1 and not answer["fault_detected"]
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    swept = json.loads(out)
    assert code == 3 and swept["unjudged"] == ["h1"]
    assert [r for r in swept["incomplete_reasons"] if "a counter read lower than before" in r]


def test_another_gpus_reset_at_that_reading_does_not_explain_the_fallen_count(tmp_path: Path, cli: Cli) -> None:
    """GPU 0 reset between the readings (every count of its links back to zero) while GPU 7's CRC count was cut: a GPU
    reset zeroes that GPU's links alone, so GPU 7's count still fell with no restart of its own."""
    cut = _paste(tmp_path, 50, reset=0)
    code, out, _ = cli("analyze", str(cut), "--node", "h1")
    assert code == 3 and "fault=unknown" in out, out
    assert "GPU 7 NVLink 17: CRC flit errors read lower than the reading before" in out
    assert "GPU 0" in out and "restart" in out  # GPU 0's own reset is still one
    store = tmp_path / "store"
    assert cli("ingest", str(cut), "--store", str(store), "--node", "h1")[0] == 0
    code, out, _ = cli("sweep", "--store", str(store), "--json")
    assert code == 3 and json.loads(out)["unjudged"] == ["h1"]


def test_a_restart_drops_every_count_and_is_still_one(tmp_path: Path, cli: Cli) -> None:
    """Replays and CRC both lower: a restart, its new counts rated from zero, as before; and a count that falls where
    the link's others read zero cannot be told from one, so it is one."""
    for crc, replays in ((40, 3), (40, 0)):
        paste = _paste(tmp_path, crc, replays)
        if replays == 0:
            paste.write_text(paste.read_text(encoding="utf-8").replace("Replay Errors: 500", "Replay Errors: 0"),
                             encoding="utf-8")
        code, out, _ = cli("analyze", str(paste), "--node", "h1")
        assert code == 0 and "restarted" in out and "read lower than the reading before" not in out, out


def test_a_reboot_that_leaves_one_count_where_it_was_is_still_a_reboot(tmp_path: Path, cli: Cli) -> None:
    """Every link of the node restarted, and one link's one recovery before it counted one again after: another
    link dropping at that reading says restart, so that link's lower replays are no damaged number."""
    def reading(when: str, replays: int, recoveries: int, other: int) -> str:
        lines = [f"{when}\n$ nvidia-smi nvlink -e\n",
                 "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdef00-cdef-abdc-abcd-abababababab)\n"]
        for link in range(18):
            mine = (replays, recoveries) if link == 3 else (other, 0) if link == 4 else (0, 0)
            lines.append(f"\t Link {link}: Replay Errors: {mine[0]}\n\t Link {link}: Recovery Errors: {mine[1]}\n"
                         f"\t Link {link}: CRC Errors: 0\n")
        return "".join(lines)

    paste = tmp_path / "reboot.txt"
    paste.write_text(reading("Mon Dec  7 02:00:00 UTC 2026", 120, 1, 40)
                     + reading("Mon Dec  7 02:10:00 UTC 2026", 120, 1, 40)
                     + reading("Mon Dec  7 02:20:00 UTC 2026", 2, 1, 0), encoding="utf-8")
    code, out, _ = cli("analyze", str(paste), "--node", "h1")
    assert code == 0 and "fault=no" in out and "damaged or cut" not in out, out
