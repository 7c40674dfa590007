"""`fabricbot console`: serves on loopback and says where; a taken port is a clear error, not a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from bot.cli import main
from bot.commands import console as console_cmd

from ..helpers import SEEDS


def test_console_serves_the_page_on_loopback_and_prints_its_url(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def wait_and_fetch(seconds: float | None) -> None:
        said = capsys.readouterr()
        url = said.out.split()[2]  # "fabricbot console: URL ..."
        seen["url"], seen["err"] = url, said.err
        seen["page"] = httpx.get(url, timeout=10).text
        seen["info"] = httpx.get(url + "api/info", timeout=10).json()

    monkeypatch.setattr(console_cmd, "serve_until", wait_and_fetch)
    assert main(["console", "--port", "0", "--user", "dana", "--snapshots", str(SEEDS)]) == 0
    assert str(seen["url"]).startswith("http://127.0.0.1:")
    assert "console.js" in str(seen["page"])
    info = seen["info"]
    assert isinstance(info, dict)
    assert info["name"] == "dana" and info["nodes"] == ["hpc-gpu-node-03", "hpc-gpu-node-12"]
    # a ticket filed here is not the store's unless --db says where: said at start, not found missing later
    assert "temporary folder, removed on exit: give --db DIR" in str(seen["err"])
    assert "fabricbot: nodes: hpc-gpu-node-03, hpc-gpu-node-12\n" in str(seen["err"])


def test_the_nodes_named_at_start_count_those_left_out(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(console_cmd, "NODES_SHOWN", 1)
    monkeypatch.setattr(console_cmd, "serve_until", lambda seconds: seen.append(capsys.readouterr().err))
    assert main(["console", "--port", "0", "--snapshots", str(SEEDS)]) == 0
    assert "fabricbot: nodes: hpc-gpu-node-03 and 1 more\n" in seen[0]


def test_a_taken_port_is_reported_with_the_way_out(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["console", "--port", str(port), "--seconds", "0", "--snapshots", str(SEEDS)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port 0" in err


def test_a_console_over_a_store_says_its_planned_work_is_the_stores(bundled_store: Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A try-out console over the real store set planned work the bot and the sweep read (it holds the node's pages
    for up to 30 days) while its tickets went to a temporary folder: said at start. Snapshots have no store."""
    seen: list[str] = []
    monkeypatch.setattr(console_cmd, "serve_until", lambda seconds: seen.append(capsys.readouterr().err))
    assert main(["console", "--port", "0", "--store", str(bundled_store)]) == 0
    assert (f"planned work set here (/fabric maintenance) is kept in the store, {bundled_store}, where the bot, "
            "`fabricbot sweep` and the alert loop read it") in seen[0]
    assert main(["console", "--port", "0", "--snapshots", str(SEEDS)]) == 0
    assert "planned work set here" not in seen[1]
