"""A kernel log line's prefix: the time and host each log form puts before the kernel's message.

The forms: dmesg (`[12345.678]`, `dmesg -T`, `dmesg -x --time-format iso`), syslog (`Nov 29 16:00:01 host
kernel:`), journalctl (`-o short-iso`; `-o short-full` and `-o short-unix` in `journal`), `talosctl dmesg`
(`10.0.0.1: kern: err: [2026-...]: ...`), and pdsh/clush fan-out (`host: ` before each line). Only a prefix with a
date and year gives a time: dmesg's seconds since boot leave the timestamp empty (said once), rather than guess.
syslog's yearless dates take the year a journalctl header or a `date` line above them gives, else the latest that
puts them no later than the time the log was taken by (`journal.JournalSpan`; said once).
journalctl's `-o short-monotonic` (`[ 1234.567890] host kernel:`) and `-o short-delta` (`[ 1234.567890 <
0.000123>] host kernel:`) put the host after dmesg's seconds since boot: the host is read, the time is none.
"""

from __future__ import annotations

import re

import pandas as pd

from .journal import PREFIXES as JOURNAL
from .journal import JournalSpan, journal_prefix
from .textlines import MONTH_WORD, Collector, month_number, parse_time

# journalctl/syslog put the host before `kernel:`; `dmesg --time-format iso` has no host.
# a host name in any script (`nœud-07`, `узел-3`, decomposed accents): whatever the prefix holds before `kernel:`
_HOST = r"(?:(?P<host>[^\s\[\]:]+)\s+(?=kernel[:\[]))?"
_ISO = re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s+" + _HOST)
_SYSLOG = re.compile(r"^(?P<date>(?P<month>" + MONTH_WORD + r")\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?)\s+" + _HOST)
_DMESG_T = re.compile(r"^\[(?P<ts>\w{3} \w{3}\s+\d{1,2} \d{2}:\d{2}:\d{2} \d{4})\]\s*")
_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_DMESG_X = re.compile(r"^kern\s*:\s*\w+\s*:\s*(?P<ts>" + _STAMP + r")\s+")  # dmesg -x --time-format iso
_TALOS = re.compile(r"^(?P<host>[\w.:-]+): kern:\s*\w+:\s*\[(?P<ts>" + _STAMP + r")\]:\s*")
# dmesg's seconds since boot, or `dmesg -H`/`--reltime`'s seconds since the line before (`[  +0.000844]`), whose
# first line of each minute states the minute instead (`[Jan21 10:23]`, no year)
_UPTIME = re.compile(r"^\[\s*\+?\s*\d+\.\d+\]\s*")
_MINUTE = re.compile(r"^\[(?:" + MONTH_WORD + r")\s?\d{1,2} \d{2}:\d{2}\]\s*")
# /dev/kmsg records (`cat /dev/kmsg`, GPUd's kmsg watcher): `priority,sequence,microseconds since boot,flags;message`
# (the kernel's Documentation/ABI/testing/dev-kmsg)
_KMSG = re.compile(r"^\d+,\d+,\d+,[^;,\s]*(?:,[^;]*)?;")
# journalctl -o short-monotonic, -o short-delta (`<` the time since the entry before `>`): the host before `kernel:`
_MONOTONIC = re.compile(r"^\[\s*\d+\.\d+(?:\s*<\s*[\d.]+>)?\]\s+(?P<host>[^\s\[\]:]+)\s+(?=kernel[:\[])")
# pdsh and clush put `host: ` before each line a host printed (`pdsh -w gpu[01-64] dmesg -T`, `... journalctl -k`)
_FANOUT = re.compile(r"^(?P<host>[^\s:\[\]]+):\s+(?=\[|kernel[:\[]|NVRM:|" + MONTH_WORD + r"\s+\d{1,2}\s+\d{2}:\d{2}|"
                     r"(?:[A-Z][a-z]{2} )?\d{4}-\d{2}-\d{2}[T ])")
_KERNEL = re.compile(r"^kernel:\s*")
_HEAD = re.compile(r"^(.*?)(?:\bkernel[:\[]|NVRM:|nvidia-nvswitch|pcieport |nvidia \d)")  # what a prefix would be


RELTIME_NOTE = ("`dmesg -H` times are seconds since the line before and minutes with no year: these events carry no "
                "time of their own (`dmesg --time-format iso` prints one)")


def strip_prefix(text: str, out: Collector, number: int, spans: dict[str | None, JournalSpan] | None = None,
                 ) -> tuple[str, pd.Timestamp | None, str | None]:
    """The message without its log prefix, the time the prefix states (if it has a year, or `spans` gives one: a
    journalctl header or `date` above it, per the fan-out host that leads it, None for none) and the host."""
    ts: pd.Timestamp | None = None
    host: str | None = None
    body = text.strip()
    fanned = _FANOUT.match(body)
    spans = spans or {}
    if fanned and fanned["host"] not in ("NVRM", "kernel", "kern"):
        own = spans.get(fanned["host"])
        body, ts, host = strip_prefix(body[fanned.end():], out, number, {None: own} if own else spans)
        return body, ts, host or fanned["host"]
    if (match := _ISO.match(body)) or (match := _DMESG_X.match(body)) or (match := _TALOS.match(body)):
        stamp = parse_time(match["ts"].replace(",", "."))
        host, body = match.groupdict().get("host"), body[match.end():]
        if stamp is None:
            out.warn(number, f"the time {match['ts']!r} is no time (a digit changed?); the event has none")
        else:
            ts = stamp.tz_convert("UTC") if stamp.tzinfo else stamp.tz_localize("UTC")
            if stamp.tzinfo is None:
                out.once("iso", number, "log times state no zone; read as UTC")
    elif journal := journal_prefix(body, out, number):  # journalctl -o short-full, -o short-unix
        (match, ts), host = journal, journal[0]["host"]
        body = body[match.end():]
    elif (match := _SYSLOG.match(body)) and month_number(match["month"]) is not None:
        host, body = match["host"], body[match.end():]
        if (span := spans.get(None)) is not None:
            ts = span.date(match["date"], out, number)
        else:
            out.once("syslog", number, "syslog dates carry no year; these events have no timestamp")
    elif match := _DMESG_T.match(body):
        stamp = parse_time(match["ts"])
        body = body[match.end():]
        if stamp is None:
            out.warn(number, f"the time {match['ts']!r} is no time (a digit changed?); the event has none")
        else:
            ts = stamp.tz_localize("UTC")
            out.once("dmesg-T", number, "dmesg -T prints local time without a zone; read as UTC")
    elif match := _MONOTONIC.match(body):
        host, body = match["host"], body[match.end():]
        out.once("monotonic", number, "journalctl -o short-monotonic times are seconds since boot; these events have "
                                      "no timestamp")
    elif match := _MINUTE.match(body):
        body = body[match.end():]
        out.once("reltime", number, RELTIME_NOTE)
    elif match := _KMSG.match(body):
        body = body[match.end():]
        out.once("kmsg", number, "/dev/kmsg times are microseconds since boot, no time of day: these events carry "
                                 "none of their own")
    elif (head := _HEAD.match(body)) and any(c.isdigit() for c in head[1]) and not _UPTIME.match(body):
        out.warn(number, f"{head[1].strip()[:40]!r} is a log prefix none of the forms this reader knows (its time "
                         "damaged?); the event has no time")
    body = _KERNEL.sub("", body)
    if match := _UPTIME.match(body):
        body = body[match.end():]
        if ts is None and "+" in match[0]:
            out.once("reltime", number, RELTIME_NOTE)
        elif ts is None:  # under a dated prefix (syslog's), the seconds since boot are only kept beside its time
            out.once("uptime", number, "dmesg times are seconds since boot, no time of day: these events carry none "
                                       "of their own")
    return body, ts, host


_PREFIXES = (_ISO, _DMESG_X, _TALOS, *JOURNAL, _SYSLOG, _DMESG_T, _KMSG, _MINUTE)
# the prefixes only a kernel log puts before each line: a log of none of the driver's lines is still a kernel log
_KERNEL_ONLY = (_UPTIME, _MINUTE, _KMSG, re.compile(r"^\S.*?\skernel:\s"))


def kernel_lines(head: str) -> bool:
    """Whether most of the lines of `head` start as only a kernel log's do (dmesg's seconds since boot, `dmesg -H`'s,
    a /dev/kmsg record, a syslog or journal line from the kernel): a log with no NVIDIA line in it, which says so."""
    lines = [line.strip() for line in head.splitlines() if line.strip()][:50]
    kernel = sum(1 for line in lines if any(form.match(line) for form in _KERNEL_ONLY))
    return kernel >= 2 and kernel >= 0.6 * len(lines)


def prefixed(body: str) -> str | None:
    """The message after the log prefix a line starts with, or None where it starts with none this reader knows."""
    fanned = _FANOUT.match(body)
    if fanned and fanned["host"] not in ("NVRM", "kernel", "kern"):
        body = body[fanned.end():]
    prefixed = False
    for form in (*_PREFIXES, _MONOTONIC):
        if match := form.match(body):
            body, prefixed = body[match.end():], True
            break
    if match := _KERNEL.match(body):
        body, prefixed = body[match.end():], True
    if match := _UPTIME.match(body):
        body, prefixed = body[match.end():], True
    return body if prefixed else None


