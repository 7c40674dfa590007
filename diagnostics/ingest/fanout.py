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
  is `hostlike`, as a dshbak header's hosts must be: a kernel log or a `step: 10` line is no host's.
- Interleaved prefixed lines are regrouped per host, hosts in the order they first appear, each host's lines in
  their own order; an unprefixed line among them (its prefix lost in the copy, pdsh's own `pdsh@login: ...` message)
  stays with the host of the line before it. A command line (a prompt, or a tool's command pasted bare) or an
  unprefixed line after an unprefixed blank line ends a run: what follows (the local node's output) is read in order.
- A dshbak/clush -b header's host range is expanded (`node[01-03,07]`, `rack[1-2]-n[1-2]`, `a01,b02`, clush's
  count `(2)` after it) and each host gets the block's lines: one reading per host, up to `MAX_COPIED` lines copied.
- Each host's lines open with a `host` line (`textlines.Line`), which the readers take as a prompt naming that host
  (`Collector.take_host`): a node the command gives (`--node`) holds every reading, as with prompts.
Assumed, not seen in a real paste of these tools' output: clush's `host: ` form is pdsh's; dshbak's header
lines are 16 dashes (any run of three or more is taken); a blank line pdsh prints keeps its `host: ` (trailing
space or not).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from .. import format as fmt

PREFIX = "prefix"  # pdsh / clush: `host: line`
BLOCKS = "blocks"  # dshbak -c / clush -b: a header per block

_PREFIXED = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*):(?: (?P<rest>.*))?$")
# words a log line or a tool's output puts before a colon, which are no host
# (as printed: `GPU0:` is a kernel word, `gpu01:` a host, as clusters name them)
_NOT_HOST = re.compile(r"^(?:kernel|kern|nvidia-(?:nvswitch|modeset|uvm|drm)\d*|[sS]?[xX]id\d*|pcieport|mlx\d_\d+"
                       r"|ib\d+|eth\d+|en[ops]\d\w*|rank\d+|lane\d+|port\d+|nvswitch\d*|\d+|[A-Z]+\d*"
                       r"|\d{4}-\d{2}-\d{2}(?:[T_]\S*)?|\d{1,2}[-:.]\d{2}(?:[-:.]\d{2})?)$")  # a framed date, a clock
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_HEADER_HOSTS = re.compile(r"^\s*(?P<hosts>[A-Za-z0-9][\w.\-\[\],]*)(?:\s+\(\d+\))?\s*$")
_RANGE = re.compile(r"^(?P<head>[^\[\]]*)\[(?P<ranges>[^\[\]]+)\](?P<rest>.*)$")
MAX_HOSTS = 10_000  # a header naming more is no header a paste holds (a damaged range)
# the most lines a paste's headers give their hosts beyond each block's first host (copies of the block): a short block
# under a long range (`gpu[0001-9999]`) is read for the hosts this allows, and the others are said to be left unread
MAX_COPIED = 20_000


def hostlike(name: str) -> bool:
    """Whether a name can be a host's, the one rule for pdsh's prefixes and dshbak's headers: nodes are numbered
    (node01, gpu-a07, 10.0.0.1), and no word a log or a tool puts before a colon is one (`kernel:`, `NVRM:`,
    `nvidia-nvswitch3:`, `GPU0:`), nor a heading or a date framed as a header is (`Summary`, `2026-05-13`)."""
    return any(c.isdigit() for c in name) and not _NOT_HOST.match(name)


def host_of(text: str) -> tuple[str, str] | None:
    """(host, the line it printed) of a `host: line`, or None where the line carries no host's prefix."""
    found = _PREFIXED.match(text)
    if not found or not hostlike(found["host"]):
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
    hosts = expand(found["hosts"]) if found else None
    return hosts if hosts and all(map(hostlike, hosts)) else None


def detect(texts: list[str]) -> str | None:
    """PREFIX, BLOCKS or None: the form of parallel shell output the input's head is in."""
    numbered = list(enumerate(texts))
    if any(_header(numbered, i) for i in range(len(numbered))):
        return BLOCKS
    filled = [text for text in texts if text.strip()]
    prefixed = sum(host_of(text) is not None for text in filled)
    return PREFIX if filled and prefixed * 2 > len(filled) else None


def regroup(numbered: Iterable[tuple[int, str]], form: str, ends_run: Callable[[str], bool] = lambda text: False,
            *, once: bool = False, warn: Callable[[int, str], None] = lambda number, message: None
            ) -> Iterator[tuple[int, str, str | None]]:
    """(number, text, host) of each line in reading order; a line with a host is no output line but the start of
    that host's lines (its text the header or prefix it comes from; host "": the hosts' lines end, the local
    node's follow). `ends_run(text)`: a line (a prompt) after
    which the lines are read in order again. `once`: a dshbak block only for its first host (what a sniff looks at:
    each block once, however many hosts it names); `warn(line, message)` says the hosts left unread (`MAX_COPIED`)."""
    lines = list(numbered)  # only a parallel shell's output, a paste, is held whole
    if form == BLOCKS:
        yield from _blocks(lines, ends_run, MAX_COPIED if not once else -1, warn)
    else:
        yield from _prefixed(lines, ends_run)


def _prefixed(lines: list[tuple[int, str]], ends_run: Callable[[str], bool]
              ) -> Iterator[tuple[int, str, str | None]]:
    run: dict[str, list[tuple[int, str]]] = {}
    last: str | None = None
    gap = False  # the line before was blank and carried no prefix: pdsh prints a host's blank line as `host: `
    for number, text in lines:
        found = host_of(text)
        if found is not None:
            last, gap = found[0], False
            run.setdefault(last, []).append((number, found[1]))
        elif last is not None and not ends_run(text) and not (gap and text.strip()):
            run[last].append((number, text))
            gap = not text.strip()
        else:  # a prompt, or unprefixed lines after a blank line: another output, read in order
            if last is not None:
                yield from _flush(run)
                yield number, "", ""  # the local node's lines, which no line names
            last = None
            yield number, text, None
    yield from _flush(run)


def _flush(run: dict[str, list[tuple[int, str]]]) -> Iterator[tuple[int, str, str | None]]:
    for host, lines in run.items():
        yield lines[0][0], f"{host}:", host
        yield from ((number, text, None) for number, text in lines)
    run.clear()


def _blocks(lines: list[tuple[int, str]], ends_run: Callable[[str], bool], budget: int,
            warn: Callable[[int, str], None]) -> Iterator[tuple[int, str, str | None]]:
    """`budget`: the most lines copied for the hosts after each block's first (below 0: no copy)."""
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
        for k, host in enumerate(hosts):
            if k and len(block) > budget:
                if budget >= 0:
                    warn(number, f"a header naming {fmt.count(len(hosts), 'host')}: its block is read for the first "
                                 f"{fmt.count(k, 'host')}; {host} to {hosts[-1]} ({fmt.count(len(hosts) - k, 'host')})"
                                 f" are left unread (at most {fmt.number(MAX_COPIED)} lines of a paste are copied to "
                                 "hosts that share a block)")
                break
            budget -= len(block) if k else 0
            yield number, named, host
            yield from ((n, text, None) for n, text in block)
