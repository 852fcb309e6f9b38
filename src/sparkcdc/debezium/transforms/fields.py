"""Kafka Connect's field transforms: ``ReplaceField``, ``InsertField``, ``MaskField`` (each ``$Key`` and
``$Value``), ``ValueToKey`` and ``ExtractField`` (``$Key``, ``$Value``), with Kafka 4.3's semantics.

Each compiles per schema: the output schema and the list of field moves are made once per input
schema object (:class:`PerSchema`), so a table's records share the new schema object and the
serializer's schema cache keeps hitting; per record only a dict is built.

What Debezium's records hold decides some behaviour (checked against Debezium 3.6.3):

* A source record has no Kafka partition (unless ``PartitionRouting`` set one), no offset and no
  timestamp: ``InsertField``'s ``partition.field`` and ``timestamp.field`` insert null,
  ``offset.field`` fails on every record ("Only SinkRecord supported"), and a required (``!``)
  field that stays null fails as JsonConverter fails on it.
* A null value (a tombstone, a delete's ``after`` once extracted) passes ``ReplaceField``,
  ``InsertField``, ``ExtractField`` and ``Cast`` unchanged, but ``MaskField`` and ``ValueToKey``
  fail on it: guard them with ``RecordIsTombstone`` (``negate=true``).
* A null that a field's default replaces is already the default in sparkcdc's records (JsonConverter
  writes the default for it), so ``replace.null.with.default`` writes the same bytes either way;
  ``MaskField`` with ``false`` is the exception (see :class:`MaskField`).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..connect import ConnectSchema, Field, int32, int64, string, struct
from ..records import ChangeRecord
from ..types.numeric import DECIMAL_NAME, encode_unscaled
from .base import Option, Options, PerSchema, Transform, TransformConfigError, copy_record
from .field_paths import FieldPath, NotAStruct, parse_field_path
from .java_numbers import double_json, float32_json, parse_big_decimal, round_to_float32, wrap
from .parts import NULL_FOR_REQUIRED, PartTransform, copy_schema_basics, java_class, null_value

__all__ = [
    "ExtractFieldKey", "ExtractFieldValue", "InsertFieldKey", "InsertFieldValue", "MaskFieldKey", "MaskFieldValue",
    "ReplaceFieldKey", "ReplaceFieldValue", "ValueToKey",
]

_NULL_DEFAULT_DOC = ("with JsonConverter output both settings write the same: sparkcdc's records already carry a "
                     "field's default where the column is null, as JsonConverter writes it")
_TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
_DATE_NAMES = frozenset({"org.apache.kafka.connect.data.Date", "org.apache.kafka.connect.data.Time", _TIMESTAMP_NAME})


def _java_trim(text: str) -> str:
    """Java's ``String.trim`` (what Connect's ``ConfigDef`` does to a string option)."""
    return text.strip("".join(chr(code) for code in range(0x21)))


def _java_split(text: str, separator: str) -> list[str]:
    """Java's ``String.split``: trailing empty strings dropped."""
    parts = text.split(separator)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


def _struct_only(purpose: str, value: Any, schema: ConnectSchema | None) -> str:
    return f"Only Struct objects supported for [{purpose}], found: {java_class(value, schema)}"


def _map_only(purpose: str, value: Any) -> str:
    return f"Only Map objects supported in absence of schema for [{purpose}], found: {java_class(value, None)}"


def _duplicate(fields: list[Field]) -> str | None:
    seen: set[str] = set()
    for field in fields:
        if field.name in seen:
            return f"Cannot create field because of field name duplication {field.name}"
        seen.add(field.name)
    return None


# -- ReplaceField ---------------------------------------------------------------------------------

class ReplaceField(PartTransform):
    """``ReplaceField``: keeps the fields ``include`` lists (all when empty) and ``exclude`` does not,
    renames ``from:to`` pairs, in the struct's field order. The new struct keeps the schema's name,
    version, doc and parameters and is required (Connect's ``copySchemaBasics``); a rename onto a
    kept name fails as Connect's schema builder does. ``blacklist``/``whitelist`` were removed in
    Kafka 4.0: Debezium 3.6 ignores them, and so they are reported, never read."""

    OPTIONS = (
        Option("exclude", "", "list", doc="fields to drop (before include)"),
        Option("include", "", "list", doc="fields to keep; all when empty"),
        Option("renames", "", "list", doc="from:to pairs"),
        Option("replace.null.with.default", "true", "bool", doc=_NULL_DEFAULT_DOC),
    )
    REMOVED = {
        "blacklist": "was removed in Kafka 4.0 and Debezium 3.6 (Kafka 4.3) ignores it, so nothing is excluded: use exclude",
        "whitelist": "was removed in Kafka 4.0 and Debezium 3.6 (Kafka 4.3) ignores it, so nothing is filtered: use include",
    }
    PURPOSE = "field replacement"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._exclude = frozenset(options.list("exclude"))
        self._include = frozenset(options.list("include"))
        self._renames: dict[str, str] = {}
        for item in options.list("renames"):
            parts = _java_split(item, ":")
            if len(parts) != 2:
                raise options.error("renames", f"Invalid rename mapping: {item} (a list of from:to pairs)")
            self._renames[parts[0]] = parts[1]
        self._plans: PerSchema[tuple[ConnectSchema, tuple[tuple[str, str], ...], str | None]] = PerSchema(self._plan)

    def _keeps(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def _plan(self, schema: ConnectSchema | None) -> tuple[ConnectSchema, tuple[tuple[str, str], ...], str | None]:
        assert schema is not None
        moves = tuple((f.name, self._renames.get(f.name, f.name)) for f in schema.fields if self._keeps(f.name))
        fields = [Field(new, schema.field(old).schema) for old, new in moves]
        return copy_schema_basics(schema, tuple(fields)), moves, _duplicate(fields)

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = self.part(record)
        if value is None:
            return record
        if schema is None:
            if not isinstance(value, dict):
                raise self.fail(record, _map_only(self.PURPOSE, value))
            return self.with_part(record, {self._renames.get(k, k): v for k, v in value.items() if self._keeps(k)}, None)
        if schema.type != "struct" or not isinstance(value, dict):
            raise self.fail(record, _struct_only(self.PURPOSE, value, schema))
        new_schema, moves, error = self._plans(schema)
        if error is not None:
            raise self.fail(record, error)
        return self.with_part(record, {new: value.get(old) for old, new in moves}, new_schema)


class ReplaceFieldKey(ReplaceField):
    PART = "key"


class ReplaceFieldValue(ReplaceField):
    PART = "value"


# -- InsertField ----------------------------------------------------------------------------------

_INSERTIONS = (  # option, what it inserts, the field's schema
    ("topic.field", "topic", string()),
    ("partition.field", "partition", int32()),
    ("offset.field", "offset", int64()),
    ("timestamp.field", "timestamp", int64(name=_TIMESTAMP_NAME, version=1)),
    ("static.field", "static", string()),
)


class InsertField(PartTransform):
    """``InsertField``: appends the record's topic, partition, offset, timestamp and a static string
    as fields (in that order), optional unless the name ends with ``!`` (``?`` or nothing: optional)."""

    OPTIONS = (
        Option("topic.field", doc="field for the record's topic"),
        Option("partition.field", doc="field for the Kafka partition: null unless PartitionRouting chose one"),
        Option("offset.field", doc="field for the Kafka offset: sink records only, so every record fails"),
        Option("timestamp.field", doc="field for the record timestamp: Debezium's records carry none (null)"),
        Option("static.field", doc="field for static.value"),
        Option("static.value", doc="the static field's value"),
        Option("replace.null.with.default", "true", "bool", doc=_NULL_DEFAULT_DOC),
    )
    PURPOSE = "field insertion"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        insertions: list[tuple[str, str, ConnectSchema]] = []
        for option, what, schema in _INSERTIONS:
            raw = options.raw(option)
            if raw is None or not _java_trim(raw):
                continue
            spec = _java_trim(raw)
            optional = not spec.endswith("!")
            name = spec[:-1] if spec[-1] in "!?" else spec
            if not name:
                raise options.error(option, f"{raw!r} names no field (a name, optionally ending with ! or ?)")
            insertions.append((name, what, schema.as_optional(optional)))
        if not insertions:
            raise TransformConfigError("No field insertion configured: set at least one of "
                                       + ", ".join(option for option, _, _ in _INSERTIONS), prop=options.prefix + "topic.field")
        static = options.raw("static.value")
        self._static = None if static is None else _java_trim(static)
        if any(what == "static" for _, what, _ in insertions) and self._static is None:
            raise options.error("static.value", "No value specified for static field (static.field is set)")
        if any(what == "offset" for _, what, _ in insertions):
            options.warn("offset.field", "Kafka offsets exist on sink records only: every record with a value fails, "
                                         "as on Kafka Connect (Only SinkRecord supported)")
        self._insertions = tuple(insertions)
        self._plans: PerSchema[tuple[ConnectSchema, str | None]] = PerSchema(self._plan)

    def _plan(self, schema: ConnectSchema | None) -> tuple[ConnectSchema, str | None]:
        assert schema is not None
        fields = list(schema.fields) + [Field(name, field_schema) for name, _, field_schema in self._insertions]
        return copy_schema_basics(schema, tuple(fields)), _duplicate(fields)

    def _inserted(self, record: ChangeRecord, what: str) -> Any:
        if what == "topic":
            return record.topic
        if what == "partition":
            return record.partition
        if what == "static":
            return self._static
        if what == "offset":
            raise self.fail(record, "Only SinkRecord supported for [field insertion], found: "
                                    "org.apache.kafka.connect.source.SourceRecord (Kafka offsets exist on sink records only)")
        return None  # the timestamp: Debezium's source records carry none

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = self.part(record)
        if value is None:
            return record
        if schema is None:
            if not isinstance(value, dict):
                raise self.fail(record, _map_only(self.PURPOSE, value))
            out = dict(value)
            for name, what, _ in self._insertions:
                out[name] = self._inserted(record, what)
            return self.with_part(record, out, None)
        if schema.type != "struct" or not isinstance(value, dict):
            raise self.fail(record, _struct_only(self.PURPOSE, value, schema))
        new_schema, error = self._plans(schema)
        if error is not None:
            raise self.fail(record, error)
        out = dict(value)
        for name, what, field_schema in self._insertions:
            inserted = self._inserted(record, what)
            if inserted is None and not field_schema.optional:
                raise self.fail(record, f"{NULL_FOR_REQUIRED} ({name}: the record has no {what})")
            out[name] = inserted
        return self.with_part(record, out, new_schema)


class InsertFieldKey(InsertField):
    PART = "key"


class InsertFieldValue(InsertField):
    PART = "value"


# -- MaskField ------------------------------------------------------------------------------------

class _MaskError(Exception):
    pass


Masker = Callable[[Any], Any]


def _constant(masked: Any) -> Masker:
    return lambda _value: masked


def _failing(message: str) -> Masker:
    def fail(_value: Any) -> Any:
        raise _MaskError(message)

    return fail


def _number_masker(schema: ConnectSchema, replacement: tuple[int, int] | str | None) -> Masker:
    """A number's mask: zero, or the replacement read as Java's ``new BigDecimal`` and narrowed as
    ``BigDecimal.byteValue()``... ``doubleValue()`` narrow it (integers wrap, floats round)."""
    if isinstance(replacement, str):
        return _failing(f"Unable to convert {replacement} (class java.lang.String) to a number")
    if replacement is None:
        return _constant(0.0 if schema.type in ("float", "double") else 0)
    unscaled, scale = replacement
    exact = Fraction(unscaled) / Fraction(10) ** scale if scale >= 0 else Fraction(unscaled * 10 ** -scale)
    if schema.type == "float":
        return _constant(float32_json(round_to_float32(exact)))
    if schema.type == "double":
        try:
            return _constant(double_json(float(exact)))
        except OverflowError:
            return _constant("Infinity" if exact > 0 else "-Infinity")
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[schema.type]
    whole = abs(exact.numerator) // exact.denominator
    return _constant(wrap(-whole if exact < 0 else whole, bits))


def _decimal_masker(schema: ConnectSchema, replacement: tuple[int, int] | str | None) -> Masker:
    """A Decimal's mask (``BigDecimal.ZERO`` or the replacement): JsonConverter writes it only when
    its scale is the schema's."""
    if isinstance(replacement, str):
        return _failing(f"Unable to convert {replacement} (class java.lang.String) to a number")
    unscaled, scale = (0, 0) if replacement is None else replacement
    schema_scale = int(dict(schema.parameters or ()).get("scale", "0"))
    if scale != schema_scale:
        return _failing(f"Decimal value has mismatching scale for given Decimal schema. Schema has scale {schema_scale}, "
                        f"value has scale {scale}.")
    return _constant(encode_unscaled(unscaled))


def _masker(schema: ConnectSchema, replacement: str | None) -> Masker:
    """How a non-null value of ``schema`` is masked, as ``MaskField`` masks the Java value Connect
    holds for it."""
    java = java_class("x", schema)
    if schema.name in _DATE_NAMES:
        return _constant(0) if replacement is None else _failing(f"Cannot mask value of type class {java} with custom replacement.")
    if schema.type == "bytes" and schema.name == DECIMAL_NAME:
        return _decimal_masker(schema, None if replacement is None else parse_big_decimal(replacement) or replacement)
    if schema.type in ("int8", "int16", "int32", "int64", "float", "double"):
        return _number_masker(schema, None if replacement is None else parse_big_decimal(replacement) or replacement)
    if schema.type == "string":
        return _constant("" if replacement is None else replacement)
    if replacement is not None:
        return _failing(f"Cannot mask value of type class {java} with custom replacement.")
    if schema.type == "boolean":
        return _constant(False)
    if schema.type == "array":
        return lambda _value: []
    if schema.type == "map":
        return lambda _value: {}
    return _failing(f"Cannot mask value of type: class {java}")


def _schemaless_mask(value: Any, replacement: str | None) -> Any:
    """A schemaless value's mask, by the Java type JsonConverter reads it as (long, double, string...)."""
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int):
        kind = "int64"
    elif isinstance(value, float):
        kind = "double"
    elif isinstance(value, str):
        kind = "string"
    elif isinstance(value, list):
        kind = "array"
    elif isinstance(value, dict):
        kind = "map"
    else:
        kind = "bytes"
    return _masker(ConnectSchema(kind), replacement)(value)


class MaskField(PartTransform):
    """``MaskField``: the listed fields' values replaced by their type's empty value (0, 0.0, false,
    "", empty list or map, the epoch for dates) or by ``replacement`` (numbers and strings only);
    null values stay null, fields the struct does not have are ignored, the schema is kept.

    A Decimal is masked with ``BigDecimal.ZERO`` (or the replacement's scale), which JsonConverter
    refuses unless the schema's scale is the same; bytes and structs cannot be masked. With
    ``replace.null.with.default=false`` Kafka leaves a null field's default unmasked (JsonConverter
    writes the default), while sparkcdc's record holds the default itself and masks it (warned)."""

    OPTIONS = (
        Option("fields", kind="list", required=True, doc="the fields to mask"),
        Option("replacement", doc="the value numbers and strings are masked with (numeric or non-empty text)"),
        Option("replace.null.with.default", "true", "bool"),
    )
    PURPOSE = "mask fields"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._fields = frozenset(options.list("fields"))
        raw = options.raw_given.get("replacement")
        if raw is not None and not _java_trim(raw):
            raise options.error("replacement", "String must be non-empty")
        self._replacement = None if raw is None else _java_trim(raw)
        if not options.bool("replace.null.with.default"):
            options.warn("replace.null.with.default", "false: a null column that has a default is masked like its default "
                                                      "(sparkcdc's records carry the default in its place; Kafka leaves "
                                                      "the default unmasked)")
        self._plans: PerSchema[tuple[tuple[str, Masker | None], ...]] = PerSchema(self._plan)

    def _plan(self, schema: ConnectSchema | None) -> tuple[tuple[str, Masker | None], ...]:
        assert schema is not None
        return tuple((f.name, _masker(f.schema, self._replacement) if f.name in self._fields else None) for f in schema.fields)

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = self.part(record)
        try:
            if schema is None:
                if not isinstance(value, dict):
                    raise self.fail(record, _map_only(self.PURPOSE, value))
                return self.with_part(record, {k: v if k not in self._fields or v is None else _schemaless_mask(v, self._replacement)
                                               for k, v in value.items()}, None)
            if schema.type != "struct" or not isinstance(value, dict):
                raise self.fail(record, _struct_only(self.PURPOSE, value, schema))
            out = {}
            for name, mask in self._plans(schema):
                field_value = value.get(name)
                out[name] = field_value if mask is None or field_value is None else mask(field_value)
        except _MaskError as exc:
            raise self.fail(record, str(exc)) from None
        return self.with_part(record, out, schema)


class MaskFieldKey(MaskField):
    PART = "key"


class MaskFieldValue(MaskField):
    PART = "value"


# -- ValueToKey -----------------------------------------------------------------------------------

class ValueToKey(Transform):
    """``ValueToKey``: the key becomes a struct of the value's listed fields, in the listed order
    (an unnamed, required struct; each field keeps its schema). A null value fails."""

    OPTIONS = (
        Option("fields", kind="list", required=True, doc="the value's fields that make the key"),
        Option("replace.null.with.default", "true", "bool", doc=_NULL_DEFAULT_DOC),
    )
    PURPOSE = "copying fields from value to key"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._fields = tuple(dict.fromkeys(options.list("fields")))
        self._plans: PerSchema[tuple[ConnectSchema | None, str | None]] = PerSchema(self._plan)

    def _plan(self, schema: ConnectSchema | None) -> tuple[ConnectSchema | None, str | None]:
        assert schema is not None
        fields = []
        for name in self._fields:
            found = next((f for f in schema.fields if f.name == name), None)
            if found is None:
                return None, f"Field does not exist: {name}"
            fields.append(found)
        return struct(fields), None

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = record.value, record.value_schema
        if schema is None:
            if not isinstance(value, dict):
                raise self.fail(record, _map_only(self.PURPOSE, value))
            return copy_record(record, key={name: value.get(name) for name in self._fields}, key_schema=None)
        if schema.type != "struct" or not isinstance(value, dict):
            raise self.fail(record, _struct_only(self.PURPOSE, value, schema))
        key_schema, error = self._plans(schema)
        if error is not None:
            raise self.fail(record, error)
        return copy_record(record, key={name: value.get(name) for name in self._fields}, key_schema=key_schema)


# -- ExtractField ---------------------------------------------------------------------------------

class ExtractField(PartTransform):
    """``ExtractField``: the part becomes one of its fields (with that field's schema). V1 names a
    top-level field; V2 a nested one (``after.name``, backticks around a name with dots). A null
    along the way gives null, written as JsonConverter writes it (the field's default, if any)."""

    OPTIONS = (
        Option("field", required=True, doc="the field to extract"),
        Option("field.syntax.version", "V1", "enum", choices=("v1", "v2"), doc="V1: top-level field; V2: dotted path"),
        Option("replace.null.with.default", "true", "bool", doc=_NULL_DEFAULT_DOC),
    )
    PURPOSE = "field extraction"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._path: FieldPath = parse_field_path(options.prefix + "field", _java_trim(options.text("field")),
                                                 options.enum("field.syntax.version"))
        self._plans: PerSchema[tuple[ConnectSchema | None, str | None]] = PerSchema(self._plan)

    def _plan(self, schema: ConnectSchema | None) -> tuple[ConnectSchema | None, str | None]:
        assert schema is not None
        try:
            found = self._path.schema_in(schema)
        except NotAStruct as exc:
            return None, str(exc)
        return (found, None) if found is not None else (None, f"Unknown field: {self._path.text}")

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = self.part(record)
        if schema is None:
            if value is None:
                return record
            if not isinstance(value, dict):
                raise self.fail(record, _map_only(self.PURPOSE, value))
            return self.with_part(record, self._path.value_in(value), None)
        if value is not None and (schema.type != "struct" or not isinstance(value, dict)):
            raise self.fail(record, _struct_only(self.PURPOSE, value, schema))
        field_schema, error = self._plans(schema)
        if field_schema is None:
            raise self.fail(record, error or "")
        extracted = None if value is None else self._path.value_in(value)
        if extracted is None:
            try:
                extracted = null_value(field_schema)
            except ValueError as exc:
                raise self.fail(record, str(exc)) from None
        return self.with_part(record, extracted, field_schema)


class ExtractFieldKey(ExtractField):
    PART = "key"


class ExtractFieldValue(ExtractField):
    PART = "value"
