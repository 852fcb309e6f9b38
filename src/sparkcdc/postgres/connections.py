"""Opening a connection, and telling which setting is at fault when the server or libpq refuses it.

A connection refused for its settings (a wrong CA, a certificate for another host name, a wrong
password or key pass phrase, a server that takes TLS only) will be refused again: retrying it, as a
server that went away is retried, would hide the mistake behind restarts. So such a failure becomes
a :class:`ConnectionSettingError` naming the property to fix; any other failure stays what it was.

libpq reports a failed connection without a SQLSTATE (there is no result to carry one), so here, and
only here, the setting at fault is read from the message: libpq's own texts and OpenSSL's (sparkcdc
runs its connections in the C locale's messages; an unrecognised text is an ordinary connection
failure, never a guess). Every message shown is scrubbed of the connection string's secrets
(:mod:`sparkcdc.secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg

from ..errors import ConfigurationError
from ..secrets import conninfo_secrets, redact

__all__ = ["CONNECTOR_PROPERTIES", "ConnectionSettingError", "connect", "setting_at_fault", "setting_error"]

#: The connector property that sets each libpq keyword (sparkcdc.engine.connection builds the
#: connection string from them).
CONNECTOR_PROPERTIES: Mapping[str, str] = {
    "host": "database.hostname", "port": "database.port", "user": "database.user", "dbname": "database.dbname",
    "password": "database.password", "sslmode": "database.sslmode", "sslrootcert": "database.sslrootcert",
    "sslcert": "database.sslcert", "sslkey": "database.sslkey", "sslpassword": "database.sslpassword",
}

# (pattern of libpq's or OpenSSL's text, the keyword at fault, what to tell), the first match wins.
_CAUSES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple((re.compile(p, re.IGNORECASE), k, why) for p, k, why in (
    (r"does not match host name", "host",
     "the server's certificate is not for this host name (sslmode=verify-full checks it): connect by a name the certificate "
     "lists, or use sslmode verify-ca"),
    (r"root certificate file .* does not exist|could not read root certificate file", "sslrootcert",
     "the CA certificate file cannot be read"),
    (r"certificate verify failed|self[- ]signed certificate", "sslrootcert",
     "the server's certificate is not signed by a CA in this file (a wrong CA?)"),
    (r"bad decrypt|bad password read|could not load private key file.*(?:interrupted|password)", "sslpassword",
     "the client key cannot be decrypted with this pass phrase"),
    (r"private key file .* has group or world access|could not (?:load|open|read) private key file|"
     r"private key file .* (?:is not a regular file|does not exist)|certificate present, but not private key", "sslkey",
     "the client key cannot be used"),
    (r"could not (?:open|read) certificate file", "sslcert", "the client certificate cannot be read"),
    (r"connection requires a valid client certificate|certificate authentication failed", "sslcert",
     "the server wants a client certificate it trusts, for this user"),
    (r"password authentication failed|no password supplied|fe_sendauth", "password",
     "the server refused the password for this user"),
    (r"server does not support SSL|no pg_hba\.conf entry for .* no encryption|invalid sslmode value", "sslmode",
     "the server and sslmode do not agree on TLS (a server that takes TLS connections only needs sslmode require or "
     "stronger)"),
))


class ConnectionSettingError(ConfigurationError):
    """A connection refused for one of its settings; ``property`` names it, ``keyword`` is libpq's name of it.

    (Not a lost server: retrying cannot help.)"""

    def __init__(self, message: str, *, prop: str, keyword: str) -> None:
        super().__init__(message, prop=prop)
        self.keyword = keyword


def setting_at_fault(message: str) -> tuple[str, str] | None:
    """The libpq keyword a failed connection's message blames, and why; ``None`` when it blames none."""
    for pattern, keyword, why in _CAUSES:
        if pattern.search(message):
            return keyword, why
    return None


def setting_error(message: str, conninfo: str, properties: Mapping[str, str] = CONNECTOR_PROPERTIES) -> ConnectionSettingError | None:
    """The :class:`ConnectionSettingError` for a failed connection's ``message``, its secrets masked,
    naming the property ``properties`` gives the keyword at fault; ``None`` when no setting is to blame."""
    fault = setting_at_fault(message)
    if fault is None:
        return None
    keyword, why = fault
    prop = properties.get(keyword, keyword)
    text = redact(" ".join(message.split()), conninfo_secrets(conninfo)).removeprefix("connection failed: ")
    return ConnectionSettingError(f"{why} (the connection failed: {text})", prop=prop, keyword=keyword)


def connect(conninfo: str, properties: Mapping[str, str] = CONNECTOR_PROPERTIES, **kwargs: Any) -> psycopg.Connection:
    """``psycopg.connect``, a refusal for a setting raised as :class:`ConnectionSettingError`; any
    other failure is raised as psycopg's own, its text scrubbed of the connection string's secrets."""
    try:
        return psycopg.connect(conninfo, **kwargs)
    except psycopg.Error as exc:
        error = setting_error(str(exc), conninfo, properties) if isinstance(exc, psycopg.OperationalError) else None
        if error is not None:
            raise error from None  # psycopg's text is in the message (scrubbed); its chain adds nothing
        secrets = conninfo_secrets(conninfo)
        if not any(secret in str(exc) for secret in secrets):
            raise
        raise type(exc)(redact(str(exc), secrets)) from None  # libpq echoes a malformed URI, password and all
