"""Kafka Connect JsonConverter output for records: ``{"schema": ..., "payload": ...}`` or the bare payload.

The schema part of an event is the same for every event of a table, so its JSON is rendered once
per schema object and spliced in front of each payload; per event only the payload is encoded.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from .connect import ConnectSchema
from .records import ChangeRecord, Header

__all__ = ["JsonSerializer", "escape_json_text"]

_dumps: Final = orjson.dumps


def escape_json_text(text: bytes) -> bytes:
    """The inside of ``text`` (UTF-8) quoted as a JSON string.

    orjson's string escaping, vectorised, is about twice as fast as two ``bytes.replace`` calls on
    a Debezium payload (0.7 µs against 1.8 µs for 436 bytes with 74 quotes), and escapes control
    characters too, so any text is safe here.
    """
    return orjson.dumps(text.decode("utf-8"))[1:-1]


class JsonSerializer:
    """Serializes keys, values and headers as JsonConverter does for the given ``schemas.enable``.

    ``value_converter``, when given, makes the values instead (Debezium's CloudEvents,
    :class:`~sparkcdc.debezium.cloudevents.CloudEventsConverter`): its ``encode(record)`` returns a
    value's bytes, or None for null. Keys and headers stay JsonConverter's.
    """

    def __init__(self, *, key_schemas: bool = True, value_schemas: bool = True, header_schemas: bool = True,
                 value_converter: Any = None) -> None:
        self.key_schemas = key_schemas
        self.value_schemas = value_schemas
        self.header_schemas = header_schemas
        self.value_converter = value_converter
        self._prefixes: dict[int, tuple[ConnectSchema, bytes]] = {}
        self._quoted_prefixes: dict[int, tuple[ConnectSchema, bytes]] = {}
        self._constant_headers: dict[int, tuple[Header, bytes | None]] = {}
        self._constant_header_lists: dict[int, tuple[tuple[Header, ...], list[tuple[str, bytes | None]]]] = {}
        # The two schemas used last and their prefixes (a record's key and value schema alternate),
        # and the headers tuple seen last (the same context headers on every record): identity
        # checks before the dictionaries above.
        self._last_schema: ConnectSchema | None = None
        self._last_prefix = b""
        self._previous_schema: ConnectSchema | None = None
        self._previous_prefix = b""
        self._last_headers: tuple[Header, ...] | None = None
        self._last_header_list: list[tuple[str, bytes | None]] = []

    def _prefix(self, schema: ConnectSchema | None) -> bytes:
        if schema is None:
            return b'{"schema":null,"payload":'
        if schema is self._last_schema:
            return self._last_prefix
        if schema is self._previous_schema:
            prefix = self._previous_prefix
        else:
            cached = self._prefixes.get(id(schema))
            if cached is None or cached[0] is not schema:
                cached = (schema, b'{"schema":' + _dumps(schema.to_json()) + b',"payload":')
                self._prefixes[id(schema)] = cached
            prefix = cached[1]
        self._previous_schema, self._previous_prefix = self._last_schema, self._last_prefix
        self._last_schema, self._last_prefix = schema, prefix
        return prefix

    def encode(self, payload: Any, schema: ConnectSchema | None, *, with_schema: bool) -> bytes | None:
        """One Connect (schema, value) pair; ``None`` when both are null (a tombstone or a null key)."""
        if payload is None and schema is None:
            return None
        body = _dumps(payload)
        if not with_schema:
            return body
        return b"".join((self._prefix(schema), body, b"}"))

    def quoted_into(self, out: list[bytes], payload: Any, schema: ConnectSchema | None, *, with_schema: bool) -> int:
        """:meth:`encode`'s text as a JSON string (``null`` for none), appended to ``out`` in pieces
        and its length returned, for a caller that joins many texts at once (a batch of topic-files
        lines). The schema part is escaped once per schema and, the same object record after
        record, never copied into a text of its own; per record only the payload is escaped."""
        if payload is None and schema is None:
            out.append(b"null")
            return 4
        body = escape_json_text(_dumps(payload))
        if not with_schema:
            out.append(b'"')
            out.append(body)
            out.append(b'"')
            return len(body) + 2
        if schema is None:
            prefix = b'"{\\"schema\\":null,\\"payload\\":'
        else:
            cached = self._quoted_prefixes.get(id(schema))
            if cached is None or cached[0] is not schema:
                cached = (schema, b'"' + escape_json_text(self._prefix(schema)))
                self._quoted_prefixes[id(schema)] = cached
            prefix = cached[1]
        out.append(prefix)
        out.append(body)
        out.append(b'}"')
        return len(prefix) + len(body) + 2

    def quoted_value_into(self, out: list[bytes], record: ChangeRecord) -> int:
        """:meth:`quoted_into` for a record's value, made by the value converter where there is one."""
        converter = self.value_converter
        if converter is None:
            return self.quoted_into(out, record.value, record.value_schema, with_schema=self.value_schemas)
        text = converter.encode(record)
        if text is None:
            out.append(b"null")
            return 4
        body = escape_json_text(text)
        out.append(b'"')
        out.append(body)
        out.append(b'"')
        return len(body) + 2

    def record(self, record: ChangeRecord) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        """Key, value and headers of a record in one call (what sinks use per record)."""
        converter = self.value_converter
        return (
            self.encode(record.key, record.key_schema, with_schema=self.key_schemas),
            self.encode(record.value, record.value_schema, with_schema=self.value_schemas) if converter is None
            else converter.encode(record),
            self.headers(record),
        )

    def key(self, record: ChangeRecord) -> bytes | None:
        return self.encode(record.key, record.key_schema, with_schema=self.key_schemas)

    def value(self, record: ChangeRecord) -> bytes | None:
        converter = self.value_converter
        if converter is not None:
            result: bytes | None = converter.encode(record)
            return result
        return self.encode(record.value, record.value_schema, with_schema=self.value_schemas)

    def header(self, header: Header) -> bytes | None:
        return self.encode(header.value, header.schema, with_schema=self.header_schemas)

    def constant_header(self, header: Header) -> bytes | None:
        """For headers that are the same object on every record (Debezium's context headers)."""
        cached = self._constant_headers.get(id(header))
        if cached is None or cached[0] is not header:
            cached = (header, self.header(header))
            self._constant_headers[id(header)] = cached
        return cached[1]

    def headers(self, record: ChangeRecord) -> list[tuple[str, bytes | None]]:
        """The serialized headers (treat the list as read-only: an all-constant one is shared)."""
        headers = record.headers
        if headers is self._last_headers:
            return self._last_header_list
        cached = self._constant_header_lists.get(id(headers))
        if cached is not None and cached[0] is headers:
            self._last_headers, self._last_header_list = headers, cached[1]
            return cached[1]
        out = [(h.name, self.constant_header(h) if h.constant else self.header(h)) for h in headers]
        if headers and all(h.constant for h in headers):
            self._constant_header_lists[id(headers)] = (headers, out)
            self._last_headers, self._last_header_list = headers, out
        return out
