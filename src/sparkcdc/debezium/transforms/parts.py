"""What Kafka Connect's ``X$Key``/``X$Value`` transforms share: which part of a record they work on,
how they copy a struct's schema, and what JsonConverter makes of a null they leave behind.

Kafka writes each field transform once and runs it on the key or on the value; here a
:class:`PartTransform` subclass does the same, and ``XKey``/``XValue`` only set :attr:`PartTransform.PART`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..connect import NO_DEFAULT, ConnectSchema
from ..records import ChangeRecord
from .base import Options, Transform, copy_record

__all__ = ["NULL_FOR_REQUIRED", "PartTransform", "copy_schema_basics", "java_class", "null_value"]

#: JsonConverter's words for a null it cannot write.
NULL_FOR_REQUIRED = "Conversion error: null value for field that is required and has no default value"

_JAVA_CLASSES = {
    "int8": "java.lang.Byte", "int16": "java.lang.Short", "int32": "java.lang.Integer", "int64": "java.lang.Long",
    "float": "java.lang.Float", "double": "java.lang.Double", "boolean": "java.lang.Boolean", "string": "java.lang.String",
    "bytes": "java.nio.HeapByteBuffer", "struct": "org.apache.kafka.connect.data.Struct", "array": "java.util.ArrayList",
    "map": "java.util.HashMap",
}
_LOGICAL_CLASSES = {
    "org.apache.kafka.connect.data.Decimal": "java.math.BigDecimal",
    "org.apache.kafka.connect.data.Date": "java.util.Date",
    "org.apache.kafka.connect.data.Time": "java.util.Date",
    "org.apache.kafka.connect.data.Timestamp": "java.util.Date",
}


def java_class(value: Any, schema: ConnectSchema | None) -> str:
    """The Java class Connect holds ``value`` as (for messages that name it as Kafka's do)."""
    if value is None:
        return "null"
    if schema is not None:
        return _LOGICAL_CLASSES.get(schema.name or "", _JAVA_CLASSES.get(schema.type, schema.type))
    # Schemaless values are what JsonConverter (schemas.enable=false) reads: longs, doubles, maps.
    for kind, name in ((bool, "java.lang.Boolean"), (int, "java.lang.Long"), (float, "java.lang.Double"),
                       (str, "java.lang.String"), (dict, "java.util.HashMap"), (list, "java.util.ArrayList")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def copy_schema_basics(schema: ConnectSchema, fields: tuple[Any, ...]) -> ConnectSchema:
    """A struct with ``schema``'s name, version, doc and parameters and the given fields: Connect's
    ``SchemaUtil.copySchemaBasics`` onto a new struct builder, which leaves it required and
    without a default."""
    return ConnectSchema("struct", optional=False, name=schema.name, version=schema.version, doc=schema.doc,
                         parameters=schema.parameters, fields=fields)


def null_value(schema: ConnectSchema) -> Any:
    """What JsonConverter writes for a null under ``schema``: its default if it has one, null if
    it is optional; a required schema without a default cannot hold a null (ValueError)."""
    if schema.default is not NO_DEFAULT and schema.default is not None:
        return schema.default
    if schema.optional:
        return None
    raise ValueError(NULL_FOR_REQUIRED)


class PartTransform(Transform):
    """A transform of one part of a record: the key (``PART = "key"``) or the value."""

    PART: ClassVar[str] = "value"

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self.on_key = self.PART == "key"

    def part(self, record: ChangeRecord) -> tuple[Any, ConnectSchema | None]:
        """The part's (value, schema)."""
        if self.on_key:
            return record.key, record.key_schema
        return record.value, record.value_schema

    def with_part(self, record: ChangeRecord, value: Any, schema: ConnectSchema | None) -> ChangeRecord:
        """The record with the part replaced (Connect's ``newRecord``)."""
        if self.on_key:
            return copy_record(record, key=value, key_schema=schema)
        return copy_record(record, value=value, value_schema=schema)
