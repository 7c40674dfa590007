"""NMX-T's Prometheus scrape of a GB200 NVLink domain: every port of the domain, both ends of every GPU link.

On the switch tray that runs NMX-Telemetry: `curl -s http://localhost:9352/xcset/nvlink_domain_telemetry`. Each
series is one port, named by its labels: a GPU port carries `port_label="GPUP<link>"`, `device_num_on_tray` (the
GPU) and `tray_index` (its compute tray, counted from 0); a switch port carries `node_description="MF0;sw06:
N5400_LD/U1"` (switch tray 6, chip U1) and `Port_Number`. Families read: `Effective_BER` (the post-FEC
bit-error ratio) -> effective_ber, `Symbol_Errors` -> symbol_errors, `Link_Down` (times the link went down) ->
recovery_failed, `total_successful_recovery_events` -> recovery_successful and `lid` (every port has one: the port's
row alone), as NVIDIA's health collector maps them (NVIDIA/ncx-infra-controller-core,
crates/health/src/collectors/nmxt.rs, NMXT_METRIC_MAP); `Symbol_BER` -> symbol_ber and `Effective_Errors` ->
effective_errors, the names public InfiniBand link-analysis scripts give the same port counters (assumed for NMX-T).
On every series `logical_state` gives the link's state (ACT: up, DOWN: down) and a GPU port's
`link_partner_description` its switch chip, `link_partner_port_num` the chip's port: a topology row of relation
remote, as `nvidia-smi nvlink -R` gives one (observed, over the rack file's assumed port). `down_blame` and
`Status_Message` are what the port says of its link's state, quoted as given in the link's evidence. These label
names are NVIDIA's health collector's (crates/health/src/collectors/nmxt.rs, NMXT_LABEL_MAP: `Status_Message`,
`down_blame`, `link_partner_port_num`, `link_partner_description`; `down_blame` one of unknown, local_phy,
remote_phy) and UFM's low-frequency telemetry fields (`logical_state`: the port's logical link state); their
meanings beyond that (local_phy: the port's own PHY blamed for the link going down; `Status_Message` the PHY's
link-down diagnosis, as NVOS's "Link Diagnostic Per Port" codes word it) are assumed. NMX-T collects every port of
the domain, a down or disabled one too (NMX-T release notes, 0.6.9), so a whole scrape lists a down port as DOWN.
Other families (cables, timers) are left out.

The scrape names no host: each row's node_id is the tray's place in the rack (`nmx:<rack>:compute:18`,
`nmx:<rack>:switch:6`; the rack is the `--node` given to the reader, else the series' chassis id), which the store
turns into the host the rack inventory puts there (`place_in_racks`), or into a name of its place
(`<rack>-compute-tray18`) where none does. A `--node` that is such a name (the node `analyze` printed for the
scrape) gives its rack; one that is a host of the inventory gives the host's rack (`tray_hosts`). Assumed:
`device_num_on_tray` is the GPU's nvidia-smi index and `tray_index` + 1 its compute tray's slot; chip U<k> is the
driver's NVSwitch k-1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from .. import format as fmt
from .. import values
from ..components import chip_name
from ..config.racks import all_racks, tray_kind
from ..errors import InputError
from ..tables import PORT_REPORT, as_text
from ..values import Refused, describe
from ..values import index as checked_index
from .base import IngestResult, IngestWarning, Source, Tail
from .exposition import SeriesError, parse_labels
from .stamps import UNIT_NAMES, Unit, epoch_note, epoch_time

FAMILIES: dict[str, str] = {
    "Effective_BER": "effective_ber", "Symbol_BER": "symbol_ber", "Symbol_Errors": "symbol_errors",
    "Effective_Errors": "effective_errors", "Link_Down": "recovery_failed",
    "total_successful_recovery_events": "recovery_successful",
}
IDENTITY = frozenset({"lid"})  # a family that only says the port is there
STATES = {"ACT": "up", "DOWN": "down"}  # NMX-T logical_state -> link_state
REPORTED = ("down_blame", "Status_Message")  # what a port says of its link's state, said in its evidence as given
TOPOLOGY_COLUMNS = ["node_id", "a", "b", "relation", "link", "remote_port", "source", "detail"]
PREFIX = "nmx:"
_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}\s+(\S+)(?:\s+([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))?\s*$")
_GPU_PORT = re.compile(r"^GPUP(\d+)$")
_SWITCH = re.compile(r";sw(\d+):[^/]*/U(\d+)\s*$")
_TRAY_NAME = re.compile(r"^(.+)-(compute|switch)-tray(\d+)$")  # the name a tray unplaced by the inventory keeps
_SNIFF = re.compile(r"^(?:Effective_BER|Symbol_Errors|Link_Down|lid)\{[^\n]*Port_Number=", re.MULTILINE)


def _place(labels: dict[str, str], rack: str) -> dict[str, Any] | None:
    """The row keys of one port: a GPU's link or a switch chip's port; None for a port of neither."""
    gpu_port = _GPU_PORT.match(labels.get("port_label", ""))
    if gpu_port and labels.get("tray_index", "").isdigit() and labels.get("device_num_on_tray", "").isdigit():
        far = _SWITCH.search(labels.get("link_partner_description", ""))
        return {"node_id": f"{PREFIX}{rack}:compute:{int(labels['tray_index']) + 1}",
                "gpu": values.index(labels["device_num_on_tray"], "gpu"), "link_type": "nvlink",
                "link": values.index(gpu_port[1], "link"),
                "nvswitch": None, "peer": chip_name(str(int(far[1])), int(far[2])) if far else None}
    switch = _SWITCH.search(labels.get("node_description", ""))
    if switch and labels.get("Port_Number", "").isdigit():
        return {"node_id": f"{PREFIX}{rack}:switch:{int(switch[1])}", "gpu": None, "link_type": "nvswitch",
                "link": values.index(labels["Port_Number"], "link"), "nvswitch": str(int(switch[2]) - 1), "peer": None}
    return None


def _partner(labels: dict[str, str], keys: dict[str, Any], where: str) -> dict[str, Any] | None:
    """A GPU port's far end as NMX-T reads it: the switch chip (`link_partner_description`) and its port
    (`link_partner_port_num`), a topology row of relation remote, as `nvidia-smi nvlink -R` gives one (observed, not
    the rack file's assumed port); what the port says of itself (`down_blame`, `Status_Message`) in its detail, for
    the link's evidence. None for a switch's port, or a GPU port whose partner is not named."""
    port = labels.get("link_partner_port_num", "")
    if keys["gpu"] is None or keys["peer"] is None or not port.isdigit():
        return None
    number = checked_index(port, "link")  # a switch port, as Port_Number is: 2^64 or a shifted field is refused
    said = [f"{name} {labels[name]!r}" for name in REPORTED if labels.get(name)]
    return {"node_id": keys["node_id"], "a": f"GPU{keys['gpu']}", "b": keys["peer"], "relation": "remote",
            "link": keys["link"], "remote_port": number, "source": where,
            "detail": f"{PORT_REPORT}NMX-T: {', '.join(said)}" if said else None}


def _beyond(labels: dict[str, str]) -> str | None:
    """What a GPU port's labels place outside every rack file's domain (a compute tray past its trays, a link past
    a GPU's NVLinks), which would otherwise become a tray or link of its own; None when all is within."""
    if not _GPU_PORT.match(labels.get("port_label", "")):
        return None
    racks = all_racks().values()
    trays = max((r.compute_trays * r.racks_per_domain for r in racks), default=None)
    links = max((r.nvlinks_per_gpu for r in racks), default=None)
    tray, link = labels.get("tray_index", ""), _GPU_PORT.match(labels["port_label"])
    if trays is not None and tray.isdigit() and int(tray) >= trays:
        return (f"tray_index = {tray!r} is past the last compute tray of an NVLink domain ({fmt.count(trays, 'tray')}, "
                f"counted from 0)")
    if links is not None and link and int(link[1]) >= links:
        return (f"port_label = {labels['port_label']!r} is past a GPU's last NVLink ({fmt.count(links, 'link')}, "
                f"counted from 0)")
    return None


def rack_named(node: str) -> tuple[str, str | None]:
    """The rack a `--node` names, and the tray's place (`nmx:<rack>:compute:18`) where it is the name of one
    (`<rack>-compute-tray18`, as a tray no inventory places is kept) rather than a rack's."""
    tray = _TRAY_NAME.match(node)
    if tray is None:
        return node, None
    return tray[1], f"{PREFIX}{tray[1]}:{tray[2]}:{int(tray[3])}"


def _value(column: str, raw: str) -> float:
    """A family's value as its column holds it (`values`: a counter whole and within its width, a BER finite
    and at most 1); Refused, with the value, otherwise."""
    role, kind = values.COLUMNS[column]
    try:
        return float(getattr(values, role)(raw, kind))
    except Refused as why:
        raise Refused(f"{describe(raw)} is not a value {column} can hold: {why}") from None


def _time(stamp: str | None, when: datetime, units: set[Unit]) -> pd.Timestamp:
    """A sample's time, or the reader's time where the sample gives none. The exposition format writes
    milliseconds since the epoch (OpenMetrics seconds); any epoch unit is told by its magnitude (`stamps`) and
    added to `units`."""
    if not stamp:
        return pd.Timestamp(when)
    found = epoch_time(stamp)
    if found is None:
        raise Refused(f"timestamp {describe(stamp)} is no time from 1970 to 2262")
    units.add(found[1])
    return found[0]


class NmxtReader:
    name = "nmxt"
    rack_node = True  # the scrape names no host: --node is its rack wherever it is given (`analyze FILE` too)

    def sniff(self, head: str) -> float:
        return 0.9 if _SNIFF.search(head) else 0.0

    def read(self, source: Source, *, node_id: str | None = None, at: datetime | None = None) -> IngestResult:
        when = at or datetime.now(UTC)
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        partners: dict[tuple[Any, ...], tuple[pd.Timestamp, dict[str, Any]]] = {}  # a GPU link -> its far end, newest
        warnings: list[IngestWarning] = []
        units: set[Unit] = set()
        skipped = 0
        named, tray = rack_named(node_id) if node_id else (None, None)
        for number, line, ended in source.numbered():
            if not line.strip() or line.startswith("#"):
                continue
            if not ended:  # the exposition format ends every line with a newline: a cut sample is not read
                warnings.append(Tail(number, line).warning(source.name, "its sample"))
                continue
            match = _LINE.match(line.strip())
            if match is None:
                warnings.append(IngestWarning(source.name, number, f"not a Prometheus series: {line[:60]!r}"))
                continue
            family, body, value, stamp = match.groups()
            column = FAMILIES.get(family)
            if column is None and family not in IDENTITY:
                continue
            try:
                labels = parse_labels(body)
                reading = _value(column, value) if column is not None else None
                t = _time(stamp, when, units)
            except SeriesError as exc:
                warnings.append(IngestWarning(source.name, number, f"{family}: {exc}"))
                continue
            except Refused as why:
                warnings.append(IngestWarning(source.name, number, f"{family}: {why}; not read"))
                continue
            rack = named or (f"chassis-{labels['chassis_id']}" if labels.get("chassis_id") else None)
            if rack is None:
                raise InputError("an NMX-T scrape names no rack: give the rack it is of (--node RACK)",
                                 source=source.name, line=number)
            if beyond := _beyond(labels):
                warnings.append(IngestWarning(source.name, number, f"{family}: {beyond}; not read"))
                continue
            try:
                keys = _place(labels, rack)
            except Refused as why:
                warnings.append(IngestWarning(source.name, number, f"{family}: a GPU, link or port number that "
                                                                   f"is no index ({why}); not read"))
                continue
            if keys is None:
                skipped += 1
                continue
            row = rows.setdefault((t, *keys.values()), {"timestamp": t, **keys, "source": f"{source.name}:{number}"})
            if column is not None:
                row[column] = reading
            if labels.get("logical_state") in STATES:
                row["link_state"] = STATES[labels["logical_state"]]
            try:
                far = _partner(labels, keys, f"{source.name}:{number}")
            except Refused as why:
                warnings.append(IngestWarning(source.name, number, f"{family}: link_partner_port_num "
                                                                   f"{describe(labels['link_partner_port_num'])} is "
                                                                   f"no port ({why}); its far end's port not read"))
                far = None
            if far is not None:
                key = (keys["node_id"], keys["gpu"], keys["link"])
                if key not in partners or partners[key][0] <= t:
                    partners[key] = (t, far)
        if units - {"ms", "s"}:  # the exposition format's milliseconds, or OpenMetrics' seconds, go unsaid
            warnings.append(IngestWarning(source.name, None,
                                          epoch_note("timestamps", [u for u in UNIT_NAMES if u in units])))
        if skipped:
            warnings.append(IngestWarning(source.name, None, f"{skipped} series of ports that are neither a GPU's "
                                          "link nor a switch chip's port (trunks, management): left out"))
        frame = pd.DataFrame(list(rows.values()))
        if tray is not None and len(frame) and tray not in set(frame["node_id"]):
            rack, kind, slot = tray[len(PREFIX):].rsplit(":", 2)
            warnings.append(IngestWarning(source.name, None, f"--node {node_id} names {kind} tray {slot} of rack "
                                          f"{rack}, which the scrape does not hold: its trays are read as rack "
                                          f"{rack}'s"))
        if not len(frame):
            return IngestResult(warnings=warnings)
        result = IngestResult.of(warnings, link_samples=frame,
                                 topology=pd.DataFrame([far for _, far in partners.values()], columns=TOPOLOGY_COLUMNS))
        result.partial = _some_ports(frame)
        return result


def _some_ports(frame: pd.DataFrame) -> bool:
    """Whether the scrape holds some ports of a compute tray, not every port a rack file gives one (a scrape grepped
    for one tray, GPU or port): the GPUs and links it does not reach are not missing (`IngestResult.partial`), as
    with an nvidia-smi output of some GPUs. A whole scrape lists every port of the domain, a down one as DOWN."""
    shapes = {(r.gpus_per_tray, r.nvlinks_per_gpu) for r in all_racks().values() if r.fabric == "nmx"}
    gpus = frame[frame["link_type"] == "nvlink"]
    for _, tray in gpus.groupby(gpus["node_id"].astype("string"), observed=True):
        held = set(zip(tray["gpu"].astype(int), tray["link"].astype(int), strict=True))
        if not any(held == {(g, k) for g in range(n) for k in range(links)} for n, links in shapes):
            return True
    return False


def _kinds(places: Iterable[str]) -> str:
    """What the scrape says of its trays' platform: their places and GPUs, never the kind of rack; the platforms of
    the NMX rack files that have trays at those places, for the nodes.csv's platform column."""
    slots = [(kind, int(slot)) for p in places for _, kind, slot in [p[len(PREFIX):].rsplit(":", 2)]]
    fits = []
    for rack in all_racks().values():
        last = {"compute": rack.compute_trays * rack.racks_per_domain, "switch": rack.switch_trays}
        if rack.fabric == "nmx" and all(slot <= last.get(kind, 0) for kind, slot in slots):
            fits += sorted({getattr(rack, f"{kind}_platform") for kind, _ in slots})
    if not fits:
        return ""
    return (f"; the scrape names its trays' places and GPUs, not the kind of rack (the platform is one of "
            f"{', '.join(sorted(fits))})")


def place_in_racks(result: IngestResult, racks: Mapping[str, Any], platforms: Mapping[str, str],
                   records: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """`tray_hosts` on an NMX-T result (in place, every table of it), its warning among the result's; the node
    `records` read with it (a cut input's marks) renamed alike, returned."""
    hosts, said = tray_hosts(result.tables["link_samples"], racks, platforms)
    for name, frame in result.tables.items():
        result.tables[name] = renamed(frame, hosts)
    if said:
        result.warnings.append(IngestWarning("nmxt", None, said))
    return renamed(records, hosts) if records is not None else None


def renamed(frame: pd.DataFrame, hosts: Mapping[str, str]) -> pd.DataFrame:
    """A table with the trays' places in its node_id named as `hosts` names them: one name for one node in every
    table (the links, their far ends, a cut input's node records)."""
    if not hosts or not len(frame) or "node_id" not in frame.columns:
        return frame
    names = frame["node_id"]
    out = names.astype(object).map(lambda n: hosts.get(n, n) if isinstance(n, str) else n)
    return frame.assign(node_id=out.astype("category" if isinstance(names.dtype, pd.CategoricalDtype)
                                           else names.dtype))


def tray_hosts(links: pd.DataFrame, racks: Mapping[str, Any],
               platforms: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """Each tray place of an NMX-T scrape's links (`nmx:rack-07:compute:18`) -> the host the rack inventory puts
    there; a tray the inventory does not place keeps a name of its own place (`rack-07-compute-tray18`), with a
    warning saying how to join it to its host. `racks`: host -> RackSlot; `platforms`: host -> platform."""
    if not len(links) or "node_id" not in links.columns:
        return {}, None
    names = as_text(links["node_id"])
    placed = names.str.startswith(PREFIX).fillna(False)
    if not placed.any():
        return {}, None
    hosts = {f"{PREFIX}{s.rack}:{tray_kind(platforms.get(h))}:{s.tray}": h for h, s in racks.items()
             if s.tray is not None and tray_kind(platforms.get(h))}
    known = {s.rack for s in racks.values()}
    for name in set(names[placed].dropna()) - set(hosts):  # a --node naming a host of the inventory: its rack's
        rack, kind, slot = str(name)[len(PREFIX):].rsplit(":", 2)
        if rack not in known and rack in racks:
            rack = racks[rack].rack
        hosts[name] = hosts.get(f"{PREFIX}{rack}:{kind}:{slot}", f"{rack}-{kind}-tray{slot}")
    missing = sorted(n for n in set(names[placed].dropna()) if hosts[n] not in racks)
    said = None
    if missing:
        shown = ", ".join(hosts[m] for m in missing[:4]) + (" ..." if len(missing) > 4 else "")
        them, their = ("it", "its") if len(missing) == 1 else ("them", "their")
        said = (f"the rack inventory names no host for {fmt.count(len(missing), 'tray')} of the scrape, kept under "
                f"{their} place ({shown}): ingest a nodes.csv with node_id, platform, rack, tray (the rack as --node "
                f"named it) before the NMX-T scrape to read {them} as {their} {fmt.noun(len(missing), 'host')}"
                f"{_kinds(str(n) for n in missing)}")
    return {n: h for n, h in hosts.items() if n in set(names[placed].dropna())}, said


READER = NmxtReader()
