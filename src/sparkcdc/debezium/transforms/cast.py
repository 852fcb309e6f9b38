"""Kafka Connect's ``Cast$Key``/``Cast$Value``: fields of a struct, or a whole primitive value, cast to
int8...float64, boolean or string, with Java's conversions (checked against Kafka 4.3's Cast).

What Java does that Python would not: integers narrow by wrapping (``(byte) 300`` is 44); floats and
decimals narrow through ``Number.xValue()`` (truncated, saturated to int or long, then wrapped);
a number is true when its ``longValue()`` is not 0 (so 0.5 is false); a string becomes a number
through ``Integer.parseInt``/``Float.parseFloat`` (``" 7"`` is a float but not an int) and a boolean
through ``Boolean.parseBoolean``; a number becomes a string through Java's ``toString`` (``1.0E7``);
bytes only become strings (base64).

Logical types: a field of Connect's Decimal, Date, Time or Timestamp is cast from the number it
stands for (``BigDecimal``; days, milliseconds of the day, milliseconds) and to a string as Java
prints it (``BigDecimal.toString``: ``1E-8``; a date or time in the pattern Connect picks by the
instant, not the schema: ``2020-01-02`` at a midnight, ``2020-01-02T03:04:05.123Z`` otherwise,
``01:02:03.004Z`` for anything before the end of 1970-01-01, dates before 1970 included). A cast field's schema is a plain one (type, optional, the
default cast), so the logical name goes. A whole-value cast keeps the schema's name, version, doc
and parameters: on a Decimal, Date, Time or Timestamp value that makes JsonConverter refuse the
result, and the record fails here as it fails there; Debezium's own names (``io.debezium.time.Date``)
are kept and written.
"""

from __future__ import annotations

import base64
import math
from dataclasses import replace
from fractions import Fraction
from typing import Any, Final

from ...errors import PipelineError
from ..connect import NO_DEFAULT, ConnectSchema, Field
from ..records import ChangeRecord
from ..types.numeric import DECIMAL_NAME
from .base import Option, Options, PerSchema, TransformConfigError
from .java_dates import compile_date_pattern
from .java_numbers import (
    big_decimal_text,
    double_json,
    float32_json,
    float32_of_json,
    float_of_json,
    java_double_text,
    java_float_text,
    narrow_float,
    parse_java_double,
    parse_java_float,
    parse_java_integer,
    round_to_float32,
    wrap,
)
from .parts import PartTransform, java_class, null_value

__all__ = ["CastKey", "CastValue"]

#: Target type names (as the spec spells them) -> JsonConverter's type names.
_TARGETS: Final = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "float32": "float",
                   "float64": "double", "boolean": "boolean", "string": "string"}
_SUPPORTED_OUT = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"
_SUPPORTED_IN = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"
_CONNECT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array", "map",
                  "struct")
_BITS: Final = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}

_DATE = "org.apache.kafka.connect.data.Date"
_TIME = "org.apache.kafka.connect.data.Time"
_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
_MS_PER_DAY: Final = 86_400_000
_LOGICAL_DATES = frozenset({_DATE, _TIME, _TIMESTAMP})
_TIME_TEXT = compile_date_pattern("HH:mm:ss.SSS'Z'")
_DATE_TEXT = compile_date_pattern("yyyy-MM-dd")
_TIMESTAMP_TEXT = compile_date_pattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")


def _date_text(ms: int) -> str:
    """Connect's ``Values.dateFormatFor``: the pattern follows the instant, not the schema. Before
    the end of 1970-01-01 (every date before 1970 too) it is a time, at a midnight a date, else a
    timestamp; in UTC."""
    if ms < _MS_PER_DAY:
        return _TIME_TEXT(ms)
    if ms % _MS_PER_DAY == 0:
        return _DATE_TEXT(ms)
    return _TIMESTAMP_TEXT(ms)
_LOGICAL_CLASSES: Final = {DECIMAL_NAME: ("Decimal", "BigDecimal"), _DATE: ("Date", "Date"), _TIME: ("Time", "Date"),
                           _TIMESTAMP: ("Timestamp", "Date")}
_OUT_CLASSES: Final = {"int8": "Byte", "int16": "Short", "int32": "Integer", "int64": "Long", "float": "Float",
                       "double": "Double", "boolean": "Boolean", "string": "String"}


class CastError(PipelineError):
    """A value Cast cannot cast (Connect's ``DataException``; the transform names the record)."""


# -- reading a JSON-ready value as the Java value Connect holds ----------------------------------

def _decimal(payload: str, schema: ConnectSchema) -> tuple[int, int]:
    raw = base64.b64decode(payload)
    scale = int(dict(schema.parameters or ()).get("scale", "0"))
    return int.from_bytes(raw, "big", signed=True), scale


def _java_value(payload: Any, schema: ConnectSchema | None) -> tuple[str, Any]:
    """(kind, Java-like value) of a payload: kinds ``int`` (int), ``float32``/``float64`` (float),
    ``decimal`` ((unscaled, scale)), ``date`` ((logical name, epoch ms)), ``boolean``, ``string``, ``bytes``
    (the base64 text). Schemaless values are read as JsonConverter reads them (longs, doubles)."""
    kind = schema.type if schema is not None else _schemaless_kind(payload)
    if schema is not None and schema.name in _LOGICAL_DATES:
        ms = payload * _MS_PER_DAY if schema.name == _DATE else payload
        return "date", (schema.name, int(payload), ms)
    if schema is not None and schema.name == DECIMAL_NAME and kind == "bytes":
        return "decimal", _decimal(payload, schema)
    if kind in _BITS:
        return "int", int(payload)
    if kind == "float":
        return "float32", float32_of_json(payload)
    if kind == "double":
        return "float64", float_of_json(payload)
    if kind in ("boolean", "string", "bytes"):
        return kind, payload
    raise _unsupported_input(kind)


def _unsupported_input(kind: str) -> CastError:
    type_name = {"struct": "STRUCT", "array": "ARRAY", "map": "MAP"}.get(kind, kind.upper())
    return CastError(f"Cast transformation does not support casting from {type_name}; supported types are {_SUPPORTED_IN}")


def _schemaless_kind(payload: Any) -> str:
    if isinstance(payload, bool):
        return "boolean"
    if isinstance(payload, int):
        return "int64"
    if isinstance(payload, float):
        return "double"
    if isinstance(payload, str):
        return "string"
    if isinstance(payload, dict):
        return "map"
    return "array"


def _out_of_range(text: str) -> CastError:
    return CastError(f"Value ({text}) was out of range for requested data type")


def _exact(kind: str, value: Any) -> Fraction | float:
    """A number's exact value (a float for non-finite ones)."""
    if kind == "decimal":
        unscaled, scale = value
        return Fraction(unscaled, 10**scale) if scale >= 0 else Fraction(unscaled * 10**-scale)
    if kind == "date":
        return Fraction(value[1])
    if kind in ("float32", "float64"):
        return value if not math.isfinite(value) else Fraction(value)
    return Fraction(int(value))


# -- the casts -----------------------------------------------------------------------------------

def _to_integer(kind: str, value: Any, bits: int) -> int:
    if kind == "int":
        return wrap(value, bits)
    if kind == "date":
        return wrap(value[1], bits)
    if kind == "boolean":
        return 1 if value else 0
    if kind in ("float32", "float64"):
        return narrow_float(value, bits)
    if kind == "decimal":
        exact = _exact(kind, value)
        assert isinstance(exact, Fraction)
        whole = abs(exact.numerator) // exact.denominator
        return wrap(-whole if exact < 0 else whole, bits)
    if kind == "string":
        parsed = parse_java_integer(value, bits)
        if parsed is None:
            raise _out_of_range(value)
        return parsed
    raise CastError(f"Unexpected type in Cast transformation: class {java_class('x', ConnectSchema('bytes'))}")


def _to_float(kind: str, value: Any, single: bool) -> float | str:
    if kind == "boolean":
        number: float = 1.0 if value else 0.0
    elif kind == "string":
        parsed = parse_java_float(value) if single else parse_java_double(value)
        if parsed is None:
            raise _out_of_range(value)
        number = parsed
    elif kind in ("int", "date", "decimal", "float32", "float64"):
        exact = _exact(kind, value)
        if isinstance(exact, float):
            number = exact
        elif single:
            number = round_to_float32(exact)
        else:
            try:
                number = float(exact)
            except OverflowError:
                number = math.inf if exact > 0 else -math.inf
    else:
        raise CastError(f"Unexpected type in Cast transformation: class {java_class('x', ConnectSchema('bytes'))}")
    return float32_json(number) if single else double_json(number)


def _to_boolean(kind: str, value: Any) -> bool:
    if kind == "boolean":
        return bool(value)
    if kind == "string":
        return value.lower() == "true"
    if kind in ("float32", "float64"):
        return narrow_float(value, 64) != 0
    if kind in ("int", "date", "decimal"):
        return _to_integer(kind, value, 64) != 0
    raise CastError(f"Unexpected type in Cast transformation: class {java_class('x', ConnectSchema('bytes'))}")


def _to_string(kind: str, value: Any) -> str:
    if kind == "int":
        return str(value)
    if kind == "float32":
        return java_float_text(value)
    if kind == "float64":
        return java_double_text(value)
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "decimal":
        return big_decimal_text(*value)
    if kind == "date":
        return _date_text(value[2])
    return str(value)  # strings, and bytes already in base64 as Cast writes them


def cast_value(payload: Any, schema: ConnectSchema | None, target: str) -> Any:
    """A non-null JSON-ready ``payload`` of ``schema`` cast to ``target`` (a JsonConverter type name),
    JSON-ready; :class:`CastError` where Kafka's Cast throws."""
    kind, value = _java_value(payload, schema)
    if target in _BITS:
        return _to_integer(kind, value, _BITS[target])
    if target == "float":
        return _to_float(kind, value, True)
    if target == "double":
        return _to_float(kind, value, False)
    if target == "boolean":
        return _to_boolean(kind, value)
    return _to_string(kind, value)


# -- the transform --------------------------------------------------------------------------------

def _target(prop: str, text: str) -> str:
    name = text.strip().lower()
    if name in _TARGETS:
        return _TARGETS[name]
    if name in _CONNECT_TYPES:
        raise TransformConfigError(f"Cast transformation does not support casting to {name.upper()}; supported types "
                                         f"are {_SUPPORTED_OUT}", prop=prop)
    raise TransformConfigError(f"Invalid type found in casting spec: {text} (one of int8, int16, int32, int64, float32, "
                                     "float64, boolean, string)", prop=prop)


_Plan = tuple[ConnectSchema | None, tuple[tuple[str, str | None], ...], str | None]


class Cast(PartTransform):
    """``Cast``: ``spec`` is one type (the whole value) or ``field:type`` pairs (fields of a struct;
    fields the struct does not have are ignored, a field named twice takes the last type)."""

    OPTIONS = (
        Option("spec", kind="list", required=True, doc="type, or field:type pairs (int8...float64, boolean, string)"),
        Option("replace.null.with.default", "true", "bool", doc="with JsonConverter output both settings write the same "
               "(sparkcdc's records already carry a null column's default; the cast schema keeps the default, cast)"),
    )
    PURPOSE = "cast types"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        prop = options.prefix + "spec"
        self._whole: str | None = None
        self._casts: dict[str, str] = {}
        items = options.list("spec")
        for item in items:
            parts = item.split(":")
            while len(parts) > 1 and parts[-1] == "":
                parts.pop()
            if len(parts) == 1:
                if len(items) > 1:
                    raise TransformConfigError("Cast transformations that specify a type to cast the entire value to may "
                                                     "only specify a single cast in their spec", prop=prop)
                self._whole = _target(prop, parts[0])
            elif len(parts) == 2:
                self._casts[parts[0]] = _target(prop, parts[1])
            else:
                raise TransformConfigError(f"Invalid rename mapping: {item} (a type, or field:type pairs)", prop=prop)
        self._plans: PerSchema[_Plan] = PerSchema(self._plan)

    # -- per schema --
    def _cast_default(self, schema: ConnectSchema, target: str) -> Any:
        if schema.default is NO_DEFAULT or schema.default is None:
            return NO_DEFAULT
        return cast_value(schema.default, schema, target)

    def _plan(self, schema: ConnectSchema | None) -> _Plan:
        assert schema is not None
        try:
            if self._whole is not None:
                if schema.type in ("struct", "array", "map"):
                    raise _unsupported_input(schema.type)
                default = self._cast_default(schema, self._whole)
                out = replace(schema, type=self._whole, default=default, fields=(), items=None, keys=None, values=None, _json=None)
                return out, (), None
            if schema.type != "struct":
                return None, (), None
            fields = []
            moves = []
            for field in schema.fields:
                target = self._casts.get(field.name)
                moves.append((field.name, target))
                if target is None:
                    fields.append(field)
                    continue
                cast_schema = ConnectSchema(target, optional=field.schema.optional,
                                            default=self._cast_default(field.schema, target))
                fields.append(Field(field.name, cast_schema))
            out = ConnectSchema("struct", optional=schema.optional, name=schema.name, version=schema.version, doc=schema.doc,
                                parameters=schema.parameters, fields=tuple(fields))
            return out, tuple(moves), None
        except CastError as exc:
            return None, (), str(exc)

    # -- per record --
    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = self.part(record)
        if value is None:
            return record
        try:
            if schema is None:
                return self.with_part(record, self._schemaless(value), None)
            new_schema, moves, error = self._plans(schema)
            if error is not None:
                raise CastError(error)
            if self._whole is not None:
                assert new_schema is not None
                if schema.name in _LOGICAL_CLASSES:
                    logical, expected = _LOGICAL_CLASSES[schema.name]
                    raise CastError(f"Invalid type for {logical}, expected {expected} but was class java.lang."
                                    f"{_OUT_CLASSES[self._whole]} (JsonConverter cannot write a cast {logical}: the whole "
                                    "value keeps its schema's name)")
                return self.with_part(record, cast_value(value, schema, self._whole), new_schema)
            if new_schema is None or not isinstance(value, dict):
                raise CastError(f"Only Struct objects supported for [{self.PURPOSE}], found: {java_class(value, schema)}")
            out = {}
            for (name, target), old, new in zip(moves, schema.fields, new_schema.fields, strict=True):
                field_value = value.get(name)
                if target is None:
                    out[name] = field_value
                elif field_value is None:
                    out[name] = null_value(new.schema)
                else:
                    out[name] = cast_value(field_value, old.schema, target)
            return self.with_part(record, out, new_schema)
        except (CastError, ValueError) as exc:
            raise self.fail(record, str(exc)) from None

    def _schemaless(self, value: Any) -> Any:
        if self._whole is not None:
            return cast_value(value, None, self._whole)
        if not isinstance(value, dict):
            raise CastError(f"Only Map objects supported in absence of schema for [{self.PURPOSE}], found: "
                            f"{java_class(value, None)}")
        return {name: (field_value if name not in self._casts or field_value is None
                       else cast_value(field_value, None, self._casts[name])) for name, field_value in value.items()}


class CastKey(Cast):
    PART = "key"


class CastValue(Cast):
    PART = "value"

