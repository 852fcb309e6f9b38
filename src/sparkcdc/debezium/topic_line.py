"""The topic-files line: the one definition of the JSON line ``sparkcdc run --output`` writes per record.

    {"key":K,"value":V,"headers":[{"name":N,"value":H},...],"lsn":L,"commit_lsn":C,"ordinal":O}

``K`` and ``V`` are the record's Debezium JSON texts (what :class:`~.serialization.JsonSerializer`
makes) as JSON strings, ``null`` for none (a null key, a tombstone's value); each header's ``H`` is
its serialized bytes as a UTF-8 string, or ``null``; ``L``, ``C`` and ``O`` are integers, ``null``
for none. No whitespace, fields in this order: what Spark's ``to_json`` writes for the same
record, byte for byte.

Every path that writes the line takes it from here, so the paths cannot drift apart:

- :func:`segments`: the line's constant bytes around the fields a builder fills per record, every
  other field rendered in once. The streamed records' lines (:func:`sparkcdc.engine.core.lines.encode_lines`)
  and the rendered snapshot's templates (:mod:`sparkcdc.engine.snapshot_rendered`) are built from
  them, so their per-record work stays one join of the pieces that vary;
- :func:`text_template`: a text field whose text is a constant prefix and suffix around a part
  that varies per record (a snapshot row's payload), the constant parts escaped once;
- :func:`line`: one record's line from its values (the reference; batches of key and value texts);
- :func:`spark_sql`: the same line as a Spark SQL expression over the ``postgres-cdc`` source's
  ``columns`` layout (the topic files sink's fallback when the reader did not build the lines).

Quoting a text as a JSON string is :func:`escape` (orjson's string escaping): escaping the parts
of a text one by one gives the escaped text, so a constant part is escaped once, not per record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from .serialization import escape_json_text

__all__ = [
    "FIELDS", "HEADERS", "HEADER_FIELDS", "NUMBER", "TEXT", "LineField", "escape", "headers_json", "line", "number", "segments",
    "spark_sql", "text", "text_template",
]

escape: Final = escape_json_text
"""The inside of a UTF-8 text quoted as a JSON string."""


def text(raw: bytes | None) -> bytes:
    """A text field's value: ``raw`` (UTF-8) as a JSON string; None as ``null``."""
    return b"null" if raw is None else orjson.dumps(raw.decode("utf-8"))


def text_template(prefix: bytes, suffix: bytes) -> tuple[bytes, bytes]:
    """A text field whose text is ``prefix + part + suffix``: the bytes before and after
    :func:`escape` (``part``), so that the field is ``before + escape(part) + after``."""
    return b'"' + escape_json_text(prefix), escape_json_text(suffix) + b'"'


#: The fields of a header object: its name, and its serialized bytes as a UTF-8 string.
HEADER_FIELDS: Final = ("name", "value")
_HEADER_NAME, _HEADER_VALUE = HEADER_FIELDS


def headers_json(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The headers field's value: a JSON array of ``{"name", "value"}`` objects."""
    return orjson.dumps([
        {_HEADER_NAME: name, _HEADER_VALUE: None if raw is None else raw.decode("utf-8")} for name, raw in headers
    ])


def number(value: int | None) -> bytes:
    """A number field's value; None as ``null``."""
    return b"null" if value is None else b"%d" % value


TEXT: Final = "text"
HEADERS: Final = "headers"
NUMBER: Final = "number"

_RENDER: Final[dict[str, Callable[[Any], bytes]]] = {TEXT: text, HEADERS: headers_json, NUMBER: number}


def _headers_sql(column: str) -> str:
    # The source's headers are Spark's Kafka layout, array<struct<key: string, value: binary>>; a
    # null array writes [] as an empty one does.
    name, value = (f"'{field}'" for field in HEADER_FIELDS)
    line_type = f"array<struct<{', '.join(f'`{field}`: string' for field in HEADER_FIELDS)}>>"
    return (f"coalesce(transform({column}, header -> named_struct({name}, header.`key`, {value}, decode(header.`value`, 'UTF-8'))), "
            f"cast(array() AS {line_type}))")


# How each kind of field is written by Spark SQL's to_json from the source column of the same name
# (a string column is written as a JSON string, null as null, as text() does; a long as number() does).
_SQL: Final[dict[str, Callable[[str], str]]] = {TEXT: lambda column: column, HEADERS: _headers_sql, NUMBER: lambda column: column}


@dataclass(frozen=True)
class LineField:
    """A field of the line: its name and the kind of its value (``TEXT``, ``HEADERS``, ``NUMBER``)."""

    name: str
    kind: str

    @property
    def label(self) -> bytes:
        """``"name":``, what precedes the value."""
        return b'"' + self.name.encode() + b'":'

    def render(self, value: Any) -> bytes:
        return _RENDER[self.kind](value)

    def sql(self) -> str:
        """The field's value in Spark SQL, from the source column named as the field."""
        return _SQL[self.kind](f"`{self.name}`")


#: The line's fields, in the order they are written.
FIELDS: Final = (
    LineField("key", TEXT),
    LineField("value", TEXT),
    LineField("headers", HEADERS),
    LineField("lsn", NUMBER),
    LineField("commit_lsn", NUMBER),
    LineField("ordinal", NUMBER),
)
_NAMES: Final = tuple(field.name for field in FIELDS)
_OPENERS: Final = tuple((b"," if index else b"{") + field.label for index, field in enumerate(FIELDS))  # each field's ,"name":
_CLOSE: Final = b"}"


def segments(*free: str, **fixed: Any) -> tuple[bytes, ...]:
    """The line's bytes around the ``free`` fields, with the value of every other field given in
    ``fixed`` rendered in: ``len(free) + 1`` pieces, and a record's line is ``pieces[0] + v0 +
    pieces[1] + ... + vN + pieces[N + 1]``, ``vI`` the value of ``free[I]`` rendered by its kind
    (:func:`text`, :func:`headers_json`, :func:`number`, or a :func:`text_template` around an escaped part).

    ``free`` must name fields in the line's order and ``fixed`` every other one: a builder written
    for another layout fails here, once, instead of writing other lines.
    """
    if list(free) != [name for name in _NAMES if name in free] or sorted((*free, *fixed)) != sorted(_NAMES):
        raise ValueError(
            f"the topic-files line has the fields {', '.join(_NAMES)} in this order; a builder names the ones it fills per "
            f"record in that order and gives the others once (here it fills {', '.join(free) or 'none'} and gives "
            f"{', '.join(fixed) or 'none'})"
        )
    pieces = [b""]
    for opener, field in zip(_OPENERS, FIELDS, strict=True):
        pieces[-1] += opener
        if field.name in fixed:
            pieces[-1] += field.render(fixed[field.name])
        else:
            pieces.append(b"")
    pieces[-1] += _CLOSE
    return tuple(pieces)


def line(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]], lsn: int | None,
    commit_lsn: int | None, ordinal: int,
) -> bytes:
    """One record's line: ``key`` and ``value`` its serialized texts (UTF-8), ``headers`` its
    serialized headers (what :func:`segments` with every field given makes)."""
    values = (key, value, headers, lsn, commit_lsn, ordinal)
    return b"".join([*(opener + field.render(v) for opener, field, v in zip(_OPENERS, FIELDS, values, strict=True)), _CLOSE])


def spark_sql() -> str:
    """The line as a Spark SQL expression over the source's ``columns`` layout: ``key`` and
    ``value`` strings, ``headers`` an ``array<struct<key: string, value: binary>>``, ``lsn``,
    ``commit_lsn`` and ``ordinal`` longs.

    ``ignoreNullFields`` is off: ``to_json`` leaves null fields out by default, and a tombstone's
    ``"value": null`` (or a null header value) must stay in the line.
    """
    fields = ", ".join(f"'{field.name}', {field.sql()}" for field in FIELDS)
    return f"to_json(named_struct({fields}), map('ignoreNullFields', 'false'))"
