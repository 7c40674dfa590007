"""Tool output pasted into a Slack thread (or attached as a snippet), read with the ingest readers.

The readings themselves are `diagnostics.analysis.Reading`: one gives lifetime totals and the bot asks for a
second paste a few minutes later; with two in a thread, the rates between them. Readings are stamped with the Slack
message time when they carry none. Bounds, each said to the person when it applies: a paste or file of at most
`MAX_LINES` lines, a file of at most `MAX_FILE_BYTES` (and only text, only from Slack's file host, read no further
than the limit whatever its declared size), a stored reading of at most `Reading`'s rows, one stored reading per
thread and `MAX_STORED` in all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
from slack_sdk import WebClient

from diagnostics import Diagnosis, FabricbotError, InputError, LinkState
from diagnostics import format as fmt
from diagnostics.analysis import PASTED_NODE, Reading, judged_whole, pasted_hosts, pasted_node, rates_between
from diagnostics.ingest import IngestResult, Source, detect
from diagnostics.service import Request, UnknownName, diagnose, files_source
from diagnostics.store import one_machine_each, transaction
from diagnostics.tickets import rules_answer

from .mrkdwn import esc
from .storage import db_lock

if TYPE_CHECKING:
    from .services import Services

log = logging.getLogger("fabricbot")
PASTES = "bot_pastes"
MIN_LINES = 2
MAX_LINES = 20_000  # a 400-GPU `nvidia-smi nvlink -e` is 22,000; one node's is under 1,000
MAX_FILE_BYTES = 2_000_000
MAX_STORED = 2_000  # readings kept across all threads (the oldest go first)
SLACK_FILE_HOSTS = ("files.slack.com",)
TEXT_TYPES = ("text/", "application/json", "application/x-ndjson")
# Slack calls some text files application/octet-stream; these names are tool output all the same.
TEXT_NAMES = (".txt", ".log", ".out", ".prom", ".csv", ".json", ".jsonl", ".ndjson")


class NotRead(ValueError):
    """A paste or file the bot will not read (past a bound, or refused by Slack); the message says why."""


# Slack makes a link of what looks like an address in a message's text: `gpu-a.example.com` arrives as
# `<http://gpu-a.example.com|gpu-a.example.com>` (hubot-slack #181), a typed URL as `<https://...>`; a mention as
# `<@U123>`, a channel as `<#C123|ops>`, `@here` as `<!here>`.
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|<>\s]+)(?:\|([^<>]*))?>")
_SLACK_NAME = re.compile(r"<([@#!])([^|<>\s]+)(?:\|([^<>]*))?>")


def _unlinked(text: str) -> str:
    """A message's text with Slack's links and mentions back as the person typed them (the label, else the address
    or the id): a host name in a kernel log or a scrape's `Hostname` label is that host, not an address in angle
    brackets, and a mention above the output leaves no `<` or `>` that would keep the readers from decoding the
    `&lt;` and `&gt;` Slack escaped in it (`Link 3: &lt;inactive&gt;`)."""
    text = _SLACK_LINK.sub(lambda m: m[2] if m[2] else m[1], text)
    return _SLACK_NAME.sub(_typed, text)


def _typed(m: re.Match[str]) -> str:
    """A mention as typed: `@bob`, `#ops`, `@here` (a user group's label carries its `@` already)."""
    sigil = "@" if m[1] == "!" else m[1]
    said = m[3] or m[2]
    return said if said.startswith(sigil) else sigil + said


def _bare_fence(line: str) -> bool:
    return bool(line.strip()) and not line.strip().strip("`")


def _output_lines(text: str) -> int:
    """The lines of a message that hold output, not a bare code fence. The fences themselves stay in the text: the
    readers take them off as they do a file's (`Source`), with the output Slack writes on a fence's own line
    (```first line ... last line```, vercel/chat #842) kept."""
    return sum(1 for line in text.splitlines() if line.strip() and not _bare_fence(line))


def _url(f: dict[str, Any]) -> str:
    return str(f.get("url_private_download") or f.get("url_private") or "")


def _sign_in_page(response: httpx.Response, f: dict[str, Any]) -> bool:
    """A web page where a file was asked for: Slack's sign-in page, reached through its redirect (a proxy that
    follows redirects hands the bot that page with status 200)."""
    page = response.headers.get("content-type", "").startswith("text/html")
    return page and not str(f.get("mimetype") or "").startswith("text/html")


def holds_output(text: str) -> bool:
    """Whether a message's text is a paste some reader recognizes: its head sniffed as the readers will, nothing
    read (well under 0.1 s for a 64 KB head)."""
    body = _unlinked(text).strip()
    if _output_lines(body) < MIN_LINES:
        return False
    try:
        detect.choose(Source.from_text(body))
    except InputError:
        return False
    return True


def _message_time(ts: str) -> datetime:
    return datetime.fromtimestamp(float(ts), UTC)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def _lines_ok(text: str, what: str) -> str:
    lines = text.count("\n") + 1 - sum(map(_bare_fence, text.split("\n")))
    if lines > MAX_LINES:
        raise NotRead(f"{what} is {lines:,} lines; I read at most {MAX_LINES:,}. Paste one command's output at a "
                     "time (one node's `nvidia-smi nvlink -e` is under 1,000 lines).")
    return text


def unreadable(source: Source, exc: InputError) -> str:
    """Why no reader took a shared file, as the person who shared it needs it: its shape, and what the readers said
    (not the command line's `--format` advice, which a Slack user cannot take)."""
    text = source.text or ""
    lines = text.splitlines() or [""]
    longest = max(len(line) for line in lines)
    shape = f"{len(lines):,} line{'s' if len(lines) != 1 else ''}, the longest {longest:,} characters"
    why = str(exc).removeprefix(f"{source.name}: ")
    if "unrecognized format" in why:
        why = ("it is no output I read (`nvidia-smi nvlink -e`/`-s`/`-q`/`topo -m`, dcgm-exporter metrics, "
               "`lspci -vvv`, kernel log Xid lines, nccl-tests, NMX-T, step logs, a snapshot or tables)")
    return f"I could not read `{esc(source.name)}` ({shape}): {esc(why)}."


WARNINGS_SHOWN = 5


def whole_answer(sources: list[Source], node: str | None, platforms: Mapping[str, str] | None = None) -> str:
    """A paste that says more than one reading's totals, answered as `fabricbot analyze FILE --node NODE
    [--platform P]` answers it: the same diagnosis, and its warnings. `node`: the one node the paste names (None: it
    names several); `platforms`: the nodes' platforms the bot knows (the thread's node's)."""
    first: str | None = None
    try:
        try:
            source, node, read = files_source(sources, node=node)
            diagnosis = diagnose(source, Request(node=node, platform=(platforms or {}).get(node))).diagnosis
        except UnknownName as exc:  # the thread's node, where the paste names its own (a run's `# Rank` host)
            if exc.kind != "node" or node is None:
                raise
            thread = node
            source, node, read = files_source(sources, node=None)
            diagnosis = diagnose(source, Request(node=node)).diagnosis
            first = f"the paste names {node}, not this thread's node {thread}: answered for {node}"
    except FabricbotError as exc:
        if isinstance(exc, InputError) and exc.field == "--node":
            return (f"I read that, but {esc(exc.reason.removesuffix(': give --node NODE'))}: paste one node's output "
                    "at a time.")
        return f"I read that, but could not judge it: {esc(exc)}"
    said = list(dict.fromkeys([*read, *diagnosis.warnings]))
    if len(said) > WARNINGS_SHOWN:  # the answer's own caveats (health unknown, not judged) before the reader's lines
        said = list(dict.fromkeys([*diagnosis.warnings, *read]))
    said = [first, *said] if first else said
    notes = "".join(f"\n_warning: {esc(w)}_" for w in said[:WARNINGS_SHOWN])
    if len(said) > WARNINGS_SHOWN:
        notes += f"\n_…and {len(said) - WARNINGS_SHOWN} more warnings: `fabricbot analyze` on the output lists them_"
    return esc(rules_answer(diagnosis)) + notes


DOWN_STATES = (LinkState.DOWN, LinkState.INACTIVE)


def totals_text(diagnosis: Diagnosis, limit: int = 12) -> str:
    """Per-link totals of one reading: the links down or inactive (per GPU), the links with errors, most first (a
    pinned counter's lower bound said as every door says it), then how many are clean."""
    down: dict[tuple[int | None, str], list[int]] = {}
    for f in diagnosis.findings:
        if f.link_state in DOWN_STATES:
            down.setdefault((f.gpu, f.link_state.value), []).append(f.link if f.link is not None else -1)
    dirty = sorted((f for f in diagnosis.findings if any(f.counts.values()) and f.link_state not in DOWN_STATES),
                   key=lambda f: -sum(f.counts.values()))
    lines = [f"• GPU {gpu} NVLink{'s' if len(links) > 1 else ''} {', '.join(map(str, sorted(links)))}: {state}"
             for (gpu, state), links in down.items()]
    lines += [f"• {esc(f.component)}: {esc(fmt.totals_noted(f.counts, f.evidence))}" for f in dirty[:limit]]
    if len(dirty) > limit:
        lines.append(f"…and {len(dirty) - limit} more links with errors")
    clean = len(diagnosis.findings) - len(dirty) - sum(len(links) for links in down.values())
    lines.append(f"{clean} of {len(diagnosis.findings)} links show no errors")
    return "\n".join(lines)


def states_text(diagnosis: Diagnosis) -> str:
    """Link states of one reading without counters: the links down or inactive (per GPU), how many are up, and how
    many have a state no one can judge (`dcgmi nvlink -s`'s X on a node in MIG mode)."""
    lines = totals_text(diagnosis).splitlines()[:-1]  # its down links; no counter says a link is clean
    unknown = sum(1 for f in diagnosis.findings if f.link_state is LinkState.UNKNOWN)
    up = sum(1 for f in diagnosis.findings if f.link_state not in DOWN_STATES) - unknown
    said = f"{up} of {len(diagnosis.findings)} links up"
    return "\n".join([*lines, said + (f", {unknown} of unknown state (not judged)" if unknown else "")])


def _judged_node(result: IngestResult, reading: Reading | None, unnamed: str) -> str | None:
    """The node a paste is answered for: its reading's, else the one it names (of several, `unnamed` where it is
    one of them, else the first), else `unnamed`."""
    if reading is not None:
        return reading.node_id
    hosts = pasted_hosts(result.tables)
    return pasted_node(result.tables, unnamed) or (hosts[0] if hosts else None)


class PasteReader:
    def __init__(self, services: Services) -> None:
        self.services = services
        detect.readers()  # import them now, not on the first message's acknowledgement
        db = services.audit.db
        with db_lock(db):
            db[PASTES].create({"id": int, "channel": str, "thread_ts": str, "message_ts": str,  # type: ignore[union-attr]
                               "node_id": str, "link_samples": str, "stamped": int}, pk="id", if_not_exists=True)

    def _allowed_host(self, client: WebClient, url: str) -> bool:
        """Only Slack's file host (or the API's own host, the local mock) ever gets the bot token."""
        host = urlsplit(url).hostname or ""
        return host in SLACK_FILE_HOSTS or host == urlsplit(client.base_url).hostname

    def _fetchable(self, client: WebClient, f: dict[str, Any]) -> bool:
        """Whether a shared file may be tool output the bot fetches: text (by its type or name) on Slack's host."""
        name = str(f.get("name") or "snippet")
        url = _url(f)
        if not url or not self._allowed_host(client, url):
            log.warning("fabricbot: not downloading %s from %s", name, urlsplit(url).hostname)
            return False
        mimetype = str(f.get("mimetype") or "text/plain")
        # a picture, a PDF or an archive shared in the thread is not tool output
        return mimetype.startswith(TEXT_TYPES) or (mimetype == "application/octet-stream"
                                                   and name.lower().endswith(TEXT_NAMES))

    def may_hold_output(self, client: WebClient, event: dict[str, Any]) -> bool:
        """The cheap check before a thread message is queued: its text's head is some tool's output, or it shares a
        text file; chat is neither, so it is never queued (nor told the bot is busy)."""
        files = event.get("files") or []
        return holds_output(event.get("text") or "") or any(
            isinstance(f, dict) and self._fetchable(client, f) for f in files)

    def _download(self, client: WebClient, f: dict[str, Any]) -> str | None:
        """A shared file's text, or None when it is not a text file the bot may fetch."""
        if not self._fetchable(client, f):
            return None
        name, url = str(f.get("name") or "snippet"), _url(f)
        size = f.get("size")
        if isinstance(size, int) and size > MAX_FILE_BYTES:
            raise NotRead(f"`{esc(name)}` is {_size(size)}; I read text files up to {_size(MAX_FILE_BYTES)}. "
                          "Share one command's output at a time.")
        body = bytearray()
        try:
            # Not followed: Slack answers a token that may not read the file with a redirect to its sign-in page.
            with httpx.stream("GET", url, headers={"Authorization": f"Bearer {client.token}"}, timeout=10.0,
                              follow_redirects=False) as response:
                if response.is_redirect or _sign_in_page(response, f):
                    raise NotRead(f"I cannot read `{esc(name)}`: Slack sent me to its sign-in page instead of the "
                                  "file, which it does when my token may not read files. An admin must add the "
                                  "`files:read` scope (slack/manifest.json lists every scope) and reinstall the app.")
                if response.status_code != 200:
                    raise NotRead(f"Slack would not let me read `{esc(name)}` (HTTP {response.status_code}); try "
                                  "again, or share the output as a paste.")
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_FILE_BYTES:  # whatever size the event declared
                        raise NotRead(f"`{esc(name)}` is over {_size(MAX_FILE_BYTES)}; I read text files up to "
                                      "that. Share one command's output at a time.")
        except httpx.HTTPError as exc:
            raise NotRead(f"I could not download `{esc(name)}` from Slack ({type(exc).__name__}); try again.") from None
        if b"\0" in body[:8192]:
            return None  # binary, whatever its name says
        return _lines_ok(body.decode("utf-8", errors="replace"), f"`{esc(name)}`")

    def _sources(self, client: WebClient, event: dict[str, Any], text: str) -> list[tuple[Source, bool]]:
        """The message's text and its text files, each with whether it was shared as a file."""
        out = []
        body = _unlinked(text).strip()
        if _output_lines(body) >= MIN_LINES:
            out.append((Source.from_text(_lines_ok(body, "That paste"), name=f"slack message {event.get('ts')}"),
                        False))
        for f in event.get("files") or []:
            content = self._download(client, f) if isinstance(f, dict) else None
            if content is not None:
                out.append((Source.from_text(content, name=str(f.get("name") or "snippet")), True))
        return out

    def handle(self, client: WebClient, event: dict[str, Any], text: str) -> bool:
        """Read a paste; True when it held telemetry the readers recognize, or broke a bound (the bot answered)."""
        channel, thread = event["channel"], event.get("thread_ts") or event["ts"]
        try:
            sources = self._sources(client, event, text)
        except NotRead as exc:
            self.services.record("denied", actor=event.get("user", ""), subject=f"paste in {channel}",
                                 reason=str(exc)[:200])
            client.chat_postMessage(channel=channel, thread_ts=thread, text=str(exc))
            return True
        results, refused, outcomes = [], [], []
        for source, shared in sources:
            try:
                results.append(detect.read(source))
                outcomes.append(True)
            except InputError as exc:  # a message's text may be chat; a file shared here was meant to be read
                outcomes.append(False)
                if shared:
                    refused.append(unreadable(source, exc))
        if not results and not refused:
            return False
        if not results:
            self.services.record("denied", actor=event.get("user", ""), subject=f"paste in {channel}",
                                 reason="; ".join(refused)[:200])
            client.chat_postMessage(channel=channel, thread_ts=thread, text="\n".join(refused))
            return True
        result = IngestResult.combine(results)
        read = [source for (source, _), got in zip(sources, outcomes, strict=True) if got]
        try:  # two machines' outputs (no host named): read as one node, one's link states would hide the other's
            one_machine_each([(source.name, got) for source, got in zip(read, results, strict=True)])
            reply = self._answer(result, read, channel, thread, event["ts"])
        except InputError as exc:
            reply = f"I read that, but could not judge it as one node's: {esc(exc.reason)}."
        reply += "".join(f"\n_{r}_" for r in refused)
        self.services.record("analysis", actor=event.get("user", ""), subject=f"paste in {channel}",
                             rows=result.rows, warnings=len(result.warnings))
        client.chat_postMessage(channel=channel, thread_ts=thread, text=reply)
        return True

    def _thread_node(self, channel: str, thread: str) -> tuple[str | None, dict[str, str]]:
        """The node whose summary the thread hangs from, if the bot posted one there (waiting while a summary's post
        in the channel is under way: on Slack a moment before the bot notes which analysis it shows), and its
        platform where that summary was told it (none where it knew none, or guessed it from a GPU model: the
        paste's own GPUs are then what tells it)."""
        analysis_id = self.services.posted.analysis_of(channel, thread)
        diagnosis = self.services.state.analysis(analysis_id) if analysis_id is not None else None
        if diagnosis is None:
            return None, {}
        told = diagnosis.platform if diagnosis.platform_guess is None else None  # a guess: the paste's to make again
        return diagnosis.node_id, {diagnosis.node_id: told} if told else {}

    def _store(self, channel: str, thread: str, ts: str, reading: Reading) -> dict[str, Any] | None:
        """Keep `reading` as the thread's latest (one per thread, `MAX_STORED` in all); returns the one before."""
        db = self.services.audit.db
        table = db[PASTES]
        with transaction(db):
            earlier = list(table.rows_where("channel = ? and thread_ts = ?", [channel, thread],
                                            order_by="id desc", limit=1))
            db.execute(f"delete from {PASTES} where channel = ? and thread_ts = ?", [channel, thread])
            table.insert({"channel": channel, "thread_ts": thread, "message_ts": ts,  # type: ignore[union-attr]
                          "node_id": reading.node_id, "link_samples": reading.to_json(),
                          "stamped": int(reading.stamped)}, alter=True)  # a store from before `stamped` gains it
            db.execute(f"delete from {PASTES} where id not in (select id from {PASTES} order by id desc limit ?)",
                       [MAX_STORED])
        return earlier[0] if earlier else None

    def _answer(self, result: IngestResult, sources: list[Source], channel: str, thread: str, ts: str) -> str:
        thread_node, platforms = self._thread_node(channel, thread)
        unnamed = thread_node or PASTED_NODE  # a paste in a node's thread is of that node, on its platform
        reading = Reading.of(result, _message_time(ts), unnamed=unnamed, platforms=platforms)
        reply = self._reply(result, sources, channel, thread, ts, reading, unnamed, platforms)
        named = _judged_node(result, reading, unnamed)
        hosts = pasted_hosts(result.tables)
        if named is not None and len(hosts) > 1:
            others = [h for h in hosts if h != named]
            listed = ", ".join(esc(h) for h in others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            why = "this thread's node" if named == thread_node else "the first"
            reply = (f"_The paste holds {len(hosts)} hosts: I read {esc(named)}'s ({why}), not {listed}'s; paste each "
                     "host's output in its own thread, or run `fabricbot analyze FILE --node HOST` on it._\n" + reply)
        elif thread_node is not None and named not in (None, thread_node) and "the paste names" not in reply:
            reply = (f"_The paste names {esc(named)}, not this thread's node {esc(thread_node)}: answered for it._\n"
                     + reply)
        return reply

    def _reply(self, result: IngestResult, sources: list[Source], channel: str, thread: str, ts: str,
               reading: Reading | None, unnamed: str, platforms: dict[str, str]) -> str:
        notes = "".join(f"\n_warning: {esc(w)}_" for w in result.warnings[:5])
        if judged_whole(result.tables):  # events, or readings at two times: what `analyze FILE` says of it
            if reading is not None:
                self._store(channel, thread, ts, reading)
            return whole_answer(sources, _judged_node(result, reading, unnamed), platforms)
        if reading is None:  # a benchmark run, a topology, a manager's log: answered as `analyze FILE` answers it
            if any(result.rows.values()):
                return whole_answer(sources, _judged_node(result, reading, unnamed), platforms)
            return f"I read that, but it holds no link counters, events or benchmark runs to judge.{notes}"
        if reading.clipped:
            notes += f"\n_I kept the first {len(reading.links):,} link rows and left out {reading.clipped:,}._"
        node = esc(reading.node_id)
        totals = reading.totals()
        if not any(f.counts for f in totals.findings):  # `nvlink -s`: states and speeds, no counter to rate
            now = f"{esc(rules_answer(totals))}\n" if totals.fault_detected else ""
            return (f"{now}That output holds link states and speeds only, no error counters, so there is nothing to "
                    f"rate:\n{states_text(totals)}\nFor the errors, paste `nvidia-smi nvlink -e` (twice, a few "
                    f"minutes apart, for rates).{notes}")
        earlier = self._store(channel, thread, ts, reading)
        if earlier is None:  # a link down now needs no second reading: said first
            now = f"{esc(rules_answer(totals))}\n" if totals.fault_detected else ""
            return (f"{now}These are lifetime totals since the counters were last reset on `{node}`, not "
                    f"rates:\n{totals_text(totals)}\nPaste the same command's output again in a few "
                    f"minutes and I will compute the error rates between the two readings.{notes}")
        before = Reading.from_json(earlier["node_id"], earlier["link_samples"], stamped=bool(earlier.get("stamped")))
        try:
            diagnosis, minutes = rates_between(before, reading)
        except FabricbotError as exc:
            why = exc.reason if isinstance(exc, InputError) else str(exc)
            return (f"I could not compute rates from the two readings: {esc(why)}. This reading's lifetime totals "
                    f"since reset on `{node}`:\n{totals_text(reading.totals())}{notes}")
        return (f"Rates over the {minutes:.0f} minutes between your two readings: " + esc(rules_answer(diagnosis))
                + notes)
