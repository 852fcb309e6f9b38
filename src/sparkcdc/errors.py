"""sparkcdc's one exception hierarchy: a root and five families, by where the fix lies.

Every exception the package raises on purpose derives from :class:`SparkcdcError` and from exactly
one family, so a caller (the ``sparkcdc`` command among them) decides what to do by family, never
by class list or message text::

    SparkcdcError
    ├── ConfigurationError  (ValueError)   the configuration, a file or an argument is wrong: .property
    ├── ServerError         (RuntimeError) PostgreSQL refused, failed or went away: .sqlstate, .slot, .table
    ├── ProtocolError       (ValueError)   what the server sent breaks the protocol: .message_type, .offset, .lsn
    ├── DestinationError    (RuntimeError) an apply target or a sink refused or failed: .target, .table
    └── PipelineError       (RuntimeError) the run itself cannot go on (query, offsets, a value): .lsn, .table

Each family also derives from the built-in exception its members were raised as before, so code
that catches ``ValueError`` or ``RuntimeError`` keeps working; a member may add one more built-in
base (``LookupError``, ``TypeError``) for the same reason.

PostgreSQL's errors become :class:`ServerError` subclasses by SQLSTATE, in one place
(:func:`sparkcdc.postgres.errors.server_error`), never by reading the message text.

The classes live in this module, which is never compiled with mypyc (see :mod:`sparkcdc.native`):
mypyc cannot compile a class that derives from ``RuntimeError`` or from two bases.
"""

from __future__ import annotations

__all__ = [
    "FAMILIES",
    "ConfigurationError",
    "DestinationError",
    "PipelineError",
    "ProtocolError",
    "ServerError",
    "SparkcdcError",
    "family_of",
]


class SparkcdcError(Exception):
    """The root of every exception sparkcdc raises on purpose."""


class ConfigurationError(SparkcdcError, ValueError):
    """The configuration, a file or an argument is wrong; ``property`` names the property (or the
    parameter) at fault when one is."""

    property: str | None = None

    def __init__(self, message: str, *, prop: str | None = None) -> None:
        super().__init__(f"{prop}: {message}" if prop else message)
        self.property = prop


class ServerError(SparkcdcError, RuntimeError):
    """PostgreSQL refused a request, failed, or cannot be reached.

    ``sqlstate`` is the server's error code when it sent one (``None`` for a connection that could
    not be made or broke); ``slot`` and ``table`` name the replication slot and the table concerned
    where known.
    """

    sqlstate: str | None = None
    slot: str | None = None
    table: str | None = None

    def __init__(self, message: str, *, sqlstate: str | None = None, slot: str | None = None, table: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.slot = slot
        self.table = table


class ProtocolError(SparkcdcError, ValueError):
    """What the server sent does not follow the protocol: a malformed, truncated or out-of-order
    pgoutput message or replication frame. The decoder never skips input silently.

    ``reason`` says what is wrong. For a pgoutput message, ``message_type`` is its type (``None``
    when even the type byte is missing or unknown) and ``offset`` the byte inside the message where
    decoding failed, so that a bad stream can be diagnosed from the error alone; ``lsn`` is the WAL
    position concerned where known. (This is also :class:`sparkcdc.pgoutput.errors.ProtocolError`.)
    """

    def __init__(self, reason: str, *, message_type: str | None = None, offset: int | None = None, lsn: int | None = None) -> None:
        self.reason = reason
        self.message_type = message_type
        self.offset = offset
        self.lsn = lsn
        text = reason
        if offset is not None:
            where = f"pgoutput {message_type} message" if message_type else "pgoutput message"
            text = f"{where}: {reason} (at byte {offset})"
        if lsn is not None:
            text = f"{text} at LSN {lsn >> 32:X}/{lsn & 0xFFFF_FFFF:X}"  # not lsn.format_lsn: lsn imports this module
        super().__init__(text)


class DestinationError(SparkcdcError, RuntimeError):
    """Where the change events go (an apply target, a sink such as Kafka or the topic files) refused
    them or failed; ``target`` names the destination and ``table`` the table, where known."""

    target: str | None = None
    table: str | None = None

    def __init__(self, message: str, *, target: str | None = None, table: str | None = None) -> None:
        super().__init__(message)
        self.target = target
        self.table = table


class PipelineError(SparkcdcError, RuntimeError):
    """The run cannot go on: the streaming query failed, a checkpointed offset or the slot's state
    cannot be used, or a value cannot become an event. ``lsn`` and ``table`` say where, when known.

    (This is also :class:`sparkcdc.spark.runner.PipelineError`, which the Spark runner raises with
    the cause as Spark reported it.)
    """

    lsn: int | None = None
    table: str | None = None

    def __init__(self, message: str, *, lsn: int | None = None, table: str | None = None) -> None:
        super().__init__(message)
        self.lsn = lsn
        self.table = table


#: The families, in the order the ``sparkcdc`` command tests them.
FAMILIES: tuple[type[SparkcdcError], ...] = (ConfigurationError, ServerError, ProtocolError, DestinationError, PipelineError)


def family_of(exc: SparkcdcError) -> type[SparkcdcError]:
    """The family ``exc`` belongs to (every sparkcdc exception belongs to exactly one)."""
    for family in FAMILIES:
        if isinstance(exc, family):
            return family
    raise TypeError(f"{type(exc).__qualname__} derives from SparkcdcError but from none of its families")
