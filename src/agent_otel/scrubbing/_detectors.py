"""The built-in detectors: credentials recognised by the format of their value.

Each detector is a regular expression for one credential family, plus an optional check on
what it matched (a key must look random; a ``Basic`` value must decode to ``user:pass``). A
detector names the part it redacts (its ``secret`` group, else the whole match), so that
``Authorization: Bearer`` or a URL's scheme and host stay readable.

Linear time, on hostile input too: every pattern starts with a literal (the regex engine's
fast search) and fails within a bounded number of characters or succeeds and moves past its
match; the private key block's end is found by ``str.find``, not a lazy pattern, and a
JWT from the dot before its payload (:func:`jwt_spans`).
A detector runs only when one of its anchors is in the text (:mod:`._scrubber`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._keys import JOIN, PROSE_JOIN, text_names
from ._manifest import KIND, KUBERNETES_SECRET, secret_data_spans
from ._userinfo import USERINFO_LETTERS, prose_userinfo_spans

Check = Callable[[str], bool]
Finder = Callable[[re.Pattern[str], str], list[tuple[int, int]]]
PRIVATE_KEY = "private_key"
JWT = "jwt"


@dataclass(frozen=True, slots=True)
class Detector:
    """One credential family: ``name`` (the marker's), its pattern, the anchors (lower-case
    literals) without one of which in the lower-cased text it cannot match, and an optional
    check of what it would redact."""

    name: str
    pattern: re.Pattern[str]
    anchors: tuple[str, ...]
    check: Check | None = None
    lower: bool = False
    checked: str | None = None
    """The group ``check`` applies to, when only one of the pattern's forms needs it."""
    group_checks: Mapping[str, Check] | None = None
    """A check of its own for a group (one form of several that needs another rule)."""
    finder: Finder | None = None
    """Where the secrets are, when a pattern alone cannot say (what is before its match, the
    lines after it): given the pattern and the text."""
    lead: int = 0
    """How many characters before its match a secret starts: a pattern that starts at a
    literal inside the secret (the regex engine's fast search), its lookbehind having read
    those characters (``-(?<=[0-9a-f]{32}-)us…``: a hex run before a literal)."""

    def spans(self, text: str, lowered: str) -> list[tuple[int, int]]:
        """Where this detector's secrets are in ``text``: (start, end) pairs, in order.
        ``lowered`` is ``text`` with ASCII letters in lower case (same length), which the
        case-insensitive detectors (``lower``) read.

        The redacted part is the pattern's last named group that matched (``secret``, or one
        of a choice of quotings), else the whole match.
        """
        if self.name == PRIVATE_KEY:
            return private_key_spans(self.pattern, text)
        if self.name == JWT:
            return jwt_spans(self.pattern, text)
        if self.finder is not None:
            return self.finder(self.pattern, text)
        out = []
        check = self.check
        only = self.checked
        own = self.group_checks
        for match in self.pattern.finditer(lowered if self.lower else text):
            group = match.lastgroup
            start, end = match.span(group or 0)
            start -= self.lead
            if own is not None and group is not None and group in own:
                if own[group](text[start:end]):
                    out.append((start, end))
            elif end > start and (
                check is None or (only is not None and group != only) or check(text[start:end])
            ):
                out.append((start, end))
        return out


def looks_random(value: str) -> bool:
    """A key's body: letters of both cases and a digit (an identifier or a word has not)."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def mixed_case(value: str) -> bool:
    """A letters-only key's body: both cases (a word or a constant name has one)."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


_HEX = frozenset("0123456789abcdef")
_HEX_RUN = re.compile(r"[0-9a-f-]*")


def hex_body(value: str) -> bool:
    """A key's body in lower-case hex (32+ digits, groups split by ``-`` as in a UUID), with a
    digit and a letter: DeepSeek's and ElevenLabs' keys, a Databricks token."""
    run = _HEX_RUN.match(value)  # a body that runs on into other key characters: its head
    digits = run.group().replace("-", "") if run else ""
    return (
        len(digits) >= 32
        and _HEX.issuperset(digits)
        and any(c.isdigit() for c in digits)
        and not digits.isdigit()
    )


def hex_key(value: str) -> bool:
    """A prefixed key (``sk-``, ``sk-or-v1-``, ``sk-lf-``) whose body is :func:`hex_body`."""
    parts = value.split("-")
    return any(hex_body("-".join(parts[index:])) for index in (1, 2, 3))


def key_body(value: str) -> bool:
    """A key's body: random letters of both cases and a digit, or lower-case hex."""
    return looks_random(value) or hex_body(value[max(value.rfind("_"), value.rfind("-")) + 1 :])


def random_value(value: str) -> bool:
    """A value that is a key, not a name: lower-case hex (:func:`hex_body`), or 20+ random
    letters of both cases and a digit (base64 included). ``sort_key=created_at``,
    ``cache_key=user:42`` and a UUID are names."""
    if _UUID.fullmatch(value):  # an idempotency or request key: an id
        return False
    return hex_body(value.lower()) or (len(value) >= 20 and looks_random(value))


_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def query_credential(value: str) -> bool:
    """A query parameter's value that is a credential, not a name: random letters of both
    cases and a digit, or hex of 16+ digits with a letter (GitHub's OAuth codes)."""
    value = value.rstrip("=")
    if _UUID.fullmatch(value):
        return False
    hexed = len(value) >= 16 and _HEX.issuperset(value.lower())
    return looks_random(value) or (hexed and has_digit(value) and not value.isdigit())


_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?")
_PORT = re.compile(r"[0-9]{1,5}[?#]")


def symbols_in_password(userinfo: str) -> bool:
    """A URL's ``user:password`` up to its last ``@`` whose password holds ``?`` or ``#``
    and is one password, not a password, a host and a query or fragment with an ``@``
    (``pw@db.example.com?cc=a@b.com``: a dotted host, or one with a port, before the ``?``)."""
    password = userinfo.partition(":")[2]
    if ("?" not in password and "#" not in password) or _PORT.match(password):
        return False  # the plain URL form's; a host's port and its query (host:8443?x=a@b)
    at = password.find("@")
    if at == -1:
        return True
    host = _HOST.match(password, at + 1)
    if host is None or host.end() >= len(password) or password[host.end()] not in "?#":
        return True
    name = host.group()
    return not ("." in name or ":" in name or name == "localhost")


def has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def random_body(value: str) -> bool:
    """A key's body after its prefix or label, random rather than a name: a digit, or letters
    of both cases. (A digit alone refused about one real key in a hundred: 27 random
    characters hold no digit that often.)"""
    return has_digit(value) or mixed_case(value)


def basic_credentials(value: str) -> bool:
    """A ``Basic`` value: base64 of printable ``user:password``."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_USERINFO_PASSWORD = r"[^\s/?#@:\"'\\\[\]]{1,256}"
_NET_HOST = r"(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,20})"
"""A host as a URL or a gRPC target writes it: a name, an address, ``[IPv6]``."""
_AUTH_PARAM = r"[a-z0-9_.-]{1,64}=(?:\\?\"[^\"\\\r\n]{0,1024}\\?\"|[^\s\"',]{1,1024})"
"""One parameter of an ``Authorization`` scheme: ``name=value`` or ``name="value"`` (its
quotes escaped as JSON writes them, too)."""


_T = r"A-Za-z0-9_\-"  # a key's characters
_GITLAB_PREFIXES = tuple(
    f"gl{kind}-"
    for kind in ("oas", "dt", "rt", "rtr", "cbt", "ptt", "ft", "imt", "agent", "soat", "ffct")
)
"""GitLab's tokens other than ``glpat-``: an OAuth application's secret, a deploy token, a
runner's (``glrt-``, ``glrtr-``), a CI/CD job's, a pipeline trigger's, a feed's, an incoming
mail's, a Kubernetes agent's, a SCIM token, a feature flags client's."""
# Key names that announce a secret in text (matched lower case; db_password, x-api-key too):
# the key names' table (._keys), so a name that hides a value in content hides it in text.
_KEY_WORDS = text_names()
_ITEM = r"[\"'],[ \t]{0,3}[\"']"  # between two items of a list's repr: ', '
_ARG = rf"(?:[ \t]{{1,3}}|{_ITEM})"  # between two arguments of a command, or items of argv
_KEY_ANCHORS = (
    "pass", "pwd", "secret", "key", "token", "credential", "cookie", "bearer", "verifier", "saml",
    "client_assertion", "clientassertion", "client-assertion", "device_code", "devicecode",
    "device-code",
)  # fmt: skip
# A key=value value: to a space or quote; "&", ";", "<" or ">" may be in a password (a
# generated one holds symbols), but not "&name=", which starts the next parameter of a query
# string (kept readable), nor a closing tag's "</" after it, nor the ">" that closes a tag.
_PUNCT = r"<(?!/)|>(?![<\s]|$)"
# A quoted value: any character but its quote and a line end; a backslash escapes the next
# (a JSON or repr string: "p\"w" and "a\\b" are one value each).
_DQ = r'(?:[^"\\\n]|\\.)'
_SQ = r"(?:[^'\\\n]|\\.)"
# Where a quoted value ends: its closing quote, or the end of the text when it was cut before
# that quote (a JSON text cut mid-value: a model's tool call stopped by its token limit, a
# body or a message cut to a bound): the value is what the quote opened. Only the text's end:
# a quote left open on a line of code (a traceback's "password: " + pw) is no value.
_CUT = r"\Z"
_BARE = rf"(?P<bare>(?:[^\s\"'<>&]|{_PUNCT}|&(?![a-z_][a-z0-9_.-]{{0,64}}=)){{3,512}})"


def labelled_key(value: str) -> bool:
    """A value a credential's label names in prose or a header (``pinecone api key is
    <uuid>``, ``Api-Key <hex>``) that is a key, not a word or a name: a UUID (Pinecone's
    earlier keys), lower-case hex of 32+ digits, 16+ characters of both cases and a digit
    (Mistral's, Cohere's), 24+ letters and digits of one case, or 20+ letters that are
    :func:`random_letters` (a name or words run together, ``AzureKeyVaultSecretName``, are
    kept)."""
    if _UUID.fullmatch(value) or hex_body(value.lower()):
        return True
    body = value.rstrip("=")
    if len(body) >= 16 and looks_random(body):
        return True
    if not (len(body) >= 20 and body.isascii() and body.isalnum()):
        return False
    if body.isalpha():
        return random_letters(body)
    return len(body) >= 24 and (body.islower() or body.isupper()) and not body.isdigit()


_PAIR_LIST = (
    "ab ac ad ag ai al am an ap ar as at au av ba be bj bl bu by ca ce ch ci ck cl co cr ct cu "
    "da dd de di do ds du ea ec ed ee ef eg el em en ep er es et ev ex ey fa fe ff fi fl fo fr "
    "fu ge gi gs gu ha he hi ho ia ib ic id ie if ig il im in io ip ir is it iv iz je ke la ld "
    "le lf li ll lo ls lt lu ly ma mb me mi mo mp ms na nc nd ne nf ng ni no ns nt nu ob oc od "
    "of ol om on oo op or os ot ou ow pa pe pi pl po pp pr pt pu py qu ra rc rd re rg ri rm rn "
    "ro rr rs rt ru ry sa sc se sh si so sp ss st su sy ta tc te th ti tl to tr ts tt tu ty ue "
    "ul um un up ur us ut va ve wa we wh wi wr xc xt yp ys yt ze"
)
_PAIRS = frozenset(_PAIR_LIST.split())
"""The 200 commonest pairs of letters in the words of CPython 3.11's standard library (its
prose and its names): about nine in ten of words' pairs, under a third of random letters'."""


def random_letters(body: str) -> bool:
    """20+ ASCII letters drawn at random, not words run together nor a name: 10+ different
    letters (not ``MMVMMVM``), two in five or more of its pairs of neighbouring letters rare
    in words (outside :data:`_PAIRS`: random letters, about 70%; words run together, such as
    ``missingfromtheenvironment``, about 15%), and of one case, or of both with a quarter to
    three quarters capitals (a name's capitals only start its words: ``GLKEffectPropertyFog``,
    under a quarter)."""
    lowered = body.lower()
    if len(set(lowered)) < 10:
        return False
    rare = sum(lowered[i : i + 2] not in _PAIRS for i in range(len(lowered) - 1))
    if rare * 5 < (len(lowered) - 1) * 2:
        return False
    upper = sum(c.isupper() for c in body)
    return upper in (0, len(body)) or 0.25 <= upper / len(body) <= 0.75


_SYMBOLS = frozenset("!@#$%^&*~+=?")
"""The symbols a generated password holds and a word in prose does not (``-``, ``.``, ``_``
join the words of a name: ``v2-compatible``, ``App.Config``)."""


def generated_password(value: str) -> bool:
    """A password too short to be told random by its letters alone (under 16 characters) that
    is one, not a word: letters of both cases, a digit and a symbol a generated password
    holds, inside it (a sentence's closing ``!`` or ``?`` is not one)."""
    body = value.rstrip(".,;:!?")
    return (
        looks_random(body)
        and any(c in _SYMBOLS for c in body)
        and not any(c.isspace() for c in body)
    )


def credential_like(value: str) -> bool:
    """An unlabelled value that is a credential rather than prose: a letter and a digit."""
    return has_digit(value) and any(c.isalpha() for c in value)


def letters_key(value: str) -> bool:
    """20+ letters alone drawn at random (:func:`random_letters`): a key that drew no digit."""
    body = value.rstrip("=")
    return len(body) >= 20 and body.isascii() and body.isalpha() and random_letters(body)


def named_value(value: str) -> bool:
    """A value after its name and a colon, unquoted (``OPENAI_API_KEY: ...``, YAML, a header):
    a letter and a digit (:func:`credential_like`), or a key of letters alone."""
    return credential_like(value) or letters_key(value)


_NOT_A_PASSWORD = frozenset({
    "none", "null", "nil", "true", "false", "yes", "no", "on", "off", "required", "optional",
    "empty", "missing", "invalid", "incorrect", "expired", "hidden", "redacted", "masked",
    "unset", "set", "changed", "ok", "n/a", "tbd", "todo", "deprecated", "default", "unknown",
    "undefined", "str", "string", "bytes", "int", "any", "text", "secretstr", "secretbytes",
    "bool", "float", "dict", "list", "tuple", "object", "bytearray", "datetime",
    "enabled", "disabled", "accepted", "rejected", "blocked", "allowed", "valid",
})  # fmt: skip
"""Words a settings line or a form writes where a value goes that are no password: YAML's
null and booleans, a form's status, a type annotation's (``password: str``,
``has_password: bool``)."""
_DECIMAL = re.compile(r"[0-9]*\.[0-9]+")
"""A number with a fraction: a price or a rate (``input_cost_per_token: 0.0000025``)."""
_CODE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+|[A-Za-z_][\w.]*[\[(].*[\])]")
"""An expression, not a value: an attribute (``settings.DB_PASSWORD``), a call or a generic
type (``os.getenv(...)``, ``Optional[str]``)."""


def settings_word(value: str) -> bool:
    """The one word after a secret's name on a settings line (``POSTGRES_PASSWORD: example``)
    that is a value: not a placeholder (:data:`_NOT_A_PASSWORD`, a mask ``****``), a number
    with a fraction (:data:`_DECIMAL`), nor code (:data:`_CODE`, a line ending in ``,`` or
    ``;``: a JavaScript object's member)."""
    return not (
        value[-1] in ",;"
        or value.lower() in _NOT_A_PASSWORD
        or len(set(value)) == 1
        or _DECIMAL.fullmatch(value) is not None
        or _CODE.fullmatch(value) is not None
    )


_SETTING = _rx(
    r":[ \t]{1,3}(?!\[redacted:)(?P<secret>[^\s\"'#&*!|>%@`{\[$<][^\s]{2,511})"
    r"[ \t]{0,40}(?:#[^\n]{0,400})?(?=\r?\n|\Z)"
)
"""``: value`` ending its line (a comment after it allowed): one word, a settings line's."""


def settings_line_spans(head: re.Pattern[str]) -> Finder:
    """The values of settings lines (:data:`_SETTING` after a line's ``head``: an indent, a
    list's ``-``, a name that ends in a secret's), each :func:`settings_word`. The line is
    read back from each match's ``:``, 120 characters at most: linear."""

    def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
        out = []
        for found in pattern.finditer(text):
            colon = found.start()
            start = text.rfind("\n", max(0, colon - 120), colon) + 1
            if start == 0 and colon > 120:
                continue
            value = found.group("secret")
            if head.fullmatch(text[start:colon].lower()) and settings_word(value):
                out.append(found.span("secret"))
        return out

    return spans


def header_key(value: str) -> bool:
    """A key after its header's name (``x-api-key: ...``): :func:`random_body`, or letters alone
    drawn at random."""
    return random_body(value) or letters_key(value)


def named_rows(names: str, anchors: tuple[str, ...], pair_also: str = "") -> tuple[Detector, ...]:
    """The forms in which a named value shows in text, for the key names' alternation
    ``names`` (lower case; the built-in table's, or a ``Scrubber``'s added ``keys``): key=value
    and quoted key: value, unquoted key: value, an XML element, a command's --flag VALUE, a
    (name, value) pair, and the name in prose (its words apart) before a random key.
    ``anchors``: literals one of which each name holds; ``pair_also``: an alternative only
    the pair form takes (``authorization``, which has its own detector)."""
    pair_anchors = (pair_also,) if pair_also else ()
    pair_also = f"|{pair_also}" if pair_also else ""
    return (
        # a shell command a tool runs or an error quotes, as a line or an argv list's repr
        # (CalledProcessError: ['mytool', '--api-key', '...']): --password VALUE (with "=",
        # key_value's), not a $VARIABLE; from its literal (the regex engine's fast search).
        # First: key_value's prose form reads "password VALUE" too, and a tie is named by
        # the first detector
        Detector(
            "command_line",
            _rx(
                # a flag that starts a word may have a prefix (--db-password); one glued to
                # the text before it (another secret's end: ghp_...--password) is its name
                rf"--(?:(?<![a-z0-9_-]--)[a-z0-9_-]{{0,40}}?)?(?:{names})(?:[ \t]{{1,3}}"
                r"(?!-|\$[a-z_{(]|\[redacted:)"
                rf"(?:\"(?!\$[a-z_{{(])(?P<dq>{_DQ}{{3,512}})(?:\"|{_CUT})"
                rf"|'(?P<sq>{_SQ}{{3,512}})(?:'|{_CUT})|(?P<bare>[^\s\"'`]{{3,512}}))"
                rf"|{_ITEM}(?![-$]|\[redacted:)(?P<item>[^\"'\\\n]{{3,512}}))"
            ),
            ("--",),
            lower=True,
        ),
        Detector(
            "key_value",
            # One pattern for the forms that start with the name (one scan of the text):
            # key=value anywhere (env dumps, query strings, kwargs reprs) and "key": value with
            # the key quoted (JSON, dict reprs), bytes values too (b'...'); key: "value", the
            # key unquoted, the value quoted (YAML: a config a tool read, a compose file, a
            # Kubernetes manifest), any value, quoted is no prose; key: value unquoted (YAML,
            # HTTP headers, logs) only when the value has a letter and a digit (the group
            # checked: "password: must be 8 chars" is prose); and a pydantic ValidationError
            # (a tool's arguments, a settings model): the field's location on its line, its
            # input_value on the next.
            _rx(
                rf"(?:{names.replace(JOIN, PROSE_JOIN)})"
                r"(?:(?:[\"']\s{0,3}(?:=>|[:=])|\s{0,3}(?:=>?|:=))\s{0,3}"
                r"(?!b?[\"']?\[redacted:)"  # a value already replaced (idempotent)
                r"(?!(?:none|null|true|false)(?![a-z0-9_]))"  # token=None: a kwargs default
                rf"(?:b?\"(?P<dq>{_DQ}{{3,512}})(?:\"|{_CUT})|b?'(?P<sq>{_SQ}{{3,512}})(?:'|{_CUT})|"
                + _BARE
                + ")"
                r"|[ \t]{0,3}:[ \t]{0,3}(?:[a-z_][a-z0-9_.]{0,40}(?:\[[^\]\n]{0,40}\])?"
                r"(?:[ \t]{0,3}\|[ \t]{0,3}none)?[ \t]{0,3}=[ \t]{0,3})?(?!b?[\"']\[redacted:)"
                rf"(?:b?\"(?P<ydq>{_DQ}{{3,512}})(?:\"|{_CUT})|b?'(?P<ysq>{_SQ}{{3,512}})(?:'|{_CUT}))"
                r"|[ \t]{0,3}:[ \t]{1,3}[|>][-+0-9]{0,2}[ \t]{0,8}\r?\n[ \t]{1,40}"
                r"(?!\[redacted:)(?P<block>[^\s][^\n]{2,511})"
                r"|[ \t]{0,3}:[ \t]{0,3}(?!\[redacted:)"
                rf"(?P<checked>(?<=[ \t])(?:[^\s\"'<>,]|{_PUNCT}|,(?!\s)){{8,512}}"
                r"|(?<=:)[^\s\"'<>,@/]{8,512})"  # key:value, a URL's user:password@ is not
                r"|[\"']?\r?\n[ \t]{1,8}[^\n]{0,400}?input_value=(?!b?[\"']?\[redacted:)"
                r"(?:b?'(?P<psq>[^'\\\n]{1,512})'|b?\"(?P<pdq>[^\"\\\n]{1,512})\""
                r"|(?P<pbare>[^\s,\]]{1,512}))"
                # the name as prose or a header writes it, its words apart or not, then a key
                # that is random (labelled_key): "pinecone api key is <uuid>", "Api-Key <hex>",
                # "access token 9f86...", an OpenAI-compatible server's "Incorrect API key
                # provided: <key>"; a word ("the api key is missing") or a name is kept
                r"|[ \t]{1,3}(?:(?:is|was|provided|given|received)(?:[ \t]{1,3}set[ \t]to)?"
                r"(?:[ \t]{0,3}:)?[ \t]{1,3})?[\"'`]?"
                r"(?P<prose>[a-z0-9][a-z0-9_+/=-]{15,511})(?![a-z0-9_+/=-]))"
            ),
            anchors,
            named_value,
            lower=True,
            checked="checked",
            group_checks={"prose": labelled_key},
        ),
        Detector(
            "key_value",
            # a settings line, YAML's or a form's (a compose file's POSTGRES_PASSWORD: example,
            # Spring's password: swordfish, "Password: letmein" under "Username: bob"): the
            # name starts its line, one word ends it (a comment may follow), letters alone
            # too; not a placeholder, a type or code (settings_word). From the ":" (the regex
            # engine's fast search), the name read back on its line (settings_line_spans)
            _SETTING,
            anchors,
            finder=settings_line_spans(
                re.compile(
                    rf"[ \t]{{0,40}}(?:-[ \t]{{1,3}})?[a-z0-9_.-]{{0,40}}?(?:{names})[ \t]{{0,3}}"
                )
            ),
        ),
        Detector(
            "key_value",
            # an environment variable as a Kubernetes or compose manifest lists it, in YAML
            # or JSON: name: DB_PASSWORD, then value: ... on the next line or after a comma
            _rx(
                r"name[\"']?[ \t]{0,3}:[ \t]{0,3}[\"']?[a-z0-9_.-]{0,40}?"
                rf"(?:{names})[\"']?[ \t]{{0,3}}(?:,|\r?\n)[ \t]{{0,40}}"
                r"[\"']?value[\"']?[ \t]{0,3}:"
                r"[ \t]{0,3}(?!b?[\"']?\[redacted:)"
                rf"(?:\"(?P<dq>[^\"\\\n]{{1,512}})(?:\"|{_CUT})"
                rf"|'(?P<sq>[^'\\\n]{{1,512}})(?:'|{_CUT})|"
                r"(?P<bare>[^\s\"',}]{1,512}))"
            ),
            ("name",),
            lower=True,
        ),
        Detector(
            "key_value",
            # an XML element (a SOAP fault, an XML config, HTML-escaped in an error page:
            # &lt;password&gt;, read decoded): <db_password>value</db_password>, one word
            _rx(
                rf"<[a-z0-9_:.-]{{0,40}}?(?:{names})>\s{{0,3}}(?!\[redacted:)"
                r"(?P<secret>[^<>\s]{3,512})\s{0,3}</"
            ),
            anchors,
            lower=True,
        ),
        Detector(
            "command_line",
            # a tool's setting written by its config command, as a line or an argv list's
            # repr: aws configure set aws_secret_access_key VALUE, npm config set
            # //registry/:_authToken VALUE, poetry config pypi-token.pypi VALUE
            _rx(
                rf"config(?:ure)?(?:{_ARG}--?[a-z-]{{1,20}}){{0,2}}{_ARG}(?:set{_ARG})?"
                rf"[^\s\"']{{0,80}}?(?:{names})(?:\.[a-z0-9_-]{{1,40}})?{_ARG}"
                r"(?!-|\$[a-z_{(]|\[redacted:)(?P<cfg>[^\s\"']{3,512})"
            ),
            ("config",),
            lower=True,
        ),
        Detector(
            "key_value",
            # a setting as an XML element's attributes: .NET's <add key="DbPassword"
            # value="..."/>, Spring's and Ant's <property name="password" value="..."/>
            _rx(
                r"(?:key|name)\s{0,3}=\s{0,3}[\"'][a-z0-9_.:-]{0,40}?"
                rf"(?:{names})[\"']\s{{1,3}}value\s{{0,3}}=\s{{0,3}}(?![\"']\[redacted:)"
                rf"(?:\"(?P<dq>[^\"\n]{{1,512}})(?:\"|{_CUT})|'(?P<sq>[^'\n]{{1,512}})(?:'|{_CUT}))"
            ),
            anchors,
            lower=True,
        ),
        Detector(
            "key_value",
            # a header as a (name, value) pair, as HTTP clients and ASGI show them in a repr or
            # a log: [(b'authorization', b'Bearer ...'), ('x-api-key', '...')], [["cookie", "..."]]
            # (a list only inside a list: ['password', 'email'] names two fields)
            _rx(
                r"(?:\(|[\[,] ?\[)\s{0,3}b?[\"'][a-z0-9_.:-]{0,40}?"
                rf"(?:{names}{pair_also})[\"']\s{{0,3}},\s{{0,3}}(?!b?[\"']\[redacted:)"
                rf"(?:b?\"(?P<dq>[^\"\\\n]{{3,4096}})(?:\"\s{{0,3}}[)\]]|{_CUT})"
                rf"|b?'(?P<sq>[^'\\\n]{{3,4096}})(?:'\s{{0,3}}[)\]]|{_CUT}))"
            ),
            (*anchors, *pair_anchors),
            lower=True,
        ),
    )


# The clients whose short flag holds a password, by name (elsewhere -p is a port, a path, a
# profile): (names as a regex, their anchors, the flag, glued to its value or an argument of
# its own). mysql's -p is glued (-p alone prompts, -P is the port); a value of 1-5 digits after
# login's -p is a port (ssh -l login host -p 2222).
_CLIENTS: tuple[tuple[tuple[str, ...], str, str, bool], ...] = (
    (("mysql", "mariadb"), r"mysql[a-z]{0,8}|mariadb[a-z-]{0,10}", "-p", True),
    (("redis-cli",), "redis-cli", "-a|--pass", False),
    (("mongo",), "mongo(?:sh|dump|restore|import|export|stat|top|files)?", "-p", False),
    (("sqlcmd", "bcp"), "sqlcmd|bcp", "-P", False),
    (("ldap",), "ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)", "-w", False),
    (
        ("login",),
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm(?: registry)?|az|cf|oc)[ \t]{1,3}login",
        "-p",
        False,
    ),
    (("smbclient", "rpcclient", "smbget"), "smbclient|rpcclient|smbget", "-U|--user", False),
)
# Not a value a shell quote can hold that names one: another flag, a $VARIABLE, a marker
_NOT_VARIABLE = r"(?!-|\$[A-Za-z_{(]|\[REDACTED:)"
# A positional argument that ends its command: to the end of the line, a list's "]" or end, the
# quote of an error's "Command '...'", a shell's |, ;, &, ) or a redirection
_POSITIONAL = (
    r"(?!\[REDACTED:)[^\s\"'][^\s\"']{0,511}"
    r"(?=[\"']?(?:\]|$)|[ \t]*(?:[0-9]?[<>]|[|;&)\r\n]|$)|'[ \t])"
)


def _shell_quoted(name: str, lead: str = "") -> str:
    """A flag's value as a shell line quotes it, ``'VALUE'`` or ``"VALUE"`` (spaces and
    symbols inside), after ``lead`` (a $VARIABLE's or another flag's refusal, smbclient's
    ``user%``); the value alone is redacted, in group ``<name>s`` or ``<name>d``."""
    return (
        rf"'{lead}(?P<{name}s>[^\s'][^'\n]{{2,511}})'"
        rf"|\"{lead}(?P<{name}d>[^\s\"][^\"\n]{{2,511}})\""
    )


def _client_form(index: int, names: str, flag: str, glued: bool) -> str:
    """One client's password flag: glued (-pSECRET) or its own argument (-a SECRET, an argv
    list's next item), not another flag, a $VARIABLE or a port; smbclient's -U takes
    user%password, whose password is redacted. Shell-quoted too (-p'SECRET', -a "SECRET")."""
    head = rf"(?i:{names})(?=[ \t\"',])[^\n|;&]{{0,200}}?[ \t\"'](?:{flag})"
    if glued:
        return head + (
            rf"(?:{_shell_quoted(f'q{index}', _NOT_VARIABLE)}"
            rf"|(?P<c{index}>[^\s\"'\[][^\s\"']{{2,511}}))"
        )
    value = r"(?!-|\$[A-Za-z_{(]|\[REDACTED:|[0-9]{1,5}(?![^\s\"'\]]))"
    lead = _NOT_VARIABLE
    if "-U" in flag:
        value += r"[^\s%\"']{1,128}%"
        lead += r"[^\s%\"']{1,128}%"
    return head + (
        rf"(?:[ \t=]{{1,3}}(?:{_shell_quoted(f'q{index}', lead)})"
        rf"|(?:[ \t=]{{1,3}}|{_ITEM}){value}(?P<c{index}>[^\s\"'][^\s\"']{{2,511}}))"
    )


# The words of a command that takes a password with no flag before it (an argv list in
# structured content that holds one of them is read as a command, as one with a flag is)
POSITIONAL_COMMANDS = frozenset({
    "set", "config", "add_user", "change_password",
    "sqlplus", "sqlldr", "rman", "expdp", "impdp", "dgmgrl",  # Oracle's, user/password
})  # fmt: skip


_Row = tuple[str, str, tuple[str, ...]] | tuple[str, str, tuple[str, ...], Check]


def _prefixed(*rows: _Row) -> tuple[Detector, ...]:
    """Detectors of keys known by their prefix: (name, pattern, anchors[, check]) each."""
    return tuple(
        Detector(row[0], _rx(row[1]), row[2], row[3] if len(row) == 4 else None) for row in rows
    )


def _after_hex(name: str, tail: str, anchor: str) -> Detector:
    """A key of 32 lower-case hex digits and a tail that starts with a literal (Mailchimp's
    ``-us21``), found from that literal: a pattern that started at the hex digits would try
    32 of them at every position of a hex text."""
    return Detector(name, _rx(tail[0] + r"(?<=[0-9a-f]{32}" + tail[0] + ")" + tail[1:]),
                    (anchor,), lead=32)  # fmt: skip


# No pattern needs a boundary before its literal: a secret glued to the text before it is
# still found (and a few characters of that text may go with it). A failed attempt stops
# within the minimum length, a successful one moves past its match: linear.
BUILT_IN: tuple[Detector, ...] = (
    Detector(
        PRIVATE_KEY,
        # the header only; the block's end is found by private_key_spans (no lazy scan); a
        # PuTTY key file (.ppk) from its Private-Lines: count
        _rx(r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|Private-Lines:[ \t]{0,3}[0-9]"),
        ("-----begin", "private-lines:"),
    ),
    Detector(
        "key_value",  # a value its name names, in a JWK (private_key is a PEM block's)
        # a JSON Web Key's private members (RFC 7518: an RSA key's d, p, q, dp, dq, qi, an EC
        # or OKP key's d, a symmetric key's k) in a text that holds a JWK's "kty" (a JWKS file
        # a tool read, a key in an error); its public members (n, e, x, y) are kept
        _rx(
            r"[\"'](?:d|p|q|dp|dq|qi|k)[\"']\s{0,3}:\s{0,3}[\"']"
            r"(?P<jwk>[A-Za-z0-9_-]{16,4096}={0,2})[\"']"
        ),
        ('"kty"', "'kty'"),
    ),
    Detector("anthropic_api_key", _rx(rf"sk-ant-[{_T}]{{32,}}"), ("sk-ant-",), looks_random),
    Detector("openai_api_key", _rx(rf"sk-[{_T}]{{20,}}"), ("sk-",), looks_random),
    Detector(
        "openai_api_key",  # other providers' sk- keys in hex: DeepSeek, OpenRouter, Langfuse
        # (not glued to a word before: task-<uuid> is an id)
        _rx(r"sk-(?<![A-Za-z0-9]sk-)(?:[a-z0-9]{1,8}-){0,2}[0-9a-f][0-9a-f-]{31,}"),
        ("sk-",),
        hex_key,
    ),
    Detector("elevenlabs_api_key", _rx(r"sk_(?<![A-Za-z0-9]sk_)[0-9a-f]{40,}"), ("sk_",), key_body),
    Detector(
        "langsmith_api_key",  # now lsv2_pt_ / lsv2_sk_; before, ls__ and 32 hex digits
        _rx(r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}|ls__[0-9a-f]{32}"),
        ("lsv2_", "ls__"),
    ),
    Detector(
        "tavily_api_key", _rx(r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32,}"), ("tvly-",), looks_random
    ),
    Detector("perplexity_api_key", _rx(r"pplx-[A-Za-z0-9]{40,}"), ("pplx-",), key_body),
    Detector("replicate_api_token", _rx(r"r8_[A-Za-z0-9]{37,}"), ("r8_",), key_body),
    Detector("pinecone_api_key", _rx(r"pcsk_[A-Za-z0-9]{4,12}_[A-Za-z0-9]{40,}"), ("pcsk_",)),
    Detector(
        "google_oauth_token",  # an access token, an OAuth client's secret
        _rx(r"ya29\.[A-Za-z0-9_-]{20,}|GOCSPX-[A-Za-z0-9_-]{24,}"),
        ("ya29.", "gocspx-"),
        random_body,
    ),
    Detector(
        "sendgrid_api_key", _rx(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"), ("sg.",), random_body
    ),
    Detector("npm_token", _rx(r"npm_[A-Za-z0-9]{36}"), ("npm_",), looks_random),
    Detector("databricks_token", _rx(r"dapi[0-9a-f]{32}(?:-[0-9])?"), ("dapi",)),
    Detector("digitalocean_token", _rx(r"do[opr]_v1_[0-9a-f]{64}"), ("_v1_",)),
    Detector("shopify_token", _rx(r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}"), ("shp",)),
    Detector(
        "telegram_bot_token",  # api.telegram.org/bot<id>:<secret>/method (34 or 35 long:
        # Telegram's docs show 34, BotFather gives 35)
        _rx(r"bot[0-9]{6,12}:(?P<secret>[A-Za-z0-9_-]{34,35})(?![A-Za-z0-9_-])"),
        ("bot",),
        random_body,
    ),
    Detector(
        "telegram_bot_token",  # as BotFather gives it, alone: <bot id>:AA<32 or 33 more>
        _rx(r":AA(?<=[0-9]{6}:AA)(?P<secret>[A-Za-z0-9_-]{32,33})(?![A-Za-z0-9_-])"),
        (":aa",),
        random_body,
        lead=2,
    ),
    Detector(
        "google_oauth_token",  # a refresh token: 1//0 (the "1//" of its version, then 0...)
        _rx(r"1//0[A-Za-z0-9_-]{40,}"),
        ("1//0",),
        mixed_case,
    ),
    Detector("fireworks_api_key", _rx(r"fw_[A-Za-z0-9]{24,}"), ("fw_",), looks_random),
    Detector("nvidia_api_key", _rx(r"nvapi-[A-Za-z0-9_-]{60,}"), ("nvapi-",), random_body),
    Detector(
        "pypi_token", _rx(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}"), ("pypi-ageichlwas5vcmc",)
    ),
    Detector("docker_token", _rx(r"dckr_pat_[A-Za-z0-9_-]{24,}"), ("dckr_pat_",), random_body),
    Detector(
        "grafana_token",  # a service account's token, a Cloud access policy's (base64 JSON)
        _rx(r"glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8}|glc_eyJ[A-Za-z0-9+/=_-]{32,}"),
        ("glsa_", "glc_eyj"),
    ),
    Detector(
        "linear_api_key",
        _rx(r"lin_(?:api|oauth)_[A-Za-z0-9]{40,}"),
        ("lin_api_", "lin_oauth_"),
        random_body,
    ),
    Detector(
        "notion_token",  # an integration's secret: ntn_ (now), secret_ (before)
        _rx(r"ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43,}"),
        ("ntn_", "secret_"),
        key_body,
    ),
    Detector("age_secret_key", _rx(r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}"), ("age-secret-key-1",)),
    # The prefixed keys of the services an agent's tools call (search, scraping, sandboxes,
    # embeddings, databases, deploys, mail, monitoring), each as its vendor's docs show it
    *_prefixed(
        ("mailgun_api_key", r"key-[a-z0-9]{32}", ("key-",), credential_like),
        ("sentry_token", r"sntryu_[0-9a-f]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{40,}", ("sntry",)),
        ("cerebras_api_key", r"csk-[a-z0-9]{32,}", ("csk-",), credential_like),
        ("firecrawl_api_key", r"fc-[0-9a-f]{32}", ("fc-",), hex_body),
        ("e2b_api_key", r"e2b_[0-9a-f]{40}", ("e2b_",), key_body),
        ("jina_api_key", r"jina_[A-Za-z0-9]{40,}", ("jina_",), key_body),
        ("voyage_api_key", r"pa-[A-Za-z0-9_-]{40,}", ("pa-",), looks_random),
        ("together_api_key", r"tgp_v1_[A-Za-z0-9_-]{40,}", ("tgp_v1_",), random_body),
        ("browserbase_api_key", r"bb_live_[A-Za-z0-9_-]{20,}", ("bb_live_",), random_body),
        ("wandb_api_key", r"wandb_v1_[A-Za-z0-9_]{40,}", ("wandb_v1_",), random_body),
        ("anyscale_api_key", r"esecret_[a-z0-9]{20,}", ("esecret_",), credential_like),
        (
            "supabase_token",
            r"sbp_[0-9a-f]{40}|sb_secret_[A-Za-z0-9_-]{20,}",
            ("sbp_", "sb_secret_"),
        ),
        ("neon_api_key", r"napi_[a-z0-9]{64}", ("napi_",), credential_like),
        ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}", ("pscale_",)),
        ("doppler_token", r"dp\.(?:st|pt|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{40,}", ("dp.",)),
        ("pulumi_token", r"pul-[0-9a-f]{40}", ("pul-",), key_body),
        ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", (".atlasv1.",)),
        ("postman_api_key", r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}", ("pmak-",)),
        ("figma_token", r"figd_[A-Za-z0-9_-]{40,}", ("figd_",), random_body),
        ("heroku_api_key", r"HRKU-[A-Za-z0-9_-]{40,}", ("hrku-",), random_body),
        ("airtable_token", r"pat[A-Za-z0-9]{14}\.[0-9a-f]{64}", ("pat",)),
        ("netlify_token", r"nfp_[A-Za-z0-9]{36,}", ("nfp_",), random_body),
        ("resend_api_key", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}", ("re_",), looks_random),
        ("typeform_token", r"tfp_[A-Za-z0-9_-]{40,}", ("tfp_",), random_body),
        ("contentful_token", r"CFPAT-[A-Za-z0-9_-]{43}", ("cfpat-",)),
        ("square_token", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}", ("sq0atp-", "sq0csp-")),
        ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", ("sk.eyj",)),
    ),
    _after_hex("mailgun_api_key", r"-[0-9a-f]{8}-[0-9a-f]{8}", "-"),
    _after_hex("mailchimp_api_key", r"-us[0-9]{1,2}", "-us"),
    Detector("groq_api_key", _rx(r"gsk_[A-Za-z0-9]{40,}"), ("gsk_",), looks_random),
    Detector("xai_api_key", _rx(r"xai-[A-Za-z0-9]{40,}"), ("xai-",), looks_random),
    Detector("google_api_key", _rx(r"AIza[A-Za-z0-9_-]{35}"), ("aiza",)),
    Detector("huggingface_token", _rx(r"hf_[A-Za-z]{34,}"), ("hf_",), mixed_case),
    Detector(
        "aws_access_key_id",
        _rx(r"A(?:KIA|SIA|BIA|CCA)[A-Z2-7]{16}"),
        ("akia", "asia", "abia", "acca"),
    ),
    Detector(
        "cloud_access_key_id",
        # other clouds' access key ids, the half a labelled secret key goes with: Alibaba
        # Cloud's LTAI..., Tencent Cloud's AKID..., a Cloud Storage HMAC key's GOOG1...
        _rx(r"LTAI[A-Za-z0-9]{12,20}|AKID[A-Za-z0-9]{32}|GOOG1[A-Z0-9]{50,60}"),
        ("ltai", "akid", "goog1"),
        random_body,
    ),
    Detector(
        "aws_secret_access_key",
        _rx(r"secret_?access_?key[\"']?\s{0,3}[=:]\s{0,3}[\"']?(?P<secret>[a-z0-9/+]{40})"),
        ("access",),
        lower=True,
    ),
    Detector(
        "github_token",
        _rx(r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Detector(
        "azure_client_secret",  # an Entra ID (Azure AD) app's client secret: xxx8Q~…
        _rx(r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"),
        ("q~",),
    ),
    Detector("atlassian_api_token", _rx(r"ATATT3[A-Za-z0-9_=-]{40,}"), ("atatt3",), random_body),
    Detector("new_relic_key", _rx(r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}"), ("nrak-", "nrjs-")),
    Detector(
        "gitlab_token",  # a routable token (GitLab 17) ends in .<version>.<checksum>
        _rx(r"glpat-[A-Za-z0-9_-]{20,}(?:\.[0-9]{1,4}\.[A-Za-z0-9]{1,16})?"),
        ("glpat-",),
    ),
    Detector(
        "gitlab_token",  # GitLab's other tokens, each named by its prefix in GitLab's docs
        _rx(
            r"gl(?:oas|dt|rtr?|cbt|ptt|ft|imt|agent|soat|ffct)-[A-Za-z0-9_-]{20,}"
            r"(?:\.[0-9]{1,4}\.[A-Za-z0-9]{1,16})?"
        ),
        _GITLAB_PREFIXES,
        random_body,
    ),
    Detector(
        "slack_token",  # xoxc- and xoxd- (a browser session's token and its cookie) too
        _rx(r"xox[abposrecd]-[A-Za-z0-9%-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{20,}"),
        ("xox", "xapp-"),
        random_body,
    ),
    Detector(
        "slack_webhook",
        _rx(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9/_-]{20,})"),
        ("hooks.slack",),
    ),
    Detector(
        "discord_webhook",  # its token, the path's last segment (the id before it is kept)
        _rx(r"discord(?:app)?\.com/api/webhooks/[0-9]{15,22}/(?P<secret>[A-Za-z0-9_-]{40,})"),
        ("/api/webhooks/",),
    ),
    Detector(
        "teams_webhook",  # a Microsoft Teams incoming webhook: whoever holds the URL posts to
        # the channel; its key, the path after IncomingWebhook/ (the tenant's ids kept)
        _rx(
            r"(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)"
            r"/[^\s/]{1,200}/incomingwebhook/(?P<secret>[a-z0-9_-]{16,}(?:/[a-z0-9_-]{8,}){0,3})"
        ),
        ("/incomingwebhook/",),
        lower=True,
    ),
    Detector(
        "zapier_webhook",  # a Zap's catch hook: whoever holds the URL starts the Zap
        _rx(r"hooks\.zapier\.com/hooks/catch/[0-9]{1,12}/(?P<secret>[A-Za-z0-9]{5,40})"),
        ("hooks.zapier.com",),
    ),
    Detector(
        "vault_token",  # HashiCorp Vault's service, batch and recovery tokens
        _rx(r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
        ("hvs.", "hvb.", "hvr."),
        looks_random,
    ),
    Detector(
        "stripe_key",
        _rx(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}"),
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
    ),
    # every value of a Kubernetes Secret's data and stringData, in a text that holds its kind
    Detector(KUBERNETES_SECRET, KIND, ("secret",), finder=secret_data_spans),
    Detector(JWT, _rx(r"\.eyJ[A-Za-z0-9_-]{8,}(?=\.)"), ("eyj",)),
    Detector(
        "url_credentials",
        # scheme://user:password@host (the user may be empty: redis://:password@host): the
        # whole userinfo, to the last "@" before the path (a password written with an "@"
        # unescaped, p@ss, goes whole); each part bounded (no \s / ? #)
        # A password holding "/", "?" or "#" unescaped (base64's "/") runs to the first "@"
        # (not a port: host:8080/@user is a path)
        _rx(
            r"://(?:(?P<secret>[^\s/?#@:\"'\\]{0,256}:[^\s/?#\"'\\]{1,256})@"
            r"|(?P<slashed>[^\s/?#@:\"'\\]{0,256}:(?![0-9]{1,5}(?:[/?#]|$))"
            r"[^\s@:\"'\\]{1,256}?)@)"
        ),
        ("://",),
    ),
    Detector(
        "url_credentials",
        # a password holding an "@" and a "?" or "#" unescaped (P@ss#1, mongodb's generated
        # ones): to the last "@" before the path, unless what follows its first "@" is a host
        # and its query or fragment (user:pw@db.example.com?cc=a@b.com)
        _rx(r"://(?P<secret>[^\s/?#@:\"'\\]{0,256}:[^\s/\"'\\]{1,256})@"),
        ("://",),
        symbols_in_password,
    ),
    Detector(
        "url_credentials",
        # a token as the user, with no password: https://TOKEN@github.com (a random value:
        # https://user@example.com and ssh://git@github.com are names)
        _rx(r"://(?P<secret>[A-Za-z0-9_.~-]{20,256})@"),
        ("://",),
        random_value,
    ),
    Detector(
        "url_credentials",
        # user:password@host without the scheme, as a gRPC target quotes an endpoint (the
        # SDK's gRPC exporter's failure lines): the password, before a host and its port;
        # before a host alone, a password with a digit or a symbol (From:bob@example.com and
        # 12:30@home are kept)
        _rx(
            r":(?<=[A-Za-z0-9._~%+-]:)"
            r"(?:(?P<secret>" + _USERINFO_PASSWORD + r")@" + _NET_HOST + r":[0-9]{1,5}(?![0-9])"
            r"|(?P<bare>" + _USERINFO_PASSWORD + r")@" + _NET_HOST + r"(?![\w@:-]|\.[\w-]))"
        ),
        ("@",),
        lambda value: not value.isalpha() and not value.isdigit(),
        checked="bare",
    ),
    Detector(
        "url_credentials",
        # in prose, a letters-only password before a host alone, when the name before its
        # ":" introduces no address (From:bob@example.com, mailto:, user:alice@... are kept)
        USERINFO_LETTERS,
        ("@",),
        finder=prose_userinfo_spans,
    ),
    Detector(
        "url_credentials",
        # a connection string with no scheme, letters-only password too, where a DSN is
        # written: a variable's or a field's value (DATABASE_URL=app:secret@db, as an env
        # dump shows it; "dsn": "app:secret@db", as JSON or a dict's repr does) or before a
        # database's path (app:secret@db/prod); a name before a host in prose (see
        # user:alice@example.com) has neither, and digits are a time (at 12:30@home/x)
        _rx(
            r"(?:(?:=|[\"']\s{0,3}:)[ \t]{0,3}[\"']?[A-Za-z0-9._~%+-]{1,64}:"
            rf"(?P<env>{_USERINFO_PASSWORD})@{_NET_HOST}(?![\w@-]|\.[\w-])"
            rf"|:(?<=[A-Za-z0-9._~%+-]:)(?P<path>{_USERINFO_PASSWORD})@{_NET_HOST}/(?=\w))"
        ),
        ("@",),
        lambda value: not value.isdigit(),
    ),
    Detector(
        "authorization_header",
        # the scheme kept (any: AWS4-HMAC-SHA256, SharedKey, Splunk; a word of letters, or
        # one of those with digits), then its credential: a token, or all of the scheme's
        # parameters (Digest's response, OAuth 1.0's signature and token, SigV4's
        # Signature), quoted ("...", or \"...\" in JSON) or not, to the list's end.
        # A token does not run into a marker after it: scrubbing again keeps the scheme.
        _rx(
            r"authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?"
            r"(?:(?:aws4-hmac-sha256|eg1-hmac-sha256|scram-sha-256|scram-sha-1"
            r"|[a-z][a-z-]{1,31})\s{1,3})?"
            r"(?:(?P<params>" + _AUTH_PARAM + r"(?:[ \t]{0,3},[ \t]{0,3}" + _AUTH_PARAM + r")*)"
            r"|(?P<secret>[^\s\"',;\[\]]{8,}+)(?![ \t]{1,3}\[redacted:))"
        ),
        ("authorization",),
        lower=True,
    ),
    Detector(
        "api_key_header",
        # Azure OpenAI's api-key, Gemini's x-goog-api-key, Azure APIM's subscription key:
        # HTTP headers as a request dump or an error shows them (key: value, unquoted)
        _rx(r"(?:api|subscription)-key:\s{0,3}[\"']?(?P<secret>[^\s\"',;]{16,})"),
        ("api-key", "subscription-key"),
        header_key,
        lower=True,
    ),
    Detector(
        "azure_account_key",  # a storage connection string's key (88 base64 characters)
        _rx(r"accountkey\s{0,3}=\s{0,3}(?P<secret>[a-z0-9+/]{40,}={0,2})"),
        ("accountkey",),
        lower=True,
    ),
    Detector(
        "sas_signature",  # an Azure SAS URL's sig: to its "&", the other parameters kept
        _rx(r"[?&;]sig=(?P<secret>[^\s&\"'<>#]{8,})"),
        ("sig=",),
    ),
    Detector(
        "key_value",
        # a URL's query parameter that carries a credential under a short name, as an HTTP
        # error quotes the URL (httpx's "for url '...?key=...'"): Google's and many APIs'
        # ?key=, ?auth=, an OAuth callback's ?code=, ?session= / ?sid=; a random value only
        # (?key=name, ?code=US, ?session=2 are kept)
        _rx(
            r"[?&;](?:key|auth|authkey|auth_key|code|session|sessionid|sid)="
            r"(?!\[REDACTED:)(?P<secret>[A-Za-z0-9._~+/%=-]{12,512})"
        ),
        ("key=", "auth=", "authkey=", "auth_key=", "code=", "session=", "sessionid=", "sid="),
        query_credential,
    ),
    Detector(
        "key_value",
        # a query parameter that the protocols name as a credential, whatever its value: a
        # password under a short name (?pass=, ?passcode=), OAuth 2.0's assertions, PKCE's
        # code_verifier, a device code, OAuth 1.0's oauth_verifier, a SAML response, a JWT,
        # a magic link's token_hash
        _rx(
            r"[?&;](?:pass|passcode|assertion|client_assertion|code_verifier|device_code"
            r"|oauth_verifier|samlresponse|samlrequest|jwt|token_hash)="
            r"(?!\[redacted:)(?P<secret>(?:[^\s&\"'<>#]|&(?![a-z_][a-z0-9_.-]{0,64}=)){3,4096})"
        ),
        (
            "pass=",
            "passcode=",
            "assertion=",
            "_verifier=",
            "device_code=",
            "saml",
            "jwt=",
            "token_hash=",
        ),
        lower=True,
    ),
    Detector(
        "key_value",
        # a session id in a URL (Java's ;jsessionid=, PHP's PHPSESSID=): 16+ characters with
        # a letter and a digit
        _rx(r"[?&;](?:jsessionid|phpsessid|sessid)=(?!\[redacted:)(?P<secret>[a-z0-9._-]{16,256})"),
        ("sessionid=", "sessid="),
        credential_like,
        lower=True,
    ),
    Detector(
        "signed_url",  # a presigned S3 / GCS / CloudFront URL's signature and session token
        _rx(
            # any name that ends in signature: OAuth 1.0's oauth_signature, hmac_signature
            r"[?&;](?:x-amz-security-token|(?:[a-z0-9-]{1,32}[_-])?signature)="
            r"(?P<secret>[^\s&\"'<>#]{16,})"
        ),
        ("signature=", "security-token="),
        lower=True,
    ),
    Detector(
        "cookie_header",  # Cookie: / Set-Cookie: as a request dump shows them, to the line's end
        _rx(r"cookie:[ \t]{0,3}(?P<secret>[^\s=;,\"']{1,128}=[^\r\n\"']{1,4096})"),
        ("cookie:",),
        lower=True,
    ),
    Detector(
        "bearer_token",
        _rx(r"bearer\s{1,3}(?P<secret>[a-z0-9._~+/=-]{16,})"),
        ("bearer",),
        random_body,
        lower=True,
    ),
    Detector(
        "basic_auth",
        _rx(r"(?i:basic)\s{1,3}(?P<secret>[A-Za-z0-9+/]{6,}={0,2})"),
        ("basic",),
        basic_credentials,
    ),
    Detector(
        "basic_auth",
        # a registry's login as a Docker or Podman config.json keeps it: "auth": base64 of
        # user:password ("auth" alone names no secret: the value must decode to one), and
        # under any name that ends in "auth", quoted or not: an .npmrc's _auth=, registryAuth
        _rx(
            r"(?i:\"[a-z0-9_./:-]{0,64}auth\"|auth)\s{0,3}[:=]\s{0,3}([\"']?)"
            r"(?P<secret>[A-Za-z0-9+/]{6,1024}(?:={1,2}|(?![A-Za-z0-9+/=])))"  # padding ends it
        ),
        ("auth",),
        basic_credentials,
    ),
    Detector(
        "key_value",
        # a user and a password as an HTTP client takes them: a pair under a name that ends
        # in "auth" (requests' auth=("bob", "..."), Elasticsearch's basic_auth=(...), JSON's
        # "auth": ["bob", "..."]) or given to a basic or digest auth class (HTTPBasicAuth(...))
        _rx(
            r"(?:(?<!o)auth[\"']?[ \t]{0,3}[=:][ \t]{0,3}[(\[]|(?:basic|digest)auth\()[ \t]{0,3}"
            r"(?:\"[^\"\\\n]{1,256}\"|'[^'\\\n]{1,256}')[ \t]{0,3},[ \t]{0,3}(?!\[redacted:)"
            r"(?:\"(?P<dq>[^\"\\\n]{1,512})\"|'(?P<sq>[^'\\\n]{1,512})')[ \t]{0,3}[)\]]"
        ),
        ("auth",),
        lower=True,
    ),
    *named_rows(_KEY_WORDS, _KEY_ANCHORS, pair_also="authorization"),
    Detector(
        "key_value",
        # a password named in prose, short: "the db password is Xy7!pq2", "my passphrase was
        # 'k9#Lm2x'" (labelled_key reads 16+ characters; shorter, only a generated one's
        # letters of both cases, digit and symbol tell it from "is required")
        _rx(
            r"(?:password|passphrase|passcode|passwd)[ \t]{1,3}(?:is|was)(?:[ \t]{1,3}set[ \t]to)?"
            r"[ \t]{0,3}:?[ \t]{1,3}[\"'`]?(?!\[redacted:)(?P<secret>[^\s\"'`]{6,16})(?![^\s\"'`])"
        ),
        ("password", "passphrase", "passcode", "passwd"),
        generated_password,
        lower=True,
    ),
    Detector(
        "key_value",
        # a .netrc entry (a tool that read the file, curl's or git's): machine HOST (or
        # default), its login, account or port in any order, then password VALUE, words
        # apart (a login first: "the default password is" is prose)
        _rx(
            r"(?:machine[ \t]{1,8}[^\s]{1,256}|(?<![a-z0-9_-])default)"
            r"(?:\s{1,40}(?:login|account|port)[ \t]{1,8}[^\s]{1,256}){1,3}"
            r"\s{1,40}password[ \t]{1,8}(?!\[redacted:)(?P<secret>[^\s]{1,512})"
        ),
        ("password",),
        lower=True,
    ),
    Detector(
        "key_value",
        # a .pgpass line (a tool that read the file): host:port:database:user:password, the
        # line whole, the port PostgreSQL's or "*" (any field may be "*"); the rest of the
        # line is the password
        _rx(
            r"(?<![^\r\n])[^\s:#]{1,253}:(?:5432|\*):[^\s:]{1,63}:[^\s:]{1,63}:"
            r"(?P<secret>[^\r\n]{1,512})(?![^\r\n])"
        ),
        (":5432:", ":*:"),
    ),
    Detector(
        "key_value",
        # a label that ends in "key" after another word (AZURE_OPENAI_KEY, storage_key,
        # searchAdminKey, "license-key") over a value that is random, not a name: Azure's
        # keys are 32 hex digits or 84 letters and digits, a storage key base64
        _rx(
            r"key(?:(?<=[a-z0-9][_.-]key)|(?<=[a-z0-9]key))[\"']?\s{0,3}[:=]\s{0,3}(?!\[redacted:)"
            r"[\"']?(?P<secret>[a-z0-9+/_-]{20,512}={0,2})"
        ),
        ("key",),
        random_value,
        lower=True,
    ),
    # more of a shell command's credentials: sshpass -p / docker login -p VALUE, curl -u
    # user:password, as a line or an argv list's repr; each form from its literal
    Detector(
        "command_line",
        _rx(
            rf"(?:sshpass|login(?:{_ARG}(?:-u|--username)(?:=|{_ARG})[^\s\"']{{1,128}})?)"
            rf"{_ARG}-p(?:[ \t]{{0,3}}(?:{_shell_quoted('pq', _NOT_VARIABLE)})"
            rf"|(?:[ \t]{{0,3}}|{_ITEM})(?P<p>[^\s\"'$\[-][^\s\"']{{2,511}}))"
        ),
        ("sshpass", "login"),
        lower=True,
    ),
    Detector(
        "command_line",
        # a client's own password flag, by the client's name (_CLIENTS), as a line or an argv
        # list's repr; within a line of the command's name
        _rx("|".join(_client_form(index, *row[1:]) for index, row in enumerate(_CLIENTS))),
        tuple(anchor for row in _CLIENTS for anchor in row[0]),
    ),
    Detector(
        "command_line",
        # a password given as a positional argument: htpasswd's batch mode (-b: the file, the
        # user, then the password; -n: no file), rabbitmqctl add_user / change_password; the
        # last argument of its command
        _rx(
            rf"htpasswd(?:{_ARG}-[A-Za-z]{{1,8}}(?:{_ARG}[0-9]{{1,3}})?){{0,5}}?{_ARG}"
            rf"-[A-Za-mo-z]{{0,7}}b[A-Za-mo-z]{{0,7}}(?:{_ARG}-[A-Za-z]{{1,8}}){{0,4}}"
            rf"(?:{_ARG}(?![-\[])[^\s\"']{{1,256}}){{2}}{_ARG}(?P<h>{_POSITIONAL})"
            rf"|htpasswd(?:{_ARG}-[A-Za-z]{{1,8}}(?:{_ARG}[0-9]{{1,3}})?){{0,5}}?{_ARG}"
            rf"-(?=[A-Za-z]{{0,7}}b)(?=[A-Za-z]{{0,7}}n)[A-Za-z]{{2,8}}"
            rf"(?:{_ARG}-[A-Za-z]{{1,8}}){{0,4}}{_ARG}(?![-\[])[^\s\"']{{1,256}}"
            rf"{_ARG}(?P<n>{_POSITIONAL})"
            rf"|rabbitmqctl(?:{_ARG}-[^\s\"']{{1,64}}(?:{_ARG}(?!-)[^\s\"']{{1,128}})?){{0,4}}?"
            rf"{_ARG}(?:add_user|change_password)"
            rf"{_ARG}(?![-\[])[^\s\"']{{1,256}}{_ARG}(?P<r>{_POSITIONAL})"
        ),
        ("htpasswd", "rabbitmqctl"),
    ),
    Detector(
        "command_line",
        # OpenSSL's passphrase argument: -pass / -passin / -passout pass:SECRET (env: and
        # file: name where it is, and are kept)
        _rx(rf"-(?:pass|passin|passout|password|kpass)(?:{_ARG}|=)pass:(?P<o>[^\s\"']{{1,512}})"),
        ("pass:",),
    ),
    Detector(
        "command_line",
        # Oracle's tools take their login as user/password[@connect identifier]: sqlplus
        # scott/tiger@orcl, expdp, impdp, sqlldr (userid=), rman (target, catalog), dgmgrl;
        # so does a driver's connect("scott/tiger@db/orclpdb"). "sqlplus / as sysdba" and
        # "sqlplus /nolog" name no password
        _rx(
            rf"(?:sqlplus|sqlldr|rman|expdp|impdp|dgmgrl)(?:{_ARG}-[a-z]{{1,12}}){{0,3}}{_ARG}"
            rf"(?:(?:userid|target|auxiliary|catalog)(?:=|{_ARG}))?[\"']?"
            r"[a-z0-9_$#.]{1,128}/(?P<ora>[^\s/@\"']{1,256})(?=@|[\s\"']|$)"
            r"|connect\(\s{0,3}[\"'][a-z0-9_$#.]{1,128}/(?P<orac>[^\s/@\"']{1,256})@"
        ),
        ("sqlplus", "sqlldr", "rman", "expdp", "impdp", "dgmgrl", "connect("),
        lower=True,
    ),
    Detector(
        "command_line",
        # the same login as a setting whose name says it is one (DB_LOGIN=scott/tiger@db,
        # "dsn": "scott/tiger@orcl", ORACLE_CONN_STR=...), the user a name and the connect
        # identifier a host, an address or a descriptor: a path with an "@" in it
        # (library/python@sha256:..., IMAGE=...) is under another name, a package's
        # version (react/jsx-runtime@18) is no host
        _rx(
            r"(?<![a-z])(?:login|conn(?:ect(?:ion)?)?(?:[_-]?str(?:ing)?)?|dsn|userid)[\"']?"
            r"[ \t]{0,3}[:=][ \t]{0,3}[\"']?[a-z][a-z0-9_$#.]{0,127}/(?!\[redacted:)"
            r"(?P<secret>[^\s/@\"']{1,256})@(?=[a-z(/\[]|[0-9]{1,3}\.[0-9])"
        ),
        ("login", "conn", "dsn", "userid"),
        lower=True,
    ),
    Detector(
        "command_line",
        _rx(
            r"-(?:u|-user)(?<![a-z0-9_-]-u)(?<![a-z0-9_-]--user)(?:[ \t=]{1,3}[\"']?|"
            rf"{_ITEM})(?P<user>[^\s:\"'/@$\[]{{1,128}}:[^\s\"'$]{{1,256}})"
        ),
        ("-u",),
        lower=True,
    ),
)

_SEGMENT = re.compile(r"[A-Za-z0-9_-]*")


def jwt_spans(payload: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Each JWT (``header.payload.signature``, header and payload base64url JSON, so both
    start ``eyJ``), found from the ``.eyJ`` that starts its payload: the header is the
    segment before that dot from its first ``eyJ`` (so a JWT glued to the text before it is
    found), the signature the segment after. Each dot starts one bounded attempt: linear."""
    out: list[tuple[int, int]] = []
    last = 0
    for found in payload.finditer(text):
        dot = found.start()
        lo = dot
        while lo > last and text[lo - 1] in _B64URL:
            lo -= 1
        first = text.find("eyJ", lo, dot)
        if first == -1 or dot - first < 11:
            continue
        signature = _SEGMENT.match(text, found.end() + 1)
        end = signature.end() if signature else found.end()
        out.append((first, end))
        last = end
    return out


_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def private_key_spans(header: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Each private key block: from its header through its END line, else (a block that was
    cut) through the run of base64, whitespace and escapes after the header. Linear: the END
    search moves forward only, and once there is none it is not searched again."""
    out: list[tuple[int, int]] = []
    position, no_end_from = 0, len(text) + 1
    while (found := header.search(text, position)) is not None:
        start, end = found.span()
        if text.startswith("P", start):  # a PuTTY key's private lines: base64, line by line
            lines = _PPK_LINES.match(text, end)
            if lines is not None:
                end = lines.end()
                out.append((start, end))
            position = end
            continue
        stop = -1 if end >= no_end_from else text.find("-----END", end)
        if stop == -1:
            no_end_from = min(no_end_from, end)
            body = _BODY.match(text, end)
            end = body.end() if body else end
        else:
            close = text.find("-----", stop + 8, stop + 80)
            end = close + 5 if close != -1 else stop + 8
        out.append((start, end))
        position = end
    return out


_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,.-]*")
_PPK_LINES = re.compile(r"[0-9]{0,3}(?:[ \t]*(?:\r?\n|\\r?\\n)(?!Private-)[A-Za-z0-9+/=]{1,256})+")
"""The rest of a PuTTY key's ``Private-Lines: N`` and its base64 lines (newlines or, in a JSON
or repr string, ``\\n``), up to its ``Private-MAC:`` line."""
