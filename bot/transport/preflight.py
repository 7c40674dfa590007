"""Before `fabricbot serve` starts anything: the settings each mode needs, and Slack's word on each token.

A failure is one line naming the variable, what Slack answered (its error code) or why it could not be asked, and
what to do; `fabricbot` prints it and exits 2, with no traceback. Unchecked, a bad bot token would surface only as
Bolt's refusal of the first request, a bad app token as slack_sdk's Socket Mode client raising out of `connect`, and
no network as urllib's traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from diagnostics import ConfigError

from ..replies import SLACK_FAILURES, error_code
from ..settings import Settings

CHECK_TIMEOUT_S = 10.0
BOT_TOKEN_HELP = "use the app's Bot User OAuth Token (xoxb-...) from OAuth & Permissions"
APP_TOKEN_HELP = ("use an app-level token (xapp-...) with the connections:write scope, from Basic Information -> "
                  "App-Level Tokens")


def _asked(variable: str, help_: str, url: str, call: Callable[[], Any]) -> None:
    """Run `call`; a refusal or an unreachable Slack becomes one `ConfigError` line about `variable`."""
    try:
        call()
    except SlackApiError as exc:
        raise ConfigError(f"{variable} was refused by Slack ({error_code(exc)}): {help_}") from None
    except SLACK_FAILURES as exc:
        why = str(getattr(exc, "reason", "") or exc).strip()[:120]
        raise ConfigError(f"{variable} could not be checked: Slack's Web API at {url} did not answer "
                          f"({error_code(exc)}: {why}); check this host's network and proxy") from None


def check_slack(settings: Settings) -> None:
    """Raise `ConfigError` (one line) unless the mode's settings are there and Slack accepts the tokens."""
    if settings.offline:
        return
    if settings.app_token is None and settings.signing_secret is None:
        raise ConfigError("SLACK_SIGNING_SECRET is not set: HTTP mode checks every request's signature with it "
                          "(Basic Information -> App Credentials -> Signing Secret); or set SLACK_APP_TOKEN for "
                          "Socket Mode")
    url = settings.slack_api_url or WebClient.BASE_URL
    client = WebClient(base_url=url, timeout=int(CHECK_TIMEOUT_S))
    _asked("SLACK_BOT_TOKEN", BOT_TOKEN_HELP, url, lambda: client.auth_test(token=settings.bot_token))
    if settings.app_token is not None:
        # The URL it issues goes unused: Socket Mode asks for its own when it connects (an unused one is assumed to
        # expire harmlessly; Slack documents the URL as temporary).
        _asked("SLACK_APP_TOKEN", APP_TOKEN_HELP, url,
               lambda: client.apps_connections_open(app_token=str(settings.app_token)))
