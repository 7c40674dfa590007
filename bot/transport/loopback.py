"""Run an ASGI app with uvicorn on a free loopback port, in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    """uvicorn's server, stopped as soon as it is told to: its main loop looks for the exit every 0.1 s, and its
    graceful shutdown sleeps 0.1 s before it looks for open connections, so each stop took about 0.18 s (measured),
    twice in every bot a test or the demo starts and stops. Here the loop is woken by the stop, and a server with no
    connection and no task open closes at once; one with any is shut down gracefully, as uvicorn does."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):  # uvicorn's ticks (its Date header each second), cut short by a stop
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=0.1)

    def exit_soon(self) -> None:
        """Ask the server to stop, from any thread."""
        self.should_exit = True
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                self._loop.call_soon_threadsafe(self._wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connection from here on
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for sock in sockets or []:
            sock.close()
        for server in self.servers:
            await server.wait_closed()


class LoopbackServer:
    """`with LoopbackServer(app) as srv: srv.url` serves `app` on 127.0.0.1 until the block ends."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = self.sock.getsockname()[:2]
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = _Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name=f"loopback-{self.port}")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the loopback server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.exit_soon()
        self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
