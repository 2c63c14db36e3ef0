"""``Scrubber``: what is scrubbed, and the scrubbing of texts, attribute values and content.

A text is screened first for each detector's anchors (literals such as ``sk-`` or ``eyj``
in the lower-cased text: C-speed substring searches; the common text has none and costs only
that). The detectors whose anchors were seen then find their secrets; overlapping finds
merge, and each is replaced by a marker that names the detector and the length, never any
character of the secret: ``[REDACTED:jwt len=171]``. The text around it is kept. Each
replacement is told to ``found(detector)`` (the self-metric); the value never is.

A text holding ``%`` or a backslash is also scrubbed as it reads decoded (:mod:`._encoded`:
percent-encoding, JSON and Python string escapes): a secret found there is replaced with the
encoded characters it was decoded from, so ``password%3Dhunter2%21`` and ``\\"api_key\\":
\\"...\\"`` lose their values too. HTML character references are decoded
the same way (``&quot;api_key&quot;``), and a base64 token of JSON (``eyJ...``; pretty-printed,
``ewog...``) is read decoded: one in which a detector finds a credential is replaced whole. A
text with none of ``%``, a backslash, ``&`` or a JSON object's base64 opening pays those
substring checks.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_contract.sources._arguments import MAX_DEPTH, TRUNCATION_MARK
from agent_otel._guard import report
from agent_otel._plain import a_kind, items_of, plain_value, shown, text_of
from agent_otel.recording._hints import keyworded_but, nearest
from agent_otel.recording._pages import see

from ._detectors import (
    BUILT_IN,
    POSITIONAL_COMMANDS,
    Detector,
    basic_credentials,
    named_rows,
    random_value,
)
from ._encoded import base64_blobs, lookalike_view, may_hold, may_hold_base64, views
from ._keys import JOIN, is_secret_key, names_a_key, normalise, words

Found = Callable[[str], None]
CALLBACK = "callback"
KEY_NAME = "key_name"
# MAX_DEPTH (the contract's, content's own): how deep Scrubber.value reads nested content;
# deeper, or a cycle, is replaced unread, so it is never sent unscrubbed, and a value that
# holds itself cannot exhaust the stack in the middle of a run.
DETECTORS = tuple(dict.fromkeys(d.name for d in BUILT_IN))
"""The built-in detectors' names, as markers and the self-metric name them."""


SHORT = 20
"""Below this length (an AWS key id's) only the detectors of a labelled value can match (a URL,
key=value, Basic, a command's flag, an XML element, a pair), and they need ``:``, ``=``,
``Basic`` (any case), `` -`` (a client's short flag: ``-p``, ``-a``, ``-P``, ``-w``, ``-nb``),
``--``, ``<`` or ``,``."""
_REMEMBER, _REMEMBERED = 128, 2048  # clean strings a Scrub remembers: how long, how many
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ignore(name: str) -> None:
    return None


_PASSES = 4
"""How many times :meth:`Scrubber.text` reads a text at most: once more after each pass that
replaced something, since a detector that wants a boundary before its literal (a flag's
``--``, a hex key's ``sk-``) may be looking at a secret another detector replaced in the same
pass (``ghp_...--password VALUE``): what a second scrub would find is found by the first.
Only a text that held a secret pays for more than one pass."""
_MARKER = re.compile(r"\[REDACTED:[A-Za-z0-9_.:-]{1,64} len=([0-9]{1,12})\]")
MARGIN = 4096
"""Characters scrubbed past where a text will be cut (:meth:`Scrub.prefix`): a secret the cut
splits is found whole (a 4096-bit RSA key block is about 3.3k characters)."""


def _source_length(out: str, start: int, stop: int) -> int:
    """At least how many characters of the text ``out`` was scrubbed from made ``out[start:
    stop]``: a marker counts the longer of itself and the secret it names (its ``len``)."""
    total, position = 0, start
    for found in _MARKER.finditer(out, max(start - 96, 0), min(stop + 96, len(out))):
        if found.end() <= start or found.start() >= stop:
            continue
        total += max(found.start() - position, 0)
        total += max(int(found.group(1)), found.end() - found.start())
        position = found.end()
    return total + max(stop - position, 0)


def _names(setting: str, given: object) -> tuple[str, ...]:
    """``keys`` or ``disable`` as a tuple of plain ``str``: a ``str`` itself is a mistake (its
    letters would be the names), so is a name of another type."""
    if isinstance(given, (str, bytes)) or not isinstance(given, Collection):
        raise TypeError(
            f"Scrubber({setting}=...) takes a collection of names, such as ({shown(given)},), "
            f"not {a_kind(given)}"
            if isinstance(given, str)
            else f"Scrubber({setting}=...) takes a collection of names, not {a_kind(given)}"
        )
    if isinstance(given, (list, tuple)):
        items = items_of(given)
    else:  # a dict's keys, a set: read by the base type's own iteration where there is one
        items = list(dict.__iter__(given) if isinstance(given, dict) else given)
    names = tuple(text_of(item) for item in items)
    for item, name in zip(items, names, strict=True):
        if name is None:
            raise TypeError(f"Scrubber({setting}=...) takes str names, not {shown(item)}")
    return names  # type: ignore[return-value]


def _patterns(given: object) -> dict[str, str | re.Pattern[str]]:
    """``patterns`` as a dict of names to compilable patterns, or the error naming the one."""
    if not isinstance(given, Mapping):
        raise TypeError(
            f"Scrubber(patterns=...) takes a mapping of names to regular expressions, "
            f"not {shown(given)}"
        )
    out: dict[str, str | re.Pattern[str]] = {}
    for name, pattern in dict.items(given) if isinstance(given, dict) else given.items():
        key = text_of(name)
        if key is None:
            raise TypeError(f"Scrubber(patterns=...): a name must be a str, not {shown(name)}")
        if isinstance(pattern, re.Pattern):
            if not isinstance(pattern.pattern, str):
                raise TypeError(f"Scrubber(patterns=...): {key!r} is a bytes pattern, not str")
            out[key] = pattern
            continue
        text = text_of(pattern)
        if text is None:
            raise TypeError(
                f"Scrubber(patterns=...): {key!r} must be a str or re.Pattern, not {shown(pattern)}"
            )
        try:
            re.compile(text)
        except re.error as error:
            raise ValueError(f"Scrubber(patterns=...): {key!r} does not compile: {error}") from None
        out[key] = text
    return out


def _named(keys: Collection[str]) -> tuple[Detector, ...]:
    """The text forms of added key names (``pin_code``: ``PIN_CODE=...``, ``"pinCode": ...``),
    as the built-in names have them: one table for content and text."""
    spelled = {JOIN.join(re.escape(w) for w in words(key)) for key in keys}
    spelled.discard("")
    if not spelled:
        return ()
    anchors = tuple(sorted({words(key)[0] for key in keys if words(key)}))
    return named_rows("|".join(sorted(spelled, key=lambda s: (-len(s), s))), anchors)


_RARE_FIRST = "~^|\\{}[]<>@#$%&*+!?;_=:/.,'\"()-0123456789qjzxkvbywgpfmucdlhsnriotea"
"""Characters by how seldom text holds them, rarest first (a guess: symbols, digits, then
letters by English frequency)."""


def _gated(
    detectors: tuple[Detector, ...],
) -> tuple[tuple[str, tuple[tuple[str, tuple[int, ...]], ...]], ...]:
    """Each anchor once, with the detectors (indices into ``detectors``) it lets run, grouped
    under one character the anchor holds, its rarest (:data:`_RARE_FIRST`): a text is searched
    for an anchor only when it holds that character (a text without ``_`` pays one search for
    all the ``..._`` prefixes, not one for each), and only the detectors of the anchors it
    holds are visited, not every detector's anchors."""
    users: dict[str, list[int]] = {}
    for index, detector in enumerate(detectors):
        for anchor in detector.anchors:
            users.setdefault(anchor, []).append(index)
    groups: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for anchor, indices in users.items():
        gate = min(anchor, key=lambda c: _RARE_FIRST.find(c) % (len(_RARE_FIRST) + 1))
        groups.setdefault(gate, []).append((anchor, tuple(indices)))
    return tuple((gate, tuple(group)) for gate, group in groups.items())


def marker(name: str, length: int) -> str:
    """What replaces a secret: the detector's name and the secret's length, nothing of it."""
    return f"[REDACTED:{name} len={length}]"


@keyworded_but("text", "value", "tree")  # called per value recorded
@dataclass(frozen=True, slots=True)
class Scrubber:
    """What the default scrubber looks for, and what you add to it.

    ``patterns``: more detectors, name -> regular expression (its last matching named group,
    else the whole match, is redacted); they run on every exported string, so keep them
    linear. ``keys``: more field names whose values are secrets, in structured content and text
    (compared by words: ``"pin_code"`` also matches ``pinCode``). ``disable``: names of
    built-in detectors to switch off (see :data:`DETECTORS`). ``callback(text) -> text`` runs
    last on every string (return it unchanged when there is nothing to hide; a change is
    counted as ``callback``). ``scrub=False`` where the options are given turns scrubbing off.
    """

    patterns: Mapping[str, str | re.Pattern[str]] = field(default_factory=dict)
    keys: Collection[str] = ()
    disable: Collection[str] = ()
    callback: Callable[[str], str] | None = None
    _detectors: tuple[Detector, ...] = field(init=False, repr=False, compare=False)
    _always: tuple[Detector, ...] = field(init=False, repr=False, compare=False)
    _anchors: tuple[tuple[str, tuple[tuple[str, tuple[int, ...]], ...]], ...] = field(
        init=False, repr=False, compare=False
    )
    _short: bool = field(init=False, repr=False, compare=False)
    _keys: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """A setting of the wrong shape raises here, naming it: a string where a collection of
        names belongs (each of its letters a key), a pattern that does not compile."""
        object.__setattr__(self, "keys", _names("keys", self.keys))
        object.__setattr__(self, "disable", _names("disable", self.disable))
        if self.callback is not None and not callable(self.callback):
            raise TypeError(
                f"Scrubber(callback=...) takes a callable callback(text) -> text, "
                f"not {a_kind(self.callback)}"
            )
        object.__setattr__(self, "patterns", _patterns(self.patterns))
        unknown = set(self.disable) - set(DETECTORS)
        if unknown:
            first = sorted(unknown)[0]
            raise ValueError(
                f"Scrubber(disable=...) names unknown detectors {sorted(unknown)}"
                f"{nearest(first, DETECTORS)}{see('Scrubber')}"
            )
        detectors = tuple(d for d in BUILT_IN + _named(self.keys) if d.name not in self.disable)
        always = tuple(
            Detector(name, re.compile(pattern) if isinstance(pattern, str) else pattern, ())
            for name, pattern in self.patterns.items()
        )
        object.__setattr__(self, "_detectors", detectors)
        object.__setattr__(self, "_anchors", _gated(detectors))
        object.__setattr__(self, "_always", always)
        object.__setattr__(self, "_keys", normalise(self.keys))
        object.__setattr__(self, "_short", not always and self.callback is None)

    def text(self, text: str, found: Found = _ignore) -> str:
        """``text`` with every secret the detectors recognise replaced by its marker."""
        short = self._short and len(text) < SHORT
        if short and not (
            ":" in text or "=" in text or "asic" in text or "ASIC" in text or " -" in text
            or "--" in text or "<" in text or "," in text or may_hold(text)
            or not text.isascii()
        ):  # fmt: skip
            return text  # too short for every built-in detector but those these hold
        for _ in range(_PASSES):
            scrubbed = self._pass(text, found)
            if scrubbed is text:
                break
            text = scrubbed
        if self.callback is not None:
            text = self._called_back(text, found)
        return text

    def _pass(self, text: str, found: Found) -> str:
        """``text`` with what the detectors find in it (and in its decoded views) replaced;
        the same object when they find nothing."""
        spans = self._spans(text)
        if may_hold(text):  # an encoded secret: found decoded, redacted as it was encoded
            for view in views(text):
                spans.extend((*view.span(s, e), n) for s, e, n in self._spans(view.text))
                shown = lookalike_view(view.text, view)  # a JSON dump's \u200b, \uff53
                if shown is not None:
                    spans.extend((*shown.span(s, e), n) for s, e, n in self._spans(shown.text))
        folded = lookalike_view(text)  # fullwidth PASSWORD=, a Cyrillic letter in a label
        if folded is not None:
            spans.extend((*folded.span(s, e), n) for s, e, n in self._spans(folded.text))
        if spans and "[REDACTED:" in text:
            spans = _outside_markers(text, spans)
        return _replace(text, spans, found) if spans else text

    def _called_back(self, text: str, found: Found) -> str:
        """The callback's text; failing closed: a callback that raises or returns what is no
        ``str`` has the whole text replaced by the ``callback`` marker (it may have been there
        to hide something in it), reported once. A ``str`` subclass is the ``str`` it is."""
        try:
            changed = self.callback(text)  # type: ignore[misc]
            if type(changed) is not str:
                if not isinstance(changed, str):
                    raise TypeError(f"Scrubber(callback=...) returned {a_kind(changed)}, not a str")
                changed = str.__str__(changed)
        except Exception:
            report("scrub callback")
            changed = marker(CALLBACK, len(text))
        if changed != text:
            found(CALLBACK)
        return changed

    def _spans(self, text: str, decoded: bool = False) -> list[tuple[int, int, str]]:
        """Where the detectors whose anchors ``text`` holds find secrets in it: (start, end,
        detector name). A base64 token of JSON (``eyJ...``, ``ewog...``) or of a PEM block
        in which they find one is replaced whole, named by the first find (``decoded``:
        ``text`` is such a token's decoded text, not read for more)."""
        lowered = text.lower()
        if len(lowered) != len(text):  # a few non-ASCII letters lower to two characters
            lowered = text.translate(_ASCII_LOWER)
        spans: list[tuple[int, int, str]] = []
        chosen: set[int] = set()  # the detectors (their indices) whose anchors the text holds
        for gate, anchors in self._anchors:
            if gate in lowered:
                for anchor, indices in anchors:
                    if anchor in lowered:
                        chosen.update(indices)
        detectors = self._detectors
        for index in sorted(chosen):  # in the table's order: a tie is named by the first
            detector = detectors[index]
            spans.extend((s, e, detector.name) for s, e in detector.spans(text, lowered))
        for detector in self._always:
            spans.extend((s, e, detector.name) for s, e in detector.spans(text, lowered))
        if not decoded and may_hold_base64(text):
            for start, end, blob in base64_blobs(text):
                inner = self._spans(blob, decoded=True)
                if inner:
                    spans.append((start, end, min(inner)[2]))
        return spans

    def value(self, value: Any, found: Found = _ignore, depth: int = 0) -> Any:
        """A plain JSON value (dicts, lists, strings, numbers) with its strings scrubbed and
        every value under a secret key (:mod:`._keys`) replaced; copied only where changed. A
        string holding a JSON object or array (tool arguments often are) is read as one; bytes
        as their UTF-8 text, given back as bytes. A
        dict or list nested past :data:`MAX_DEPTH` (a cycle: a list that holds itself)
        becomes :data:`TRUNCATION_MARK`: it is not read, so it is not sent."""
        kind = type(value)
        if kind is str:
            if value[:1] in "{[" and value:
                return self._json_text(value, found, depth)
            return self.text(value, found)
        if depth >= MAX_DEPTH and kind in (dict, list, tuple):
            return TRUNCATION_MARK
        if kind is dict:
            out: dict[Any, Any] | None = None
            slot = self._value_slot(value)
            private = _private_members(value)
            for key, item in value.items():
                name = self.text(key, found) if type(key) is str else key
                if type(key) is str and (
                    key is slot
                    or key in private
                    or is_secret_key(key, self._keys)
                    or _random_key(key, item)
                ):
                    fixed = _redact_all(item, found, depth + 1)
                else:
                    fixed = self._labelled(key, item, self.value(item, found, depth + 1), found)
                if out is None and (fixed is not item or name is not key):
                    out = {}
                    for done, kept in value.items():  # the unchanged prefix, as it was
                        if done is key:
                            break
                        out[done] = kept
                if out is not None:
                    out[name] = fixed
            return value if out is None else out
        if kind is list or kind is tuple:
            if _pairs(value):  # headers as (name, value) pairs: the name is the key
                items = [self._pair(pair, found, self.value, depth + 1) for pair in value]
            else:
                items = self._argv([self.value(item, found, depth + 1) for item in value], found)
            if any(a is not b for a, b in zip(items, value, strict=True)):
                return items
            return value
        if kind is bytes or kind is bytearray:  # a body or a header read raw: its text
            text = value.decode("utf-8", "surrogateescape")
            scrubbed = self.value(text, found, depth)
            if scrubbed is text:
                return value
            return kind(str(scrubbed).encode("utf-8", "surrogateescape"))
        return value

    def _argv(self, items: list[Any], found: Found) -> list[Any]:
        """``items`` (each scrubbed already) as a command's argv, when they are strings and one
        is a flag (``["mytool", "--password", "..."]``, ``["curl", "-u", "user:pw"]``,
        ``process.command_args``): a flag's value is the next item, which no item's own scan
        sees beside its flag. They are read as the detectors read an argv list's repr, and
        what the ``command_line`` detectors find there is replaced in its item."""
        if len(items) < 2 or not all(type(item) is str for item in items):
            return items
        if not any(item[:1] == "-" for item in items) and POSITIONAL_COMMANDS.isdisjoint(items):
            return items  # every form they find has a flag (--password, -p, -u) or a verb
        joined = '"' + '", "'.join(items) + '"'  # where each item starts: its offset below
        spans = [span for span in self._spans(joined) if span[2] == _COMMAND_LINE]
        if spans and "[REDACTED:" in joined:
            spans = _outside_markers(joined, spans)
        if not spans:
            return items
        out, start = list(items), 1
        for index, item in enumerate(items):
            end = start + len(item)
            inside = [(max(s, start) - start, min(e, end) - start, name)
                      for s, e, name in spans if s < end and e > start]  # fmt: skip
            if inside:
                out[index] = _replace(item, inside, found)
            start = end + 4  # past '", "'
        return out

    def _pair(
        self, pair: Any, found: Found, scrub: Callable[[Any, Found, int], Any], depth: int
    ) -> Any:
        """A (name, value) pair of a list of pairs: the value replaced when the name is a
        secret key's (``("x-api-key", "...")``), else scrubbed as any value is."""
        name, item = pair
        secret = is_secret_key(name, self._keys)
        fixed = _redact_all(item, found, depth) if secret else scrub(item, found, depth)
        named = scrub(name, found, depth)
        return pair if fixed is item and named is name else [named, fixed]

    def tree(self, value: Any, found: Found = _ignore, depth: int = 0) -> Any:
        """Plain built-ins (an attribute value as :func:`plain_value` makes it: strings,
        numbers, lists and string-keyed dicts, nested) with every string scrubbed as text and
        every scalar under a secret key replaced: a new value of the same shape."""
        kind = type(value)
        if kind is str:
            return self.text(value, found)
        if depth >= MAX_DEPTH and (kind is list or kind is dict):
            return TRUNCATION_MARK
        if kind is list:
            if _pairs(value):
                return [self._pair(pair, found, self.tree, depth + 1) for pair in value]
            return self._argv([self.tree(item, found, depth + 1) for item in value], found)
        if kind is dict:
            slot = self._value_slot(value)
            private = _private_members(value)
            return {
                key: _redact_all(item, found, depth + 1)
                if key is slot
                or key in private
                or is_secret_key(key, self._keys)
                or _random_key(key, item)
                else self._labelled(key, item, self.tree(item, found, depth + 1), found)
                for key, item in value.items()
            }
        return value

    def _labelled(self, key: Any, item: Any, fixed: Any, found: Found) -> Any:
        """``fixed``, or, when ``item`` is a string with an ``@`` its own scan found clean,
        ``item`` read as text writes it under its key, ``key=item``: a connection string
        whose password only its label tells (``{"dsn": "app:PASSWORD@db"}``,
        ``{"db_login": "scott/tiger@db"}``) is found in content as in text. Only a clean
        string with an ``@`` (an address, a URL) pays the second scan. A user and a password
        under a name that ends in ``auth`` (``{"auth": ["bob", "PASSWORD"]}``, as ``requests``,
        ``httpx`` and Elasticsearch's client take them) lose the password."""
        if type(item) in _PAIR_TYPES and len(item) == 2 and _auth_pair(key, item):
            return [fixed[0], _redact_all(item[1], found)]
        if fixed is not item or type(item) is not str or type(key) is not str or "@" not in item:
            return fixed
        labelled = f"{key}={item}"
        out = self.text(labelled, found)
        head = len(key) + 1
        if out == labelled or out[:head] != labelled[:head]:
            return fixed
        return out[head:]

    def _value_slot(self, value: dict[Any, Any]) -> str | None:
        """The ``value`` key of a {name, value} entry whose name is a secret key's: an
        environment variable as Kubernetes, ECS and app settings list them
        (``{"name": "DB_PASSWORD", "value": "..."}``); else None."""
        if "name" not in value and "Name" not in value:
            return None
        named = value.get("name", value.get("Name"))
        if type(named) is not str or not is_secret_key(named, self._keys):
            return None
        return next((k for k in value if type(k) is str and k in ("value", "Value")), None)

    def _json_text(self, text: str, found: Found, depth: int = 0) -> str:
        """A string that holds a JSON object or array: scrubbed as that value (re-serialised
        only when something changed), else as text."""
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return self.text(text, found)
        if not isinstance(parsed, (dict, list)):
            return self.text(text, found)
        fixed = self.value(parsed, found, depth)
        return text if fixed is parsed else json.dumps(fixed, ensure_ascii=False)


JWK_PRIVATE = frozenset({"d", "p", "q", "dp", "dq", "qi", "k"})
"""A JSON Web Key's private members (RFC 7518), secrets in an object that has a ``kty``: an
RSA key's private exponent and primes, an EC or OKP key's ``d``, a symmetric key's ``k``."""


SECRET_DATA = frozenset({"data", "stringData"})
"""A Kubernetes Secret's maps of secrets (a manifest, ``kubectl get secret -o json``, a client's
``to_dict()``): their values are secrets whatever their keys' names (``config.json``)."""


def _private_members(value: dict[Any, Any]) -> frozenset[str] | tuple[()]:
    """The members of ``value`` that are secrets by what the object is, not by their names: a
    JSON Web Key's private ones, a Kubernetes Secret's data."""
    if "kty" in value:
        return JWK_PRIVATE
    kind = value.get("kind")
    if type(kind) is str and kind == "Secret":
        return SECRET_DATA
    return ()


_PAIR_TYPES = (list, tuple)


def _auth_pair(key: Any, item: Any) -> bool:
    """``item`` is (user, password) under a name whose last word is ``auth`` (``auth``,
    ``basic_auth``, ``http_auth``; not ``oauth``)."""
    return (
        type(key) is str
        and type(item[0]) is str
        and type(item[1]) is str
        and words(key)[-1:] == ["auth"]
    )


def _random_key(key: str, item: Any) -> bool:
    """``item`` is a random string under a key named ``..._key`` (``azure_openai_key``): the
    same rule as the text's ``AZURE_OPENAI_KEY=...`` (:func:`random_value`); or a ``Basic``
    credential (base64 of ``user:password``) under a key that ends in ``auth``, as a Docker
    or Podman ``config.json`` keeps a registry's login and an ``.npmrc`` its ``_auth``
    (``auth`` alone names no secret: its value must be one)."""
    if type(item) is not str:
        return False
    if names_a_key(key):
        return random_value(item)
    return key[-4:].lower() == "auth" and basic_credentials(item)


def _outside_markers(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``spans`` cut to their pieces outside every marker: a marker is never scrubbed again,
    whichever detector would read it as a value (``sig=[REDACTED:...]``, a quoted one), nor
    taken into a find that starts before it (a flag's value read from the ``=`` that a
    marker follows: ``--api-key =[REDACTED:...]``) or after its start. A piece that holds no
    letter or digit is no secret (what is left of such a find): dropped."""
    markers = [found.span() for found in _MARKER.finditer(text)]  # in order, never overlapping
    starts = [start for start, _ in markers]
    out = []
    for start, end, name in spans:
        index = max(bisect.bisect_right(starts, start) - 1, 0)  # the first marker it may meet
        # from there, only the markers it meets (not a copy of all that follow: quadratic on
        # a text of many finds, as a second pass reads one)
        for at in range(index, len(markers)):
            marker_start, marker_end = markers[at]
            if marker_start >= end:
                break
            if marker_end <= start:
                continue
            if marker_start > start:
                out.append((start, marker_start, name))
            start = marker_end
        if start < end:
            out.append((start, end, name))
    return [span for span in out if _ALNUM.search(text, span[0], span[1])]


_ALNUM = re.compile(r"[^\W_]")


_COMMAND_LINE = "command_line"  # the detectors of a command's flags and their values


def _pairs(value: list[Any] | tuple[Any, ...]) -> bool:
    """``value`` is a list of (name, value) pairs, as headers often are (``httpx``'s raw
    headers, an ASGI scope's, ``dict.items()``): each item a 2-item list or tuple whose
    first is a ``str``."""
    return bool(value) and all(
        (type(item) is list or type(item) is tuple) and len(item) == 2 and type(item[0]) is str
        for item in value
    )


def _replace(text: str, spans: list[tuple[int, int, str]], found: Found) -> str:
    """``text`` with each span (start, end, detector) replaced by its marker."""
    spans.sort(key=lambda span: (span[0], -span[1]))  # the longest of those that start first
    parts, kept = [], 0
    start, end, name = spans[0]
    for s, e, n in spans[1:]:
        if s < end:  # overlapping finds are one secret, named by the first (and longest)
            end = max(end, e)
            continue
        parts.append(text[kept:start])
        parts.append(marker(name, end - start))
        found(name)
        kept, (start, end, name) = end, (s, e, n)
    parts.append(text[kept:start])
    parts.append(marker(name, end - start))
    found(name)
    parts.append(text[end:])
    return "".join(parts)


def _redact_all(value: Any, found: Found, depth: int = 0) -> Any:
    """Every scalar under a secret key as a marker (``None`` and booleans say nothing); what
    nests past :data:`MAX_DEPTH` as :data:`TRUNCATION_MARK`."""
    if value is None or isinstance(value, bool):
        return value
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return TRUNCATION_MARK
    if isinstance(value, dict):
        return {key: _redact_all(item, found, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_all(item, found, depth + 1) for item in value]
    if isinstance(value, str):
        text = value
    elif isinstance(value, (bytes, bytearray)):
        text = value.decode("utf-8", "replace")
    else:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):  # not JSON (a date, a secret type): its text
            text = str(value)
    if not text or _MARKER.fullmatch(text):  # nothing, or replaced already
        return value
    found(KEY_NAME)
    return marker(KEY_NAME, len(text))


DEFAULT = Scrubber()
"""The scrubber in force unless the options say otherwise."""


class Scrub:
    """A scrubber bound to where its finds are counted: what the write doors hold.

    Short strings it found clean are remembered in :attr:`known` (model, tool, provider and
    span names recur on every call), so a run without content pays a set lookup per attribute.
    """

    __slots__ = ("_trusted", "found", "known", "scrubber")

    def __init__(self, scrubber: Scrubber, found: Found = _ignore) -> None:
        self.scrubber = scrubber
        self.found = found
        # Short ASCII strings left unchanged (never with a callback): scrubbing them again is
        # a no-op, and they are encodable: a write skips both (recording._encodable.checked).
        self.known: set[str] = set()
        self._trusted: set[str] = set()

    def trust(self, text: str) -> None:
        """``text`` was made from values this scrub just scrubbed (the content JSON, before a
        ``redact`` hook could add anything): its write need not scan it again."""
        if len(self._trusted) >= 8:
            self._trusted.clear()
        self._trusted.add(text)

    def text(self, text: str) -> str:
        if type(text) is not str:  # a subclass as the str it is: its hash may raise
            text = str.__str__(text)
        clean = self.known
        if text in clean:
            return text
        if len(text) > _REMEMBER and text in self._trusted:
            self._trusted.discard(text)
            return text
        out = self.scrubber.text(text, self.found)
        if (
            out is text
            and len(text) <= _REMEMBER
            and text.isascii()
            and self.scrubber.callback is None
        ):
            if len(clean) >= _REMEMBERED:
                clean.clear()
            clean.add(text)
        return out

    def prefix(self, text: str, chars: int) -> str:
        """``text`` scrubbed as far as a cut to its first ``chars`` characters needs: those of
        the result are the whole text's, scrubbed, so cutting there leaves no piece of a
        secret the cut would have split (scrubbing comes before every cut). The cost is
        bounded by ``chars`` (unless the text is mostly secrets), not by the text's length."""
        return self._bounded(text, chars, tail=False)

    def suffix(self, text: str, chars: int) -> str:
        """As :meth:`prefix`, for a cut that keeps the last ``chars`` characters."""
        return self._bounded(text, chars, tail=True)

    def _bounded(self, text: str, chars: int, tail: bool) -> str:
        if type(text) is not str:
            text = str.__str__(text)
        window = chars + MARGIN
        while window < len(text) and self.scrubber.callback is None:
            finds: list[str] = []  # told once, for the window that is kept
            piece = text[len(text) - window :] if tail else text[:window]
            out = self.scrubber.text(piece, finds.append)
            kept = (len(out) - chars, len(out)) if tail else (0, chars)
            if _source_length(out, *kept) <= window - MARGIN:
                for name in finds:
                    self.found(name)
                return out
            window *= 4  # mostly secrets, replaced by shorter markers: look further
        return self.text(text)

    def value(self, value: Any) -> Any:
        """A plain JSON value scrubbed (see :meth:`Scrubber.value`)."""
        return self.scrubber.value(value, self.found)

    def attribute(self, value: Any) -> Any:
        """An attribute value scrubbed: a string, each string of a list, and of a value of the
        attribute model's other shapes (a subclass of a built-in, a map, nested: read as the
        plain built-ins it is, every value under a secret key replaced); others as they are."""
        kind = type(value)
        if kind is str:
            return self.text(value)
        if (kind is list or kind is tuple) and all(type(item) is str for item in value):
            items = [self.text(item) for item in value]  # the usual list: finish reasons
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        if isinstance(value, (str, list, tuple, Mapping)):
            return self.scrubber.tree(plain_value(value), self.found)
        return value

    def attributes(self, attributes: Mapping[str, Any] | None) -> Any:
        """``attributes`` with every value scrubbed; the same mapping when nothing changed.
        Keys are names chosen in code, not data: they are kept."""
        if not attributes:
            return attributes
        out: dict[str, Any] | None = None
        for key, value in attributes.items():
            fixed = self.attribute(value)
            if fixed is not value and out is None:
                out = dict(attributes)
            if out is not None:
                out[key] = fixed
        return attributes if out is None else out


_chosen: list[bool | Scrubber | None] = [None]
"""``configure(scrub=...)``: the process's choice for whatever does not choose its own."""


def set_default_scrub(option: bool | Scrubber | None) -> None:
    """The process default (``configure(scrub=...)``); None goes back to :data:`DEFAULT`."""
    _chosen[0] = option


def resolve_scrubber(option: bool | Scrubber | None) -> Scrubber | None:
    """The scrubber in force: a :class:`Scrubber` itself, ``True`` the default one, ``False``
    none, and ``None`` (not chosen) the process default that ``configure(scrub=...)`` set,
    else the default one."""
    if option is None:
        option = _chosen[0]
    if isinstance(option, Scrubber):
        return option
    return None if option is False else DEFAULT
