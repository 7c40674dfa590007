"""Each model request of a run, as the caller's audit trail records it, and the hook that records them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.output import OutputContext
from pydantic_ai.tools import ToolDefinition


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


def first_error(error: ValidationError | ModelRetry) -> str:
    """The first thing wrong with an answer pydantic-ai sends back, in one line: a field and its error."""
    if isinstance(error, ValidationError) and (errors := error.errors()):
        where = ".".join(str(part) for part in errors[0]["loc"])
        return f"{where}: {errors[0]['msg']}" if where else errors[0]["msg"]
    return " ".join(str(error).split())


async def record_unfit_answer(ctx: RunContext[Any], *, output_context: OutputContext, output: Any,
                              error: ValidationError | ModelRetry) -> Any:
    """An answer that does not fit the output's schema is sent back: noted as a retry, then passed on."""
    prose = output_context.tool_call is None and isinstance(error, ValidationError) and \
        any(e["type"] == "json_invalid" for e in error.errors())
    ctx.deps.mark_retry("plain text where the draft's form was asked for" if prose else first_error(error))
    raise error


async def record_unfit_tool_call(ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any,
                                 error: ValidationError | ModelRetry) -> Any:
    """A tool call whose arguments the tool does not take is sent back: noted as a retry, then passed on."""
    ctx.deps.mark_retry(f"{call.tool_name}'s arguments: {first_error(error)}")
    raise error


def recorder() -> Hooks[Any]:
    """The capability that records every model request of a run into its `CallLog` deps, and each answer or tool
    call sent back for not fitting its schema as a retry (the output validators note what contradicts the facts)."""
    return Hooks(model_request=record_call, output_validate_error=record_unfit_answer,
                 tool_validate_error=record_unfit_tool_call)
