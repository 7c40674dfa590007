"""The ways a telemetry file goes wrong on its way to fabricbot, as data: each mutation is a kind and its
parameters, so a failing input can be written down, replayed and kept as a regression fixture.

Two families. A *damaging* mutation (a cut, a deleted or doubled line, a flipped byte, a bad number) changes
what the input says: the reader must not crash, and every number it returns must be in the input. A
*wrapping* mutation (CRLF, a BOM, every line indented or quoted, spaces turned to tabs at the start of a line
or between its cells, a non-ASCII host name) changes only how the input is written: it must read the same as the
original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Numbers an attacker (or a broken exporter) writes where a counter should be.
BAD_NUMBERS: tuple[str, ...] = (
    "18446744073709551616",  # 2**64: one past an unsigned 64-bit counter
    "18446744073709551615",  # 2**64 - 1
    "9223372036854775808",  # 2**63
    "99999999999999999999999999",
    "NaN", "nan", "inf", "-inf", "Infinity", "+Inf",
    "-1", "-0", "1e30", "1E+308", "1e400", "0.5", "4294967296",
)
NON_ASCII_HOSTS: tuple[str, ...] = ("nœud-07", "узел-3", "ノード12", "gpu-nódé-1",
                                    "gpu-no\u0301de-2")  # the last with a combining accent (NFD)

DAMAGING = ("truncate", "delete_line", "double_line", "flip_byte", "number")
WRAPPING = ("crlf", "bom", "indent", "quote", "tabs", "inner_tabs", "host")

_NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
# Host names as the formats carry them: a prompt's user@host, a Hostname label, a syslog/journal host before
# `kernel:`, an nccl-tests rank's `on HOST device`, a JSON node id.
_HOSTS = (
    re.compile(rb"@([A-Za-z][\w.-]*?)(?=[:\s])"),
    re.compile(rb'[Hh]ostname="([^"]+)"'),
    re.compile(rb"\s([A-Za-z][\w.-]*)\s+kernel:"),
    re.compile(rb"\bon\s+([A-Za-z][\w.-]*)\s+device\b"),
    re.compile(rb'"node_id":\s*"([^"]+)"'),
)


@dataclass(frozen=True)
class Mutation:
    """One change to an input: `kind` (see DAMAGING and WRAPPING) and where and what."""

    kind: str
    at: int = 0  # a byte offset, a line index or a number's index, wrapped into range
    value: str = ""  # the replacement number, indent, byte or host name

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "at": self.at, "value": self.value}

    @property
    def wrapping(self) -> bool:
        return self.kind in WRAPPING

    def apply(self, data: bytes) -> bytes:
        return _APPLY[self.kind](data, self.at, self.value)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _truncate(data: bytes, at: int, _: str) -> bytes:
    return data[: at % max(len(data), 1)]


def _delete_line(data: bytes, at: int, _: str) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    del lines[at % len(lines)]
    return b"".join(lines)


def _double_line(data: bytes, at: int, _: str) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    i = at % len(lines)
    line = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
    lines.insert(i, line)
    return b"".join(lines)


def _flip_byte(data: bytes, at: int, value: str) -> bytes:
    if not data:
        return data
    i = at % len(data)
    new = int(value) if value else data[i] ^ 0x01
    return data[:i] + bytes([new % 256]) + data[i + 1:]


def _number(data: bytes, at: int, value: str) -> bytes:
    found = list(_NUMBER.finditer(data))
    if not found:
        return data
    match = found[at % len(found)]
    return data[: match.start()] + value.encode() + data[match.end():]


def _crlf(data: bytes, _: int, __: str) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _bom(data: bytes, _: int, __: str) -> bytes:
    return b"\xef\xbb\xbf" + data


def _indent(data: bytes, _: int, value: str) -> bytes:
    prefix = (value or "  ").encode()
    return b"".join(prefix + line if line.strip() else line for line in _lines(data))


def _quote(data: bytes, _: int, __: str) -> bytes:
    return b"".join(b"> " + line if line.strip() else b">" + line for line in _lines(data))


def _tabs(data: bytes, _: int, __: str) -> bytes:
    """Leading runs of four spaces become tabs, as an editor that converts indentation does."""
    out = []
    for line in _lines(data):
        body = line.lstrip(b" ")
        spaces = len(line) - len(body)
        out.append(b"\t" * (spaces // 4) + b" " * (spaces % 4) + body)
    return b"".join(out)


_GAP = re.compile(rb"(?<=\S) {2,}(?=\S)")


def _inner_tabs(data: bytes, _: int, __: str) -> bytes:
    """Each run of two or more spaces between two cells becomes one tab, as a copy through a spreadsheet or a
    terminal that keeps columns as tabs makes it (a column's width is then lost)."""
    return b"".join(_GAP.sub(b"\t", line) for line in _lines(data))


def host_names(data: bytes) -> list[bytes]:
    """The host names the input names, in order of first appearance."""
    seen: dict[bytes, None] = {}
    for pattern in _HOSTS:
        for match in pattern.finditer(data):
            seen.setdefault(match[1], None)
    return list(seen)


def _host(data: bytes, at: int, value: str) -> bytes:
    hosts = host_names(data)
    if not hosts:
        return data
    old = hosts[at % len(hosts)]
    return re.sub(rb"(?<![\w.-])" + re.escape(old) + rb"(?![\w-])", value.encode(), data)


_APPLY = {
    "truncate": _truncate, "delete_line": _delete_line, "double_line": _double_line, "flip_byte": _flip_byte,
    "number": _number, "crlf": _crlf, "bom": _bom, "indent": _indent, "quote": _quote, "tabs": _tabs,
    "inner_tabs": _inner_tabs, "host": _host,
}


def renamed_host(data: bytes, mutation: Mutation) -> tuple[str, str] | None:
    """(old, new) host name of a `host` mutation, or None when the input names no host."""
    hosts = host_names(data)
    if mutation.kind != "host" or not hosts:
        return None
    return hosts[mutation.at % len(hosts)].decode("utf-8", "replace"), mutation.value
