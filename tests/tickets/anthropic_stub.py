"""A local stub of the Anthropic Messages API: records each request, plays back scripted answers.

Pointed to by the SDK's `base_url`, it serves `POST /v1/messages` on loopback. Its usage figures are estimated at 4
characters a token; the prefix up to the last `cache_control` breakpoint (tool definitions, then the system blocks,
the order the API caches them in) is reported as `cache_creation_input_tokens` the first time it is seen and as
`cache_read_input_tokens` when a later request repeats it, as the API's prompt cache does.

A script step returns the answer's content blocks, or a `Reply` for what the API does besides answering: an error
status with its headers and error body (429 `rate_limit_error` with `retry-after`, 529 `overloaded_error`, as
https://docs.anthropic.com/en/api/errors words them), another stop reason (`refusal`, `max_tokens`), or a response
cut off mid-body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ERROR_TYPES = {400: "invalid_request_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass(frozen=True)
class Reply:
    """One scripted answer beyond plain content: an error status, another stop reason, or a cut body."""

    content: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stop_reason: str | None = None
    cut: bool = False  # send the headers and half the body, then close the connection

    @staticmethod
    def error(status: int, message: str, **headers: str) -> Reply:
        return Reply(status=status, headers={k.replace("_", "-"): v for k, v in headers.items()},
                     content=[{"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                                          "message": message}}])


Script = Callable[[dict[str, Any]], "list[dict[str, Any]] | Reply"]  # a request body -> the answer


def _cached_prefix(body: dict[str, Any]) -> str:
    """The part of the request up to its last cache breakpoint, as text ('' when it has none)."""
    blocks: list[Any] = [*body.get("tools", []), *(body.get("system") or [])]
    marked = [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
    return json.dumps(blocks[:marked[-1] + 1], sort_keys=True) if marked else ""


@dataclass
class Stub:
    script: list[Script]
    requests: list[dict[str, Any]] = field(default_factory=list)
    usages: list[dict[str, int]] = field(default_factory=list)
    seen_prefixes: set[str] = field(default_factory=set)
    base_url: str = ""

    def answer(self, body: dict[str, Any]) -> Reply:
        self.requests.append(body)
        step = self.script[min(len(self.requests), len(self.script)) - 1](body)
        reply = step if isinstance(step, Reply) else Reply(content=step)
        if reply.status != 200:
            return reply
        content = reply.content
        prefix = _cached_prefix(body)
        total = len(json.dumps(body)) // 4
        cached = len(prefix) // 4
        hit = prefix in self.seen_prefixes
        self.seen_prefixes.add(prefix)
        usage = {"input_tokens": total - cached, "output_tokens": len(json.dumps(content)) // 4,
                 "cache_read_input_tokens": cached if hit else 0,
                 "cache_creation_input_tokens": 0 if hit else cached}
        self.usages.append(usage)
        stop = reply.stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn")
        message = {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body["model"],
                   "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        return Reply(content=[message], headers=reply.headers, cut=reply.cut)


def tool_use(name: str, args: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}_{name}", "name": name, "input": args}


def thinking(text: str) -> dict[str, Any]:
    """A thinking block as the API returns it (the signature is opaque to the client)."""
    return {"type": "thinking", "thinking": text, "signature": "c2lnbmVkLWJ5LXRoZS1zdHVi"}


def output_tool(body: dict[str, Any]) -> str:
    """The name of the tool pydantic-ai gives the model for its structured answer."""
    return next(t["name"] for t in body["tools"] if t["name"].startswith("final_result"))


def native_output(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the request asks the answer to follow (`output_config.format`), if it takes that path."""
    fmt = (body.get("output_config") or {}).get("format")
    return fmt["schema"] if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None


def final_answer(body: dict[str, Any], answer: dict[str, Any], n: int) -> dict[str, Any]:
    """The structured answer the way this request asks for it: JSON text under `output_config`, else the output tool."""
    if native_output(body) is not None:
        return {"type": "text", "text": json.dumps(answer)}
    return tool_use(output_tool(body), answer, n)


@contextmanager
def serve(script: list[Script]) -> Iterator[Stub]:
    stub = Stub(script)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.startswith("/v1/messages"):
                self._send(404, b"{}", {})
                return
            reply = stub.answer(body)
            out = json.dumps(reply.content[0]).encode()
            self._send(reply.status, out, reply.headers, cut=reply.cut)

        def _send(self, status: int, out: bytes, headers: dict[str, str], *, cut: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(out[:len(out) // 2] if cut else out)
            if cut:
                self.wfile.flush()
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
