"""Decoded views of a text: credentials in URL-encoded or backslash-escaped form.

An error text often carries a credential encoded: a URL inside another URL's query
(``redirect_uri=https%3A%2F%2Fuser%3Apass%40host``), a form body with ``%3D`` separators, a
JSON text embedded in another JSON string (``\\"api_key\\": \\"...\\"``), JSON's ``\\/`` and
``\\u0073``. The detectors match the decoded form; :func:`views` gives it, with where each
decoded character came from, so a secret found there is redacted as the encoded characters
it was decoded from.

Decoded: ``%XX`` (any two hex digits), ``\\uXXXX``, ``\\xXX`` and the one-character escapes
``\\\\ \\/ \\" \\' \\b \\f \\n \\r \\t``. A view is decoded again while it still holds escapes
(``%253D``, ``\\\\\\"``), at most :data:`ROUNDS` times. Each round is one regular-expression
pass and a list of its escapes (a match is mapped back by bisection): linear. A text with no
``%`` and no backslash has no view.
"""

from __future__ import annotations

import re
from bisect import bisect_right

ROUNDS = 3
"""Decodings at most: a URL encoded twice in a JSON string escaped once is three."""

_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})|\\(?:u([0-9A-Fa-f]{4})|x([0-9A-Fa-f]{2})|([\\/\"'bfnrt]))")
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class View:
    """A decoded text, and where (in the text it was decoded from, or through the views
    before it, in the original) each of its escapes' characters came from."""

    __slots__ = ("decoded", "ends", "parent", "positions", "starts", "text")

    def __init__(
        self,
        text: str,
        positions: list[int],
        starts: list[int],
        ends: list[int],
        parent: View | None,
    ) -> None:
        self.text = text
        self.positions = positions  # where each escape's character is in ``text``
        self.starts = starts  # and where that escape started and ended in the parent text
        self.ends = ends
        self.parent = parent

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The characters of the original text that ``text[start:end]`` was decoded from."""
        start, end = self._start(start), self._end(end - 1)
        if self.parent is None:
            return start, end
        return self.parent.span(start, end)

    def _start(self, at: int) -> int:
        k = bisect_right(self.positions, at) - 1
        if k < 0:
            return at
        if self.positions[k] == at:
            return self.starts[k]
        return self.ends[k] + at - self.positions[k] - 1

    def _end(self, at: int) -> int:
        k = bisect_right(self.positions, at) - 1
        if k >= 0 and self.positions[k] == at:
            return self.ends[k]
        return self._start(at) + 1


def may_hold(text: str) -> bool:
    """Whether ``text`` may hold an escape: the one check a text without any pays."""
    return "%" in text or "\\" in text


def views(text: str) -> list[View]:
    """The decoded views of ``text`` (none when it holds no escape), each decoding the last."""
    out: list[View] = []
    parent: View | None = None
    current = text
    for _ in range(ROUNDS):
        view = _decode(current, parent)
        if view is None:
            break
        out.append(view)
        current, parent = view.text, view
        if not may_hold(current):
            break
    return out


def _decode(text: str, parent: View | None) -> View | None:
    """``text`` with each escape replaced by its character; None without one."""
    parts: list[str] = []
    positions: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    kept = length = 0
    for found in _ESCAPE.finditer(text):
        start, end = found.span()
        parts.append(text[kept:start])
        length += start - kept
        hex_byte, unicode, hex_char, simple = found.groups()
        if simple is not None:
            parts.append(_SIMPLE.get(simple, simple))
        else:
            parts.append(chr(int(hex_byte or unicode or hex_char, 16)))
        positions.append(length)
        starts.append(start)
        ends.append(end)
        length += 1
        kept = end
    if not parts:
        return None
    parts.append(text[kept:])
    return View("".join(parts), positions, starts, ends, parent)
