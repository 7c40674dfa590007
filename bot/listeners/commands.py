"""`/fabric`: diagnose a node, explain a job, rank the fleet, or say how.

The command is acknowledged on its request thread, at once (a usage error or the help is the acknowledgement
itself); the analysis, the picture and the posts run on the work queue. A full queue is said in the
acknowledgement. Arguments are capped and read in one pass.
"""

from __future__ import annotations

import logging
import shlex
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from diagnostics import Diagnosis, FabricbotError

from .. import blocks
from ..lifecycle import digest_text, maintenance_list, post_text, set_maintenance, verify_text, watch_text
from ..mrkdwn import esc
from ..nodes import UnknownName, unknown_reply
from ..options import parse_window, window_wanted
from ..posting import post_diagnosis, post_fleet
from ..replies import SLACK_FAILURES, Replier, error_code, failed_locally, from_slack
from ..services import Services
from ..work import BUSY, Busy
from .filing import CannotCheck, FilingRights

log = logging.getLogger(__name__)

COMMAND = "/fabric"
MAX_ARGUMENTS = 300  # characters: a node name, a job id and a window fit many times over


class UsageError(ValueError):
    """Arguments `/fabric` cannot use; the message (escaped) is shown to the user."""


@dataclass(frozen=True)
class Request:
    verb: str  # node | job | rack | fleet | help | maintenance | watch | verify | digest
    target: str = ""
    window_hours: float | None = None
    args: tuple[str, ...] = ()  # maintenance: NODE DURATION [reason...] or NODE end


VERBS = frozenset({"help", "fleet", "verify", "digest", "watch", "maintenance", "job", "rack"})


def parse(text: str) -> Request:
    if len(text or "") > MAX_ARGUMENTS:
        raise UsageError(f"that is {len(text):,} characters of arguments; `/fabric` takes at most {MAX_ARGUMENTS}")
    try:
        words = deque(shlex.split(text or ""))
    except ValueError as exc:
        raise UsageError(f"cannot read the arguments: {esc(exc)}") from None
    if words and words[0].lower() in VERBS:  # `/fabric Fleet`, `/fabric JOB 4411`: a verb, typed in any case
        words[0] = words[0].lower()
    if not words or words[0] in ("help", "-h", "--help"):
        return Request("help")
    if words[0] in ("fleet", "verify", "digest"):
        if len(words) > 1:
            raise UsageError(f"`/fabric {words[0]}` takes no arguments")
        return Request(words[0])
    if words[0] == "watch":
        if len(words) > 2:
            raise UsageError("usage: `/fabric watch [&lt;node&gt;]`")
        return Request("watch", words[1] if len(words) == 2 else "")
    if words[0] == "maintenance":
        args = tuple(list(words)[1:])
        if len(args) == 1:
            raise UsageError("usage: `/fabric maintenance &lt;node&gt; 2h \"why\"` or "
                             "`/fabric maintenance &lt;node&gt; end`")
        return Request("maintenance", args[0] if args else "", args=args)
    if words[0] == "job":
        if len(words) != 2:
            raise UsageError("usage: `/fabric job &lt;job_id&gt;`")
        return Request("job", words[1])
    if words[0] == "rack":  # a rack of the rack inventory: diagnosed as one, drawn as the rack view
        if len(words) != 2:
            raise UsageError("usage: `/fabric rack &lt;rack&gt;`")
        return Request("rack", words[1])
    node, window = None, None
    while words:  # `--window 6h` or `--window=6h`, before or after the node, as argparse reads the command line's
        word = words.popleft()
        flag, eq, value = word.partition("=")
        if flag == "--window":
            if (not eq and not words) or (eq and not value):
                raise UsageError("`--window` wants a duration like `6h`, `90m` or `2d`")
            window = _window(value if eq else words.popleft())
        elif node is not None and not word.startswith("-"):  # `/fabric node-1 node-2`: one node a command
            if (verb := close_verb(node)) is not None:  # `/fabric rakc rack-12`: a command mistyped, not two nodes
                raise UsageError(f"`{esc(node)}` is no command: did you mean `/fabric {verb} {esc(word)}`? "
                                 "`/fabric help` lists the commands")
            raise UsageError(f"one node a command: `/fabric {esc(node)}`, then `/fabric {esc(word)}` (a whole rack: "
                             "`/fabric rack &lt;rack&gt;`; every node: `/fabric fleet`)")
        elif word.startswith("--") or node is not None:
            raise UsageError(f"unexpected `{esc(word)}`; usage: `/fabric &lt;node&gt; [--window 6h]`")
        else:
            node = word
    if node is None:
        raise UsageError("which node? usage: `/fabric &lt;node&gt; [--window 6h]`")
    return Request("node", node, window)


def _window(value: str) -> float:
    """A `--window` value in hours, read as the command line reads one (`parse_window`)."""
    try:
        return parse_window(value).total_seconds() / 3600
    except ValueError:
        raise UsageError(f"`--window` wants {window_wanted('`')}; not `{esc(value)}`") from None


def answer(services: Services, request: Request, command: dict[str, Any], client: WebClient,
           reply: Replier) -> None:
    """The work behind one command, on the work queue: analyse, post, and say what went wrong if anything did,
    whatever it was: a job that fails after the ack is the bot's to report (Bolt's error handler sees only what a
    listener raises before it returns), else the person who asked is left with "Looking at ..." and nothing."""
    diagnosis: Diagnosis | None = None
    try:
        services.record("command", actor=reply.user, subject=request.target or request.verb,
                        command=f"{COMMAND} {command.get('text', '')}".strip(), channel=reply.channel)
        if request.verb in LIFECYCLE:
            if _changes_state(request) and not _may_change(services, client, reply):
                return
            post_text(client, reply.channel, LIFECYCLE[request.verb](services, request, reply.user, client))
            return
        if request.verb == "fleet":
            post_fleet(client, services, channel=reply.channel, failed=reply.slack_failed)
            return
        if request.verb == "job":
            diagnosis = services.source.explain_job(request.target)
            title = f"Job {request.target}: {diagnosis.node_id}"
        elif request.verb == "rack":
            diagnosis = services.source.diagnose_rack(request.target)
            title = None
        else:
            diagnosis = services.source.diagnose(request.target, window_hours=request.window_hours)
            title = None
        job = request.target if request.verb == "job" else None
        services.record_analysis(diagnosis, job=job)
        post_diagnosis(client, services, diagnosis, channel=reply.channel, title=title, failed=reply.slack_failed,
                       job=job)
    except UnknownName as exc:
        reply.tell(unknown_reply(exc, services.source) + _verb_meant(exc, request))
    except FabricbotError as exc:
        done = "set that" if request.verb in LIFECYCLE else "analyse that"  # planned work is set, not analysed
        reply.tell(f"I could not {done}: {esc(exc)}")
    except SLACK_FAILURES as exc:
        if not from_slack(exc):  # the store's disk, not the way to Slack
            _failed_here(reply, request, command, exc)
        else:
            reply.slack_failed(exc, f"posting {_answer_of(request)}")
            if diagnosis is not None and error_code(exc) in NOT_HERE:  # the answer, to the person: nothing lost
                reply.tell(f"Meanwhile, to you alone: {esc(blocks.fallback_text(diagnosis))}. "
                           f"{esc(diagnosis.repair_action)}")
    except Exception as exc:  # the store's database busy past its wait, a bug: the person hears
        _failed_here(reply, request, command, exc)


# Slack refusing the channel itself (the bot not in it, or it gone): the person still has the response URL
NOT_HERE = frozenset({"not_in_channel", "channel_not_found", "is_archived"})


def _answer_of(request: Request) -> str:
    return {"fleet": "the fleet view", "job": "the job's answer", "rack": "the rack's diagnosis"}.get(
        request.verb, "the answer" if request.verb in LIFECYCLE else "the diagnosis")


def _failed_here(reply: Replier, request: Request, command: dict[str, Any], exc: BaseException) -> None:
    log.error("fabricbot: %s %s failed for %s", COMMAND, command.get("text", ""), reply.user, exc_info=exc)
    reply.tell(f"I could not finish {_answer_of(request)}: {esc(failed_locally(exc))}")


def _changes_state(request: Request) -> bool:
    """Setting or ending planned work silences pages; verifying closes and reopens tickets: filing's rights."""
    return request.verb == "verify" or (request.verb == "maintenance" and bool(request.args))


def _may_change(services: Services, client: WebClient, reply: Replier) -> bool:
    try:
        allowed = FilingRights(services).allowed(client, reply.user, reply.channel)
    except CannotCheck as exc:
        reply.tell(str(exc))
        return False
    if not allowed:
        services.record("denied", actor=reply.user, subject="command", reason="not allowed to change planned work "
                        "or tickets")
        reply.tell("Planned work and repair verification are limited to the on-call channels and groups, as "
                   "filing is.")
    return allowed


def _verb_meant(exc: UnknownName, request: Request) -> str:
    """A word taken for a node that no node is close to: the command it is close to (`/fabric flet`), and where
    the commands are listed (`/fabric statsu`)."""
    if request.verb != "node" or exc.matches:
        return ""
    close = close_verb(exc.name)
    meant = f" Or did you mean `/fabric {close}`?" if close else ""
    return f"{meant} `/fabric help` lists the commands."


def close_verb(word: str) -> str | None:
    """The command a word that names nothing is a slip of (`flet`, `rakc`, `jbo`), or None: commands are words, so a
    name with digits or dashes (`rack-12`, `n1`) is never one."""
    close = get_close_matches(word.lower(), sorted(VERBS - {"help"}), n=1, cutoff=0.6) if word.isalpha() else []
    return close[0] if close else None


def _maintenance(services: Services, request: Request, user: str) -> str:
    return set_maintenance(services, user=user, args=request.args) if request.args else maintenance_list(services)


LIFECYCLE: dict[str, Callable[[Services, Request, str, WebClient], str]] = {  # verbs whose answer is one message
    "maintenance": lambda services, request, user, _: _maintenance(services, request, user),
    "watch": lambda services, request, _, __: watch_text(services, request.target or None),
    "verify": lambda services, _, __, client: verify_text(services, client),  # closed tickets' buttons go
    "digest": lambda services, _, __, ___: digest_text(services),
}


def register(app: App, services: Services) -> None:
    def fabric(ack: Ack, command: dict[str, Any], client: WebClient, respond: Respond) -> None:
        try:
            request = parse(command.get("text") or "")
        except UsageError as exc:
            ack(text=f"{exc}. Try `/fabric help`.")
            return
        if request.verb == "help":
            ack(blocks=blocks.help_blocks(), text="fabricbot help")
            return
        reply = Replier(client, command["user_id"], command["channel_id"], respond=respond)
        try:
            services.work.submit(answer, services, request, command, client, reply)
        except Busy:
            ack(text=BUSY)
            return
        what = {"node": f"`{esc(request.target)}`", "job": f"job `{esc(request.target)}`",
                "rack": f"rack `{esc(request.target)}`", "fleet": "the fleet",
                "maintenance": "planned work", "watch": "what is climbing", "verify": "the repairs waiting",
                "digest": "today's digest"}
        ack(text=f"Looking at {what[request.verb]}…")

    app.command(COMMAND)(fabric)
