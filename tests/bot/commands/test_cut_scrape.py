"""A dcgm-exporter scrape cut in half lists its metric families one after another, so the cut drops whole
counters (every link's replays) and the GPUs after it: `analyze` answered "no fault, low" (exit 0) and `sweep` "all
links within thresholds", hiding the replays the whole scrape fails on. A node whose newest input is cut off inside
its text is now no all-clear: every door says its health is unknown (exit 3), until a whole input comes."""

from __future__ import annotations

import json
from pathlib import Path

from bot.nodes import StoreNodeSource
from tests.bot.commands.conftest import Cli
from tests.bot.helpers import local_bot, summary_for
from tests.bot.test_store_source import text_of
from tests.ingest.dcgm_helpers import scrape

T0 = 1_764_000_000_000  # ms
FAILING = 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3{gpu="7"'


def _scrapes(tmp_path: Path) -> tuple[Path, Path]:
    """One file of two scrapes ten minutes apart, family by family as an exporter's history is dumped (each
    sample's two readings together); and that file cut inside a line before its first replay counter."""
    lines = []
    for before, after in zip(scrape(ts_ms=T0), scrape(ts_ms=T0 + 600_000), strict=True):
        lines.append(before)
        if not before.startswith("#"):
            lines.append(after.replace(" 0 ", " 5000 ") if after.startswith(FAILING) else after)
    text = "\n".join(lines) + "\n"
    whole = tmp_path / "scrapes.prom"
    whole.write_text(text, encoding="utf-8")
    cut = tmp_path / "scrapes-cut.prom"
    cut.write_text(text[:text.index("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0{") + 40], encoding="utf-8")
    return whole, cut


def test_a_cut_scrape_is_no_all_clear_through_any_door(tmp_path: Path, cli: Cli) -> None:
    whole, cut = _scrapes(tmp_path)
    code, out, _ = cli("analyze", str(whole), "--json")
    assert json.loads(out)["fault_detected"], "the whole scrape fails on GPU 7's replays"
    code, out, err = cli("analyze", str(cut), "--json")
    got = json.loads(out)
    assert code == 3 and not got["fault_detected"] and got["cut_off"], err
    assert "its newest input cut off before its end, so what followed the cut is not read" in err, err
    store = tmp_path / "store"
    assert cli("ingest", str(cut), "--store", str(store))[0] == 0
    code, out, err = cli("analyze", "--store", str(store), "--node", "node-a", "--json")
    assert code == 3 and json.loads(out)["cut_off"] and not json.loads(out)["fault_detected"], err
    code, out, err = cli("sweep", "--store", str(store))
    assert code == 3 and "the newest input of 1 node was cut off before its end" in err, err
    with local_bot(source=StoreNodeSource(store)) as local:
        said = text_of(summary_for(local, "node-a"))
        assert "node-a: fabric health unknown" in said, said
        assert "unknown (its newest input cut off before its end: the rest unread)" in said, said
    # the whole scrape, read after: its replays fail, and the cut is no longer said
    assert cli("ingest", str(whole), "--store", str(store))[0] == 0
    code, out, err = cli("analyze", "--store", str(store), "--node", "node-a", "--json")
    got = json.loads(out)
    assert got["fault_detected"] and not got["cut_off"], err
