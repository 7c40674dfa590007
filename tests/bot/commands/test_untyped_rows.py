"""A link-samples CSV with one row of no link type (or a misspelt one) crashed `analyze FILE` and, once ingested
without a word, every answer of the store: the node's, `sweep`, `digest`, `ticket` and `/fabric fleet`. The row is now
not read, said with its line and value, and every door answers the rest alike."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from diagnostics.analysis import analyze_tables
from diagnostics.tables import LINK_SAMPLES
from tests.bot.commands.conftest import Cli


def _table(tmp_path: Path) -> Path:
    rows = ["timestamp,node_id,gpu,link_type,link,replay"]
    for i in range(13):  # every 5 minutes for an hour; link 1 replays 6,000 times an hour
        rows.append(f"2026-03-01T{i * 5 // 60:02d}:{i * 5 % 60:02d}:00Z,n3,0,nvlink,1,{i * 500}")
    rows += ["2026-03-01T01:01:00Z,n3,0,,1,7000", "2026-03-01T01:02:00Z,n3,0,nvlonk,1,7100"]
    path = tmp_path / "links.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_row_of_no_link_type_is_said_and_every_door_answers_the_rest(tmp_path: Path, cli: Cli) -> None:
    table = _table(tmp_path)
    code, out, err = cli("analyze", str(table), "--json", "--end", "2026-03-01T01:00:00Z")
    assert code == 0 and "Traceback" not in err, err
    by_file = json.loads(out)
    said = [w for w in by_file["warnings"] if "row not read" in w]
    assert said == [f"{table}:15: no link_type (one of nvlink, pcie, nvswitch); row not read",
                    f"{table}:16: link_type = 'nvlonk' is not a valid link_type (one of nvlink, pcie, nvswitch); "
                    "row not read"], by_file["warnings"]
    store = tmp_path / "store"
    code, _, err = cli("ingest", str(table), "--store", str(store))
    assert code == 0 and "15: no link_type" in err, err
    code, out, err = cli("analyze", "--store", str(store), "--node", "n3", "--json", "--end", "2026-03-01T01:00:00Z")
    assert code == 0, err
    by_store = json.loads(out)
    for got in (by_file, by_store):
        assert got["fault_detected"] and got["isolated_component"] == by_file["isolated_component"]
    code, out, err = cli("sweep", "--store", str(store), "--json", "--at", "2026-03-01T01:00:00Z")
    assert code == 1, err  # offenders found
    (offender,) = json.loads(out)["offenders"]
    (finding,) = [f for f in by_store["findings"] if f["severity"] != "ok"]
    assert (offender["node_id"], offender["component"]) == ("n3", by_file["isolated_component"])
    assert offender["rate_per_hour"] == finding["rates_per_hour"]["replay"] == 6000


def test_the_engine_passes_over_a_stored_row_of_no_link_type() -> None:
    """A store written before ingest refused such rows still holds them: the answer leaves them out, as ingest does."""
    rows = pd.DataFrame({"timestamp": pd.to_datetime(["2026-03-01T00:00Z", "2026-03-01T00:30Z", "2026-03-01T00:40Z"]),
                         "node_id": "n3", "gpu": 0, "link_type": ["nvlink", "nvlink", None], "link": 1,
                         "replay": [0, 3000, 3100]})
    diagnosis = analyze_tables({"link_samples": LINK_SAMPLES.conform(rows)}, node_id="n3")
    assert diagnosis.fault_detected and [f.link for f in diagnosis.findings if f.severity.value != "ok"] == [1]
