"""`fabricbot serve` against Slack as it answers a real start: a setting missing, Slack unreachable, a token Slack
refuses. Each says one line naming the variable and Slack's error code, and exits 2 with no traceback; a start that
succeeds logs no warning from Bolt."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import bot.commands.serve as serve
import bot.transport.socket_mode as socket_mode
from bot.cli import main
from bot.transport.loopback import LoopbackServer
from bot.transport.mock_slack import APP_TOKEN, BOT_TOKEN, MockSlack

from .helpers import ROOT

pytestmark = pytest.mark.slack_realism

SLACK_VARIABLES = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "FABRICBOT_SLACK_API_URL",
                   "ANTHROPIC_API_KEY", "FABRICBOT_ALERT_CHANNEL", "FABRICBOT_DIGEST_AT", "FABRICBOT_DIGEST_CHANNEL")


@pytest.fixture(scope="module")
def slack() -> Iterator[MockSlack]:
    mock = MockSlack()
    with LoopbackServer(mock.app) as server:
        mock.base_url = server.url
        yield mock


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on leaving: nothing listens there


def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **values: str) -> None:
    for name in SLACK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FABRICBOT_STORE", str(tmp_path))
    for name, value in values.items():
        monkeypatch.setenv(name, value)


CASES = {
    "no network": ({"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": "s"},
                   "fabricbot: SLACK_BOT_TOKEN could not be checked: Slack's Web API at http://127.0.0.1:{port}/api/ "
                   "did not answer (network_error: [Errno 111] Connection refused); check this host's network and "
                   "proxy"),
    "bad bot token": ({"SLACK_BOT_TOKEN": "xoxb-wrong", "SLACK_SIGNING_SECRET": "s"},
                      "fabricbot: SLACK_BOT_TOKEN was refused by Slack (invalid_auth): use the app's Bot User OAuth "
                      "Token (xoxb-...) from OAuth & Permissions"),
    "bad app token": ({"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": "xapp-wrong"},
                      "fabricbot: SLACK_APP_TOKEN was refused by Slack (invalid_auth): use an app-level token "
                      "(xapp-...) with the connections:write scope, from Basic Information -> App-Level Tokens"),
    "bot token as app token": ({"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": BOT_TOKEN},
                               "fabricbot: SLACK_APP_TOKEN was refused by Slack (not_allowed_token_type): use an "
                               "app-level token (xapp-...)"),
    "no signing secret": ({"SLACK_BOT_TOKEN": BOT_TOKEN},
                          "fabricbot: SLACK_SIGNING_SECRET is not set: HTTP mode checks every request's signature "
                          "with it"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_start_that_cannot_work_says_one_line_naming_the_variable_and_exits_2(
        case: str, slack: MockSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    values, expected = CASES[case]
    port = _closed_port()
    url = f"http://127.0.0.1:{port}/api/" if case == "no network" else slack.api_url
    _env(monkeypatch, tmp_path, FABRICBOT_SLACK_API_URL=url, **values)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(expected.format(port=port)), err
    # nothing logged beside it: slack_sdk's own ERROR lines about the failed request reach no output unless the app
    # configures its loggers (it gives them a NullHandler; pytest hears them all the same, so the test below runs
    # a real process)
    assert [r.name for r in caplog.records if not r.name.startswith("slack_sdk.")] == []


@pytest.mark.parametrize("case", ["bad bot token", "no network"])
def test_the_process_ends_with_that_one_line_and_no_traceback(case: str, slack: MockSlack, tmp_path: Path) -> None:
    values, expected = CASES[case]
    port = _closed_port()
    env = {k: v for k, v in os.environ.items() if k not in SLACK_VARIABLES}
    env.update(values, FABRICBOT_STORE=str(tmp_path),
               FABRICBOT_SLACK_API_URL=f"http://127.0.0.1:{port}/api/" if case == "no network" else slack.api_url)
    done = subprocess.run([sys.executable, "-m", "bot.cli", "serve"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [expected.format(port=port)]


@pytest.mark.parametrize("mode", ["http", "socket"])
def test_a_start_slack_accepts_logs_no_warning(mode: str, slack: MockSlack, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               caplog: pytest.LogCaptureFixture) -> None:
    tokens = {"SLACK_APP_TOKEN": APP_TOKEN} if mode == "socket" else {"SLACK_SIGNING_SECRET": "s"}
    _env(monkeypatch, tmp_path, SLACK_BOT_TOKEN=BOT_TOKEN, FABRICBOT_SLACK_API_URL=slack.api_url, **tokens)
    served: list[Any] = []
    monkeypatch.setattr(serve.uvicorn, "run", lambda app, **kw: served.append(app))  # the server, not run
    monkeypatch.setattr(socket_mode, "run", lambda app, token: served.append(app))  # the WebSocket, not opened
    with caplog.at_level(logging.INFO):
        assert main(["serve", "--port", "0"]) == 0
    assert len(served) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text  # Bolt's "`token` unused"
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("variable", "value", "said"), [
    ("FABRICBOT_DIGEST_AT", "25:00", "FABRICBOT_DIGEST_AT: expected a time of day HH:MM"),
    ("FABRICBOT_ALERTS", "/nonexist.toml", "FABRICBOT_ALERTS: /nonexist.toml: alert policy not found"),
    ("FABRICBOT_WATCH", "/nonexist.toml", "FABRICBOT_WATCH: /nonexist.toml: watch policy not found"),
    ("FABRICBOT_VERIFICATION", "/nonexist.toml",
     "FABRICBOT_VERIFICATION: /nonexist.toml: verification policy not found"),
])
def test_a_setting_that_cannot_be_used_is_said_before_anything_starts(
        variable: str, value: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Not after the start-up notes and a server, nor at the first filing or `/fabric watch`: one line, exit 2."""
    _env(monkeypatch, tmp_path, FABRICBOT_DIGEST_CHANNEL="COPS", FABRICBOT_ALERT_CHANNEL="CALERTS",
         **{variable: value})
    started = []
    monkeypatch.setattr(serve, "build_runtime", lambda *a, **k: started.append(1))  # nothing may get this far
    assert main(["serve", "--port", "0", "--seconds", "0"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fabricbot: {said}") and value in lines[0]
    err = lines[0]
    assert not started and "posted to" not in err and "Traceback" not in err
