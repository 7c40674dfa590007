"""Bot configuration from the environment: tokens, model, store, who may file tickets.

A missing value selects the offline default (local mock Slack, rules drafter, a store under ./.store) and
`Settings.startup_notes()` says so once. Secrets are kept out of `repr` so no log line can carry them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from diagnostics import ConfigError
from diagnostics import format as fmt
from diagnostics.prometheus import redacted_url
from diagnostics.service import process_count

from .options import parse_duration, time_of_day
from .storage import ENV_STORE

DEFAULT_STORE = ".store"
DEFAULT_DRAFTS_PER_MINUTE = 5
DEFAULT_WORKERS = 4  # analysis, pictures and posts: CPU-bound, a few threads are enough
DEFAULT_DRAFT_WORKERS = 8  # drafts wait on the model for seconds: more of them may wait at once
DEFAULT_QUEUE_LIMIT = 64  # jobs waiting per queue before a request is told to try again
ANALYSIS_PROCESSES_ENV = "FABRICBOT_ANALYSIS_PROCESSES"
DEFAULT_ALERT_EVERY_S = 300.0  # the watch loop's period: dcgm-exporter is scraped every 30-60 s, rules see 5 min


def default_analysis_processes() -> int:
    """A served bot's analysis processes: one per core, at most 4 (each holds a copy of an in-memory source)."""
    return min(process_count(env={}), 4)


def _csv(value: str | None) -> frozenset[str]:
    return frozenset(part.strip() for part in (value or "").split(",") if part.strip())


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, str(default))
    try:
        value = int(text)
        if value < 1:
            raise ValueError
    except ValueError:
        raise ConfigError(f"{name}: expected a positive whole number (got {text!r})") from None
    return value


def _period(env: Mapping[str, str], name: str, default_s: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default_s
    try:
        return parse_duration(text).total_seconds()
    except ValueError:
        raise ConfigError(f"{name}: expected a duration like 5m, 90s or 1h (got {text!r})") from None


def _time_of_day(env: Mapping[str, str], name: str) -> str | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        time_of_day(text)
    except ValueError:
        raise ConfigError(f"{name}: expected a time of day HH:MM, UTC, such as 08:00 (got {text!r})") from None
    return text


def _flag(env: Mapping[str, str], name: str) -> bool:
    text = env.get(name, "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}: expected true or false (got {text!r})")


@dataclass(frozen=True)
class Settings:
    """Everything the app needs from its environment; build with `from_env` or directly in tests."""

    bot_token: str | None = field(default=None, repr=False)
    signing_secret: str | None = field(default=None, repr=False)
    app_token: str | None = field(default=None, repr=False)
    anthropic_api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    store: Path = Path(DEFAULT_STORE)
    # Who may file tickets: empty sets mean "anyone"; when both are set, either grants the right.
    filing_channels: frozenset[str] = frozenset()
    filing_usergroups: frozenset[str] = frozenset()
    drafts_per_minute: int = DEFAULT_DRAFTS_PER_MINUTE
    # Work off the request thread: threads for analysis and posts, threads for drafts, and how many may wait.
    workers: int = DEFAULT_WORKERS
    draft_workers: int = DEFAULT_DRAFT_WORKERS
    queue_limit: int = DEFAULT_QUEUE_LIMIT
    # Node and job diagnoses made in this many worker processes (1: on the work threads, in the bot's own process).
    analysis_processes: int = 1
    two_person_filing: bool = False  # the approver of a draft must be someone other than who asked for it
    slack_api_url: str | None = None  # a Web API base URL other than Slack's (a Slack-compatible test server)
    # `/fabric fleet` sweeps this Prometheus-compatible server; None ranks the local store instead.
    prometheus_url: str | None = field(default=None, repr=False)  # may carry user:password
    # The daily digest: posted to `digest_channel` at `digest_at` (HH:MM, UTC); off unless both are set.
    digest_at: str | None = None
    digest_channel: str | None = None
    # The watch loop: every `alert_every_s` the fleet is swept and new failing parts are posted to `alert_channel`
    # (off without it); urgent ones mention `oncall_usergroup` (a Slack user group ID, S...).
    alert_channel: str | None = None
    alert_every_s: float = DEFAULT_ALERT_EVERY_S
    oncall_usergroup: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        process_count(env=env)  # a fleet's processes are read where a fleet is judged; a bad value is said at start
        return cls(
            bot_token=env.get("SLACK_BOT_TOKEN") or None,
            signing_secret=env.get("SLACK_SIGNING_SECRET") or None,
            app_token=env.get("SLACK_APP_TOKEN") or None,
            slack_api_url=env.get("FABRICBOT_SLACK_API_URL") or None,
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            model=env.get("FABRICBOT_MODEL") or None,
            store=Path(env.get(ENV_STORE) or DEFAULT_STORE),
            filing_channels=_csv(env.get("FABRICBOT_FILING_CHANNELS")),
            filing_usergroups=_csv(env.get("FABRICBOT_FILING_USERGROUPS")),
            drafts_per_minute=_count(env, "FABRICBOT_DRAFTS_PER_MINUTE", DEFAULT_DRAFTS_PER_MINUTE),
            workers=_count(env, "FABRICBOT_WORKERS", DEFAULT_WORKERS),
            draft_workers=_count(env, "FABRICBOT_DRAFT_WORKERS", DEFAULT_DRAFT_WORKERS),
            queue_limit=_count(env, "FABRICBOT_QUEUE_LIMIT", DEFAULT_QUEUE_LIMIT),
            analysis_processes=_count(env, ANALYSIS_PROCESSES_ENV, default_analysis_processes()),
            two_person_filing=_flag(env, "FABRICBOT_TWO_PERSON_FILING"),
            prometheus_url=env.get("FABRICBOT_PROMETHEUS_URL") or None,
            digest_at=_time_of_day(env, "FABRICBOT_DIGEST_AT"),
            digest_channel=env.get("FABRICBOT_DIGEST_CHANNEL") or None,
            alert_channel=env.get("FABRICBOT_ALERT_CHANNEL") or None,
            alert_every_s=_period(env, "FABRICBOT_ALERT_EVERY", DEFAULT_ALERT_EVERY_S),
            oncall_usergroup=env.get("FABRICBOT_ONCALL_USERGROUP") or None,
        )

    @property
    def offline(self) -> bool:
        """No Slack token: run against the local mock Slack server."""
        return self.bot_token is None

    @property
    def mode(self) -> str:
        if self.offline:
            return "local"
        return "socket" if self.app_token else "http"

    def startup_notes(self) -> list[str]:
        """One line per missing setting and the default it selects (never a secret's value)."""
        notes = []
        if self.bot_token is None:
            notes.append("SLACK_BOT_TOKEN not set: serving the local mock Slack server on loopback")
        elif self.app_token is None:
            notes.append("SLACK_APP_TOKEN not set: HTTP mode (Slack must reach this host's /slack/events)")
            notes.append("HTTP mode serves plain HTTP: Slack calls only https:// URLs, so put a TLS-terminating "
                         "proxy in front (or use Socket Mode: SLACK_APP_TOKEN, no public URL)")
        if self.slack_api_url and not self.offline:
            notes.append(f"FABRICBOT_SLACK_API_URL: Slack's Web API at {redacted_url(self.slack_api_url)}")
        if self.anthropic_api_key is None:
            notes.append("ANTHROPIC_API_KEY not set: tickets and answers come from the rules drafter")
        elif self.model is None:
            notes.append("FABRICBOT_MODEL not set: the drafter's default Claude model")
        if not self.filing_channels and not self.filing_usergroups:
            notes.append("FABRICBOT_FILING_CHANNELS / FABRICBOT_FILING_USERGROUPS not set: anyone may file tickets")
        if self.two_person_filing:
            notes.append("two-person filing: a draft is filed only by someone other than who asked for it")
        if self.prometheus_url is None:
            notes.append("FABRICBOT_PROMETHEUS_URL not set: `/fabric fleet` ranks the nodes in the local store")
        else:
            notes.append(f"fleet: `/fabric fleet` sweeps Prometheus at {redacted_url(self.prometheus_url)}")
        if self.digest_at and self.digest_channel:
            notes.append(f"daily digest: posted to {self.digest_channel} at {self.digest_at} UTC")
        elif self.digest_at or self.digest_channel:
            notes.append("the daily digest needs both FABRICBOT_DIGEST_AT and FABRICBOT_DIGEST_CHANNEL: off")
        if self.alert_channel:
            every = fmt.period(self.alert_every_s)
            notes.append(f"alerts: new failing parts posted to {self.alert_channel} every {every}" +
                         (f", urgent ones mention the group {self.oncall_usergroup}" if self.oncall_usergroup else ""))
        else:
            notes.append("FABRICBOT_ALERT_CHANNEL not set: no alert loop (the bot answers only when asked)")
        if self.analysis_processes > 1:
            notes.append(f"analysis: node and job questions answered in {self.analysis_processes} worker processes "
                         f"({ANALYSIS_PROCESSES_ENV}=1: in this process)")
        notes.append(f"store: {self.store}")
        return notes

    def may_file_in(self, channel: str | None, user_groups: frozenset[str]) -> bool:
        """Whether a user in these groups, in this channel, may file a ticket."""
        if not self.filing_channels and not self.filing_usergroups:
            return True
        return bool((channel and channel in self.filing_channels) or (user_groups & self.filing_usergroups))
