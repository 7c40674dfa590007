"""Each model request of a run, as the caller's audit trail records it, and the hook that records them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import RunContext
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import ModelRequestContext


class ModelCall(BaseModel):
    """One model request, or the fallback that replaced the model, as the caller's audit trail records it."""

    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    outcome: Literal["ok", "retry", "fallback", "error"]
    detail: str = ""


@dataclass
class CallLog:
    """The model requests of one run; every agent's deps derive from it, so one hook records them all."""

    model_name: str
    calls: list[ModelCall] = field(default_factory=list)

    def mark_retry(self, problem: str) -> None:
        """The latest call's answer was sent back."""
        if self.calls:
            self.calls[-1] = self.calls[-1].model_copy(update={"outcome": "retry", "detail": problem[:200]})


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 1)


async def record_call(ctx: RunContext[Any], *, request_context: ModelRequestContext,
                      handler: Callable[[ModelRequestContext], Any]) -> ModelResponse:
    """Time every model request and note its tokens; a failure is noted and passed on."""
    log: CallLog = ctx.deps
    start = time.perf_counter()
    try:
        response: ModelResponse = await handler(request_context)
    except Exception as exc:
        log.calls.append(ModelCall(model=log.model_name, latency_ms=_ms(start), outcome="error",
                                   detail=type(exc).__name__))
        raise
    log.calls.append(ModelCall(
        model=response.model_name or log.model_name, input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens, latency_ms=_ms(start), outcome="ok"))
    return response


def recorder() -> Hooks[Any]:
    """The capability that records every model request of a run into its `CallLog` deps."""
    return Hooks(model_request=record_call)
