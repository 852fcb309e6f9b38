"""Which Java class names sparkcdc runs, and which it knows but cannot run here (and why).

A class is found by the name a Debezium configuration gives it (``transforms.<alias>.type``), and
its module is imported on first use, so a configuration without transforms loads none of them.
Kafka's ``$Key``/``$Value`` variants are two entries, each its own class.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any, Final

__all__ = ["PREDICATES", "TRANSFORMS", "UNAVAILABLE"]

_KAFKA: Final = "org.apache.kafka.connect.transforms."
_DEBEZIUM: Final = "io.debezium.transforms."


class _Lazy(Mapping[str, Any]):
    """Class name -> the class, imported from ``sparkcdc.debezium.transforms.<module>`` when asked for."""

    def __init__(self, entries: Mapping[str, str]) -> None:
        self._entries = dict(entries)
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            module, _, attribute = self._entries[name].partition(":")
            self._loaded[name] = getattr(import_module(f"{__package__}.{module}"), attribute)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _both(kafka_name: str, module: str) -> dict[str, str]:
    """Kafka's ``X$Key`` and ``X$Value`` classes, named ``XKey`` and ``XValue`` in ``module``."""
    return {f"{_KAFKA}{kafka_name}${part}": f"{module}:{kafka_name}{part}" for part in ("Key", "Value")}


TRANSFORMS: Final[Mapping[str, Any]] = _Lazy({
    # Debezium's
    f"{_DEBEZIUM}ExtractNewRecordState": "unwrap:ExtractNewRecordState",
    f"{_DEBEZIUM}ExtractChangedRecordState": "changed_state:ExtractChangedRecordState",
    f"{_DEBEZIUM}outbox.EventRouter": "outbox:EventRouter",
    f"{_DEBEZIUM}ByLogicalTableRouter": "logical_table:ByLogicalTableRouter",
    f"{_DEBEZIUM}HeaderToValue": "header_to_value:HeaderToValue",
    f"{_DEBEZIUM}TimezoneConverter": "timezone:TimezoneConverter",
    f"{_DEBEZIUM}partitions.PartitionRouting": "partition_routing:PartitionRouting",
    # Kafka Connect's
    f"{_KAFKA}RegexRouter": "routers:RegexRouter",
    f"{_KAFKA}TimestampRouter": "routers:TimestampRouter",
    f"{_KAFKA}ValueToKey": "fields:ValueToKey",
    f"{_KAFKA}Filter": "routers:Filter",
    **_both("ReplaceField", "fields"),
    **_both("InsertField", "fields"),
    **_both("MaskField", "fields"),
    **_both("ExtractField", "fields"),
    **_both("Cast", "cast"),
})

PREDICATES: Final[Mapping[str, Any]] = _Lazy({
    f"{_KAFKA}predicates.TopicNameMatches": "predicates:TopicNameMatches",
    f"{_KAFKA}predicates.HasHeaderKey": "predicates:HasHeaderKey",
    f"{_KAFKA}predicates.RecordIsTombstone": "predicates:RecordIsTombstone",
})

_SCRIPTING: Final = ("it evaluates a JSR 223 script (Groovy, JavaScript, ...) on a JVM, which sparkcdc does not run; "
                     "use a predicate with a transform, or filter and route the records in Spark")

#: Classes a Debezium configuration may name that sparkcdc cannot run, and why.
UNAVAILABLE: Final[Mapping[str, str]] = {
    f"{_DEBEZIUM}Filter": _SCRIPTING,
    f"{_DEBEZIUM}ContentBasedRouter": _SCRIPTING,
}
