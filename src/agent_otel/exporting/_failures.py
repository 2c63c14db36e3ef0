"""What an export failure's own error says a newcomer got wrong, told once with what to do.

The SDK exporters' failure lines name a protocol error and nothing more (``BadStatusLine
('\\x00\\x00\\x18\\x04...')``, ``Failed parsing HTTP/2``, ``WRONG_VERSION_NUMBER``, ``code:
404``), and agent-otel's loss line can only ask whether the collector is reachable, which it
is: the endpoint speaks the other OTLP protocol (a Collector on a port of its own, which the
check of the default ports at ``configure()`` cannot know), TLS meets a plain receiver, or the
URL's path is not the receiver's. Read from the line the SDK logs at the first failure (its
loggers' filter, ``_exporters``), so it costs nothing while exports succeed; never its text,
which may quote the endpoint's credentials.
"""

from __future__ import annotations

import logging
from typing import Final

from agent_otel._guard import report, told_already, warn_once

OTHER_PROTOCOL: Final = "other protocol"
PLAIN_SERVER: Final = "plain server"
NOT_FOUND: Final = "not found"

_HTTP: Final = "http"
_GRPC: Final = "grpc"

_SIGNS: Final = (
    # (the exporter, words its failure line holds, the cause): HTTP/2's first frame (SETTINGS,
    # ``\x00\x00\x18\x04``) read as an HTTP/1 status line; HTTP/1's answer read as HTTP/2
    (_HTTP, ("BadStatusLine", "\\x00\\x00"), OTHER_PROTOCOL),
    (_GRPC, ("Failed parsing HTTP/2",), OTHER_PROTOCOL),
    (_GRPC, ("http1.x server",), OTHER_PROTOCOL),
    (_HTTP, ("WRONG_VERSION_NUMBER",), PLAIN_SERVER),
    (_GRPC, ("WRONG_VERSION_NUMBER",), PLAIN_SERVER),
    (_HTTP, ("batch code: 404,",), NOT_FOUND),
)

_TOLD: Final = {
    (_HTTP, OTHER_PROTOCOL): (
        "agent-otel: the OTLP endpoint answers in HTTP/2's binary frames, as an OTLP/gRPC "
        "receiver does (a Collector's port 4317), so every OTLP/HTTP export fails: point the "
        "endpoint at the OTLP/HTTP receiver (a Collector's port 4318), or export over gRPC: "
        "configure(protocol='grpc') or OTEL_EXPORTER_OTLP_PROTOCOL=grpc (it needs "
        "agent-otel[grpc]) (docs/configure.md)"
    ),
    (_GRPC, OTHER_PROTOCOL): (
        "agent-otel: the OTLP endpoint answers in HTTP/1, as an OTLP/HTTP receiver does (a "
        "Collector's port 4318), so every OTLP/gRPC export fails: point the endpoint at the "
        "gRPC receiver (a Collector's port 4317), or export over OTLP/HTTP: "
        "configure(protocol='http/protobuf') or OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf "
        "(docs/configure.md)"
    ),
    (_HTTP, PLAIN_SERVER): (
        "agent-otel: the OTLP endpoint is https:// but the receiver speaks plain HTTP (a "
        "Collector's receiver does unless given a certificate), so every export fails its TLS "
        "handshake: write the endpoint with http:// (docs/configure.md)"
    ),
    (_GRPC, PLAIN_SERVER): (
        "agent-otel: the gRPC exporter connects with TLS (an https:// endpoint, or one with no "
        "scheme while OTEL_EXPORTER_OTLP_INSECURE is unset) but the receiver speaks plain "
        "gRPC (a Collector's receiver does unless given a certificate), so every export fails "
        "its TLS handshake: write the endpoint with http://, as http://collector:4317 "
        "(docs/configure.md)"
    ),
    (_HTTP, NOT_FOUND): (
        "agent-otel: the OTLP/HTTP endpoint answered 404 Not Found, so no receiver serves the "
        "URL the exporter posts to: configure(endpoint=...) and OTEL_EXPORTER_OTLP_ENDPOINT are "
        "the base URL (http://collector:4318), each signal's path (/v1/traces) appended to "
        "it; OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and its kin are the full URL, path included "
        "(docs/configure.md)"
    ),
}

_SETTING: Final = "export failure"

_BECAUSE: Final = {
    OTHER_PROTOCOL: "the endpoint speaks the other OTLP protocol (told above, with the fix)",
    PLAIN_SERVER: "TLS meets a plain receiver (told above, with the fix)",
    NOT_FOUND: "the endpoint's URL answers 404 Not Found (told above, with the fix)",
}
"""A cause, as the loss line names it once it was told: "is the collector reachable?" asked
after the mistake was told sent a newcomer looking for a network fault."""

_UNREASONED: Final = "due to timeout, max retries or shutdown"  # the SDK's last line: no reason
_latest: list[str | None] = [None]
"""The cause the latest failure line naming a reason showed (``None``: none known)."""


def why_exports_fail() -> str:
    """What a line telling lost or unsent spans says of the cause: the one the latest failure
    line naming a reason showed, told already with its fix, else the question left."""
    cause = _latest[0]
    return "is the collector reachable?" if cause is None else f"exports fail: {_BECAUSE[cause]}"


def forget_cause() -> None:
    """A new pipeline (``configure()``): an earlier endpoint's cause is not this one's."""
    _latest[0] = None


def foretold(cause: str) -> None:
    """``configure()`` told the cause already, from the endpoint it was given (the other
    protocol's default port, a gRPC endpoint meaning TLS, a signal's URL with no path): the
    failures it foretold are not told again."""
    told_already(_SETTING, cause)


def tell_cause(record: logging.LogRecord) -> None:
    """Tell once per cause what an SDK exporter's failure line says is wrong, and keep the
    cause for the lines telling what it costs (:func:`why_exports_fail`). Never raises."""
    if record.levelno < logging.WARNING:
        return
    try:
        exporter = _GRPC if ".grpc." in record.name else _HTTP
        template = str(record.msg)
        if not template.startswith(("Transient error", "Failed to export")):
            return  # (not an export's failure: an encoding error, a second shutdown)
        if _UNREASONED in template:
            return  # (the reason was in the retry line before it)
        line = record.getMessage()
        for kind, words, cause in _SIGNS:
            if kind == exporter and all(word in line for word in words):
                _latest[0] = cause
                warn_once(_SETTING, cause, _TOLD[exporter, cause])
                return
        _latest[0] = None  # another reason (a refused connection): asked as before
    except Exception:  # a line of another shape: only the hint is lost
        report("export failure cause")
