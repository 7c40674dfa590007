"""Output of a parallel shell: each host's lines read as that host's.

`pdsh -w node[01-08] nvidia-smi nvlink -e` and `clush -w ...` print every line a host printed as `node01: line`, the
hosts' lines interleaved as they arrive; `| dshbak -c` and `clush -b` print each host's output as a block under a
header naming the hosts whose output it is (identical outputs merged: `node[01-02,05]`, `node01,node03`):

    ----------------
    node[01-02]
    ----------------
    GPU 0: ...

Decided here, for every text reader that asks (`textlines.classify`):
- `host: ` prefixes are taken only when most non-blank lines of the input's head carry one, and only where the name
  holds a digit (nodes are numbered: node01, gpu-a07, 10.0.0.1) and is no word a log or a tool puts before a colon
  (`kernel:`, `NVRM:`, `nvidia-nvswitch3:`, `GPU0:`): a kernel log or a `step: 10` line is no host's.
- Interleaved prefixed lines are regrouped per host, hosts in the order they first appear, each host's lines in
  their own order; an unprefixed line among them (its prefix lost in the copy, pdsh's own `pdsh@login: ...` message)
  stays with the host of the line before it. A command line (a prompt) ends a run: what follows is read in order.
- A dshbak/clush -b header's host range is expanded (`node[01-03,07]`, `rack[1-2]-n[1-2]`, `a01,b02`, clush's
  count `(2)` after it) and each host gets the block's lines: one reading per host.
- Each host's lines open with a `host` line (`textlines.Line`), which the readers take as a prompt naming that host
  (`Collector.take_host`): a node the command gives (`--node`) holds every reading, as with prompts.
Assumed, not seen in a real paste of these tools' output: clush's `host: ` form is pdsh's; dshbak's header
lines are 16 dashes (any run of three or more is taken); a blank line pdsh prints keeps its `host: ` (trailing
space or not).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

PREFIX = "prefix"  # pdsh / clush: `host: line`
BLOCKS = "blocks"  # dshbak -c / clush -b: a header per block

_PREFIXED = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*):(?: (?P<rest>.*))?$")
# words a log line or a tool's output puts before a colon, which are no host
_NOT_HOST = re.compile(r"(?i)^(?:kernel|kern|nvrm|nvidia[\w.-]*|s?xid\d*|pcieport|mlx\d[\w.-]*|ib\d+|eth\d+|en[ops]\w*"
                       r"|gpu\d*|link\d*|lane\d*|rank\d+|nvswitch\d*|port\d*|cpu\d*|node|\d+)$")
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_HEADER_HOSTS = re.compile(r"^\s*(?P<hosts>[A-Za-z0-9][\w.\-\[\],]*)(?:\s+\(\d+\))?\s*$")
_RANGE = re.compile(r"^(?P<head>[^\[\]]*)\[(?P<ranges>[^\[\]]+)\](?P<rest>.*)$")
MAX_HOSTS = 10_000  # a header naming more is no header a paste holds (a damaged range)


def host_of(text: str) -> tuple[str, str] | None:
    """(host, the line it printed) of a `host: line`, or None where the line carries no host's prefix."""
    found = _PREFIXED.match(text)
    if not found or _NOT_HOST.match(found["host"]) or not any(c.isdigit() for c in found["host"]):
        return None
    return found["host"], found["rest"] or ""


def expand(hosts: str) -> list[str] | None:
    """The hosts a pdsh/clush host list names (`node[01-03,07]`, `a01,b[1-2]`), or None where it names none."""
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(hosts):
        depth += (char == "[") - (char == "]")
        if depth < 0 or depth > 1:
            return None
        if char == "," and depth == 0:
            pieces.append(hosts[start:i])
            start = i + 1
    pieces.append(hosts[start:])
    out: list[str] = []
    for piece in pieces:
        named = _expand_one(piece)
        if not named or len(out) + len(named) > MAX_HOSTS:
            return None
        out.extend(named)
    return out


def _expand_one(piece: str) -> list[str] | None:
    found = _RANGE.match(piece)
    if found is None:
        return [piece] if piece and "[" not in piece and "]" not in piece else None
    rest = _expand_one(found["rest"]) if found["rest"] else [""]
    if rest is None:
        return None
    numbers: list[str] = []
    for part in found["ranges"].split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return None
        last = int(high) if dash else int(low)
        if last < int(low) or last - int(low) >= MAX_HOSTS:
            return None
        numbers.extend(f"{n:0{len(low)}d}" for n in range(int(low), last + 1))
    return [f"{found['head']}{n}{tail}" for n in numbers for tail in rest]


def _header(lines: list[tuple[int, str]], i: int) -> list[str] | None:
    """The hosts of a dshbak/clush -b header starting at `lines[i]` (dashes, hosts, dashes), or None."""
    if i + 2 >= len(lines) or not _DASHES.match(lines[i][1]) or not _DASHES.match(lines[i + 2][1]):
        return None
    found = _HEADER_HOSTS.match(lines[i + 1][1])
    return expand(found["hosts"]) if found else None


def detect(texts: list[str]) -> str | None:
    """PREFIX, BLOCKS or None: the form of parallel shell output the input's head is in."""
    numbered = list(enumerate(texts))
    if any(_header(numbered, i) for i in range(len(numbered))):
        return BLOCKS
    filled = [text for text in texts if text.strip()]
    prefixed = sum(host_of(text) is not None for text in filled)
    return PREFIX if filled and prefixed * 2 > len(filled) else None


def regroup(numbered: Iterable[tuple[int, str]], form: str,
            ends_run: Callable[[str], bool] = lambda text: False) -> Iterator[tuple[int, str, str | None]]:
    """(number, text, host) of each line in reading order; a line with a host is no output line but the start of
    that host's lines (its text the header or prefix it comes from). `ends_run(text)`: a line (a prompt) after
    which the lines are read in order again."""
    lines = list(numbered)  # only a parallel shell's output, a paste, is held whole
    yield from (_blocks if form == BLOCKS else _prefixed)(lines, ends_run)


def _prefixed(lines: list[tuple[int, str]], ends_run: Callable[[str], bool]
              ) -> Iterator[tuple[int, str, str | None]]:
    run: dict[str, list[tuple[int, str]]] = {}
    last: str | None = None
    for number, text in lines:
        found = host_of(text)
        if found is not None:
            last = found[0]
            run.setdefault(last, []).append((number, found[1]))
        elif last is not None and not ends_run(text):
            run[last].append((number, text))
        else:
            yield from _flush(run)
            last = None
            yield number, text, None
    yield from _flush(run)


def _flush(run: dict[str, list[tuple[int, str]]]) -> Iterator[tuple[int, str, str | None]]:
    for host, lines in run.items():
        yield lines[0][0], f"{host}:", host
        yield from ((number, text, None) for number, text in lines)
    run.clear()


def _blocks(lines: list[tuple[int, str]], ends_run: Callable[[str], bool]
            ) -> Iterator[tuple[int, str, str | None]]:
    i = 0
    while i < len(lines):
        hosts = _header(lines, i)
        if hosts is None:
            yield lines[i][0], lines[i][1], None
            i += 1
            continue
        number, named = lines[i + 1]
        i += 3
        block: list[tuple[int, str]] = []
        while i < len(lines) and _header(lines, i) is None and not ends_run(lines[i][1]):
            block.append(lines[i])
            i += 1
        for host in hosts:
            yield number, named, host
            yield from ((n, text, None) for n, text in block)
