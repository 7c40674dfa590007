"""Series descriptions are shared between reads: a second read of a scrape must give what a first read gives."""

from __future__ import annotations

import pandas as pd

from diagnostics.ingest.base import Source
from diagnostics.ingest.dcgm import READER
from tests.ingest.dcgm_helpers import scrape

BAD = 'DCGM_EXP_XID_ERRORS_COUNT{gpu="0",Hostname="node-a",xid="x"} 1 1772323200000'


def _text(host: str = "node-a") -> str:
    return "\n".join([*scrape(gpus=2, links=2, ts_ms=1_772_323_200_000, host=host, value=4), BAD]) + "\n"


def test_second_read_equals_first_with_its_own_gpus_and_warnings() -> None:
    first = READER.read(Source.from_text(_text(), name="a.prom"))
    again = READER.read(Source.from_text(_text(), name="b.prom"))
    pd.testing.assert_frame_equal(first["link_samples"].drop(columns="source"),
                                  again["link_samples"].drop(columns="source"))
    assert set(again["link_samples"]["source"].astype(str).str.split(":").str[0]) == {"b.prom"}
    assert list(again["gpus"]["gpu"]) == [0, 1]
    assert set(again["gpus"]["source"].astype(str).str.split(":").str[0]) == {"b.prom"}
    assert [w.message for w in again.warnings] == [w.message for w in first.warnings]
    assert any("integer xid label" in w.message and w.file == "b.prom" for w in again.warnings)


def test_node_option_is_part_of_what_a_series_means() -> None:
    plain = READER.read(Source.from_text(_text()))
    named = READER.read(Source.from_text(_text()), node_id="rack7-n3")
    after = READER.read(Source.from_text(_text()))
    assert set(plain["link_samples"]["node_id"].astype(str)) == {"node-a"}
    assert set(named["link_samples"]["node_id"].astype(str)) == {"rack7-n3"}
    assert set(named["gpus"]["node_id"].astype(str)) == {"rack7-n3"}
    assert set(after["link_samples"]["node_id"].astype(str)) == {"node-a"}
