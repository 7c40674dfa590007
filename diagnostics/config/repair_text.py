"""Catalog templates: a text is one string or a list of alternatives, and the first whose placeholders all have
values is the one used; with none, the caller leaves the step out. A placeholder never reaches a user unfilled."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from string import Formatter
from typing import Any

Text = str | list[str]

# Every name a catalog template may use; the loader refuses any other.
PLACEHOLDERS = frozenset({
    "drain_commands",  # a node's drain in the scheduler's commands (Slurm, Kubernetes)
    "node", "node_id", "gpu", "peer", "gpu_dst", "link", "switch", "switch_port", "lanes", "switch_path", "input_peer",
    "part", "part_id", "next_part", "next_part_id", "board", "platform", "reset_command", "reset_gpus", "reset_what",
    "reset_note", "fm_note", "why", "fabric_read", "fabric_done", "swap_note",
    "sxm_note",  # an SXM module replaced: the server vendor's field service does it
    "rack", "unit", "tray", "switch_tray", "cartridge", "hosts", "hosts_csv", "switch_host",  # a rack's units
    "compute_trays",  # "compute tray H" or "compute trays H1, H2": the hosts, named with their count
    "rack_stops", "rack_hosts_csv", "jobs", "nmx", "recovery",  # what a rack-wide step stops; NMX-C; Xid 154
    "bus",  # a GPU named by its PCI address alone
    "boards",  # with no platform told: those the node's topology fits alike
    "rack_ports",  # where the rack file's port map comes from: assumed, stated, or no rack file
    "find_link",  # the read that names an NVLink the input does not (an Xid without a link number)
    "nvlinks_reach", "gpu_common_end", "module_reseat",  # how a board's GPU links leave it; how its GPU is reseated
})

# A value that stands for "not known" in the facts some callers pass.
_UNKNOWN = frozenset({"", "?", "unknown", "none"})


def alternatives(text: Text) -> list[str]:
    return [text] if isinstance(text, str) else list(text)


def placeholders(text: str) -> frozenset[str]:
    """The field names a template uses; a ValueError for a malformed one (an unclosed brace). Parsed once per
    template: a fleet's plans fill the catalog's few templates thousands of times."""
    return _parsed(text)


@cache
def _parsed(text: str) -> frozenset[str]:
    return frozenset(name for _, name, _, _ in Formatter().parse(text) if name is not None)


def known(values: Mapping[str, Any]) -> dict[str, str]:
    """The facts that have a value, as text; None, '' and '?' are unknown."""
    out = {}
    for key, value in values.items():
        if value is None:
            continue
        text = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        if text.strip().lower() not in _UNKNOWN:
            out[key] = text
    return out


def fill(text: Text | None, values: Mapping[str, str]) -> str | None:
    """The first alternative whose placeholders all have values, filled; None when no alternative can be."""
    if text is None:
        return None
    for option in alternatives(text):
        if placeholders(option) <= values.keys():
            return option.format_map(values)
    return None


