"""`nvidia-imex-ctl -N -H`: each IMEX node's state and the domain's, as events of the hosts they name, in the layout
NVIDIA's IMEX guide gives (nodes, connectivity matrix, `Domain State:`); a cut-off output says what it lacks."""

from __future__ import annotations

import pandas as pd

from diagnostics.enums import EventKind

from .helpers import read_text

OUTPUT = """\
user@rack-01-c01:~$ nvidia-imex-ctl -N -H
Connectivity Table Legend:
I - Invalid - Node wasn't reachable, no connection status available
N - Never Connected
C - Connected - Ready for operation

5/12/2025 06:08:10.580
Nodes:
Node #0   - 172.31.48.81 (rack-01-c01)    - READY                - Version: 570.172
Node #1   - 172.31.48.98 (rack-01-c02)    - UNAVAILABLE          - Version: 570.172
Node #2   - 172.31.48.221                 - READY                - Version: 570.172

 Nodes From\\To  0   1   2
       0        C   N   C
       1        N   N   N
       2        C   N   C

Domain State: DEGRADED
"""


def test_each_node_and_the_domain_are_events_of_the_hosts_named() -> None:
    result = read_text(OUTPUT)
    events = result.tables["events"]
    assert set(events["kind"].astype(str)) == {EventKind.IMEX_STATE.value}
    said = set(zip(events["node_id"].astype(str), events["text"].astype(str), strict=True))
    assert ("rack-01-c02", "IMEX node UNAVAILABLE (172.31.48.98), version 570.172") in said
    assert ("172.31.48.221", "IMEX node READY, version 570.172") in said  # no -H name: its IP names it
    domain = events[events["text"].astype(str).str.startswith("IMEX Domain State")]
    assert list(domain["node_id"].astype(str)) == ["rack-01-c01"]  # the tray the prompt names read it
    assert list(domain["text"]) == ["IMEX Domain State: DEGRADED"]
    assert (events["timestamp"] == pd.Timestamp("2025-05-12 06:08:10.580", tz="UTC")).all()
    assert any("read as UTC" in w.message for w in result.warnings)
    assert not any("not read" in w.message for w in result.warnings)


def test_a_cut_off_output_says_the_domain_state_is_not_known() -> None:
    result = read_text(OUTPUT.split(" Nodes From")[0])
    assert any("no `Domain State:` line" in w.message for w in result.warnings)
    assert len(result.tables["events"]) == 3
