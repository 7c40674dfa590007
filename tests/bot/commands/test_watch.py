"""`fabricbot watch` over a store: the climbing link with its projected time, nothing for a steady fleet."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from bot.nodes import StoreNodeSource
from diagnostics.store import open_store
from tests.analysis.helpers import T0, link_series, links, steady
from tests.analysis.test_trends import N, _climbing
from tests.bot.helpers import local_bot, slash

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


def test_no_readings_or_too_few_for_a_trend_is_not_an_all_clear(tmp_path: Path, cli: Cli) -> None:
    """An empty store, or one scrape per link (totals, no rates), cannot show a climb: the list says it cannot judge
    yet and exits 3, as `sweep` calls the same store's view incomplete."""
    empty = tmp_path / "empty"
    open_store(empty).db.close()
    code, out, err = cli("watch", "--store", str(empty))
    assert code == 3 and "nothing climbing" not in out and "cannot judge yet" in out
    assert "INCOMPLETE: the store holds no readings" in err
    csv = tmp_path / "one.csv"
    links(link_series(steady(20.0, 1), node="node-1", gpu=0, link=0),
          link_series(steady(20.0, 1), node="node-2", gpu=0, link=0)).to_csv(csv, index=False)
    one = tmp_path / "one"
    assert open_store(one).ingest([csv], fmt="tables").files[0].status == "ingested"
    assert cli("sweep", "--store", str(one))[0] == 3
    code, out, err = cli("watch", "--store", str(one))
    assert code == 3 and "nothing climbing" not in out and "cannot judge yet" in out
    assert "node-1, node-2 not judged: too few readings for a trend" in err  # one reason, one line
    code, out, _ = cli("watch", "--store", str(one), "--json")
    assert code == 3 and json.loads(out) == []


def test_a_node_with_too_short_a_history_is_named_beside_the_judged_ones(tmp_path: Path, cli: Cli) -> None:
    store = _store(tmp_path)
    csv = tmp_path / "new.csv"
    links(link_series(steady(20.0, 12 * 12 + 1), node="node-9", gpu=0, link=0,
                      start=T0 + pd.Timedelta(hours=60))).to_csv(csv, index=False)
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    code, out, err = cli("watch", "--store", str(store), "--node", "node-8", "--node", "node-9")
    assert code == 3 and out.startswith("nothing climbing") and "among the 1 node judged" in out
    assert "node-9 not judged: too few readings" in err and "node-8" not in err


def test_slack_says_what_the_cli_says_of_a_history_too_short_to_judge(tmp_path: Path, cli: Cli) -> None:
    """One scrape per link cannot show a climb: `/fabric watch` and `/fabric digest` say the list cannot judge yet
    and name the nodes not judged with why, in the CLI's words (one line for nodes left out for one reason), where
    they showed an empty list; beside a climbing link, `/fabric watch` names the node too new to judge as the CLI
    does."""
    csv = tmp_path / "one.csv"
    links(link_series(steady(20.0, 1), node="node-1", gpu=0, link=0),
          link_series(steady(20.0, 1), node="node-2", gpu=0, link=0)).to_csv(csv, index=False)
    one = tmp_path / "one"
    assert open_store(one).ingest([csv], fmt="tables").files[0].status == "ingested"
    code, out, err = cli("watch", "--store", str(one))
    quiet = out.strip()
    (together,) = [line.removeprefix("fabricbot: watch list INCOMPLETE: ") for line in err.splitlines()]
    assert code == 3 and quiet.startswith("cannot judge yet") and together.startswith("node-1, node-2 not judged")
    code, out, _ = cli("digest", "--store", str(one))
    assert code == 3 and f"Watch: {quiet}\n  {together}\n" in out and "Nothing new" not in out
    with local_bot(source=StoreNodeSource(one)) as local:
        watched, digest = slash(local, "watch"), slash(local, "digest")
    assert watched == f":eyes: *Watch of the fleet*: {quiet}\n:warning: *Incomplete*\n• {together}"
    assert f"Watch: {quiet}\n  {together}\n" in digest and "Nothing new" not in digest

    store = _store(tmp_path)  # node-8 steady for days, node-9 half a day old
    csv = tmp_path / "new.csv"
    links(link_series(steady(20.0, 12 * 12 + 1), node="node-9", gpu=0, link=0,
                      start=T0 + pd.Timedelta(hours=60))).to_csv(csv, index=False)
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    code, out, err = cli("watch", "--store", str(store))
    (missed_9,) = [line.removeprefix("fabricbot: watch list INCOMPLETE: ") for line in err.splitlines()]
    assert code == 3 and out.startswith("watch  node-7") and missed_9.startswith("node-9 not judged: too few")
    code, alone, _ = cli("watch", "--store", str(store), "--node", "node-9")
    with local_bot(source=StoreNodeSource(store)) as local:
        fleet, node = slash(local, "watch"), slash(local, "watch node-9")
    assert fleet.startswith(":eyes: *Watch: 1 link of the fleet climbing") and "`node-7` GPU 3 NVLink 7" in fleet
    assert fleet.endswith(f":warning: *Incomplete*\n• {missed_9}")
    assert code == 3 and node == f":eyes: *Watch of `node-9`*: {alone.strip()}\n:warning: *Incomplete*\n• {missed_9}"


def test_the_digests_json_names_every_node_the_watch_list_could_not_judge(tmp_path: Path, cli: Cli) -> None:
    """Its text line names five and counts the rest; a machine reading the JSON gets every node and why."""
    csv = tmp_path / "new.csv"
    links(*[link_series(steady(20.0, 13), node=f"node-{i}", gpu=0, link=0) for i in range(9)]).to_csv(csv,
                                                                                                     index=False)
    store = tmp_path / "s"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    code, out, err = cli("digest", "--store", str(store), "--json")
    got = json.loads(out)
    assert code == 3 and "INCOMPLETE" in err
    assert "and 4 more not judged" in got["not_watched"][0]
    assert sorted(got["not_watched_nodes"]) == [f"node-{i}" for i in range(9)]
    assert all(why.startswith("too few readings for a trend") for why in got["not_watched_nodes"].values())


def test_a_node_already_over_a_threshold_is_said_failing_not_quiet(tmp_path: Path, cli: Cli) -> None:
    """A link at 6,000 replays an hour for three days is no climb to watch, but "nothing climbing" alone read as
    calm: the answer says the node is already over a failing threshold."""
    csv = tmp_path / "over.csv"
    links(link_series(steady(6000.0, N), node="node-5", gpu=1, link=2),
          link_series(steady(20.0, N), node="node-6", gpu=0, link=0)).to_csv(csv, index=False)
    store = tmp_path / "store"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    code, out, _ = cli("watch", "--store", str(store), "--node", "node-5")
    assert code == 0 and out.startswith("nothing climbing toward a failing threshold within 168 h"), out
    assert "already over a failing threshold, not climbing: node-5" in out, out
    code, out, _ = cli("watch", "--store", str(store), "--node", "node-6")
    assert "already over" not in out, out


def test_nodes_left_out_for_one_reason_are_one_line_however_many(tmp_path: Path, cli: Cli) -> None:
    """A fleet too new for a trend printed a line per node (64 lines for a 64-node store); the sweep and the digest
    name a few and count the rest."""
    csv = tmp_path / "new.csv"
    links(*[link_series(steady(20.0, 13), node=f"node-{i:02d}", gpu=0, link=0) for i in range(12)]).to_csv(
        csv, index=False)
    store = tmp_path / "s"
    assert open_store(store).ingest([csv], fmt="tables").files[0].status == "ingested"
    code, _, err = cli("watch", "--store", str(store))
    assert code == 3 and err.splitlines() == [
        "fabricbot: watch list INCOMPLETE: node-00, node-01, node-02, node-03, node-04 and 7 more not judged: too few "
        + err.split("not judged: too few ", 1)[1].strip()]
