"""One picture: the bot draws a node on the graph the service judged it on (its own topology rows over its
platform's template, as the engine's notes say), as `fabricbot render` does, not on the bare template."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.cli import main
from bot.drafting import render_png
from bot.nodes import StoreNodeSource
from diagnostics.render import drawable_of
from diagnostics.render.colours import HEALTHY, NOT_REPORTING
from diagnostics.service import Request, StoreSource, diagnose
from tests.bot.helpers import LONG_WAIT, local_bot, summary_for
from tests.conftest import FIXTURES
from tests.shared import copy_store

NODE = "hpc-gpu-node-12"


def test_the_bot_draws_the_node_on_the_graph_render_draws_it_on(bundled_store: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store = copy_store(bundled_store, tmp_path / "store")
    # its own `nvidia-smi topo -m`, which does not fit the platform its inventory names: said, and drawn so
    assert main(["ingest", str(FIXTURES / "real" / "topo_m_hgx_h100_1.txt"), "--node", NODE,
                 "--store", str(store)]) == 0
    assert main(["render", NODE, "--store", str(store), "-o", str(tmp_path / "cli.png"), "--no-correlation"]) == 0
    capsys.readouterr()
    drawn = (tmp_path / "cli.png").read_bytes()
    answer = diagnose(StoreSource(store), Request(node=NODE))
    assert any("NVLinks where h100-nvl-8gpu has" in w for w in answer.diagnosis.warnings)  # said in the answer
    assert drawn != drawable_of(answer.diagnosis, None).picture("png")[0]  # not the bare template
    with local_bot(source=StoreNodeSource(store), renderer=render_png) as local:
        summary = summary_for(local, NODE)
        assert local.slack.wait_for(lambda s: any(f.thread_ts == summary.ts and f.content and f.name == f"{NODE}.png"
                                                  for f in s.files.values()), timeout=LONG_WAIT)
        posted = next(f for f in local.slack.files.values() if f.thread_ts == summary.ts and f.name == f"{NODE}.png")
    assert posted.content == drawn


def test_render_draws_a_gpu_the_engine_judged_off_the_bus_as_not_reporting(bundled_store: Path, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """hpc-gpu-node-23 lost GPU 2 to an Xid 79: the picture marks it and draws none of its links healthy."""
    node = "hpc-gpu-node-23"
    answer = diagnose(StoreSource(bundled_store), Request(node=node))
    assert [loc.component for loc in answer.diagnosis.localizations] == ["GPU 2"]
    assert main(["render", node, "--store", str(bundled_store), "-o", str(tmp_path / "n.svg"),
                 "--no-correlation"]) == 0
    capsys.readouterr()
    svg = (tmp_path / "n.svg").read_text(encoding="utf-8")
    strokes = dict(re.findall(r'<g id="(bundle-[^"]+)">\s*<path [^>]*?stroke: (#[0-9a-f]{6})', svg))
    gpu2 = {k: c for k, c in strokes.items() if k.startswith("bundle-gpu2-")}
    assert len(gpu2) == 5 and set(gpu2.values()) == {NOT_REPORTING}
    assert {c for k, c in strokes.items() if k.startswith("bundle-gpu1-") and "pcie" not in k} == {HEALTHY}
    assert 'id="mark-node-gpu2"' in svg and "off the bus (Xid 79): not reporting" in svg
