"""Secrets recognised by the name they are stored under, in structured tool arguments and
results (``{"password": ...}``, ``{"apiKey": ...}``, ``{"access_token": ...}``).

A key is split into words (``apiKey``, ``api-key`` and ``API_KEY`` all read ``api key``).
It names a secret when a word is one of :data:`SECRET_WORDS`, when two neighbouring words
make one of :data:`SECRET_PAIRS`, or when its last word is ``token`` in the singular: so
``access_token`` and ``github_token`` are secrets, ``input_tokens``, ``max_tokens``,
``token_count`` and ``tokenizer`` are not. A last word ``pass`` is a password's short name
(``DB_PASS``, ``SMTP_PASS`` in an env file, nodemailer's ``auth: {user, pass}``);
``passes``, ``pass_rate`` and ``bypass`` are not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

SECRET_WORDS = frozenset({
    "password", "passwd", "pwd", "passphrase", "passcode", "secret", "secrets", "credential",
    "credentials", "authorization", "apikey", "privatekey", "accesskey", "secretkey",
    "cookie", "cookies", "bearer",
})  # fmt: skip
SECRET_PAIRS = frozenset({
    ("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"),
    ("client", "secret"), ("set", "cookie"), ("session", "key"), ("subscription", "key"),
    ("signing", "key"), ("encryption", "key"), ("master", "key"),
    # what OAuth, OpenID Connect and SAML name as credentials: PKCE's verifier, a client's
    # signed assertion, a device's code, OAuth 1.0's verifier, a SAML response
    ("code", "verifier"), ("client", "assertion"), ("device", "code"), ("oauth", "verifier"),
    ("saml", "response"),
})  # fmt: skip
_OWN_DETECTOR = frozenset({"authorization"})  # in text, the authorization_header detector's
JOIN = "[_-]?"
"""Between two words of a name in text (``secret_key``, ``secret-key``, ``secretKey``): every
name table of :func:`text_names` and a ``Scrubber``'s added ``keys`` join words with it, so
the prose form can read a space there too (``PROSE_JOIN``: ``the api key is ...``)."""
PROSE_JOIN = "[ _-]?"


def text_names() -> str:
    """The same vocabulary as a regular expression over lower-cased text (``key=value``,
    ``"key": "value"``, ``<key>value</key>``): each secret word, each pair with ``_``, ``-``
    or nothing between (``secret_key``, ``secretKey``), and a key ending in ``token``
    (``_token``, ``-token``, a known camelCase ``accessToken``; never ``tokens``). One table
    for structured content and text, so a name that hides a value in one hides it in both."""
    joined = {first + second for first, second in SECRET_PAIRS}
    single = sorted(SECRET_WORDS - joined - _OWN_DETECTOR, key=lambda w: (-len(w), w))
    firsts: dict[str, list[str]] = {}
    for first, second in sorted(SECRET_PAIRS):
        firsts.setdefault(second, []).append(first)
    pairs = [f"(?:{'|'.join(words)}){JOIN}{second}" for second, words in sorted(firsts.items())]
    tokens = rf"(?:access|auth|refresh|id|session|bearer|api){JOIN}token|(?<![a-z0-9.])token"
    tokens += r"|(?<![a-z0-9.])pass"  # a password's short name: DB_PASS, smtp-pass, pass
    return "(?:" + "|".join([*single, *pairs, tokens]) + ")"


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(key: str) -> list[str]:
    """``key``'s words, lower case: ``"apiKey"`` -> ``["api", "key"]``."""
    return [w.lower() for w in _WORDS.findall(key)]


@lru_cache(maxsize=1024)
def _is_secret(key: str, extra: frozenset[str]) -> bool:
    parts = words(key)
    if not parts:
        return False
    joined = "".join(parts)
    if joined in extra or key.lower() in extra:
        return True
    if parts[-1] == "token" or parts[-1] == "pass":
        return True
    for index, word in enumerate(parts):
        if word in SECRET_WORDS:
            return True
        if index and (parts[index - 1], word) in SECRET_PAIRS:
            return True
    return False


def is_secret_key(key: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a value stored under ``key`` is a secret (``extra``: more names, compared
    with their words joined: ``"pin_code"`` matches ``pinCode`` and ``PIN-CODE``)."""
    if len(key) > 64:  # a sentence used as a key is not a field name
        return False
    return _is_secret(key, extra)


def normalise(names: Iterable[str]) -> frozenset[str]:
    """User-given key names in the form :func:`is_secret_key` compares them."""
    return frozenset("".join(words(name)) for name in names)


@lru_cache(maxsize=1024)
def names_a_key(key: str) -> bool:
    """Whether ``key`` ends in the word ``key`` after another (``azure_openai_key``,
    ``storageKey``, ``LICENSE-KEY``): a value under it is a secret when it is random, not a
    name (:func:`~._detectors.random_value`); ``key`` alone, and ``sort_key``'s names, are
    not."""
    if len(key) > 64:
        return False
    parts = words(key)
    return len(parts) >= 2 and parts[-1] == "key"
