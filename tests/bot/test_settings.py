"""Settings: offline defaults said once, secrets never shown, filing rights."""

from __future__ import annotations

import pytest

from bot.settings import Settings
from diagnostics.errors import ConfigError

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-secret-1", "SLACK_SIGNING_SECRET": "sign-secret-2",
           "SLACK_APP_TOKEN": "xapp-secret-3", "ANTHROPIC_API_KEY": "sk-ant-secret-4"}


def test_no_environment_selects_the_offline_defaults_and_says_so() -> None:
    settings = Settings.from_env({})
    assert settings.offline and settings.mode == "local"
    notes = "\n".join(settings.startup_notes())
    assert "SLACK_BOT_TOKEN not set" in notes and "ANTHROPIC_API_KEY not set" in notes
    assert "anyone may file" in notes


def test_modes_follow_the_tokens() -> None:
    assert Settings.from_env(SECRETS).mode == "socket"
    assert Settings.from_env({k: v for k, v in SECRETS.items() if k != "SLACK_APP_TOKEN"}).mode == "http"


def test_secrets_never_appear_in_repr_or_notes() -> None:
    settings = Settings.from_env({**SECRETS, "FABRICBOT_MODEL": "claude-x"})
    shown = repr(settings) + "\n".join(settings.startup_notes())
    for secret in SECRETS.values():
        assert secret not in shown
    assert "claude-x" in repr(settings)


def test_a_bad_rate_limit_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"FABRICBOT_DRAFTS_PER_MINUTE.*'many'"):
        Settings.from_env({"FABRICBOT_DRAFTS_PER_MINUTE": "many"})


def test_filing_rights() -> None:
    anyone = Settings()
    assert anyone.may_file_in("CRANDOM", frozenset())
    scoped = Settings.from_env({"FABRICBOT_FILING_CHANNELS": "COPS, CONCALL", "FABRICBOT_FILING_USERGROUPS": "SOPS"})
    assert scoped.filing_channels == {"COPS", "CONCALL"}
    assert scoped.may_file_in("COPS", frozenset())
    assert not scoped.may_file_in("CRANDOM", frozenset())
    assert scoped.may_file_in("CRANDOM", frozenset({"SOPS"}))


def test_the_fleet_source_is_named_without_the_prometheus_password() -> None:
    local = "\n".join(Settings.from_env({}).startup_notes())
    assert "FABRICBOT_PROMETHEUS_URL not set" in local and "local store" in local
    settings = Settings.from_env({"FABRICBOT_PROMETHEUS_URL": "https://ops:hunter2@prom.example:9090/api?x=1"})
    assert settings.prometheus_url == "https://ops:hunter2@prom.example:9090/api?x=1"
    shown = repr(settings) + "\n".join(settings.startup_notes())
    assert "sweeps Prometheus at https://prom.example:9090/api" in shown
    assert "hunter2" not in shown and "ops:" not in shown


def test_http_mode_says_it_wants_a_tls_proxy() -> None:
    http = "\n".join(Settings.from_env({k: v for k, v in SECRETS.items() if k != "SLACK_APP_TOKEN"}).startup_notes())
    assert "TLS-terminating proxy" in http and "https://" in http
    assert "TLS" not in "\n".join(Settings.from_env(SECRETS).startup_notes())  # Socket Mode needs no public URL


def test_the_work_queues_and_two_person_filing_are_settings() -> None:
    default = Settings.from_env({})
    assert (default.workers, default.draft_workers, default.queue_limit, default.two_person_filing) == (4, 8, 64, False)
    tuned = Settings.from_env({"FABRICBOT_WORKERS": "2", "FABRICBOT_DRAFT_WORKERS": "16", "FABRICBOT_QUEUE_LIMIT": "8",
                               "FABRICBOT_TWO_PERSON_FILING": "yes"})
    assert (tuned.workers, tuned.draft_workers, tuned.queue_limit, tuned.two_person_filing) == (2, 16, 8, True)
    assert "two-person filing" in "\n".join(tuned.startup_notes())
    with pytest.raises(ConfigError, match=r"FABRICBOT_QUEUE_LIMIT.*'0'"):
        Settings.from_env({"FABRICBOT_QUEUE_LIMIT": "0"})
    with pytest.raises(ConfigError, match=r"FABRICBOT_TWO_PERSON_FILING.*'maybe'"):
        Settings.from_env({"FABRICBOT_TWO_PERSON_FILING": "maybe"})
    with pytest.raises(ConfigError, match=r"FABRICBOT_PROCESSES.*'two'"):  # read per sweep: said at start, not then
        Settings.from_env({"FABRICBOT_PROCESSES": "two"})


def test_a_served_bot_answers_in_a_process_per_core_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.settings.process_count", lambda env=None: 8)  # an 8-core server: at most 4
    settings = Settings.from_env({})
    assert settings.analysis_processes == 4
    assert "node and job questions answered in 4 worker processes" in "\n".join(settings.startup_notes())
    monkeypatch.setattr("bot.settings.process_count", lambda env=None: 1)  # one core: the bot's own process
    assert Settings.from_env({}).analysis_processes == 1
    assert Settings.from_env({"FABRICBOT_ANALYSIS_PROCESSES": "3"}).analysis_processes == 3
    assert "worker processes" not in "\n".join(Settings.from_env({}).startup_notes())
    assert Settings().analysis_processes == 1  # built directly (tests, the demo): in this process
    with pytest.raises(ConfigError, match=r"FABRICBOT_ANALYSIS_PROCESSES.*'two'"):
        Settings.from_env({"FABRICBOT_ANALYSIS_PROCESSES": "two"})
