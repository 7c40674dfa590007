"""The Prometheus text exposition format's label sets, as dcgm-exporter and NMX-T write them.

A label set is parsed by one `findall` when it holds no escape (the common case, checked by rebuilding the text), else
pair by pair, so a damaged set is refused with the place it goes wrong rather than read as something else.
"""

from __future__ import annotations

import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")  # a metric name
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*(?:,|$)')
_PLAIN = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\\n]*)"')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPE = {"n": "\n", "\\": "\\", '"': '"'}


class SeriesError(ValueError):
    """A series text that cannot be read; the message says why."""


def parse_labels(body: str) -> dict[str, str]:
    """`a="1",b="x\\"y"` -> {"a": "1", "b": 'x"y'}; raises SeriesError on anything else."""
    if "\\" not in body:  # the common case: one findall, checked by rebuilding the text
        pairs = _PLAIN.findall(body)
        if ",".join(f'{k}="{v}"' for k, v in pairs) == body.rstrip(","):
            return dict(pairs)
    labels: dict[str, str] = {}
    pos = 0
    body = body.rstrip()
    while pos < len(body):
        match = _LABEL.match(body, pos)
        if not match or match.end() == pos:
            raise SeriesError(f"bad label syntax near {body[pos:pos + 30]!r}")
        value = match[2]
        labels[match[1]] = _ESCAPE.sub(lambda m: _UNESCAPE.get(m[1], "\\" + m[1]), value) if "\\" in value else value
        pos = match.end()
    return labels
