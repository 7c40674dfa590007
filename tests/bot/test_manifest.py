"""The Slack app manifest creates the app the code is: every scope, event and command the code uses, no more."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path
from typing import Any

from slack_sdk import WebClient

from bot import listeners
from bot.transport.slack_faults import METHOD_SCOPES

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = {"socket": ROOT / "slack" / "manifest.json", "http": ROOT / "slack" / "manifest-http.json"}
# The bot's own code; the mock Slack and its injector stand in for Slack and are not the app.
APP_CODE = [p for p in (ROOT / "bot").rglob("*.py")
            if p.parent.name != "transport" or p.name in ("http.py", "socket_mode.py", "local.py")]
# A message event is subscribed per kind of conversation; each needs its history scope.
MESSAGE_EVENTS = {"message.channels": "channels:history", "message.groups": "groups:history"}
EVENT_SCOPES = {"app_mention": "app_mentions:read"}


def _manifest(kind: str) -> dict[str, Any]:
    return json.loads(MANIFESTS[kind].read_text())


def _api_methods(name: str, seen: set[str] | None = None) -> set[str]:
    """The Web API methods one slack_sdk WebClient call makes (files_upload_v2 makes two)."""
    seen = seen if seen is not None else set()
    if name in seen:
        return set()
    seen.add(name)
    source = inspect.getsource(getattr(WebClient, name))
    found = set(re.findall(r'api_call\(\s*"([a-zA-Z.]+)"', source))
    for inner in re.findall(r"self\.(\w+)\(", source):
        if inner != "api_call" and callable(getattr(WebClient, inner, None)) and not inner.startswith("_"):
            found |= _api_methods(inner, seen)
    return found


def _client_calls() -> set[str]:
    """Every `client.<method>(...)` (or `self.client...`) the app's code makes."""
    calls = set()
    for path in APP_CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                if name == "client" and hasattr(WebClient, node.func.attr):
                    calls.add(node.func.attr)
    return calls


def _code_text() -> str:
    return "\n".join(p.read_text() for p in APP_CODE)


def needed_scopes() -> set[str]:
    """The bot scopes the code needs: its Web API calls, file downloads, events and commands."""
    calls = _client_calls()
    assert {"chat_postMessage", "chat_update", "files_upload_v2"} <= calls, calls  # the scan sees the code
    methods = set().union(*(_api_methods(c) for c in calls))
    unknown = methods - METHOD_SCOPES.keys()
    assert not unknown, f"name the scope of {unknown} in slack_faults.METHOD_SCOPES (and the manifest)"
    scopes = {s for m in methods if (s := METHOD_SCOPES[m]) is not None}
    if "url_private" in _code_text():  # a shared file downloaded with the bot token
        scopes.add("files:read")
    for event in listeners.EVENTS:
        scopes |= set(MESSAGE_EVENTS.values()) if event == "message" else {EVENT_SCOPES[event]}
    if listeners.COMMANDS:
        scopes.add("commands")
    return scopes


def test_the_manifest_names_every_scope_the_code_needs_and_no_other() -> None:
    needed = needed_scopes()
    assert {"chat:write", "files:write", "files:read", "usergroups:read", "app_mentions:read",
            "channels:history", "groups:history", "commands"} == needed
    for kind in MANIFESTS:
        assert set(_manifest(kind)["oauth_config"]["scopes"]["bot"]) == needed, kind


def test_the_manifest_subscribes_to_every_event_and_command_the_listeners_answer() -> None:
    registered = set(re.findall(r'app\.event\("(\w+)"\)', "\n".join(
        p.read_text() for p in (ROOT / "bot" / "listeners").glob("*.py"))))
    assert registered == set(listeners.EVENTS)  # EVENTS says what the listeners register
    wanted = {e for e in listeners.EVENTS if e != "message"} | (
        set(MESSAGE_EVENTS) if "message" in listeners.EVENTS else set())
    for kind in MANIFESTS:
        manifest = _manifest(kind)
        assert set(manifest["settings"]["event_subscriptions"]["bot_events"]) == wanted, kind
        assert [c["command"] for c in manifest["features"]["slash_commands"]] == list(listeners.COMMANDS)
        assert manifest["features"]["slash_commands"][0]["should_escape"] is False  # the text arrives as typed
        assert manifest["settings"]["interactivity"]["is_enabled"] is True  # the draft and filing buttons
        assert manifest["features"]["bot_user"]["display_name"] == "fabricbot"


def test_socket_mode_needs_no_url_and_http_names_the_one_the_app_serves() -> None:
    from bot.transport.http import EVENTS_PATH

    socket, http = _manifest("socket"), _manifest("http")
    assert socket["settings"]["socket_mode_enabled"] is True and http["settings"]["socket_mode_enabled"] is False
    assert "url" not in socket["features"]["slash_commands"][0]
    assert "request_url" not in socket["settings"]["event_subscriptions"]
    urls = {http["features"]["slash_commands"][0]["url"], http["settings"]["event_subscriptions"]["request_url"],
            http["settings"]["interactivity"]["request_url"]}
    (url,) = urls  # commands, events and interactions all arrive at one URL
    assert url.startswith("https://") and url.endswith(EVENTS_PATH)  # Slack calls https only

    def without_urls(m: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(m).replace(url, "")
        out: dict[str, Any] = json.loads(text)
        out["settings"].pop("socket_mode_enabled")
        out["features"]["slash_commands"][0].pop("url")
        for key in ("event_subscriptions", "interactivity"):
            out["settings"][key].pop("request_url")
        return out

    assert without_urls(http) == {**socket, "settings": {k: v for k, v in socket["settings"].items()
                                                         if k != "socket_mode_enabled"}}


def test_the_readme_install_section_names_each_scope_and_the_app_token_scope() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Install in your workspace", 1)[1].split("\n## ", 1)[0]
    for scope in (*needed_scopes(), "connections:write"):
        assert f"`{scope}`" in section, scope
    for words in ("slack/manifest.json", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "TLS",
                  "FABRICBOT_FILING_USERGROUPS", "/invite @fabricbot", "/fabric"):
        assert words in section, words
