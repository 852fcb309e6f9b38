"""Topic names and the adjustment of schema and field names, as Debezium does them.

Topics are sanitized for Kafka (anything but ``A-Za-z0-9._-`` becomes ``_``). Connect schema names
and field names are adjusted per ``schema.name.adjustment.mode`` / ``field.name.adjustment.mode``:
``none`` leaves them alone, ``avro`` replaces invalid characters with ``_``, ``avro_unicode``
with ``_uXXXX``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "NameAdjuster",
    "TopicNamer",
    "sanitize_topic",
]

_TOPIC_INVALID = re.compile(r"[^A-Za-z0-9._-]")


def sanitize_topic(name: str) -> str:
    return _TOPIC_INVALID.sub("_", name)


def _avro_valid(char: str, position: int, allow_dots: bool) -> bool:
    if char == "_" or ("A" <= char <= "Z") or ("a" <= char <= "z"):
        return True
    if position == 0:
        return False
    return ("0" <= char <= "9") or (allow_dots and char == ".")


class NameAdjuster:
    """Adjusts schema names (dots allowed: they separate namespaces) or field names (no dots)."""

    def __init__(self, mode: str, *, allow_dots: bool) -> None:
        if mode not in ("none", "avro", "avro_unicode"):
            raise ValueError(f"unknown name adjustment mode {mode!r}")
        self.mode = mode
        self.allow_dots = allow_dots
        self._cache: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if self.mode == "none":
            return name
        cached = self._cache.get(name)
        if cached is None:
            cached = self._cache[name] = self._adjust(name)
        return cached

    def _adjust(self, name: str) -> str:
        replace: Callable[[str], str] = (lambda c: "_") if self.mode == "avro" else (lambda c: f"_u{ord(c):04x}")
        out = []
        for position, char in enumerate(name):
            out.append(char if _avro_valid(char, position, self.allow_dots) else replace(char))
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
