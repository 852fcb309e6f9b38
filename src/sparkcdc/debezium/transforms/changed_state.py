"""Debezium's ``ExtractChangedRecordState``: headers naming the columns an update changed and those
it left as they were.

As Debezium 3.6.3 does it (tests/conformance/test_transforms_debezium_conformance.py):

* every change event (an envelope: ``c``, ``u``, ``d``, ``r`` and truncates) gets the configured
  headers, ``header.changed.name`` and/or ``header.unchanged.name``, each an optional array of
  optional strings whose schema is named after the header;
* an update whose event has both ``before`` and ``after`` lists the ``after`` row's columns, in
  order, by whether their values differ; every other event (an insert, a delete, a snapshot row, an
  update without ``before``, that is under ``REPLICA IDENTITY DEFAULT``) gets two empty lists;
* records that are not envelopes pass untouched, but the tombstone after a delete shares the
  delete's headers in Debezium (:mod:`.shared_headers`), so it carries the delete's two headers;
* with neither name set (the default), nothing is added.

Debezium compares the row's own values, in which a NULL is null even where the column has a
default (that JsonConverter writes in its place): a change from NULL to the default is a change.
sparkcdc's rows carry the default there, and :func:`.envelope.null_markers` tells such NULLs apart.
"""

from __future__ import annotations

import math
from typing import Any

from ..connect import ConnectSchema, array, string
from ..records import ChangeRecord, Header
from .base import Option, Options, PerSchema, Transform, copy_record
from .envelope import is_envelope, null_markers
from .shared_headers import DeleteHeaders

__all__ = ["ExtractChangedRecordState"]


def _list_schema(name: str) -> ConnectSchema:
    return array(string(optional=True), optional=True, name=name)


def _same(before: Any, after: Any) -> bool:
    """Java's ``Objects.equals`` on the values the JSON payloads stand for: floating-point values are
    equal when their bits are (NaN equals NaN, 0.0 differs from -0.0), everything else by value."""
    if type(before) is float and type(after) is float:
        if before != before:  # NaN
            return after != after
        return before == after and math.copysign(1.0, before) == math.copysign(1.0, after)
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(_same(a, b) for a, b in zip(before, after, strict=True))
    return bool(before == after)


class _Shape:
    """An envelope schema's ``after`` columns, and (from its first record) which of them carry a
    NULL as their default's object."""

    __slots__ = ("_markers", "columns", "row")

    def __init__(self, row: ConnectSchema) -> None:
        self.row = row
        self.columns = tuple(f.name for f in row.fields)
        self._markers: dict[str, Any] | None = None

    @staticmethod
    def of(schema: ConnectSchema | None) -> _Shape | None:
        """None for a record that is not a change event."""
        if schema is None or not is_envelope(schema):
            return None
        for field in schema.fields:
            if field.name == "after" and field.schema.type == "struct":
                return _Shape(field.schema)
        return None

    def markers(self, record: ChangeRecord) -> dict[str, Any]:
        if self._markers is None:
            self._markers = null_markers(record.table_schema, self.row)
        return self._markers


class ExtractChangedRecordState(Transform):
    """``io.debezium.transforms.ExtractChangedRecordState``: see the module's docstring."""

    OPTIONS = (
        Option("header.changed.name", None, doc="header listing the columns an update changed"),
        Option("header.unchanged.name", None, doc="header listing the columns an update left unchanged"),
    )

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self.changed_name = (options.raw("header.changed.name") or "").strip() or None
        self.unchanged_name = (options.raw("header.unchanged.name") or "").strip() or None
        self._changed_schema = None if self.changed_name is None else _list_schema(self.changed_name)
        self._unchanged_schema = None if self.unchanged_name is None else _list_schema(self.unchanged_name)
        # The headers of every event but an update with a before image: the same objects each time.
        empty: list[Header] = []
        if self.changed_name is not None:
            empty.append(Header(self.changed_name, [], self._changed_schema, constant=True))
        if self.unchanged_name is not None:
            empty.append(Header(self.unchanged_name, [], self._unchanged_schema, constant=True))
        self._empty = tuple(empty)
        self._envelopes: PerSchema[_Shape | None] = PerSchema(_Shape.of)
        self._delete_headers = DeleteHeaders()

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        if not self._empty:
            return record
        value = record.value
        if value is None:
            return self._delete_headers.tombstone(record)
        shape = self._envelopes(record.value_schema)
        if shape is None:
            self._delete_headers.forget()
            return record
        before, after = value.get("before"), value.get("after")
        if value.get("op") == "u" and before is not None and after is not None:
            markers = shape.markers(record)
            changed: list[str] = []
            unchanged: list[str] = []
            for name in shape.columns:
                old, new = before.get(name), after.get(name)
                marker = markers.get(name)
                if marker is not None and (old is marker or new is marker):
                    same = old is new  # a NULL (the default's object) equals only another NULL
                else:
                    same = _same(old, new)
                (unchanged if same else changed).append(name)
            added: list[Header] = []
            if self.changed_name is not None:
                added.append(Header(self.changed_name, changed, self._changed_schema))
            if self.unchanged_name is not None:
                added.append(Header(self.unchanged_name, unchanged, self._unchanged_schema))
            headers = tuple(added)
        else:
            headers = self._empty
        if value.get("op") == "d":
            self._delete_headers.changed_delete(record, headers)
        else:
            self._delete_headers.forget()
        return copy_record(record, headers=record.headers + headers)
