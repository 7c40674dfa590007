"""A site's asset inventory names each node's rack (`node_id,platform,rack`): on whole 8-GPU boards that is where
they stand, not a rack judged as one. Read as a rack, the node's questions failed ("rack 'row3-rack07' names no host
of a rack platform") through `analyze`, `ticket` and `/fabric`, while the sweep still listed it as urgent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.cli import main

NODE = "hpc-gpu-node-12"  # failing in the bundled fleet


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_rack_label_on_whole_boards_is_their_location_not_a_rack(
        bundled_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    shutil.copytree(bundled_store, store)
    before = json.loads(_run(capsys, "analyze", "--store", str(store), "--node", NODE, "--json")[1])
    inventory = tmp_path / "inventory.csv"
    inventory.write_text(f"node_id,platform,rack\n{NODE},{before['platform']},row3-rack07\n", encoding="utf-8")
    assert _run(capsys, "ingest", str(inventory), "--store", str(store))[0] == 0
    code, out, err = _run(capsys, "analyze", "--store", str(store), "--node", NODE, "--json")
    assert code in (0, 1) and "names no host of a rack platform" not in err, err
    after = json.loads(out)
    assert after["rack"] is None and after["isolated_component"] == before["isolated_component"]
    assert after["ticket_priority"] == before["ticket_priority"]
    code, out, err = _run(capsys, "ticket", "--store", str(store), NODE, "--json", "--rules")
    assert code == 0 and json.loads(out)["component"] == before["isolated_component"], err
