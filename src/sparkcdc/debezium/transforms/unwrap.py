"""Debezium's ``ExtractNewRecordState`` (``transforms.<alias>.type=io.debezium.transforms.ExtractNewRecordState``):
change events flattened to the row they leave behind.

What it does, as Debezium 3.6.3 does it (each point checked against it, tests/conformance/
test_transforms_debezium_conformance.py):

* An envelope's ``c``/``u``/``r`` event becomes its ``after`` row, with the row's schema made
  required; a truncate (``t``) is dropped; records that are not envelopes (heartbeats, transaction
  metadata, logical decoding messages, notifications, schema change records) pass untouched.
* A delete, by ``delete.tombstone.handling.mode``: ``tombstone`` (the default) makes it a record
  whose value is null but whose schema is the row's (JsonConverter writes ``{"schema": <row>,
  "payload": null}``) and drops the connector's own tombstone; ``drop`` drops both;
  ``delete-to-tombstone`` makes it a true tombstone (null value, null schema) and drops the
  connector's; ``rewrite`` makes it its ``before`` row with ``__deleted: "true"`` (every other row
  then carries ``__deleted: "false"``) and drops the tombstone; ``rewrite-with-tombstone`` does the
  same and keeps the tombstone.
* ``add.fields`` appends envelope fields to the row (``op``, ``ts_ms``, ``source.ts_ms``, ``table``,
  ``transaction.id``, ``before.<column>``, ``x:newname``), named ``add.fields.prefix`` + name, each
  with its original schema made optional; fields the envelope does not have are skipped.
  ``add.headers`` does the same as headers; a kept tombstone gets the ``op`` header, ``"d"``, after
  the headers added to its delete (which Debezium's tombstone shares, see :mod:`.shared_headers`).
* ``route.by.field`` sends the record to the topic named by a string column of the row (``before``
  for a delete); a null column keeps the topic.
* ``drop.fields.header.name`` names a header (such as ``ExtractChangedRecordState``'s
  ``header.unchanged.name``) listing columns to leave out of the row (only optional ones while
  ``drop.fields.keep.schema.compatible`` is true), and of the key with ``drop.fields.from.key``.
* ``replace.null.with.default`` (Debezium: replace a null column with its default) changes no byte
  of sparkcdc's JSON, nor of Debezium's: JsonConverter writes a null column that has a default as
  the default either way, and sparkcdc's rows carry it already.

Compiled per envelope schema (:class:`_Plan`): per record only the row dict is picked (and, when
fields are added, one dict built).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..connect import ConnectSchema, string, struct
from ..records import ChangeRecord, Header
from .base import Option, Options, PerSchema, Transform
from .envelope import FieldRef, field_schema, is_envelope, null_markers, optional_copy, parse_field_refs
from .shared_headers import DeleteHeaders

__all__ = ["ExtractNewRecordState"]

_MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_REWRITE = frozenset({"rewrite", "rewrite-with-tombstone"})
_DELETED_FIELD = "__deleted"
_REMOVED_HINT = ("Debezium 3.6 no longer reads it (it was removed in 3.0), so it has no effect there and none here; "
                 "use delete.tombstone.handling.mode ({modes}): delete.handling.mode=rewrite with drop.tombstones=false "
                 "is rewrite-with-tombstone, rewrite alone is rewrite, drop is drop, none with drop.tombstones=false "
                 "is tombstone")

Getter = Callable[[dict[str, Any]], Any]


def _getter(block: str | None, field: str, plan: _Plan) -> Getter:
    if block is None:
        return lambda value: value[field]
    if (block, field) == ("source", "snapshot"):
        # A streamed event's source block has no snapshot value: JsonConverter writes the field's
        # default, "false" (as sparkcdc's source block carries it), but a field that copies it has
        # no default, and Debezium's copy is null.
        return lambda value: None if (snapshot := value["source"]["snapshot"]) == "false" else snapshot
    if block in ("before", "after"):

        def column(value: dict[str, Any]) -> Any:
            row = value[block]
            if row is None:
                return None
            found = row.get(field)
            # A NULL in a column with a default: the row carries the default, Debezium's copy is null.
            return None if found is not None and found is plan.markers.get(field) else found

        return column

    def get(value: dict[str, Any]) -> Any:
        part = value[block]
        return None if part is None else part.get(field)

    return get


def _record(record: ChangeRecord, topic: str, key: Any, key_schema: ConnectSchema | None, value: Any,
            value_schema: ConnectSchema | None, headers: tuple[Header, ...]) -> ChangeRecord:
    """``copy_record`` written out: this runs once per event."""
    new = ChangeRecord(topic, key, key_schema, value, value_schema, headers, record.op, record.schema, record.table,
                       record.lsn, record.commit_lsn, record.ordinal, record.tx_id, record.source_ts_us, record.snapshot,
                       record.table_schema)
    new.partition = record.partition
    return new


class _Plan:
    """What one envelope schema makes of a record, decided once."""

    __slots__ = ("added", "deleted_schema", "error", "extended", "header_specs", "markers", "markers_read", "route", "route_error", "row",
                 "row_schema")

    def __init__(self, transform: ExtractNewRecordState, envelope: ConnectSchema, row: ConnectSchema) -> None:
        #: the row's schema, required: the value schema of a c/u/r event's row
        self.row_schema = row.as_optional(False)
        #: the envelope's (optional) row schema: the value schema of a delete in ``tombstone`` mode
        self.deleted_schema = field_schema(envelope, "before") or row
        self.row = row
        #: columns whose NULL the row carries as the default's object (:func:`.envelope.null_markers`),
        #: read from the first record that needs them
        self.markers: dict[str, Any] = {}
        self.markers_read = False
        self.added: tuple[tuple[str, Getter], ...] = ()
        self.error: str | None = None
        added_fields: list[tuple[str, ConnectSchema]] = []
        if transform.mode in _REWRITE:
            added_fields.append((_DELETED_FIELD, string(optional=True)))
        getters: list[tuple[str, Getter]] = []
        for ref in transform.field_refs:
            found = ref.resolve(envelope)
            if found is not None:
                added_fields.append((ref.name, optional_copy(found[1])))
                getters.append((ref.name, _getter(found[0], ref.field, self)))
        self.added = tuple(getters)
        names = [f.name for f in row.fields] + [name for name, _ in added_fields]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            self.error = (f"the flattened row would have the field(s) {', '.join(duplicates)} twice (a column and an added "
                          "field, or two added fields); change add.fields or add.fields.prefix")
        #: the row schema with ``__deleted`` and the added fields, when there are any
        self.extended = self._extend(self.row_schema, added_fields) if added_fields and self.error is None else None
        self.header_specs: tuple[tuple[str, ConnectSchema, Getter], ...] = tuple(
            (ref.name, optional_copy(found[1]), _getter(found[0], ref.field, self))
            for ref in transform.header_refs if (found := ref.resolve(envelope)) is not None
        )
        self.route: str | None = None
        self.route_error: str | None = None
        if transform.route_field:
            column = field_schema(row, transform.route_field)
            if column is None:
                self.route_error = f"route.by.field: {transform.route_field} is not a valid field name"
            elif column.type != "string":
                self.route_error = f"route.by.field: Field '{transform.route_field}' is not of type STRING"
            self.route = transform.route_field

    @staticmethod
    def _extend(row: ConnectSchema, added: list[tuple[str, ConnectSchema]]) -> ConnectSchema:
        return struct([*row.fields, *added], name=row.name, version=row.version, doc=row.doc)


class ExtractNewRecordState(Transform):
    """``io.debezium.transforms.ExtractNewRecordState``: see the module's docstring."""

    OPTIONS = (
        Option("delete.tombstone.handling.mode", "tombstone", "enum", _MODES,
               doc="what becomes of deletes and of the connector's tombstones"),
        Option("route.by.field", "", doc="a string column of the row naming the record's topic"),
        Option("add.fields.prefix", "__", doc="prefix of the added fields' names"),
        Option("add.fields", "", "list", doc="envelope fields appended to the row"),
        Option("add.headers.prefix", "__", doc="prefix of the added headers' names"),
        Option("add.headers", "", "list", doc="envelope fields added as headers"),
        Option("drop.fields.header.name", None, doc="header listing the columns to leave out"),
        Option("drop.fields.from.key", "false", "bool", doc="leave those columns out of the key too"),
        Option("drop.fields.keep.schema.compatible", "true", "bool", doc="leave out optional columns only"),
        Option("replace.null.with.default", "true", "bool", doc="no effect on the JSON (JsonConverter writes the default)"),
    )
    REMOVED = {
        "drop.tombstones": _REMOVED_HINT.format(modes=", ".join(_MODES)),
        "delete.handling.mode": _REMOVED_HINT.format(modes=", ".join(_MODES)),
    }

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self.mode = options.enum("delete.tombstone.handling.mode")
        self.route_field = options.text("route.by.field").strip()
        # An empty prefix is a prefix (Connect passes ""), not "use the default".
        fields_prefix = options.raw_given.get("add.fields.prefix", options.text("add.fields.prefix"))
        headers_prefix = options.raw_given.get("add.headers.prefix", options.text("add.headers.prefix"))
        self.field_refs: tuple[FieldRef, ...] = parse_field_refs(
            options.list("add.fields"), fields_prefix, lambda message: options.error("add.fields", message))
        self.header_refs: tuple[FieldRef, ...] = parse_field_refs(
            options.list("add.headers"), headers_prefix, lambda message: options.error("add.headers", message))
        names = [ref.name for ref in self.field_refs]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise options.error("add.fields", f"adds the field(s) {', '.join(twice)} twice (Debezium fails on every record)")
        self.drop_header = (options.raw("drop.fields.header.name") or "").strip() or None
        self.drop_from_key = options.bool("drop.fields.from.key")
        self.keep_compatible = options.bool("drop.fields.keep.schema.compatible")
        self.replace_null_with_default = options.bool("replace.null.with.default")
        #: the op header a kept tombstone gets (``add.headers`` naming ``op``)
        self._tombstone_header = next((Header(ref.name, "d", string(), constant=True) for ref in self.header_refs
                                       if ref.block is None and ref.field == "op"), None)
        self._plans: PerSchema[_Plan | None] = PerSchema(self._plan)
        self._last_schema: ConnectSchema | None = None
        self._last_plan: _Plan | None = None
        self._dropped: dict[tuple[int, frozenset[str]], tuple[ConnectSchema, ConnectSchema, frozenset[str]]] = {}
        self._delete_headers = DeleteHeaders()
        self._simple = (self.mode == "tombstone" and not self.field_refs and not self.header_refs and not self.route_field
                        and self.drop_header is None)

    def _plan(self, schema: ConnectSchema | None) -> _Plan | None:
        """None for a record that is not a change event (its schema no envelope with a row struct)."""
        if schema is None or not is_envelope(schema):
            return None
        row = field_schema(schema, "after") or field_schema(schema, "before")
        return _Plan(self, schema, row) if row is not None and row.type == "struct" else None

    # -- per record --------------------------------------------------------------------------------
    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value = record.value
        if value is None:
            return self._tombstone(record)
        schema = record.value_schema
        if schema is self._last_schema:
            plan = self._last_plan
        else:
            plan = self._plans(schema)
            self._last_schema, self._last_plan = schema, plan
        if plan is None:
            return record  # not a change event: heartbeats, transaction metadata, messages, ...
        op = value["op"]
        if self._simple and op != "d" and op != "t":
            return _record(record, record.topic, record.key, record.key_schema, value["after"], plan.row_schema, record.headers)
        if op == "t":
            return None
        return self._general(record, value, plan, op == "d")

    def _tombstone(self, record: ChangeRecord) -> ChangeRecord | None:
        """The connector's tombstone after a delete: kept only by ``rewrite-with-tombstone``."""
        if self.mode != "rewrite-with-tombstone":
            return None
        record = self._delete_headers.tombstone(record)
        if self._tombstone_header is None:
            return record
        return _record(record, record.topic, record.key, record.key_schema, None, record.value_schema,
                       record.headers + (self._tombstone_header,))

    def _general(self, record: ChangeRecord, value: dict[str, Any], plan: _Plan, deleted: bool) -> ChangeRecord | None:
        mode = self.mode
        if deleted and mode == "drop":
            return None
        if not plan.markers_read:
            plan.markers, plan.markers_read = null_markers(record.table_schema, plan.row), True
        row = value["before"] if deleted else value["after"]
        topic = record.topic
        if plan.route is not None:
            if plan.route_error is not None:
                raise self.fail(record, plan.route_error)
            routed = None if row is None else row.get(plan.route)
            if routed is not None:
                topic = routed
        headers = record.headers
        if plan.header_specs:
            added = tuple(Header(name, get(value), schema) for name, schema, get in plan.header_specs)
            headers = headers + added
            if deleted:
                self._delete_headers.changed_delete(record, added)
            else:
                self._delete_headers.forget()
        if deleted and mode == "tombstone":
            return _record(record, topic, record.key, record.key_schema, None, plan.deleted_schema, headers)
        if deleted and mode == "delete-to-tombstone":
            return _record(record, topic, record.key, record.key_schema, None, None, headers)
        key, key_schema = record.key, record.key_schema
        row_schema = plan.row_schema
        extended = plan.extended
        if self.drop_header is not None:
            drop = self._drop_list(record)
            if drop:
                row, row_schema, extended = self._drop_from_row(plan, row, drop)
                if self.drop_from_key and key_schema is not None and key is not None:
                    key, key_schema = self._drop_from_key(key, key_schema, drop)
        if plan.error is not None:
            raise self.fail(record, plan.error)
        if extended is not None:
            out = dict(row) if row is not None else {}
            if mode in _REWRITE:
                out[_DELETED_FIELD] = "true" if deleted else "false"
            for name, get in plan.added:
                out[name] = get(value)
            return _record(record, topic, key, key_schema, out, extended, headers)
        return _record(record, topic, key, key_schema, row, row_schema, headers)

    # -- drop.fields.header.name -------------------------------------------------------------------
    def _drop_list(self, record: ChangeRecord) -> frozenset[str]:
        for header in reversed(record.headers):
            if header.name == self.drop_header:
                names = header.value
                if names is None:
                    return frozenset()
                if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
                    raise self.fail(record, f"drop.fields.header.name: header {self.drop_header!r} is not a list of field names "
                                            f"({names!r:.100})")
                return frozenset(names)
        return frozenset()

    def _dropped_schema(self, schema: ConnectSchema, drop: frozenset[str]) -> tuple[ConnectSchema, frozenset[str]]:
        """``schema`` without the fields of ``drop`` it may lose (optional ones only while the
        schema is kept compatible), and the names it lost."""
        cache_key = (id(schema), drop)
        cached = self._dropped.get(cache_key)
        if cached is not None and cached[0] is schema:
            return cached[1], cached[2]
        gone = frozenset(f.name for f in schema.fields if f.name in drop and (f.schema.optional or not self.keep_compatible))
        kept = struct([f for f in schema.fields if f.name not in gone], optional=schema.optional, name=schema.name,
                      version=schema.version, doc=schema.doc)
        if len(self._dropped) > 4096:
            self._dropped.clear()
        self._dropped[cache_key] = (schema, kept, gone)
        return kept, gone

    def _drop_from_row(self, plan: _Plan, row: dict[str, Any] | None, drop: frozenset[str]
                       ) -> tuple[dict[str, Any] | None, ConnectSchema, ConnectSchema | None]:
        row_schema, gone = self._dropped_schema(plan.row_schema, drop)
        extended = None
        if plan.extended is not None:
            extended, _ = self._dropped_schema(plan.extended, gone)
        if row is not None and gone:
            row = {name: column for name, column in row.items() if name not in gone}
        return row, row_schema, extended

    def _drop_from_key(self, key: dict[str, Any], key_schema: ConnectSchema, drop: frozenset[str]
                       ) -> tuple[dict[str, Any], ConnectSchema]:
        kept, gone = self._dropped_schema(key_schema, drop)
        return {name: column for name, column in key.items() if name not in gone}, kept
