"""Against a real Prometheus, what users get wrong: series whose node label is not the one configured (dcgm-exporter
deployments write `hostname`, or none but Prometheus's `instance`) are refused with the label to set, never swept as
one node named `unknown` (every node's links merged into it); a URL whose path is not the server's API (a route
prefix missing or added) is said once, naming it, not once per rule."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from bot.cli import main
from tests.prometheus.helpers import (
    Fleet,
    Server,
    backfill,
    generate_fleet,
    openmetrics_lines,
    promtool_missing,
    start_server,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(180)]
_REASON = promtool_missing()
if _REASON:
    pytestmark.append(pytest.mark.skip(reason=_REASON))


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return generate_fleet(nodes=2, hours=2.0)


@pytest.fixture(scope="module")
def server(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The fleet with its node label written `hostname`, as some exporter deployments label it."""
    folder = tmp_path_factory.mktemp("hostname")
    om = folder / "fleet.om"
    om.write_text("\n".join(re.sub(r"\bHostname=", "hostname=", line) for line in openmetrics_lines(fleet)) + "\n",
                  encoding="utf-8")
    backfill(om, folder / "data")
    served = start_server(folder / "data")
    yield served
    served.stop()


def test_a_node_label_other_than_the_configured_one_is_named_not_swept_as_unknown(
        fleet: Fleet, server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--prometheus", server.url, "--at", fleet.end.isoformat(), "--no-analyze"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "unknown" not in out
    assert "'hostname'" in err and "labels.node" in err


def test_the_label_configured_sweeps_each_node(fleet: Fleet, server: Server, tmp_path_factory: pytest.TempPathFactory,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path_factory.mktemp("config") / "prometheus.toml"
    config.write_text('[labels]\nnode = "hostname"\n', encoding="utf-8")
    code = main(["sweep", "--prometheus", server.url, "--config", str(config), "--at", fleet.end.isoformat(),
                 "--no-analyze"])
    out = capsys.readouterr().out
    assert code == 1
    assert "node-001" in out and "unknown" not in out


def test_a_url_with_a_wrong_path_is_said_once_naming_it(fleet: Fleet, server: Server,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{server.url}/prometheus"
    code = main(["sweep", "--prometheus", url, "--at", fleet.end.isoformat(), "--no-analyze", "--json"])
    said = json.loads(capsys.readouterr().out)
    assert code == 3
    assert said["requests"] == 1
    assert url in said["incomplete_reasons"][0] and "path" in said["incomplete_reasons"][0]


def test_a_node_asked_by_a_label_the_series_lack_is_told_the_label(fleet: Fleet, server: Server,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--prometheus", server.url, "--node", "node-001", "--at", fleet.end.isoformat()])
    err = capsys.readouterr().err
    assert code == 2
    assert "'hostname'" in err and "labels.node" in err
