"""A Kubernetes Secret's values in a manifest's text: every value under its ``data`` (base64,
which no format detector reads as a credential: ``cGFzc3dvcmQ=``) or ``stringData``.

A Secret says what it holds by its kind, not by its keys' names (``config.json``,
``tls.key``, ``uri``, ``.dockerconfigjson``), so once a text holds ``kind: Secret`` (YAML,
JSON or a dict's repr) every value of those maps is one: as YAML writes them, the lines
indented under ``data:`` (a block scalar's lines too) in a document (``---``) of that kind,
and as JSON, a repr or YAML's flow style does, the values of the flat object after
``"data":`` or ``data:`` (in a list of objects with a Secret among them, the others' too: a
text is not parsed). Each line and each object is read once: linear.
"""

from __future__ import annotations

import re
from bisect import bisect_right

KUBERNETES_SECRET = "kubernetes_secret"

KIND = re.compile(r"""["']?kind["']?[ \t]*:[ \t]*["']?Secret(?![A-Za-z])""")
"""A Secret's kind, as YAML, JSON or a dict's repr writes it (``SealedSecret``'s values are
encrypted for the cluster, and ``ExternalSecret`` names where they are: neither is one)."""
_DOCUMENT = re.compile(r"^---", re.MULTILINE)
_YAML_DATA = re.compile(r"^([ \t]*)(?:data|stringData):[ \t]*(?:#[^\n]*)?\r?$", re.MULTILINE)
_ENTRY = re.compile(r"""[^\s:#'"][^:\n]{0,252}:(?:[ \t]+(.*)|$)""")
_JSON_DATA = re.compile(
    r"""(?:["'](?:data|stringData)["']|(?<![\w.-])(?:data|stringData))[ \t\r\n]*:[ \t\r\n]*"""
    r"""\{([^{}]*)\}"""
)
"""A Secret's map as JSON, a repr or YAML's flow style (``data: {tls.key: LS0t…}``) writes it."""
_JSON_VALUE = re.compile(
    r"""(?:["'][^"'\n]{1,253}["']|[^\s,:{}"'][^,:{}\n]{0,252})[ \t\r\n]*:[ \t\r\n]*"""
    r"""(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|([^\s,{}"'][^,{}\n]*?))"""
    r"""[ \t\r]*(?=[,\n]|\Z)"""
)
"""One entry of that map: a quoted value, or YAML's plain one (to the next ``,``)."""


def secret_data_spans(kind: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Where the values of a Secret's ``data`` and ``stringData`` are in ``text``: none
    unless it holds a Secret's ``kind`` (:data:`KIND`)."""
    kinds = [found.start() for found in kind.finditer(text)]
    if not kinds:
        return []
    out: list[tuple[int, int]] = []
    scanned = 0
    documents = [found.start() for found in _DOCUMENT.finditer(text)] if "\n---" in text else []
    secrets = {bisect_right(documents, at) for at in kinds}  # YAML documents that are Secrets
    for block in _YAML_DATA.finditer(text):
        if block.start() < scanned or bisect_right(documents, block.start()) not in secrets:
            continue  # in a block already read, or in another document (a ConfigMap's)
        scanned = _yaml_values(text, block.end(), len(block.group(1)), out)
    for found in _JSON_DATA.finditer(text):
        if found.group()[0] not in "\"'" and bisect_right(documents, found.start()) not in secrets:
            continue  # YAML's flow style in another document (a ConfigMap's)
        for value in _JSON_VALUE.finditer(text, found.start(1), found.end(1)):
            group = value.lastindex or 1
            if value.end(group) > value.start(group):
                out.append(value.span(group))
    return out


def _yaml_values(text: str, position: int, indent: int, out: list[tuple[int, int]]) -> int:
    """The values of the YAML map whose lines start after ``position``, each more indented
    than ``indent``, added to ``out``; where the map ends."""
    entry_indent = -1  # a block scalar's or a folded value's lines are indented past its key
    while position < len(text):
        start = position + 1
        stop = text.find("\n", start)
        stop = len(text) if stop == -1 else stop
        line = text[start:stop].rstrip("\r \t")
        body = line.lstrip(" \t")
        if not body or body.startswith("#"):
            position = stop
            continue
        depth = len(line) - len(body)
        if depth <= indent:
            return position
        end = start + len(line)
        entry = _ENTRY.match(line, depth) if entry_indent < 0 or depth <= entry_indent else None
        if entry is None:  # a value's own line: a block scalar's, a plain value folded on
            out.append((start + depth, end))
        else:
            entry_indent = depth
            value = entry.group(1)
            if value and value[0] not in "|>":
                first = start + entry.start(1)
                if value[0] in "\"'" and len(value) > 1 and value[-1] == value[0]:
                    if len(value) > 2:
                        out.append((first + 1, end - 1))
                else:
                    out.append((first, end))
        position = stop
    return position
