"""`fabricbot watch` over a store: the climbing link with its projected time, nothing for a steady fleet."""

from __future__ import annotations

import json
from pathlib import Path

from diagnostics.store import open_store
from tests.analysis.helpers import link_series, links, steady
from tests.analysis.test_trends import N, _climbing

from .conftest import Cli


def _store(tmp_path: Path) -> Path:
    frame = links(link_series(_climbing(0, 500), node="node-7", gpu=3, link=7, peer="NVSwitch 2"),
                  link_series(steady(20.0, N), node="node-8", gpu=0, link=0))
    csv = tmp_path / "links.csv"
    frame.to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    return store


def test_the_climbing_link_is_listed_with_its_projection(tmp_path: Path, cli: Cli) -> None:
    store = _store(tmp_path)
    code, out, _ = cli("watch", "--store", str(store))
    (line,) = out.splitlines()
    assert code == 0 and line.startswith("watch  node-7  GPU 3 NVLink 7 -> NVSwitch 2: replay")
    code, out, _ = cli("watch", "--store", str(store), "--json")
    (item,) = json.loads(out)
    assert item["rule"] == "nvlink_replay" and 60 < item["hours_left"] < 85 and item["component"].startswith("GPU 3")
    code, out, _ = cli("watch", "--store", str(store), "--node", "node-8")
    assert code == 0 and out.startswith("nothing climbing toward a failing threshold within 168 h")
    code, out, _ = cli("watch", "--store", str(store), "--horizon", "2d")
    assert "within 48 h" in out


def test_a_node_the_store_lacks_or_no_store_is_said(tmp_path: Path, cli: Cli) -> None:
    store = _store(tmp_path)
    code, _, err = cli("watch", "--store", str(store), "--node", "node-99")
    assert code == 2 and "node-99" in err and "--node" in err
    code, _, err = cli("watch")
    assert code == 2 and "--store" in err


def test_a_node_whose_part_cannot_be_read_makes_the_list_incomplete(tmp_path: Path, cli: Cli) -> None:
    """The climbing link of the node that can be read is still listed; the other node's damaged part is named and
    the exit code says the list is not the fleet's, as `sweep` does."""
    store = _store(tmp_path)
    part = next(store.glob("link_samples/node=node-8/*/*.parquet"))
    part.write_bytes(part.read_bytes()[:500])
    code, out, err = cli("watch", "--store", str(store))
    assert code == 3 and out.startswith("watch  node-7  GPU 3 NVLink 7")
    assert "watch list INCOMPLETE: node-8 not judged" in err and str(part) in err
    code, out, _ = cli("watch", "--store", str(store), "--node", "node-8", "--json")
    assert code == 3 and json.loads(out) == []
