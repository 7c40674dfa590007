"""What a dcgm-exporter series text means: the link entity and column it fills, an Xid it reports, or nothing
fabricbot reads; and the GPU it names. Worked out once per distinct text and shared by every parser reading with the
same mapping for the same node, so repeated scrapes cost no text parsing (see `dcgm`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..values import Refused
from ..values import index as checked_index
from .dcgm_frame import UNNAMED
from .dcgm_map import DcgmMap
from .exposition import NAME, SeriesError, parse_labels
from .textlines import normalize_bus_id

# A series' meaning: ("link", entity, column, is counter) | ("xid", kind, node, gpu, code, bus id) | ("skip",) |
# ("error", why); a parser numbers a link's entity and column (see DcgmParser._attach)
Series = tuple[Any, ...]
# A series text's meaning and the GPU it names, (node, gpu, labels) or None
Described = tuple[Series, tuple[str, int, dict[str, str]] | None]
# id(mapping) -> (the mapping, kept alive so its id is not reused; (node_id, series text) -> description)
_DESCRIBED: dict[int, tuple[DcgmMap, dict[tuple[str | None, str], Described]]] = {}
_DESCRIBED_MAX = 200_000  # descriptions kept per mapping (a series is ~1 kB with its labels): a bot reading many
# nodes' scrapes starts over past this


@dataclass(frozen=True)
class _Labels:
    labels: dict[str, str]
    node: str
    gpu: int | None
    switch: str | None
    link: int | None
    error: str | None = None


@dataclass
class SeriesMeanings:
    """Series texts read with one mapping, for one node (`node_id`; None: the node its labels name)."""

    mapping: DcgmMap
    node_id: str | None = None
    _bodies: dict[str, _Labels] = field(default_factory=dict)

    def _labels(self, body: str) -> _Labels:
        """A label set, parsed once: a scrape repeats each GPU's label set for every metric."""
        found = self._bodies.get(body)
        if found is None:
            try:
                labels = parse_labels(body)
                mapping = self.mapping
                if near := mapping.near_label(labels):
                    raise SeriesError(f"label {near[0][:40]!r} is one letter from {near[1]!r}, a label fabricbot "
                                      "reads (a damaged name?); not read")
                gpu_text, link_text = mapping.label(labels, "gpu"), mapping.label(labels, "nvlink")
                try:
                    gpu = checked_index(gpu_text, "gpu") if gpu_text is not None else None
                    link = checked_index(link_text, "link") if link_text is not None else None
                except Refused as why:
                    raise SeriesError(f"gpu/nvlink label is not an index ({gpu_text!r}, {link_text!r}: {why})"
                                      ) from None
                node = self.node_id or mapping.label(labels, "node") or UNNAMED
                found = _Labels(labels, node, gpu, mapping.label(labels, "nvswitch"), link)
            except SeriesError as exc:
                found = _Labels({}, "", None, None, None, str(exc))
            self._bodies[body] = found
        if found.error:
            raise SeriesError(found.error)
        return found

    def described(self, key: str) -> Described:
        """What a series text means (an error's meaning is ("error", why)), looked up before it is worked out."""
        memo = _DESCRIBED.setdefault(id(self.mapping), (self.mapping, {}))[1]
        found = memo.get((self.node_id, key))
        if found is None:
            if len(memo) >= _DESCRIBED_MAX:
                memo.clear()
            gpu_of: list[tuple[str, int, dict[str, str]]] = []
            try:
                series = self._describe(key, gpu_of)
            except SeriesError as exc:
                series = ("error", str(exc))
            found = memo[(self.node_id, key)] = (series, gpu_of[0] if gpu_of else None)
        return found

    def _describe(self, key: str, gpu_of: list[tuple[str, int, dict[str, str]]]) -> Series:
        """("link", entity, column name, is counter) | ("xid", ...) | ("skip",); the GPU it names goes to `gpu_of`."""
        brace = key.find("{")
        name = key if brace < 0 else key[:brace]
        if not NAME.fullmatch(name):
            raise SeriesError(f"not a metric name: {name[:40]!r}")
        mapping = self.mapping
        resolved = mapping.resolve(name)
        is_xid = name in mapping.xid_counter or name in mapping.xid_gauge or name in mapping.recovery_gauge
        if brace >= 0 and not key.endswith("}"):
            close = key.rfind("}")
            if close > brace and key[close + 1:close + 2].isspace():  # labels closed, then words: no value
                if resolved is None and not is_xid:
                    return ("skip",)
                raise SeriesError(f"{name}: its value is text ({key[close + 1:].strip()[:40]!r} ...), not a "
                                  "number: dcgm-exporter writes its own error there when DCGM gives the field no "
                                  "value; not read")
            raise SeriesError("label set not closed (a cut-off line?)")
        info = self._labels(key[brace + 1 : -1] if brace >= 0 else "")
        if resolved is None and not is_xid:
            if (near := mapping.near_miss(name)) is not None:
                raise SeriesError(f"{name[:60]}: one letter from {near}, a metric fabricbot reads (a damaged name?); "
                                  "not read")
            return ("skip",)
        node, gpu, switch, link, labels = info.node, info.gpu, info.switch, info.link, info.labels
        if gpu is None and switch is None:
            raise SeriesError(f"{name}: no gpu or nvswitch label, so no component to attach it to")
        if gpu is not None:
            gpu_of.append((node, gpu, labels))
        if is_xid:
            bus = mapping.label(labels, "pci_bus_id")
            bus = normalize_bus_id(bus) or bus if bus else None
            if name in mapping.xid_gauge:
                return ("xid", "gauge", node, gpu, None, bus)
            if name in mapping.recovery_gauge:
                return ("xid", "recovery", node, gpu, None, bus)
            code = mapping.label(labels, "xid")
            try:
                return ("xid", "counter", node, gpu, checked_index(code or "", "code"), bus)
            except Refused:
                raise SeriesError(f"{name}: needs an integer xid label, an Xid number (got {code!r})") from None
        assert resolved is not None
        fld = resolved.field
        link = resolved.link if resolved.link is not None else link
        if fld.needs_link and link is None:
            raise SeriesError(f"{name}: a per-link field without an nvlink label: which link is not known")
        link_type = "nvswitch" if switch is not None else fld.link_type.value
        if switch is not None:
            gpu = None
        total = link is None and link_type != "pcie"
        return ("link", (node, gpu, link_type, link, switch, total), fld.column, fld.counter)
