"""Decoded views of a text: credentials in URL-encoded or backslash-escaped form.

An error text often carries a credential encoded: a URL inside another URL's query
(``redirect_uri=https%3A%2F%2Fuser%3Apass%40host``), a form body with ``%3D`` separators, a
JSON text embedded in another JSON string (``\\"api_key\\": \\"...\\"``), JSON's ``\\/`` and
``\\u0073``. The detectors match the decoded form; :func:`views` gives it, with where each
decoded character came from, so a secret found there is redacted as the encoded characters
it was decoded from.

Decoded: ``%XX`` (any two hex digits), ``\\uXXXX``, ``\\xXX``, the one-character escapes
``\\\\ \\/ \\" \\' \\b \\f \\n \\r \\t``, and HTML/XML character references (an error
page or an XML body quoting JSON or a URL): ``&#NN;``, ``&#xHH;`` and the named ones of
punctuation a credential's label or URL is written with (``&quot; &amp; &lt; &gt; &apos;
&colon; &sol; &equals; &commat;``...). A view is decoded again while it still holds escapes
(``%253D``, ``\\\\\\"``), at most :data:`ROUNDS` times. Each round is one regular-expression
pass and a list of its escapes (a match is mapped back by bisection): linear. A text with no
``%``, no backslash and no ``&...;`` has no view (:func:`may_hold`).

A base64 token of JSON (``eyJ...``, or ``ewog...`` pretty-printed: a credentials blob or key
file passed as one string) or of a PEM block (``LS0tLS1CRUdJTi...``) is decoded too,
whole (:func:`base64_blobs`): the scrubber replaces the token when a detector finds a
credential in its decoded text.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right
from functools import cache

ROUNDS = 3
"""Decodings at most: a URL encoded twice in a JSON string escaped once is three."""

_ESCAPE = re.compile(
    r"%([0-9A-Fa-f]{2})|\\(?:u([0-9A-Fa-f]{4})|x([0-9A-Fa-f]{2})|([\\/\"'bfnrt]))"
    r"|&(?:#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z]{2,6}));"
)
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NAMED = {  # HTML's named references of ASCII punctuation (a name not here stays as it is)
    "quot": '"', "amp": "&", "lt": "<", "gt": ">", "apos": "'", "colon": ":", "sol": "/",
    "equals": "=", "commat": "@", "lowbar": "_", "bsol": "\\", "num": "#", "percnt": "%",
    "quest": "?", "period": ".", "comma": ",", "semi": ";", "excl": "!", "plus": "+",
    "dollar": "$", "ast": "*", "lpar": "(", "rpar": ")", "lsqb": "[", "rsqb": "]",
    "lcub": "{", "rcub": "}", "vert": "|", "grave": "`", "hat": "^", "tilde": "~",
}  # fmt: skip


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
    """Whether ``text`` may hold an escape: the checks a text without any pays."""
    return "%" in text or "\\" in text or ("&" in text and ";" in text)


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
        character = _character(*found.groups())
        if character is None:  # &nbsp; and the like: read as they are
            continue
        parts.append(text[kept:start])
        length += start - kept
        parts.append(character)
        positions.append(length)
        starts.append(start)
        ends.append(end)
        length += 1
        kept = end
    if not parts:
        return None
    parts.append(text[kept:])
    return View("".join(parts), positions, starts, ends, parent)


def _character(
    hex_byte: str | None,
    unicode: str | None,
    hex_char: str | None,
    simple: str | None,
    decimal: str | None,
    hex_ref: str | None,
    name: str | None,
) -> str | None:
    """The character an escape stands for (one of the arguments is set: the regex's groups);
    None for a named reference this module does not read."""
    if name is not None:
        return _NAMED.get(name.lower())
    if simple is not None:
        return _SIMPLE.get(simple, simple)
    if decimal is not None or hex_ref is not None:
        code = int(decimal, 10) if decimal is not None else int(hex_ref or "0", 16)
        return chr(code) if code <= 0x10FFFF else "\ufffd"
    return chr(int(hex_byte or unicode or hex_char or "0", 16))


# Characters that read as ASCII: the fullwidth forms (U+FF01 to U+FF5E, as an East Asian
# input method types PASSWORD=, and the ideographic space) and the Cyrillic letters drawn as
# Latin ones (a Cyrillic a in "password"), and the styled letters NFKC reads as ASCII ones.
# One character each, so a find maps back one to one.
_CYRILLIC = "\u0430\u0435\u043e\u0440\u0441\u0455\u0456\u0458\u0445\u0443"  # a e o p c s i j x y
_CYRILLIC_UPPER = (
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0405\u0406\u0408\u0422\u0425"
)
_COMPATIBLE = (  # blocks whose characters NFKC reads as one ASCII character
    (0x00A0, 0x00A1),  # the no-break space
    (0x2000, 0x200B),  # the typographic spaces
    (0x2070, 0x20A0),  # superscripts and subscripts
    (0x2100, 0x2190),  # letterlike symbols and number forms (black-letter H, Roman I)
    (0x2460, 0x2500),  # enclosed alphanumerics (circled A, circled 1)
    (0x1D400, 0x1D800),  # mathematical alphanumerics (bold, italic, monospace letters)
    (0x1F100, 0x1F200),  # their supplement (squared and parenthesised letters)
)


@cache
def _folding() -> tuple[dict[int, str], re.Pattern[str]]:
    """The translation to ASCII and the pattern of what it changes (an invisible run with the
    character after it, or one look-alike): built the first time a non-ASCII text is read,
    not at import (NFKC of the styled blocks and a class of a thousand characters)."""
    lookalikes = {
        **_compatible(),
        **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
        "\u3000": " ",
        **dict(zip(_CYRILLIC + _CYRILLIC_UPPER, "aeopcsijxyABEKMHOPCSIJTX", strict=True)),
    }
    changed = re.compile(
        f"[{_INVISIBLE}]+(?:.|\\Z)|[" + _ranges(sorted(lookalikes)) + "]", re.DOTALL
    )
    return str.maketrans(lookalikes), changed


def _compatible() -> dict[str, str]:
    """Each character of :data:`_COMPATIBLE` that NFKC normalises to one printable ASCII one:
    a key or label written in styled letters (a rich-text editor's bold, a chat's fancy
    text) reads as the ASCII it stands for: about 900 characters."""
    import unicodedata  # here: the first non-ASCII text pays for it, not every import

    out = {}
    for low, high in _COMPATIBLE:
        for code in range(low, high):
            normal = unicodedata.normalize("NFKC", chr(code))
            if len(normal) == 1 and normal.isascii() and normal.isprintable():
                out[chr(code)] = normal
    return out


# Characters drawn as nothing (Unicode's format characters a key can carry unseen): a soft
# hyphen, the zero-width space, joiners and non-joiner, the word joiner and invisible
# operators, the byte order mark, and the bidirectional marks, embeddings and isolates (a
# key pasted from a chat or a rich-text page, or typed in to slip past a filter). Read
# without them, each taken with the character after it.
_INVISIBLE = "\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_HIDDEN = re.compile(f"[{_INVISIBLE}]")


def _ranges(characters: list[str]) -> str:
    """A regex character class's body for ``characters`` (sorted), runs of consecutive code
    points written as ranges: it compiles in a fraction of the time a list of them takes."""
    out: list[str] = []
    start = previous = ord(characters[0])
    for code in [*(ord(c) for c in characters[1:]), -1]:
        if code != previous + 1:
            last = "-" + re.escape(chr(previous)) if previous > start else ""
            out.append(re.escape(chr(start)) + last)
            start = code
        previous = code
    return "".join(out)


def lookalike_view(text: str, parent: View | None = None) -> View | None:
    """``text`` with each look-alike character read as the ASCII one it is drawn as, and
    without the characters drawn as nothing; None for an ASCII text or one without any.
    ``parent``: the view ``text`` is the decoded text of (a JSON dump's ``\\u200b``, a
    ``\\uff53``). A C-speed translation and search decide; the positions are one regex pass:
    linear."""
    if text.isascii():
        return None
    fold, changed = _folding()
    folded = text.translate(fold)
    if _HIDDEN.search(text) is None:
        if folded == text:
            return None
        positions = [found.start() for found in changed.finditer(text)]
        return View(folded, positions, positions, [at + 1 for at in positions], parent)
    parts: list[str] = []
    positions, starts, ends = [], [], []
    kept = length = 0
    for found in changed.finditer(text):
        start, end = found.span()
        shown = folded[end - 1] if not _HIDDEN.match(text, end - 1) else ""
        parts.append(folded[kept:start])
        length += start - kept
        kept = end
        if not shown:  # invisible to the text's end: nothing follows to map
            continue
        parts.append(shown)
        positions.append(length)
        starts.append(start)
        ends.append(end)
        length += 1
    parts.append(folded[kept:])
    return View("".join(parts), positions, starts, ends, parent)


BASE64_OPENINGS = ("eyJ", "ewog", "ewoJ", "ew0K", "LS0tLS1CRUdJTi")
"""How base64 of a JSON object starts: ``{"`` encodes as ``eyJ``; pretty-printed (a service
account's key file, a ``config.json``: ``{`` then a newline and an indent of spaces or a tab,
or ``{\r\n``) as ``ewog``, ``ewoJ``, ``ew0K``; and how a PEM block's does, ``-----BEGIN``
(a kubeconfig's ``client-key-data``, a Kubernetes secret's ``tls.key``). Five substring
checks: each more costs long prose about a twentieth of its screening."""

_BASE64_BLOB = re.compile(
    r"(?:eyJ|ewo[gJ]|ew0K)[A-Za-z0-9+/_-]{12,}={0,2}"
    r"|LS0tLS1CRUdJTi(?:[A-Za-z0-9+/]|\r?\n(?=[A-Za-z0-9+/]))+={0,2}"
)
"""Base64 of a JSON object, standard or URL-safe alphabet, or of a PEM block, on one line or
wrapped as ``base64`` wraps it (:data:`BASE64_OPENINGS`)."""


def may_hold_base64(text: str) -> bool:
    """Whether ``text`` holds how a JSON object's or a PEM block's base64 starts: a few
    substring checks."""
    return any(opening in text for opening in BASE64_OPENINGS)


def base64_blobs(text: str) -> list[tuple[int, int, str]]:
    """Each base64 token in ``text`` that decodes to text (a config or credentials blob
    passed as one string, compact or pretty-printed, a JWT's segments, a key file's PEM
    block): (start, end, the decoded text). Read only when ``text`` holds one of
    :data:`BASE64_OPENINGS`; one regex pass and one decoding per token: linear."""
    out: list[tuple[int, int, str]] = []
    for found in _BASE64_BLOB.finditer(text):
        token = "".join(found.group().split()).rstrip("=").replace("-", "+").replace("_", "/")
        whole = len(token) - len(token) % 4  # text glued after it: read what decodes whole
        try:
            data = base64.b64decode(token[:whole], validate=True)
        except (binascii.Error, ValueError):
            continue
        out.append((*found.span(), data.decode("utf-8", "replace")))
    return out
