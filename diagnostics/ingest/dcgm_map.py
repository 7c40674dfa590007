"""The dcgm-exporter data table (`data/dcgm.toml`): metric names -> normalized columns, label aliases, sentinels.

Kept as data so a new exporter version (a renamed field or label) is a file edit, not a code change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import cache
from pathlib import Path
from typing import Any

from ..config.datafiles import DATA_DIR, read_toml
from ..enums import LinkType
from ..errors import ConfigError
from ..metrics import COUNTERS, GAUGES, SATURATED_16BIT
from ..tables import LINK_SAMPLES
from .textlines import one_edit

DEFAULT_FILE = DATA_DIR / "dcgm.toml"
_LINK_DIGITS = re.compile(r"\d{1,2}(?=\D*$)")  # the last run of digits: a per-link name's index


@dataclass(frozen=True)
class Field:
    """One normalized column a metric feeds, and where its link index comes from."""

    column: str
    link_type: LinkType
    per_link_name: bool  # the link index is part of the metric name (`_L3`)
    counter: bool  # cumulative (saturation applies), else a gauge
    write_name: str  # the spelling `format_exposition` writes: the first per-link name, else the first name
    total_name: str | None  # the first name without a link index (a GPU total, or a link-entity series)
    needs_link: bool = False  # a per-link-entity field: a series without an `nvlink` label is an error, not a total


@dataclass(frozen=True)
class Resolved:
    field: Field
    link: int | None  # from the name, for per-link names


@dataclass(frozen=True)
class DcgmMap:
    exact: dict[str, Field]
    patterns: tuple[tuple[re.Pattern[str], Field], ...]
    labels: dict[str, tuple[str, ...]]
    sentinels: frozenset[float]
    sentinel_texts: frozenset[str]  # the int64 ones as printed: past 2^53 a float holds their neighbours too
    saturation: float
    xid_counter: frozenset[str]
    xid_gauge: frozenset[str]
    recovery_gauge: frozenset[str]
    fields: tuple[Field, ...]
    _memo: dict[str, Resolved | None] = dc_field(default_factory=dict, compare=False, hash=False)
    _spelled_memo: dict[int, tuple[str, ...]] = dc_field(default_factory=dict, compare=False, hash=False)

    def resolve(self, name: str) -> Resolved | None:
        """The field a metric name feeds, or None for a metric fabricbot does not use."""
        if name in self._memo:
            return self._memo[name]
        found = self._resolve(name)
        if found is None and name.endswith("_total"):  # OpenMetrics adds `_total` to counter samples
            found = self._resolve(name[: -len("_total")])
        self._memo[name] = found
        return found

    def _resolve(self, name: str) -> Resolved | None:
        field = self.exact.get(name)
        if field is not None:
            return Resolved(field, None)
        for pattern, field in self.patterns:
            match = pattern.fullmatch(name)
            if match:
                return Resolved(field, int(match[1]))
        return None

    def near_miss(self, name: str) -> str | None:
        """The name fabricbot reads that `name` is one letter from (a flipped byte in a metric name), or None."""
        spelled = self._spelled()
        bare = _LINK_DIGITS.sub("", name, count=1)  # a per-link name's index out, as in its spelled form
        for candidate in (name, bare):
            for known in spelled.get(len(candidate), ()) + spelled.get(len(candidate) - 1, ()) + \
                    spelled.get(len(candidate) + 1, ()):
                if one_edit(candidate, known):
                    return known
        return None

    def near_label(self, labels: dict[str, str]) -> tuple[str, str] | None:
        """(a label name, the one fabricbot reads it is one letter from), when a label set has one."""
        known = {alias for aliases in self.labels.values() for alias in aliases}
        for name in labels:
            if name not in known and (near := next((k for k in sorted(known) if one_edit(name, k)), None)):
                return name, near
        return None

    def _spelled(self) -> dict[int, tuple[str, ...]]:
        """Every metric name read, per-link ones without their index, by length."""
        if not self._spelled_memo:
            names = {*self.exact, *self.xid_counter, *self.xid_gauge,
                     *(p.pattern.replace(r"(\d{1,2})", "").replace("\\", "") for p, _ in self.patterns)}
            for known in names:
                self._spelled_memo[len(known)] = (*self._spelled_memo.get(len(known), ()), known)
        return self._spelled_memo

    def placing(self, labels: dict[str, str]) -> str:
        """The labels that say which component a series is (host, GPU, switch, link, Xid), as the series writes
        them: a message names a refused sample by them, so it can be found in a scrape of many GPUs; the UUID,
        model and device name only lengthen it."""
        keep = {alias for role in ("node", "gpu", "nvswitch", "nvlink", "xid") for alias in self.labels.get(role, ())}
        return ",".join(f'{k}="{v}"' for k, v in labels.items() if k in keep)

    def label(self, labels: dict[str, str], key: str) -> str | None:
        for alias in self.labels.get(key, ()):
            value = labels.get(alias)
            if value is not None:
                return value
        return None


_VALUE_COLUMNS = set(COUNTERS) | {c for m in GAUGES.values() for c in m.columns}  # counters and level readings


def _fields(entries: list[dict[str, Any]], origin: str) -> tuple[dict[str, Field], list[tuple[re.Pattern[str], Field]],
                                                             list[Field]]:
    exact: dict[str, Field] = {}
    patterns: list[tuple[re.Pattern[str], Field]] = []
    fields: list[Field] = []
    for i, entry in enumerate(entries):
        try:
            column, names = entry["column"], list(entry["names"])
            link_type = LinkType(entry.get("link_type", "nvlink"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{origin}: field[{i}] needs column, names and a valid link_type ({exc})") from None
        if column not in _VALUE_COLUMNS or column not in LINK_SAMPLES.columns:
            raise ConfigError(f"{origin}: field[{i}]: unknown column {column!r}")
        counter = entry.get("kind", "counter") == "counter"
        needs_link = bool(entry.get("needs_link", False))
        total_name = next((n for n in names if "{link}" not in n), None)
        for j, name in enumerate(names):
            per_link = "{link}" in name
            field = Field(column, link_type, per_link, counter, names[0], total_name, needs_link)
            if j == 0:
                fields.append(field)
            if per_link:
                head, _, tail = name.partition("{link}")
                patterns.append((re.compile(re.escape(head) + r"(\d{1,2})" + re.escape(tail)), field))
            else:
                exact[name] = field
    return exact, patterns, fields


def load_map(path: Path | None = None) -> DcgmMap:
    """The default table, or a user's file in the same layout."""
    return _load(path or DEFAULT_FILE)


@cache
def _load(path: Path) -> DcgmMap:
    data = read_toml(path, "dcgm mapping file")
    exact, patterns, fields = _fields(data.get("field", []), path.name)
    labels = {k: tuple(v) for k, v in data.get("labels", {}).items()}
    xid = data.get("xid", {})
    return DcgmMap(
        exact=exact,
        patterns=tuple(patterns),
        labels=labels,
        sentinels=frozenset(float(v) for v in data.get("sentinels", {}).get("values", [])),
        sentinel_texts=frozenset(str(v) for v in data.get("sentinels", {}).get("values", []) if isinstance(v, int)),
        saturation=float(data.get("saturation", {}).get("value", SATURATED_16BIT)),
        xid_counter=frozenset(xid.get("counter", [])),
        xid_gauge=frozenset(xid.get("last_value_gauge", [])),
        recovery_gauge=frozenset(xid.get("recovery_action_gauge", [])),
        fields=tuple(fields),
    )
