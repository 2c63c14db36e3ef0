"""A connection string's ``user:password@host`` in prose, its password letters alone
(``connect with app:swordfish@db.example.com``).

RFC 5322 keeps ``:`` out of an address's unquoted local part, so ``word:word@host`` is either
a label before an address (``From:bob@example.com``, ``mailto:``, ``sip:``, ``user:alice@…``)
or a user and a password before a host. The label is told by its name: a header of RFC 5322
(``from``, ``to``, ``cc``, ``reply-to``…), a URI scheme whose path is an address (``mailto``,
``sip``, ``xmpp``, ``acct``…), or a word prose writes before an address (``email``,
``contact``, ``user``, ``owner``…), unless a word that names a login's user (``user``,
``login``) is before a host that is no address's domain (an IP address, ``localhost``, a name
of one label: ``user:PASSWORD@10.0.0.5``). Any other name is a user, and the word after its
colon a password. One regex pass from each ``:`` and a bounded look back at the name: linear.
"""

from __future__ import annotations

import re

USERINFO_LETTERS = re.compile(
    r":(?<=[A-Za-z0-9._~%+-]:)(?P<secret>[A-Za-z]{1,256})@"
    r"(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,20})"
    r"(?![\w@:/-]|\.[\w-])"
)
"""``:password@host``, the password letters alone, the host not followed by a port or a path
(the other ``url_credentials`` rows read those, any password)."""

ADDRESS_LABELS = frozenset(
    {
        # RFC 5322's header fields that hold addresses, and the trace fields
        "from", "sender", "reply-to", "to", "cc", "bcc", "resent-from", "resent-sender",
        "resent-to", "resent-cc", "resent-bcc", "return-path", "delivered-to", "envelope-to",
        "x-original-to", "disposition-notification-to", "errors-to", "message-id",
        "in-reply-to", "references", "content-id",
        # URI schemes whose path is an address, not a host
        "mailto", "sip", "sips", "xmpp", "acct", "im", "pres", "tel", "cid", "mid",
        # words prose and forms write before an address
        "email", "e-mail", "mail", "mailbox", "address", "addr", "contact", "user", "username",
        "login", "owner", "author", "maintainer", "assignee", "reviewer", "reporter",
        "approver", "requester", "recipient", "rcpt", "attendee", "organizer", "member",
        "name", "id", "account", "principal", "upn", "signed-off-by", "co-authored-by",
        "by", "at", "see", "via", "ping", "cc'd", "fwd", "re", "note", "send", "write", "ask",
        "support", "help", "info", "sales", "billing", "security", "abuse", "feedback", "team",
        "group", "list", "alias", "notify", "alert", "alerts", "admin-contact", "poc",
    }
)  # fmt: skip
"""Names before ``:`` that introduce an address, not a user (compared in lower case)."""

_OPENS = frozenset("\"'`([{<,;*")
"""What a word starts after in prose: a space, a quote, a bracket, a list's comma (not a URL's
``/``, ``#``, ``?``, ``&``, ``=``, ``@`` or another ``:``: the URL and setting rows read those)."""
_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~%+-'")


def prose_userinfo_spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The letters-only password of each ``user:password@host`` in ``text`` whose user is a
    word of prose (:data:`_OPENS`) that introduces no address; a name that starts with a
    digit (``12:30@home``) is none."""
    out: list[tuple[int, int]] = []
    for found in pattern.finditer(text):
        colon = found.start()
        start = colon
        while start > 0 and colon - start < 64 and text[start - 1] in _NAME:
            start -= 1
        if start > 0 and not (text[start - 1].isspace() or text[start - 1] in _OPENS):
            continue
        name = text[start:colon].lower()
        if not name[:1].isalpha():
            continue
        name = name.strip("'")
        if name in ADDRESS_LABELS and not (
            name in _LOGIN_WORDS and _SERVER.match(text, found.end("secret") + 1)
        ):
            continue
        out.append(found.span("secret"))
    return out


_LOGIN_WORDS = frozenset({"user", "username", "login", "account", "principal", "name", "id"})
"""The address labels that also name a login's user (``user:PASSWORD@10.0.0.5``); a header's
or a URI scheme's address may be a local one (``mailto:root@localhost``)."""
_SERVER = re.compile(r"\[|(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[A-Za-z0-9-]{1,63})(?![\w-]|\.[\w-])")
"""A host no address is at (RFC 5321's domain has a dot, an address literal brackets): a
server's IP address, ``localhost``, ``[::1]``, a name of one label (``db``, ``cache-1``)."""
