"""The one place secrets are taken out of what sparkcdc shows: connection strings and error texts.

A password reaches sparkcdc in a connector property (``database.password``, ``database.sslpassword``:
a :class:`~sparkcdc.debezium.config.ConnectorConfig` masks those itself) or inside a connection
string, the ``postgresql://user:password@host/db?sslpassword=...`` of an apply target or a libpq
keyword/value string. libpq echoes a malformed URI whole in its error (``... in URI: "postgresql://
user:secret@[host"``), so an error text is scrubbed of the secrets of the connection string it came
from before sparkcdc shows it, and a connection string is shown only through :func:`redact_conninfo`.

The secrets are found by reading the connection string here (no driver): a malformed string, the
case that needs it most, must still give up its secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlsplit

__all__ = ["MASK", "SECRET_KEYWORDS", "conninfo_secrets", "redact", "redact_conninfo"]

MASK = "********"
#: libpq's keywords whose values are secrets.
SECRET_KEYWORDS = frozenset({"password", "sslpassword"})
_URI = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
# keyword = value, the value bare or single-quoted with backslash escapes (libpq's grammar).
_KEYWORD_VALUE = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)")
# A URI's user:password@, read without a URL parser (which refuses what libpq would echo).
_USERINFO = re.compile(r"^postgres(?:ql)?://[^:@/?#]*:([^@/?#]*)@", re.IGNORECASE)


def conninfo_secrets(conninfo: str) -> list[str]:
    """The secret values of a libpq connection string (URI or keyword/value), as written and decoded."""
    found: list[str] = []
    if _URI.match(conninfo):
        userinfo = _USERINFO.match(conninfo)
        if userinfo:
            found.append(userinfo.group(1))
        query = conninfo.partition("?")[2].partition("#")[0]
        for pair in query.split("&"):
            key, _, value = pair.partition("=")
            if unquote(key).lower() in SECRET_KEYWORDS:
                found.append(value)
        try:  # the decoded forms too, when the URI parses
            parts = urlsplit(conninfo)
            found += [parts.password or "", *(v for k, v in parse_qsl(parts.query) if k.lower() in SECRET_KEYWORDS)]
        except ValueError:
            pass
    else:
        for key, value in _KEYWORD_VALUE.findall(conninfo):
            if key.lower() in SECRET_KEYWORDS:
                found.append(value)
                if value.startswith("'"):
                    found.append(re.sub(r"\\(.)", r"\1", value.strip("'")))
    secrets = {s for value in found if value for s in (value, unquote(value), quote(unquote(value), safe=""))}
    return sorted(secrets, key=len, reverse=True)  # longest first: a secret inside another is masked with it


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every given secret replaced by ``MASK``."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_conninfo(conninfo: str) -> str:
    """A connection string fit to show: its passwords masked."""
    return redact(conninfo, conninfo_secrets(conninfo))
