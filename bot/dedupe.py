"""Keys seen recently: an Events API retry (the same `event_id` again) or a replayed signed request is done once.

Slack retries an event it got no 2xx for within 3 seconds, with `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`
headers, up to three times over about five minutes (https://api.slack.com/apis/events-api#retries); a signed
request is accepted for five minutes after its timestamp, so a replay inside that window carries the same
signature. Memory is bounded: the oldest keys go first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

EVENT_TTL_S = 3600.0  # longer than Slack's retries of one event
REPLAY_TTL_S = 330.0  # Bolt accepts a signature for 300 s; a little more for clock skew
MAX_KEYS = 100_000


class Seen:
    """`first(key)` is True once per key within `ttl` seconds."""

    def __init__(self, ttl: float, *, limit: int = MAX_KEYS, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.limit = limit
        self.clock = clock
        self._keys: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        now = self.clock()
        with self._lock:
            while self._keys:
                oldest, at = next(iter(self._keys.items()))
                if now - at < self.ttl and len(self._keys) < self.limit:
                    break
                del self._keys[oldest]
            if key in self._keys:
                return False
            self._keys[key] = now
            return True
