"""An ASGI app served for real on loopback, for the remote-agent tests.

uvicorn runs the app in a thread of its own, with its own event loop: the thread starts with an
empty context, so nothing of the test's OTel context reaches the server but what a request
carries (the point of those tests).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from benchmarks._process import free_port


@contextmanager
def serve(
    app: Any, requests: list[dict[str, str]] | None = None, *, port: int | None = None
) -> Iterator[int]:
    """Serve ``app`` on ``port`` (default: a free loopback port; yielded) until the block ends.
    ``requests`` collects the headers of every POST, as the server received them."""

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if requests is not None and scope["type"] == "http" and scope["method"] == "POST":
            requests.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    port = port if port is not None else free_port()
    config = uvicorn.Config(recording, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="agent-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
