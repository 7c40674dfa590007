"""Alertmanager's webhook payload (version 4), read into the nodes it names.

The format is Alertmanager's documented webhook body (https://prometheus.io/docs/alerting/latest/configuration/
#webhook_config): `version` "4", `status`, `groupKey`, `alerts` each with `status` (firing | resolved), `labels`,
`annotations`, `startsAt`, `endsAt`, `fingerprint`. An alert names its node by the labels `dcgm.toml` maps to a node
(`Hostname`, `node`, ...) or, failing those, by `instance` without its port (a static scrape's target).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pandas as pd

from ..errors import InputError
from .dcgm_map import DcgmMap, load_map

VERSION = "4"
STATUSES = ("firing", "resolved")  # an alert's status, as the webhook body's documentation gives it


@dataclass(frozen=True)
class NodeAlert:
    """One Alertmanager alert: the node it names ("" where its labels name none), what fired there, and whether it
    has resolved."""

    node_id: str
    name: str
    status: str  # "firing" or "resolved"
    fingerprint: str
    summary: str
    starts_at: datetime | None = None  # when Alertmanager says it began firing
    labels: tuple[tuple[str, str], ...] = ()  # as Alertmanager sent them: said when the node is not known

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    @property
    def where(self) -> str:
        """The node, as a message names it."""
        return self.node_id or "no node"


def known_node(alert: NodeAlert, nodes: Iterable[str]) -> NodeAlert | None:
    """The alert naming a node the store knows: its name as given, else the one node whose first label its name's
    first label is (`hpc-gpu-node-14.cluster.local` is `hpc-gpu-node-14`); None when no node, or several, match."""
    known = set(nodes)
    if alert.node_id in known:
        return alert
    try:
        ipaddress.ip_address(alert.node_id)
        return None  # an address's first label names nothing
    except ValueError:
        pass
    first = alert.node_id.split(".", 1)[0]
    matches = [n for n in known if n.split(".", 1)[0] == first]
    return replace(alert, node_id=matches[0]) if len(matches) == 1 else None


def _node(labels: dict[str, str], dmap: DcgmMap) -> str | None:
    named = dmap.label(labels, "node")
    if named:
        return named
    instance = labels.get("instance", "")
    host = instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance  # host:port; an IPv6 literal stays
    return host.strip("[]") or None


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _time(value: object) -> datetime | None:
    """An RFC 3339 time as Alertmanager writes it (`2026-03-02T11:58:00.123456789Z`); None for its zero time or a
    value that does not read."""
    text = str(value or "")
    if not text or text.startswith("0001-"):
        return None
    try:
        return pd.Timestamp(text).to_pydatetime()
    except ValueError:
        return None


def _mapping(alert: dict[str, Any], i: int, field: str) -> dict[str, Any]:
    """An alert's `labels` or `annotations`: an object of names to values, or refused naming what it holds."""
    value = alert.get(field) or {}
    if not isinstance(value, dict):
        raise InputError(f"an alert's {field} are a JSON object of names to values, not a {_json_type(value)}",
                         field=f"alerts[{i}].{field}", value=str(value)[:80])
    return value


def _json_type(value: object) -> str:
    named = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return named.get(type(value), type(value).__name__)


def node_alerts(payload: Any, dmap: DcgmMap | None = None) -> tuple[list[NodeAlert], list[str]]:
    """The alerts of a webhook body (one whose labels name no node with node "": its sender meant it for a person,
    so it is said, not dropped), and a note per alert not read; a body that is not version 4 is refused with the
    field and value."""
    if not isinstance(payload, dict):
        raise InputError("an Alertmanager webhook body is a JSON object", field="body", value=type(payload).__name__)
    if str(payload.get("version")) != VERSION:
        raise InputError("only Alertmanager's webhook payload version 4 is read", field="version",
                         value=str(payload.get("version")))
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise InputError("the webhook body has no alerts list", field="alerts", value=str(alerts)[:80])
    dmap = dmap or load_map()
    found: list[NodeAlert] = []
    skipped: list[str] = []
    for i, alert in enumerate(alerts):
        if not isinstance(alert, dict):
            raise InputError(f"an alert is a JSON object of its status, labels and annotations, not a "
                             f"{_json_type(alert)}", field=f"alerts[{i}]", value=str(alert)[:80])
        labels = {str(k): str(v) for k, v in _mapping(alert, i, "labels").items()}
        name = labels.get("alertname", f"alert {i + 1}")
        status = str(alert.get("status") or payload.get("status") or "firing")
        if status not in STATUSES:
            skipped.append(f"{name}: alerts[{i}].status {status!r} is not one Alertmanager sends (firing or "
                           "resolved): not read")
            continue
        node = _node(labels, dmap) or ""
        annotations = _mapping(alert, i, "annotations")
        found.append(NodeAlert(node, name, status,
                               str(alert.get("fingerprint") or f"{name}:{node or _labels(labels)}"),
                               str(annotations.get("summary") or annotations.get("description") or name),
                               _time(alert.get("startsAt")), tuple(sorted(labels.items()))))
    return found, skipped
