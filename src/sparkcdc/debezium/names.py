"""Topic names and the adjustment of schema and field names, as Debezium does them.

Topics are sanitized for Kafka (anything but ``A-Za-z0-9._-`` becomes ``_``). Connect schema names
and field names are adjusted per ``schema.name.adjustment.mode`` / ``field.name.adjustment.mode``
(see :class:`NameAdjuster`).
"""

from __future__ import annotations

import re

__all__ = [
    "NameAdjuster",
    "TopicNamer",
    "sanitize_topic",
]

_TOPIC_INVALID = re.compile(r"[^A-Za-z0-9._-]")


def sanitize_topic(name: str) -> str:
    return _TOPIC_INVALID.sub("_", name)


def _letter(unit: int) -> bool:
    return 0x41 <= unit <= 0x5A or 0x61 <= unit <= 0x7A


class NameAdjuster:
    """Adjusts schema names (dots allowed: they separate namespaces) or field names (no dots).

    As Debezium's ``SchemaNameAdjuster``, per UTF-16 code unit: ``avro`` replaces an invalid unit
    with ``_`` (a leading digit is kept after the ``_``, so ``9lives`` becomes ``_9lives``);
    ``avro_unicode`` replaces it with ``_uXXXX`` and, ``_`` being its escape character, treats
    ``_`` itself as invalid.
    """

    def __init__(self, mode: str, *, allow_dots: bool) -> None:
        if mode not in ("none", "avro", "avro_unicode"):
            raise ValueError(f"unknown name adjustment mode {mode!r}")
        self.mode = mode
        self.allow_dots = allow_dots
        self._unicode = mode == "avro_unicode"
        self._cache: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if self.mode == "none":
            return name
        cached = self._cache.get(name)
        if cached is None:
            cached = self._cache[name] = self._adjust(name)
        return cached

    def _valid_first(self, unit: int) -> bool:
        return _letter(unit) or (unit == 0x5F and not self._unicode)

    def _valid_other(self, unit: int) -> bool:
        return self._valid_first(unit) or 0x30 <= unit <= 0x39 or (self.allow_dots and unit == 0x2E)

    def _replace(self, unit: int) -> str:
        return f"_u{unit:04x}" if self._unicode else "_"

    def _adjust(self, name: str) -> str:
        if not name:
            return name
        encoded = name.encode("utf-16-be")
        units = [int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)]
        out: list[str] = []
        for position, unit in enumerate(units):
            if (self._valid_first(unit) if position == 0 else self._valid_other(unit)):
                out.append(chr(unit))
                continue
            out.append(self._replace(unit))
            if position == 0 and not self._unicode and chr(unit).isdigit():
                out.append(chr(unit))
        return "".join(out)


class TopicNamer:
    """``topic.prefix``, ``topic.delimiter``, ``topic.heartbeat.prefix`` / ``.name``, ``topic.transaction``."""

    def __init__(self, prefix: str, *, delimiter: str = ".", heartbeat_prefix: str = "__debezium-heartbeat",
                 heartbeat_name: str = "", transaction: str = "transaction") -> None:
        self.prefix = prefix
        self.delimiter = delimiter
        self.heartbeat_prefix = heartbeat_prefix
        self.heartbeat_name = heartbeat_name
        self.transaction_suffix = transaction
        self._cache: dict[tuple[str, str], str] = {}

    def data_change_topic(self, schema: str, table: str) -> str:
        key = (schema, table)
        topic = self._cache.get(key)
        if topic is None:
            topic = self._cache[key] = sanitize_topic(self.delimiter.join((self.prefix, schema, table)))
        return topic

    def transaction_topic(self) -> str:
        return sanitize_topic(self.delimiter.join((self.prefix, self.transaction_suffix)))

    def heartbeat_topic(self) -> str:
        if self.heartbeat_name:
            return sanitize_topic(self.heartbeat_name)
        return sanitize_topic(self.delimiter.join((self.heartbeat_prefix, self.prefix)))

    def message_topic(self) -> str:
        return sanitize_topic(self.delimiter.join((self.prefix, "message")))
