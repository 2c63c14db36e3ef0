"""Remote agents: a call to an agent over the network continues the caller's trace.

The caller opens an ``invoke_agent`` CLIENT span (``remote_agent()``; for a2a-sdk clients
``trace_a2a_client()``) and sends its W3C context with the request; the remote side runs its
agent in that context (``continue_trace()``, ``ContinueTraceMiddleware`` for a whole ASGI app,
``ContinueTraceWSGIMiddleware`` for a WSGI one;
for a2a-sdk servers ``trace_a2a_executor()``), so the remote run is the CLIENT span's child,
in the same trace. ``with_trace_headers()`` puts the current context in the headers of every
request an httpx client sends (the MCP SDK's, which carries it in ``_meta`` only), for a
server or gateway that reads the headers alone. docs/mcp-and-agents.md shows the tree.
"""

from ._call import RemoteAgentCall, remote_agent
from ._continue import ContinueTraceMiddleware, ContinueTraceWSGIMiddleware, continue_trace
from ._headers import with_trace_headers

__all__ = [
    "ContinueTraceMiddleware",
    "ContinueTraceWSGIMiddleware",
    "RemoteAgentCall",
    "continue_trace",
    "remote_agent",
    "with_trace_headers",
]
