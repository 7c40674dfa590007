"""Prometheus connection settings: the label map and limits from `data/prometheus.toml`, secrets from the environment.

Secrets are `SecretStr`: they never appear in a repr, a log line or an error message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from ..config.datafiles import DATA_DIR, read_toml
from ..errors import ConfigError

DEFAULT_FILE = DATA_DIR / "prometheus.toml"
ENV_FILE = "FABRICBOT_PROMETHEUS_CONFIG"
ENV_URL = "FABRICBOT_PROMETHEUS_URL"
ENV_TOKEN = "FABRICBOT_PROMETHEUS_TOKEN"
ENV_USER = "FABRICBOT_PROMETHEUS_USER"
ENV_PASSWORD = "FABRICBOT_PROMETHEUS_PASSWORD"



def redacted_url(url: str) -> str:
    """The URL without any user:password part, query or fragment, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return parts._replace(netloc=netloc, query="", fragment="").geturl()

class Labels(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str = "Hostname"
    gpu: str = "gpu"
    link: str = "nvlink"
    nvswitch: str = "nvswitch"
    model: str = "modelName"
    xid: str = "xid"


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_window_hours: float = Field(default=168.0, gt=0)
    min_step_seconds: float = Field(default=15.0, gt=0)
    max_points_per_series: int = Field(default=11000, gt=0)
    max_series: int = Field(default=20000, gt=0)
    max_nodes_analyzed: int = Field(default=64, ge=0)
    timeout_seconds: float = Field(default=30.0, gt=0)
    retries: int = Field(default=3, ge=0)
    backoff_seconds: float = Field(default=0.5, ge=0)
    concurrency: int = Field(default=4, ge=1)
    young_nodes_per_query: int = Field(default=16, ge=1)
    max_young_nodes: int = Field(default=128, ge=0)
    known_nodes_hours: float = Field(default=24.0, gt=0)


class PrometheusConfig(BaseModel):
    """Where the server is, how to authenticate, which label is which, and how far a query may go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    token: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None
    labels: Labels = Field(default_factory=Labels)
    matchers: str = ""
    step_time_metric: str = ""
    step_time_job_label: str = "job_id"
    exclude_models: str = "(?i).*PCIe.*"
    limits: Limits = Field(default_factory=Limits)
    source: str = DEFAULT_FILE.name

    def auth_headers(self) -> dict[str, str]:
        if self.token is not None:
            return {"Authorization": f"Bearer {self.token.get_secret_value()}"}
        return {}

    def basic_auth(self) -> tuple[str, str] | None:
        if self.username and self.password is not None:
            return self.username, self.password.get_secret_value()
        return None


def _read(path: Path) -> dict[str, Any]:
    return read_toml(path, "Prometheus settings file")


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    step = data.get("step_time", {})
    out: dict[str, Any] = {"labels": data.get("labels", {}), "limits": data.get("limits", {})}
    if "matchers" in data.get("selector", {}):
        out["matchers"] = data["selector"]["matchers"]
    if "metric" in step:
        out["step_time_metric"] = step["metric"]
    if "job_label" in step:
        out["step_time_job_label"] = step["job_label"]
    if "exclude_models" in data.get("platforms", {}):
        out["exclude_models"] = data["platforms"]["exclude_models"]
    return out


def load_limits(*, path: str | Path | None = None, env: dict[str, str] | None = None) -> Limits:
    """The limits alone (defaults, then the user's file, as `load_config` reads them), for a door that asks no server:
    the store's sweep retires nodes silent past `known_nodes_hours` as the server's does."""
    env = dict(os.environ) if env is None else env
    limits = _flatten(_read(DEFAULT_FILE))["limits"]
    user = path or env.get(ENV_FILE)
    if user:
        limits = {**limits, **_flatten(_read(Path(user)))["limits"]}
    try:
        return Limits.model_validate(limits)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{user or DEFAULT_FILE.name}: limits.{'.'.join(str(p) for p in err['loc'])}: "
                          f"{err['msg']} (got {err.get('input')!r})") from None


def load_config(
    url: str | None = None, *, path: str | Path | None = None, env: dict[str, str] | None = None
) -> PrometheusConfig:
    """Defaults, then the user's file (argument or $FABRICBOT_PROMETHEUS_CONFIG), then the URL and secrets."""
    env = dict(os.environ) if env is None else env
    data = _flatten(_read(DEFAULT_FILE))
    source = DEFAULT_FILE.name
    user = path or env.get(ENV_FILE)
    if user:
        extra = _flatten(_read(Path(user)))
        data["labels"] = {**data["labels"], **extra.pop("labels")}
        data["limits"] = {**data["limits"], **extra.pop("limits")}
        data.update(extra)
        source = str(user)
    url = url or env.get(ENV_URL)
    if not url:
        raise ConfigError(f"no Prometheus URL: pass --prometheus URL or set {ENV_URL}")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"Prometheus URL must start with http:// or https:// (got {url!r})")
    secrets = {"token": env.get(ENV_TOKEN) or None, "username": env.get(ENV_USER) or None,
               "password": env.get(ENV_PASSWORD) or None}
    try:
        return PrometheusConfig.model_validate({"url": url.rstrip("/"), "source": source, **secrets, **data})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{source}: {loc}: {err['msg']} (got {err.get('input')!r})") from None
