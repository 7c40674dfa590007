"""A small Prometheus HTTP API client: bounded queries, timeouts, retries with back-off, bytes counted.

Every failure becomes a `PrometheusError` whose message says what the server did; callers turn it into an
"incomplete fleet view", never into an empty (healthy-looking) answer. One client may be shared by several threads
(the sweep runs its queries in a pool): httpx.Client is thread-safe, and the counters are updated under a lock.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from ..errors import FabricbotError
from .config import PrometheusConfig, redacted_url

RETRY_STATUS = {429, 502, 503, 504}


class PrometheusError(FabricbotError):
    """The server could not answer in full: down, slow, refusing, or over a limit."""


class PrometheusUnavailable(PrometheusError):
    """No answer at all after every retry: the server is down, unreachable or overloaded, not refusing a query."""


@dataclass
class QueryStats:
    requests: int = 0
    retries: int = 0
    bytes_received: int = 0  # on the wire (compressed when the server compresses)
    bytes_decoded: int = 0  # the JSON after decompression
    seconds: float = 0.0  # summed over requests: more than the wall time when queries overlap
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Answer:
    """One query's result rows and the warnings the server attached to that answer (partial data)."""

    rows: list[dict[str, Any]]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelValues:
    """A label's values and the warnings the server attached to that answer."""

    values: list[str]
    warnings: tuple[str, ...] = ()


def _ts(moment: datetime | float) -> str:
    value = moment.timestamp() if isinstance(moment, datetime) else float(moment)
    return f"{value:.3f}"


class PrometheusClient:
    """`query` and `query_range` over httpx; a caller may pass its own `httpx.Client` (tests: MockTransport)."""

    def __init__(self, config: PrometheusConfig, http: httpx.Client | None = None,
                 sleep: Any = time.sleep, transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        self.stats = QueryStats()
        self._lock = threading.Lock()
        self._sleep = sleep
        limits = config.limits
        self._http = http or httpx.Client(
            timeout=httpx.Timeout(limits.timeout_seconds), headers=config.auth_headers(),
            auth=config.basic_auth(), follow_redirects=True, transport=transport,
        )

    def __repr__(self) -> str:  # never the headers: they may hold a token
        return f"PrometheusClient({redacted_url(self.config.url)!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the two API calls -------------------------------------------------------------------------------------
    def query(self, promql: str, at: datetime | float) -> list[dict[str, Any]]:
        """An instant query: a list of {"metric": labels, "value": [ts, "v"]}."""
        return self.instant(promql, at).rows

    def instant(self, promql: str, at: datetime | float) -> Answer:
        """An instant query with its own warnings, for callers running several queries at once."""
        return self._call("query", {"query": promql, "time": _ts(at)}, promql)

    def query_range(self, promql: str, start: datetime | float, end: datetime | float,
                    step_s: float) -> list[dict[str, Any]]:
        """A range query: a list of {"metric": labels, "values": [[ts, "v"], ...]}, bounded by the limits."""
        return self.ranged(promql, start, end, step_s).rows

    def ranged(self, promql: str, start: datetime | float, end: datetime | float, step_s: float) -> Answer:
        """A range query with its own warnings."""
        limits = self.config.limits
        t0 = start.timestamp() if isinstance(start, datetime) else float(start)
        t1 = end.timestamp() if isinstance(end, datetime) else float(end)
        if t1 <= t0:
            raise PrometheusError(f"empty time range {t0:.0f}..{t1:.0f} for {promql!r}")
        if (t1 - t0) / 3600 > limits.max_window_hours:
            raise PrometheusError(
                f"window of {(t1 - t0) / 3600:.1f} h is longer than the {limits.max_window_hours:g} h limit")
        step = max(float(step_s), limits.min_step_seconds, (t1 - t0) / limits.max_points_per_series)
        return self._call("query_range", {"query": promql, "start": _ts(t0), "end": _ts(t1),
                                          "step": f"{math.ceil(step * 1000) / 1000}"}, promql)

    # -- transport -----------------------------------------------------------------------------------------------
    def _call(self, endpoint: str, params: dict[str, str], promql: str) -> Answer:
        body = self._post(endpoint, params, promql)
        warnings = tuple(str(w) for w in body.get("warnings") or ())
        if warnings:
            with self._lock:
                self.stats.warnings.extend(warnings)
        result = body.get("data", {}).get("result")
        if not isinstance(result, list):
            raise PrometheusError(f"{endpoint}: unexpected answer shape (no data.result list) for {promql!r}")
        if len(result) > self.config.limits.max_series:
            raise PrometheusError(
                f"{endpoint}: {len(result)} series is over the {self.config.limits.max_series} series limit "
                f"for {promql!r}; narrow the selector (selector.matchers) or raise limits.max_series")
        return Answer(result, warnings)

    def label_values(self, label: str, match: str, start: datetime | float, end: datetime | float) -> LabelValues:
        """The values `label` takes on the series `match` selects between `start` and `end` (the server answers from
        its index, a block of series at a time: a value may come from a series whose samples lie just outside)."""
        body = self._post(f"label/{label}/values", {"match[]": match, "start": _ts(start), "end": _ts(end)}, match,
                          method="GET")
        warnings = tuple(str(w) for w in body.get("warnings") or ())
        data = body.get("data")
        if not isinstance(data, list):
            raise PrometheusError(f"label/{label}/values: unexpected answer shape (no data list) for {match!r}")
        return LabelValues(sorted(str(v) for v in data), warnings)

    def _post(self, endpoint: str, params: dict[str, str], promql: str, *, method: str = "POST") -> dict[str, Any]:
        """The API's answer; a query by POST (a long selector fits), the label values by GET (the one it serves)."""
        url = f"{self.config.url}/api/v1/{endpoint}"
        limits = self.config.limits
        delay = limits.backoff_seconds
        last = ""
        for attempt in range(limits.retries + 1):
            if attempt:
                self._count(retries=1)
                self._sleep(delay)
                delay *= 2
            started = time.perf_counter()
            self._count(requests=1)
            try:
                response = self._http.post(url, data=params) if method == "POST" else \
                    self._http.get(url, params=params)
            except httpx.TimeoutException:
                last = f"no answer within {limits.timeout_seconds:g} s"
                continue
            except httpx.TransportError as exc:
                last = f"cannot connect ({type(exc).__name__})"
                continue
            finally:
                self._count(seconds=time.perf_counter() - started)
            self._count(bytes_received=response.num_bytes_downloaded, bytes_decoded=len(response.content))
            if response.status_code in RETRY_STATUS:
                last = f"HTTP {response.status_code}"
                continue
            return self._decode(response, endpoint, promql)
        raise PrometheusUnavailable(
            f"Prometheus at {redacted_url(self.config.url)} unavailable after {limits.retries + 1} tries: {last}")

    def _count(self, **add: float) -> None:
        with self._lock:
            for name, value in add.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)

    def _decode(self, response: httpx.Response, endpoint: str, promql: str) -> dict[str, Any]:
        try:
            body: dict[str, Any] = response.json()
        except ValueError:  # no API at this address: every query would meet the same, so none is sent after it
            raise PrometheusUnavailable(
                f"Prometheus at {redacted_url(self.config.url)}: {endpoint}: HTTP {response.status_code}, not a "
                f"Prometheus API answer (content-type {response.headers.get('content-type', '?')}): is the URL's path "
                "right? A server run with --web.route-prefix serves its API under that prefix, and one without it at "
                "the root") from None
        if response.status_code >= 400 or body.get("status") != "success":
            kind = body.get("errorType", f"HTTP {response.status_code}")
            error = str(body.get("error", "no error text"))
            hint = ""
            if "too many samples" in error:
                hint = "; the query is over the server's sample limit (--query.max-samples): use a shorter window"
            raise PrometheusError(f"{endpoint} refused ({kind}): {error}{hint} [query: {promql}]")
        return body
