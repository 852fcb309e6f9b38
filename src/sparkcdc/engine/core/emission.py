"""Records as they leave the connector: through the configuration's transforms, serialized by its
converters.

Every reader of planned work (the sequential stream reader, the decoding processes of a parallel
stream, the rendered snapshot) ends in these two steps; they live here, below all of them, so that
no reader has to import another reader (or the module that dispatches work to them) to share them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...debezium.config import ConnectorConfig
from ...debezium.records import ChangeRecord
from ...debezium.serialization import JsonSerializer

__all__ = ["emitted", "serializer_for"]


def serializer_for(config: ConnectorConfig) -> JsonSerializer:
    """The serializer of the configuration's converters: JsonConverter's ``schemas.enable`` for keys,
    values and headers, and Debezium's CloudEvents for values with ``value.converter=CloudEventsConverter``."""
    converters = config.converters
    value_converter = None
    if converters.cloudevents is not None:
        from ...debezium.cloudevents import CloudEventsConverter

        value_converter = CloudEventsConverter(converters.cloudevents)
    return JsonSerializer(key_schemas=converters.key_schemas, value_schemas=converters.value_schemas,
                          header_schemas=converters.header_schemas, value_converter=value_converter)


def emitted(config: ConnectorConfig, records: Iterable[ChangeRecord]) -> Iterable[ChangeRecord]:
    """``records`` as they leave the connector: through the configuration's transforms
    (``transforms=``), where it has any. Every path from records to output calls this once, and
    the typed ``changes`` layout never does (it reads records as the connector makes them)."""
    chain = config.transforms
    return chain.apply(records) if chain else records
