"""A local stub of the Anthropic Messages API: records each request, plays back scripted answers.

Pointed to by the SDK's `base_url`, it serves `POST /v1/messages` on loopback. Its usage figures are estimated at 4
characters a token; the prefix up to the last `cache_control` breakpoint (tool definitions, then the system blocks,
the order the API caches them in) is reported as `cache_creation_input_tokens` the first time it is seen and as
`cache_read_input_tokens` when a later request repeats it, as the API's prompt cache does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[dict[str, Any]], list[dict[str, Any]]]  # a request body -> the answer's content blocks


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

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        content = self.script[min(len(self.requests), len(self.script)) - 1](body)
        prefix = _cached_prefix(body)
        total = len(json.dumps(body)) // 4
        cached = len(prefix) // 4
        hit = prefix in self.seen_prefixes
        self.seen_prefixes.add(prefix)
        usage = {"input_tokens": total - cached, "output_tokens": len(json.dumps(content)) // 4,
                 "cache_read_input_tokens": cached if hit else 0,
                 "cache_creation_input_tokens": 0 if hit else cached}
        self.usages.append(usage)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}


def tool_use(name: str, args: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}_{name}", "name": name, "input": args}


def output_tool(body: dict[str, Any]) -> str:
    """The name of the tool pydantic-ai gives the model for its structured answer."""
    return next(t["name"] for t in body["tools"] if t["name"].startswith("final_result"))


@contextmanager
def serve(script: list[Script]) -> Iterator[Stub]:
    stub = Stub(script)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            out = json.dumps(stub.answer(body)).encode() if self.path.startswith("/v1/messages") else b"{}"
            self.send_response(200 if self.path.startswith("/v1/messages") else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

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
