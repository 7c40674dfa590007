"""What every reader of pasted shell text shares: line kinds, bus ids, stated times and a row collector.

Engineers paste outputs with the shell around them (a prompt, the command, a Markdown fence, a provenance
comment, an author's `[...]`). Every text reader classifies lines the same way here, so each one skips the
same noise silently and warns about the same gaps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pandas as pd

from .. import values
from ..tables import TABLES
from ..values import Refused, describe, no_value
from . import fanout
from .base import IngestResult, IngestWarning, Source
from .zones import PRINTED, in_utc

_PROVENANCE = re.compile(r"^\s*#\s*(?:source|note)\s*:", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_ELISION = re.compile(r"^\s*(?:\[\s*\.\.\.\s*\]|\.{3,}|…|--)\s*$")  # `--`: grep -A/-B/-C's gap between groups
# `$ cmd`, `user@host:~$ cmd`, `root@host:/x# cmd`, `[user@host dir]$ cmd`, `(venv) user@host:~$ cmd`
_NAME = r"[^\s:@$#\[\]()/\\]+"  # a user or host name in any script (`nœud-07`, `узел-3`, decomposed accents)
_PROMPT = re.compile(
    rf"^\s*(?:\([^)]*\)\s*)?(?:(?P<host1>{_NAME}@(?P<h1>{_NAME}))(?::[^\s$#]*)?\s?[$#]|\[{_NAME}@(?P<h2>{_NAME})[^\]]*\][$#]|\$)"
    r"\s+(?P<cmd>\S.*)$"
)
# A command line pasted without its prompt (or after a root shell's bare `# `, or a page's `> `): only the tools whose
# output fabricbot reads, and launchers.
_TOOL_NAMES = r"nvidia-smi|dcgmi|lspci|dmesg|journalctl|mpirun|srun|torchrun"
_TOOLS = rf"(?:sudo\s+)?(?:\S*/)?(?:{_TOOL_NAMES}|\w+_perf(?:_mpi)?)(?:\s|$)"
_BARE_COMMAND = re.compile(r"^\s*" + _TOOLS)
# A prompt a shell theme decorates (`user@host:~ ➜ $ nvidia-smi -q`, `user@host ~ ❯ nvidia-smi`): taken as one only
# before a command of the tools above, so a text line with an `@` in it stays text.
_THEMED_PROMPT = re.compile(
    rf"^\s*(?:\([^)]*\)\s*)?{_NAME}@(?P<h>{_NAME})(?::\S*)?(?:\s+\S{{1,3}}){{0,3}}?\s*[$#%>❯➜»]\s+(?P<cmd>(?="
    + _TOOLS + ").*)$"
)
_ROOT_PROMPT = re.compile(r"^\s*[#>]\s+(?=" + _TOOLS + ")")
# What every command line or fence above holds somewhere (a prompt's `$` or `@`, a tool's name, a fence's marks): a
# cheap look for one through a long text before its lines are classified one by one.
COMMAND_HINT = re.compile(rf"[$@]|```|~~~|{_TOOL_NAMES}|_perf")
_ISO_TIME = re.compile(r"^\s*(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s*$")
# `date` as glibc's locales print it (their `date_fmt`, which coreutils' `date` prints, and `d_t_fmt`, which it
# printed before): C and POSIX `Wed May 13 11:00:00 UTC 2026` (the GNU coreutils manual, date invocation), en_US
# `Wed May 13 11:00:00 AM UTC 2026` (`%a %b %e %r %Z %Y`; `%a %d %b %Y %r %Z` before), en_GB and most others
# `Wed 13 May 11:00:00 UTC 2026` and `Wed 13 May 2026 11:00:00 UTC` (`%a %e %b %H:%M:%S %Z %Y`, `%a %d %b %Y %T %Z`),
# `date -R` `Wed, 13 May 2026 11:00:00 +0200`; nvidia-smi's Timestamp, `Wed May 13 11:00:00 2026`, names no zone.
# The zone is an abbreviation or, for a zone that has none, an offset (`+03`): `zones.PRINTED`, as journalctl's.
_DATE_TIME = re.compile(
    r"^\s*(?:Timestamp\s*:\s*)?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+"
    r"(?:(?P<month>[A-Za-z]{3})\s+(?P<day>\d{1,2})|(?P<day2>\d{1,2})\s+(?P<month2>[A-Za-z]{3}))"
    r"(?:\s+(?P<year>\d{4}))?,?\s+(?P<clock>\d{1,2}:\d{2}:\d{2})(?:\s*(?P<half>[AaPp][Mm]))?"
    rf"(?:\s+(?P<zone>{PRINTED}))?(?:\s+(?P<year2>\d{{4}}))?\s*$"
)
# a month as syslog and journalctl print it (`%b`, `%B`) in any case: English, whole or cut, and where the Germanic
# and French locales' own differ (sv, da, nb: maj, marts, okt, des; de: mär, mai, okt, dez; nl: mrt, mei, okt; fr:
# janv, févr, avr, juil, août, déc and their whole names); journalctl under sv_SE prints `april 19 09:27:03`, under
# zh_CN `11月 15 14:15:47`. Other locales' words (es, it, pt) are not read: such a line keeps no time
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_OTHER_MONTHS = {"januari": 1, "janv": 1, "janvier": 1, "févr": 2, "fév": 2, "février": 2, "februari": 2, "mär": 3,
                 "märz": 3, "mrz": 3, "mrt": 3, "maart": 3, "mars": 3, "marts": 3, "avr": 4, "avril": 4, "maj": 5,
                 "mai": 5, "mei": 5, "juni": 6, "juin": 6, "juli": 7, "juil": 7, "juillet": 7, "augusti": 8,
                 "augustus": 8, "août": 8, "septembre": 9, "okt": 10, "oktober": 10, "octobre": 10, "novembre": 11,
                 "dez": 12, "dezember": 12, "des": 12, "desember": 12, "déc": 12, "décembre": 12}
MONTH_WORD = r"(?:[^\W\d_]{3,9}\.?|\d{1,2}[月월])"  # a word a month may be (zh, ja `11月`, ko `11월`): `month_number`


def month_number(word: str) -> int | None:
    """The month (1-12) a printed month word names (`Apr`, `april`, `Sept.`, `okt`, `11月`); None for any other."""
    word = word.lower().rstrip(".")
    if word[:-1].isdigit() and word[-1] in "月월":
        return int(word[:-1]) if 1 <= int(word[:-1]) <= 12 else None
    if word in _OTHER_MONTHS:
        return _OTHER_MONTHS[word]
    if len(word) >= 3:
        for number, name in enumerate(_MONTH_NAMES, 1):
            if name.startswith(word):
                return number
    return None
# what a line that looks like a date and time alone is made of (`looks_dated`): a clock, numbers, short words in any
# script (another locale's names: `Mi 13. Mai 11:00:00 CEST 2026`), an offset; or ISO 8601's date and a time
_DATE_WORD = re.compile(r"(?P<clock>\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)|(?P<year>(?:19|20)\d{2})[.,]?|\d{1,2}[.,]?"
                        r"|(?P<name>[^\W\d_]{1,12}[.,]?)|[+-]\d{2}(?::?\d{2})?")
_ISO_LIKE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}\S*(?:\s+\S+)?\s*$")
# A command that opens a shell in a container on the same machine: the prompts after it name the container, not a node
_INTO_CONTAINER = re.compile(r"^\s*(?:sudo\s+)?(?:(?:docker|podman|nerdctl)\s+(?:container\s+)?(?:exec|run|attach)|"
                             r"enroot\s+(?:start|exec)|(?:singularity|apptainer)\s+(?:shell|exec|run))\b")
# `ssh node01 nvidia-smi nvlink -e` typed at a login host: the output is node01's (options with an argument allowed)
_REMOTE = re.compile(r"^\s*ssh\s+(?:-[46AaCfGgKkMNnqsTtVvXxYy]+\s+|-[bcDEeFIiJLlmOoPpQRSWw]\s*\S+\s+)*"
                     r"(?:[^\s@]+@)?(?P<host>[A-Za-z0-9][\w.-]*)\s+\S")
# srt-slurm's hwinfo capture opens with `===== node01 | before | 2026-08-13T07:53:30Z =====`: the node it ran on, the
# phase of the job (before or after the run) and when
_BANNER = re.compile(r"^\s*={3,}\s+(?P<host>[^\s|=]+)\s*\|\s*(?P<phase>[^|=]*?)\s*\|\s*(?P<ts>\S+)\s+={3,}\s*$")
# the capture's section headings (`# ---------- NVLink ----------`): skipped as a fence is
_HEADING = re.compile(r"^\s*#\s*-{3,}\s*\w[^-]*?\s*-{3,}\s*$")
_BUS_ID = re.compile(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?")


UNNAMED = ""  # the node of the lines after a parallel shell's output: the local one, which no line names


class Line(NamedTuple):
    """One input line and what kind of shell text it is (a tuple: made for every line of a large log, it costs a
    fifth of a frozen dataclass)."""

    number: int
    text: str
    kind: str  # "text", "blank", "provenance", "fence", "command", "continuation", "elision", "repeat", "banner",
    # "heading", "host" (a parallel shell's host whose lines follow: `fanout`)
    command: str | None = None
    host: str | None = None  # from a `user@host` prompt
    cut: bool = False  # the input ends inside this line: `text` is only up to its last space or tab (see `Tail`)


def classify(source: Source, out: Collector, shows_end: Callable[[str], bool] | None = None, *,
             hosts: bool = True) -> Iterator[Line]:
    """Stream the lines of a source, each tagged with its kind (a command's `\\` continuations included; a text
    line the same as the text line before it, blank lines aside, is a `repeat`).

    A cut last line (see `Tail`) is read only up to its last space or tab, and `out` warns of the rest, unless
    `shows_end` says it is whole (see `Source.read_lines`). A parallel shell's output (pdsh, dshbak: `fanout`)
    comes each host's lines together, after a `host` line naming it (one naming none where the local node's lines
    follow), unless `hosts` is False (a reader that takes each line's host itself)."""
    continuing = False
    previous = ""
    cut: list[int] = []

    def note(warning: IngestWarning) -> None:
        cut.append(warning.line or 0)
        out.note(warning)

    lines: Iterable[tuple[int, str, str | None]] = ((n, t, None) for n, t in source.read_lines(note, shows_end))
    if hosts and source.fanout is not None:
        blocks = source.fanout == fanout.BLOCKS  # whose block may hold its command pasted bare (`dcgmi nvlink -s`)
        lines = fanout.regroup(((n, t) for n, t, _ in lines), source.fanout,  # a prompt: no host's output
                               lambda text: classify_line(0, text).kind in ("command", "banner", "fence")
                               and not (blocks and _BARE_COMMAND.match(text)), warn=out.warn)
    for number, text, host in lines:
        if host is not None:
            continuing, previous = False, ""
            yield Line(number, text, "host", host=host, cut=number in cut)
            continue
        if continuing:
            continuing = text.rstrip().endswith("\\")
            yield Line(number, text, "continuation", text.strip(), cut=number in cut)
            continue
        line = classify_line(number, text)
        if line.kind == "text" and text.strip() == previous:
            line = Line(number, text, "repeat")
        elif line.kind != "blank":
            previous = text.strip() if line.kind == "text" else ""
        yield line._replace(cut=True) if number in cut else line
        continuing = line.kind == "command" and text.rstrip().endswith("\\")


def classify_line(number: int, text: str) -> Line:
    stripped = text.lstrip()
    if not stripped:
        return Line(number, text, "blank")
    first = stripped[0]  # cheap guards before each pattern: large logs go through here line by line
    if first == "#" and _PROVENANCE.match(text):
        return Line(number, text, "provenance")
    if first == "#" and _HEADING.match(text):
        return Line(number, text, "heading")
    if first in "#>" and (root := _ROOT_PROMPT.match(text)):
        return Line(number, text, "command", text[root.end():].strip())
    if first in "`~" and _FENCE.match(text):
        return Line(number, text, "fence")
    if first == "=" and (banner := _BANNER.match(text)):
        return Line(number, text, "banner", host=banner["host"])
    if first in "[.…-" and _ELISION.match(text):
        return Line(number, text, "elision")
    if (first in "$(" or "@" in stripped) and (prompt := _PROMPT.match(text)):
        return Line(number, text, "command", prompt["cmd"].strip(), prompt["h1"] or prompt["h2"])
    if "@" in stripped and (themed := _THEMED_PROMPT.match(text)):
        return Line(number, text, "command", themed["cmd"].strip(), themed["h"])
    if _BARE_COMMAND.match(text):
        return Line(number, text, "command", text.strip())
    return Line(number, text, "text")


def normalize_bus_id(raw: str) -> str | None:
    """`00000000:3B:00.0`, `0000:dc:00`, `3b:00.0` -> `0000:3b:00.0`; None when it is not a bus id."""
    match = _BUS_ID.fullmatch(raw.strip())
    if not match:
        return None
    domain = int(match[1] or "0", 16)
    return f"{domain:04x}:{match[2].lower()}:{match[3].lower()}.{match[4] or '0'}"


def one_edit(word: str, known: str) -> bool:
    """`word` is `known` with one letter changed, added or left out (a flipped byte in a keyword), not `known`."""
    if word == known or abs(len(word) - len(known)) > 1:
        return False
    if len(word) == len(known):
        return sum(a != b for a, b in zip(word, known, strict=True)) == 1
    short, long = sorted((word, known), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def near(text: str) -> re.Pattern[str]:
    """`text` with any one character changed (a flipped byte): found anywhere in a line at regular-expression speed."""
    return re.compile("|".join(re.escape(text[:i]) + "." + re.escape(text[i + 1:]) for i in range(len(text))))


class Stated(NamedTuple):
    """A time a line states, in UTC."""

    at: pd.Timestamp
    zoned: bool  # the line states a zone
    refused: str | None = None  # why the zone it states is not taken (the time is read as UTC): `zones.in_utc`


def stated_time(text: str) -> Stated | None:
    """A line that is only a time (`date` output, ISO 8601, an nvidia-smi Timestamp)."""
    iso = _ISO_TIME.match(text)
    if iso:
        ts = parse_time(iso[1])
        if ts is None:
            return None
        zoned = ts.tzinfo is not None
        return Stated(ts.tz_convert("UTC") if zoned else ts.tz_localize("UTC"), zoned)
    printed = printed_date(text)
    if printed is None:
        return None
    found, zone = printed
    if zone is None:
        return Stated(found.tz_localize("UTC"), False)
    at = in_utc(found, zone)
    if isinstance(at, str):
        return Stated(found.tz_localize("UTC"), True, f"the zone {zone!r} {at}")
    return Stated(at, True)


def printed_date(text: str) -> tuple[pd.Timestamp, str | None] | None:
    """A line that is only a `date` (`Tue Jul 23 07:54:00 UTC 2024`, or ISO 8601 as `date -Is` prints it): its time
    as printed, no zone applied, and the zone it names (an abbreviation or an offset; None: none)."""
    if iso := _ISO_TIME.match(text):
        ts = parse_time(iso[1])
        if ts is None:
            return None
        if ts.tzinfo is None:
            return ts, None
        return ts.tz_localize(None), "UTC" if iso[1].endswith("Z") else ts.strftime("%z")
    date = _DATE_TIME.match(text)
    if not date or (date["year"] is None) == (date["year2"] is None):
        return None
    month, clock, half = month_number(date["month"] or date["month2"]), date["clock"], date["half"]
    if month is None:
        return None
    hour, rest = clock.split(":", 1)
    if half:  # 12 AM is midnight, 12 PM noon
        if not 1 <= int(hour) <= 12:
            return None
        clock = f"{int(hour) % 12 + (12 if half.lower() == 'pm' else 0):02d}:{rest}"
    found = parse_time(f"{date['year'] or date['year2']}-{month:02d}-"
                       f"{int(date['day'] or date['day2']):02d} {clock}")
    return None if found is None else (found, date["zone"])


def looks_dated(text: str) -> bool:
    """A line that is a date and time alone, in a form `stated_time` does not read (another language's names, a
    time or zone that is none): a few words, one clock and a year (or ISO 8601's date and a time)."""
    if _ISO_LIKE.match(text):
        return True
    words = [_DATE_WORD.fullmatch(word) for word in text.split()]
    if not 3 <= len(words) <= 7 or not all(words):
        return False
    found = [w for w in words if w is not None]
    return (sum(w["clock"] is not None for w in found) == 1 and any(w["year"] for w in found)
            and sum(w["name"] is not None for w in found) <= 4)


def parse_time(text: str) -> pd.Timestamp | None:
    """A time as printed, or None when it is no time (`03:14:87`, month 13, before 1970 or after 2262)."""
    try:
        ts = pd.Timestamp(text)
    except (ValueError, OverflowError):  # pandas' DateParseError and OutOfBoundsDatetime are ValueErrors
        return None
    return None if pd.isna(ts) else values.time(ts)


@dataclass
class Collector:
    """Rows per table and warnings for one source; runs of unread lines become one warning each."""

    source: Source
    fmt: str
    node_id: str | None = None
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    warnings: list[IngestWarning] = field(default_factory=list)
    timestamp: pd.Timestamp | None = None
    partial: bool = False  # `IngestResult.partial`
    banner: tuple[str | None, pd.Timestamp | None] | None = None  # a capture banner's node and time (`take_banner`)
    unread_times: list[int] = field(default_factory=list)  # lines that look like a `date` line and are not read
    _captured: dict[str, list[int]] = field(default_factory=dict)  # `IngestResult.captured`
    _given: bool = False  # the command gives the node (`--node`): every reading is its, whatever the input names
    _first: str | None = None  # the first node the input names: the lines before it are that node's
    _times: dict[str | None, pd.Timestamp | None] = field(default_factory=dict)  # a node left -> the time it stated
    _carried: pd.Timestamp | None = None  # the time the current node took on entering (not one it stated)
    _inside: dict[str, str] = field(default_factory=dict)  # a container's host name -> the node it runs on
    _entering: bool = False  # the last prompt's command opens a shell in a container (`docker exec -it ... bash`)
    _banner_nodes: set[str] = field(default_factory=set)  # `IngestResult.banner_nodes`
    _unread: list[Line] = field(default_factory=list)  # the first and the last of a run: memory stays bounded
    _said: set[str] = field(default_factory=set)
    _cut_at: int | None = None  # the line a warning says the input is cut inside: what is left of it is no more said

    def __post_init__(self) -> None:
        self._given = self.node_id is not None

    def where(self, number: int) -> str:
        return f"{self.source.name}:{number}"

    def add(self, table: str, number: int, **values: Any) -> dict[str, Any]:
        self.flush()
        row: dict[str, Any] = {"node_id": self.node_id, "source": self.where(number)}
        rows = self.rows.setdefault(table, [])
        if table in ("link_samples", "step_samples", "events"):
            row["timestamp"] = self.timestamp
            if self.banner is not None and self.timestamp is not None and self.timestamp is self.banner[1]:
                self._captured.setdefault(table, []).append(len(rows))
        row.update(values)
        rows.append(row)
        return row

    def warn(self, number: int | None, message: str, *, cut: bool = False, unread: bool = False) -> None:
        self.note(IngestWarning(self.source.name, number, message, cut=cut, unread=unread))

    def note(self, warning: IngestWarning) -> None:
        """A warning already made (by `Source.read_lines`), in its place among this reader's."""
        self.flush()
        self.warnings.append(warning)
        if warning.cut:
            self._cut_at = warning.line

    def retell(self, number: int, message: str) -> None:
        """The cut-line warning of this line (`note`) said again as the reader knows it now: what of it is lost."""
        self.flush()
        for i, warning in enumerate(self.warnings):
            if warning.line == number and warning.cut:
                self.warnings[i] = IngestWarning(self.source.name, number, message, cut=True)
                return
        self.warnings.append(IngestWarning(self.source.name, number, message, cut=True))

    def value(self, number: int, raw: str | float, check: Callable[[str | float], Any], what: str) -> Any:
        """`check(raw)` (a function of `values`), or None: nothing for a tool's N/A, a warning naming the line
        and the value for anything the check refuses."""
        if isinstance(raw, str) and no_value(raw):
            return None
        try:
            return check(raw)
        except Refused as why:
            self.warn(number, f"{what} = {describe(raw)}: {why}; not read")
            return None

    def checked(self, role: str, number: int, raw: str | float, kind: str, what: str) -> Any:
        """`raw` as a `values.<role>` (counter, index, gauge or level) of `kind`, or None (see `value`)."""
        check = getattr(values, role)
        return self.value(number, raw, lambda r: check(r, kind), what)

    def once(self, key: str, number: int | None, message: str) -> None:
        """A warning that applies to the whole input: given at its first line, once."""
        if key not in self._said:
            self._said.add(key)
            self.warn(number, message)

    def unread(self, line: Line) -> None:
        """A line this reader cannot use: gathered with its neighbours into one warning; the remnant of a line the
        input is cut inside, said to be cut already, is not said again as a line of another output."""
        if line.number == self._cut_at:
            return
        if len(self._unread) < 2:
            self._unread.append(line)
        else:
            self._unread[1] = line

    def flush(self) -> None:
        if not self._unread:
            return
        first, last = self._unread[0], self._unread[-1]
        span = f"lines {first.number}-{last.number}" if last.number != first.number else "this line"
        self.warnings.append(
            IngestWarning(
                self.source.name,
                first.number,
                f"{span} not read as {self.fmt} output (starts {first.text.strip()[:60]!r})",
                unread=True,
            )
        )
        self._unread.clear()

    def take_time(self, line: Line) -> bool:
        """Use a line that states a time as the time of the readings after it. One that looks like a `date` line but
        is not read is said, and the readings after it keep the time before it (`unread_times`)."""
        found = stated_time(line.text)
        if not found:
            if not looks_dated(line.text):
                return False
            self.unread_times.append(line.number)
            self.warn(line.number, f"{line.text.strip()[:60]!r} looks like a `date` line but is in no form this "
                                   "reader knows (`date` as the C, en_US or en_GB locale prints it, or ISO 8601): "
                                   "not read, so the readings after it keep the time before it")
            return True
        self.timestamp = found.at
        if found.refused:
            self.warn(line.number, f"{line.text.strip()[:60]!r}: {found.refused}; read as UTC (`date -u` prints UTC)")
        elif not found.zoned:
            self.warn(line.number, "the time states no zone; read as UTC")
        return True

    def take_banner(self, line: Line) -> None:
        """A capture banner (srt-slurm's hwinfo): its node is the readings' node, unless the command gives one (or a
        prompt named one before), and its time their time until a `date` line states another; `--at` wins over it
        (`IngestResult.captured`). Said, so the node and time are not taken silently."""
        found = _BANNER.match(line.text)
        assert found is not None  # a line classified as a banner
        stamp = stated_time(found["ts"])
        ours = self.node_id is None or (self.banner is not None and self.node_id == self.banner[0])
        self.banner = (found["host"] if ours else None, stamp[0] if stamp else None)
        if ours:
            self.enter(found["host"])
            self._banner_nodes.add(found["host"])
        if stamp:
            self.timestamp = stamp[0]
        took = [f"node {found['host']!r}" if ours else "", f"time {stamp[0]:%Y-%m-%d %H:%M:%S} UTC" if stamp else ""]
        said = " and ".join(t for t in took if t) or "nothing"
        self.warn(line.number, f"a capture banner ({found['phase'] or 'no phase'}): its readings are taken as its "
                               f"{said}" + ("" if ours else f" (node {self.node_id!r} is kept, not the banner's "
                                                            f"{found['host']!r})")
                  + ("" if stamp else f"; {found['ts'][:30]!r} is no time") + "; --node and --at give others")

    def take_host(self, line: Line) -> None:
        """A prompt that names a host (`root@nodeB:~#`), or a parallel shell's host (`fanout`), starts that host's
        readings: a paste of shell sessions on several nodes is each node's. One that names none (`$ `, `# `)
        keeps the node; a node the command gives holds every reading; a container's shell opened from a node's
        prompt (its host name the container's id) is that node's."""
        if line.kind == "host" and not line.host and not self._given:
            self.enter(UNNAMED)  # a parallel shell's output ended: the local node's follows
        if line.host and not self._given:
            host = self._inside.get(line.host, line.host)
            if self._entering and self.node_id is not None and host != self.node_id:
                self._inside[line.host] = host = self.node_id
            self.enter(host)
        self._entering = bool(_INTO_CONTAINER.match(line.command or ""))
        if not self._given and (remote := _REMOTE.match(line.command or "")):  # its output is the remote host's
            self.enter(remote["host"])

    def enter(self, node: str) -> None:
        """The readings from here are `node`'s, at the time its own lines stated last, or the time stated last
        where it stated none (a `date` typed at a login host before `ssh node01` is when node01 was read); the
        first node named also holds the lines before it."""
        if node == self.node_id:
            return
        if self.node_id is None:
            self._first = self._first or node
        else:
            if self.timestamp is not self._carried:  # a time the node's own lines stated
                self._times[self.node_id] = self.timestamp
            self.timestamp = self._times.get(node, self.timestamp)
        self._carried = self.timestamp
        self.node_id = node

    def time_of(self, node: str | None) -> pd.Timestamp | None:
        """The time `node`'s readings take: the one its own lines stated last, else the one stated before it."""
        return self.timestamp if node == self.node_id else self._times.get(node, self.timestamp)

    def result(self) -> IngestResult:
        self.flush()
        frames = {}
        for table, rows in self.rows.items():
            # Every schema column present (empty ones as NaN) so conform only casts, whatever a row lacked.
            frame = pd.DataFrame(rows).reindex(columns=list(TABLES[table].columns))
            if (node := self._first or self.node_id) is not None and "node_id" in frame:
                frame["node_id"] = frame["node_id"].fillna(node)
                frame["node_id"] = frame["node_id"].mask(frame["node_id"] == UNNAMED)
            frames[table] = frame
        # a dshbak block read once a host says the same of the same line each time: said once
        result = IngestResult.of(dict.fromkeys(self.warnings), **frames)
        result.partial = self.partial
        result.captured, result.banner_nodes = self._captured, self._banner_nodes
        return result


def skip_shell(line: Line, out: Collector) -> bool:
    """Handle the lines every text reader treats alike; True when the line needs nothing more."""
    if line.kind in ("blank", "provenance", "fence", "continuation", "heading"):
        return True
    if line.kind in ("command", "host"):
        out.take_host(line)
        return True
    if line.kind == "banner":
        out.take_banner(line)
        return True
    if line.kind == "repeat":  # no output these readers take prints one line twice in a row: a copy's doubling
        out.warn(line.number, "this line repeats the line before it exactly; read once")
        return True
    if line.kind == "elision":
        out.warn(line.number, f"{line.text.strip()!r}: the output is cut off or elided here; what it stands for "
                              "is not read", cut=True)
        return True
    return out.take_time(line)
