"""``joined``: text a source put together from streamed parts, as the text it was sent as.

JSON writes a character past U+FFFF (an emoji, a rare CJK character) as two escapes, a
UTF-16 surrogate pair (``"\\ud83d\\ude00"``). A server that cuts a streamed string by UTF-16
units sends the two halves in chunks of their own, and the SDK reads each half alone: the
parts a source joins then hold the pair as two code points, which no UTF-8 encoder takes and
``json.loads`` leaves as they are. Sent whole, the same text reads as the character; joined,
it does too. A lone surrogate stays as it came (what a tool makes of it is the agent's).
"""

from __future__ import annotations

__all__ = ["joined", "pairs_joined"]


def joined(text: str) -> str:
    """``text`` with each surrogate pair as the character it encodes; what is no exact
    ``str`` (a number a hostile server sent where the arguments go) as it is."""
    if type(text) is not str or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return pairs_joined(text)
    return text


def pairs_joined(text: str) -> str:
    """``text``, which UTF-8 cannot encode, with each surrogate pair as the character it
    encodes, a lone surrogate left as it is: the one join, also the recorder's (its
    ``clean_text`` then writes what is left lone as ``?``)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
