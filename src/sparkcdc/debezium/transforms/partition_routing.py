"""Debezium's ``PartitionRouting`` (``transforms.<alias>.type=io.debezium.transforms.partitions.PartitionRouting``):
a record's Kafka partition chosen from a hash of payload fields.

What it does, as Debezium 3.6.3 does it (each point checked against it, tests/conformance/
test_transforms_routing_conformance.py and tests/debezium/transforms/test_java_hash.py):

* ``partition.payload.fields`` lists dotted paths into the record's value (``after.name``,
  ``source.table``, ``op``); ``change.<field>`` reads ``before`` for a delete and ``after`` otherwise.
  A field the value does not have, or a null, is left out; a path through a null struct (``after.x``
  of a delete) stops the connector. When no field is found the record keeps its partition.
* The hash is the sum of the fields' hashes (Java's ``hashCode``, or Debezium's MurmurHash3 with
  ``partition.hash.function=murmur``: :mod:`.java_hash`), and the partition is that sum with its sign
  bit cleared, modulo ``partition.topic.num``; a sum whose low 31 bits are all ones gives partition 0,
  as Debezium's does.
* Only change events (envelopes) are routed: tombstones, heartbeats, transaction metadata and
  logical decoding messages keep their partition, as in Debezium. A NULL column that has a default
  hashes as the default (Connect's ``Struct.get`` hands Debezium the default).

The partition travels with the record (:attr:`ChangeRecord.partition`) to the ``kafka`` layout,
which produces to it; topic files have no partitions. Compiled per value schema: per record only the
values along each path are read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..connect import ConnectSchema
from ..records import ChangeRecord
from .base import Option, Options, PerSchema, Transform, copy_record
from .envelope import field_schema, is_envelope
from .java_hash import Unhashable, java_hash_code, murmur_hash_code

__all__ = ["PartitionRouting"]

_FUNCTIONS = ("java", "murmur")

#: A path of a value schema, compiled: (its first field, the fields' names and schemas along it; empty
#: when the schema has no such path).
_Path = tuple[str, tuple[tuple[str, ConnectSchema], ...]]


class PartitionRouting(Transform):
    """``io.debezium.transforms.partitions.PartitionRouting`` (see the module's docstring)."""

    OPTIONS = (
        Option("partition.payload.fields", kind="list", required=True),
        Option("partition.topic.num", kind="int", required=True),
        Option("partition.hash.function", "java"),
    )

    #: The chain's outputs ask this: the record's partition is this transform's choice.
    chooses_partitions = True

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self._paths = [path.strip() for path in options.list("partition.payload.fields") if path.strip()]
        if not self._paths:
            raise options.error("partition.payload.fields", "is required: the payload fields to hash (after.id, change.name, ...)")
        for path in self._paths:
            if any(not part for part in path.split(".")):
                raise options.error("partition.payload.fields", f"{path!r} is not a dotted path of field names")
        self._partitions = options.int("partition.topic.num")
        if self._partitions <= 0:
            raise options.error("partition.topic.num", f"{self._partitions} is not a positive number of partitions")
        function = options.text("partition.hash.function").strip().lower()
        if function not in _FUNCTIONS:
            raise options.error("partition.hash.function", f"{options.text('partition.hash.function')!r} is not one of "
                                f"{', '.join(_FUNCTIONS)}")
        self._hash: Callable[[Any, ConnectSchema, str], int] = java_hash_code if function == "java" else murmur_hash_code
        self._plans: PerSchema[tuple[tuple[str, list[str], tuple[_Path, ...]], ...]] = PerSchema(self._compile)

    def _compile(self, schema: ConnectSchema | None) -> tuple[tuple[str, list[str], tuple[_Path, ...]], ...]:
        """Per configured path: (path, its parts, the variants it resolves to in ``schema``: one, or
        two for ``change.`` (a delete's ``before`` first, then ``after``); missing fields left out)."""
        plans = []
        for path in self._paths:
            parts = path.split(".")
            variants = []
            for first in (("before", "after") if parts[0] == "change" else (parts[0],)):
                resolved: list[tuple[str, ConnectSchema]] = []
                current = schema
                for name in [first, *parts[1:]]:
                    current = field_schema(current, name)
                    if current is None:
                        break
                    resolved.append((name, current))
                variants.append((first, tuple(resolved) if len(resolved) == len(parts) else ()))
            plans.append((path, parts, tuple(variants)))
        return tuple(plans)

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value = record.value
        if not isinstance(value, dict) or not is_envelope(record.value_schema):
            return record  # tombstones, heartbeats, transaction metadata, messages: Debezium leaves them as they are
        total = 0
        found = False
        for path, parts, variants in self._plans(record.value_schema):
            if parts[0] == "change":
                resolved = variants[0][1] if value.get("op") == "d" else variants[1][1]
            else:
                resolved = variants[0][1]
            if not resolved:
                continue  # a field this record's value does not have
            payload = self._read(record, value, path, resolved)
            if payload is None:
                continue
            schema = resolved[-1][1]
            try:
                total += self._hash(payload, schema, f"the field {path}")
            except Unhashable as why:
                raise self.fail(record, f"partition.payload.fields: {why}") from None
            found = True
        if not found:
            return record
        masked = total & 0x7FFFFFFF
        out = copy_record(record)
        out.partition = 0 if masked == 0x7FFFFFFF else masked % self._partitions
        return out

    def _read(self, record: ChangeRecord, value: dict[str, Any], path: str, resolved: tuple[tuple[str, ConnectSchema], ...]) -> Any:
        """The value at the end of ``resolved`` (None for a null). A NULL column with a default reads as
        the default, as Connect's ``Struct.get`` gives it to Debezium: sparkcdc's rows carry it so."""
        current: Any = value
        for depth, (name, _) in enumerate(resolved):
            if current is None:
                raise self.fail(record, f"partition.payload.fields: {path} reads into "
                                        f"{'.'.join(n for n, _ in resolved[:depth])}, which is null in this record "
                                        "(Debezium stops the connector on it; change.<field> reads a delete's before)")
            if not isinstance(current, dict):
                return None
            current = current.get(name)
        return current
