"""What the Claude drafter and the question answerer share: the model, a run's bounds, its calls, its fallback.

A run is bounded three ways: `UsageLimits` (model requests and tokens), a deadline for the whole run (pydantic-ai's
`timeout=`, which no SDK retry re-arms), and per request a timeout and one SDK retry. What repeats between calls
(the instructions and the tool definitions) is marked for Anthropic's prompt cache. Whatever stops a run, the
caller's rules path answers at once, so an answer never waits longer than the deadline plus the rules.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from anthropic import APIRequest, AsyncAPIResponse, AsyncCallNext, Middleware
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRetry,
    OutputTokenLimitExceeded,
    RunTimedOut,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import UsageLimits

from .. import format as fmt
from ..redaction import redact
from .calls import CallLog, ModelCall

ENV_MODEL = "FABRICBOT_MODEL"
ENV_KEY = "ANTHROPIC_API_KEY"
DEFAULT_MODEL = "claude-sonnet-5-5"


class MissingKeyError(RuntimeError):
    """No API key: the caller falls back without trying a request."""


def model_name(model: str | Model | None) -> str:
    """A model's name: as given, or $FABRICBOT_MODEL, or the default Claude model."""
    if isinstance(model, Model):
        return model.model_name
    return (model or os.environ.get(ENV_MODEL) or DEFAULT_MODEL).removeprefix("anthropic:")


def scrub(text: str) -> str:
    """`text` without a secret in it (an SDK error may echo the request, or a cut key): by shape and by the
    configured key (`redaction.redact`)."""
    return redact(text)


@dataclass(frozen=True)
class RunLimits:
    """The bounds of one run: requests and tokens (UsageLimits), the whole run's deadline, each request's timeout.

    Thinking is off by default (`thinking=False`, pydantic-ai's unified setting: `disabled`, or `between_tools` where
    the model refuses `disabled`): the facts are fixed by the analysis and the model only reads and words them, and
    a run must answer within its deadline. A model that thinks anyway (one that cannot turn it off, or `thinking`
    set to a level) gets `thinking_tokens` more room in `max_tokens`, since thinking counts against it.

    The SDK's retry waits as long as the API's `retry-after` asks (a 429's can be a minute); a wait over
    `retry_wait_s` would leave the retried request too little of its timeout, so that answer is not retried.
    """

    requests: int = 8
    total_tokens: int = 60_000
    deadline_s: float = 45.0
    request_timeout_s: float = 30.0
    sdk_retries: int = 1
    max_tokens: int = 2000
    thinking: bool | str = False
    thinking_tokens: int = 6000
    retry_wait_s: float = 10.0

    def usage(self) -> UsageLimits:
        return UsageLimits(request_limit=self.requests, total_tokens_limit=self.total_tokens)

    def settings(self) -> ModelSettings:
        """Per request: the output cap, a timeout covering the SDK's attempts, one SDK retry, and the prompt cache
        on the instructions and tool definitions (Anthropic settings; other models ignore them)."""
        timeout = min(self.request_timeout_s, self.deadline_s)
        out: dict[str, Any] = {"max_tokens": self.max_tokens, "request_timeout": timeout, "timeout": timeout,
                               "max_retries": self.sdk_retries, "anthropic_cache_instructions": True,
                               "anthropic_cache_tool_definitions": True, "thinking": self.thinking}
        return cast(ModelSettings, out)

    def thinks(self, model: Model) -> bool:
        """Whether requests to `model` may carry thinking: asked for, or a model that cannot turn it off (Sonnet
        5.5's `between_tools` still thinks between tool calls)."""
        profile = model.profile
        return (self.thinking is not False and bool(profile.get("supports_thinking"))) or \
            bool(profile.get("thinking_always_enabled")) or \
            bool(profile.get("anthropic_disables_thinking_with_between_tools"))

    def max_tokens_for(self, model: Model) -> int:
        """The output cap a request to `model` carries: the answer's, plus the thinking room where it may think."""
        return self.max_tokens + (self.thinking_tokens if self.thinks(model) else 0)


class ShortRetryWaits(Middleware):
    """The SDK retries an error answer once, waiting what its `retry-after` asks; an answer that asks to wait longer
    than `longest_s` is marked not to be retried (`x-should-retry: false`, the header the SDK obeys), so the run
    falls back at once and says why, instead of sleeping into the request's timeout."""

    def __init__(self, longest_s: float) -> None:
        self.longest_s = longest_s

    async def handle_async(self, request: APIRequest, call_next: AsyncCallNext) -> AsyncAPIResponse[Any]:
        response = await call_next(request)
        wait = retry_after_s(response.headers)
        if response.status_code >= 400 and wait is not None and wait > self.longest_s:
            response.headers["x-should-retry"] = "false"
        return response


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait an answer asks for, in seconds, read as the SDK reads it: `retry-after-ms`, else `retry-after` in
    seconds or as a date."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        when = email.utils.parsedate_tz(value)
        return None if when is None else email.utils.mktime_tz(when) - time.time()


class ClaudeRun:
    """The base of both Claude callers: which model, the run's limits, the report of each call and the fallback."""

    def __init__(self, *, model: str | Model | None = None, on_model_call: Callable[[ModelCall], None] | None = None,
                 limits: RunLimits | None = None) -> None:
        self._model = model
        self.on_model_call = on_model_call
        self.limits = limits or RunLimits()
        self._max_tokens = self.limits.max_tokens

    @property
    def name(self) -> str:
        return model_name(self._model)

    def _resolve(self) -> Model:
        if isinstance(self._model, Model):
            return self._model
        if not os.environ.get(ENV_KEY):
            raise MissingKeyError(f"{ENV_KEY} is not set")
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers import anthropic as provider

        client = AsyncAnthropic(http_client=provider.create_async_httpx2_client(),
                                middleware=[ShortRetryWaits(self.limits.retry_wait_s)])
        return AnthropicModel(self.name, provider=provider.AnthropicProvider(anthropic_client=client))

    def _report(self, calls: list[ModelCall]) -> None:
        if self.on_model_call is not None:
            for call in calls:
                self.on_model_call(call)

    def _run(self, agent: Agent[Any, Any], prompt: str, log: CallLog) -> Any:
        """The agent's output, within the limits; raises whatever stopped it (the caller falls back)."""
        model = self._resolve()
        self._max_tokens = self.limits.max_tokens_for(model)
        result = agent.run_sync(prompt, deps=log, model=model, usage_limits=self.limits.usage(),
                                timeout=self.limits.deadline_s,
                                model_settings=cast(ModelSettings, {"max_tokens": self._max_tokens}))
        self._report(log.calls)
        return result.output

    def _fallback(self, log: CallLog, exc: BaseException) -> str:
        """Note the fallback in the calls and return why, scrubbed and short."""
        reason = one_line(scrub(f"{type(exc).__name__}: {self._why(exc, log)}"), MAX_REASON)
        log.calls.append(ModelCall(model=self.name, outcome="fallback", detail=reason))
        self._report(log.calls)
        return reason

    def _why(self, exc: BaseException, log: CallLog) -> str:
        """What stopped the run, in words: which limit it hit, or what the API answered."""
        limits = self.limits
        if isinstance(exc, RunTimedOut):
            return f"no answer within the run's {limits.deadline_s:g} s deadline"
        if isinstance(exc, OutputTokenLimitExceeded):
            return f"the answer hit the output limit (max_tokens {self._max_tokens:,}, thinking included)"
        if isinstance(exc, UsageLimitExceeded):
            said = str(exc).split(". Consider")[0]
            return f"the run hit its usage limit ({limits.requests} requests, {limits.total_tokens:,} tokens): {said}"
        if isinstance(exc, ContentFilterError):
            return "the model refused to answer (stop reason refusal)"
        if isinstance(exc, ModelHTTPError):
            status = exc.status_code
            if status == 429:
                wait = _retry_after(exc)
                return f"the Anthropic API is rate limiting this key (429{f', retry after {wait}' if wait else ''})"
            if status == 529:
                return "the Anthropic API is overloaded (529); try again in a few minutes"
            return f"the Anthropic API answered {status}: {api_message(exc.body, str(exc))}"
        if isinstance(exc, UnexpectedModelBehavior):
            return _sent_back(exc, log) or str(exc)
        if isinstance(exc, ModelConnectionError):
            return f"the connection to the Anthropic API failed or was cut mid-answer: {exc}"
        return str(exc)


MAX_REASON = 500  # a fallback note's reason, in characters: the API's own message fits whole
MAX_API_MESSAGE = 300


def one_line(text: str, limit: int) -> str:
    """`text` on one line, cut at `limit` characters with an ellipsis where it was longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def api_message(body: object, fallback: str) -> str:
    """The API's own words for an error: `error.message` of Anthropic's error body (with its type), else the
    error as pydantic-ai words it; on one line, bounded."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(message := error.get("message"), str):
        kind = error.get("type")
        text = f"{message} ({kind})" if isinstance(kind, str) else message
    else:
        text = fallback
    return one_line(text, MAX_API_MESSAGE)


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the errors it was raised from, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__
    return chain


def _sent_back(exc: UnexpectedModelBehavior, log: CallLog) -> str:
    """Why answers were sent back until the retry limit stopped the run: a tool that does not exist, a tool's
    arguments, answers that contradict the analysis, or answers that did not fit the draft's form. '' otherwise."""
    retried = [c.detail for c in log.calls if c.outcome == "retry" and c.detail]
    last = f"; the last: {retried[-1]}" if retried else ""
    if bad := _BAD_TOOL.match(str(exc)):
        times = f"sent back {fmt.count(int(bad[2]), 'time')}, the run's retry limit"
        if any(type(c).__name__ == "_UnknownTool" or str(c).startswith("Unknown tool name") for c in _causes(exc)):
            return f"the model kept calling {bad[1]}, a tool that does not exist ({times})"
        return f"the model kept calling {bad[1]} with arguments it does not take ({times}{last})"
    if not (limit := _OUTPUT_RETRIES.match(str(exc))):
        return ""
    times = f"sent back {fmt.count(int(limit[1]), 'time')}, the run's retry limit"
    if any(isinstance(c, ModelRetry) for c in _causes(exc)[1:]):
        return f"the drafts kept contradicting the analysis ({times}{last})"
    return f"the answers did not fit the draft's form ({times}{last})"


_BAD_TOOL = re.compile(r"Tool '([^']+)' exceeded max retries count of (\d+)")
_OUTPUT_RETRIES = re.compile(r"Exceeded maximum output retries \((\d+)\)")


def _retry_after(exc: ModelHTTPError) -> str:
    """The Retry-After the API sent with a 429, in seconds, when the error carries it."""
    value = (exc.headers or {}).get("retry-after")
    return f"{value} s" if value else ""


@dataclass(frozen=True)
class ModelCheck:
    """What the start-up check found: whether Claude can be used at all, and the one line to say so."""

    usable: bool
    note: str


def check_model(name: str, api_key: str, *, http_client: Any = None, timeout_s: float = 10.0) -> ModelCheck:
    """Ask the Anthropic API once, at start-up, whether this key may use this model (a metadata read, no tokens).

    A refused key or an unknown model makes Claude unusable for the process (said once, not in every ticket); an
    unreachable API is only noted, since each run falls back on its own when it fails.
    """
    import anthropic

    client = anthropic.Anthropic(api_key=api_key, max_retries=0, timeout=timeout_s, http_client=http_client)
    try:
        client.models.retrieve(name)
    except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
        return ModelCheck(False, scrub(f"{ENV_KEY} was refused by the Anthropic API ({exc.status_code}): check the "
                                       "key; tickets and answers come from the rules"))
    except anthropic.NotFoundError:
        return ModelCheck(False, f"the Anthropic API knows no model {name!r} for this key (404): check "
                                 f"{ENV_MODEL}; tickets and answers come from the rules")
    except anthropic.APIError as exc:
        return ModelCheck(True, scrub(f"could not check Claude at start-up ({type(exc).__name__}); each run "
                                      "falls back to the rules if the API stays unreachable"))
    return ModelCheck(True, f"Claude model {name} is available to this key")
