"""Connector configuration with Debezium's PostgreSQL property names and defaults.

Users bring their Debezium configuration as it is; we accept the same names, apply the same
defaults (except ``plugin.name``, which defaults to pgoutput, the only plugin we speak), and validate
everything before anything touches the database. Every error names the property.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import ConfigurationError

__all__ = ["PROPERTIES", "ConfigError", "ConnectorConfig", "Property", "compile_patterns", "split_list"]


class ConfigError(ConfigurationError):
    """A configuration property (``property``) is missing or has an invalid value."""

    property: str

    def __init__(self, prop: str, message: str) -> None:
        super().__init__(message, prop=prop)


@dataclass(frozen=True)
class Property:
    name: str
    default: str | None = None
    kind: str = "string"  # string | int | bool | enum | list | regex_list | password
    choices: tuple[str, ...] = ()
    required: bool = False
    doc: str = ""
    check: Callable[[str], str | None] | None = None  # returns an error message or None

    def validate(self, raw: str) -> None:
        if self.kind == "int":
            try:
                int(raw)
            except ValueError:
                raise ConfigError(self.name, f"{raw!r} is not an integer") from None
        elif self.kind == "bool":
            if raw.strip().lower() not in ("true", "false"):
                raise ConfigError(self.name, f"{raw!r} is not a boolean (true or false)")
        elif self.kind == "enum":
            if raw.strip().lower() not in self.choices:
                raise ConfigError(self.name, f"{raw!r} is not one of {', '.join(self.choices)}")
        elif self.kind == "regex_list":
            for pattern in split_list(raw):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(self.name, f"{pattern!r} is not a valid regular expression: {exc}") from None
        if self.check is not None:
            problem = self.check(raw)
            if problem:
                raise ConfigError(self.name, problem)


def split_list(raw: str | None) -> list[str]:
    """Comma-separated list, as Debezium splits it (a doubled comma escapes a comma)."""
    if raw is None or not raw.strip():
        return []
    parts = re.split(r"(?<!,),(?!,)", raw)
    return [part.replace(",,", ",").strip() for part in parts if part.strip()]


def compile_patterns(raw: str | None) -> list[re.Pattern[str]]:
    """A regex list property, compiled as Debezium does: case-insensitive, matched in full."""
    return [re.compile(pattern, re.IGNORECASE) for pattern in split_list(raw)]


def _positive(raw: str) -> str | None:
    return None if int(raw) > 0 else f"must be positive, not {raw}"


def _non_negative(raw: str) -> str | None:
    return None if int(raw) >= 0 else f"must not be negative, not {raw}"


def _slot_name(raw: str) -> str | None:
    if re.fullmatch(r"[a-z0-9_]{1,63}", raw):
        return None
    return f"{raw!r} is not a valid slot name (lower-case letters, digits and underscores, at most 63)"


def _topic_prefix(raw: str) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9._-]+", raw) else f"{raw!r} may contain only A-Z, a-z, 0-9, '.', '_' and '-'"


def _column_list_pairs(raw: str) -> str | None:
    for entry in raw.split(";"):
        if entry.strip() and ":" not in entry:
            return f"{entry!r} must be <table regex>:<column>,<column>"
    return None


_P = Property
PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in [
        # connection
        _P("name", "sparkcdc"),
        _P("connector.class", "io.debezium.connector.postgresql.PostgresConnector"),
        _P("tasks.max", "1", "int"),
        _P("plugin.name", "pgoutput", "enum", ("pgoutput",), doc="sparkcdc speaks pgoutput only"),
        _P("database.hostname", required=True),
        _P("database.port", "5432", "int", check=_positive),
        _P("database.user", required=True),
        _P("database.password", None, "password"),
        _P("database.dbname", required=True),
        _P("database.sslmode", "prefer", "enum", ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
        _P("database.sslcert"),
        _P("database.sslkey"),
        _P("database.sslpassword", None, "password"),
        _P("database.sslrootcert"),
        _P("database.sslfactory"),
        _P("database.tcpKeepAlive", "true", "bool"),
        _P("database.initial.statements"),
        _P("database.query.timeout.ms", "600000", "int", check=_non_negative),
        _P("topic.prefix", required=True, check=_topic_prefix),
        # slot and publication
        _P("slot.name", "debezium", check=_slot_name),
        _P("slot.drop.on.stop", "false", "bool"),
        _P("slot.failover", "false", "bool"),
        _P("slot.stream.params"),
        _P("slot.max.retries", "6", "int", check=_non_negative),
        _P("slot.retry.delay.ms", "10000", "int", check=_non_negative),
        _P("publication.name", "dbz_publication"),
        _P("publication.autocreate.mode", "all_tables", "enum", ("all_tables", "disabled", "filtered", "no_tables")),
        _P("publish.via.partition.root", "false", "bool"),
        _P("replica.identity.autoset.values"),
        _P("offset.mismatch.strategy", "no_validation", "enum", ("no_validation", "trust_offset", "trust_slot", "trust_greater_lsn")),
        _P("status.update.interval.ms", "10000", "int", check=_positive),
        _P("lsn.flush.mode", "connector", "enum", ("manual", "connector", "connector_and_driver")),
        # filters
        _P("schema.include.list", kind="regex_list"),
        _P("schema.exclude.list", kind="regex_list"),
        _P("table.include.list", kind="regex_list"),
        _P("table.exclude.list", kind="regex_list"),
        _P("column.include.list", kind="regex_list"),
        _P("column.exclude.list", kind="regex_list"),
        _P("message.prefix.include.list", kind="regex_list"),
        _P("message.prefix.exclude.list", kind="regex_list"),
        _P("table.ignore.builtin", "true", "bool"),
        _P("skipped.operations", "t", check=lambda raw: None if all(
            op in ("c", "u", "d", "t", "none") for op in split_list(raw)) else f"{raw!r} must list c, u, d, t or be none"),
        _P("skip.messages.without.change", "false", "bool"),
        _P("message.key.columns", check=_column_list_pairs),
        # value mapping
        _P("time.precision.mode", "adaptive", "enum",
           ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds")),
        _P("decimal.handling.mode", "precise", "enum", ("precise", "double", "string")),
        _P("hstore.handling.mode", "json", "enum", ("json", "map")),
        _P("interval.handling.mode", "numeric", "enum", ("numeric", "string")),
        _P("binary.handling.mode", "bytes", "enum", ("bytes", "base64", "base64-url-safe", "hex")),
        _P("money.fraction.digits", "2", "int", check=_non_negative),
        _P("include.unknown.datatypes", "false", "bool"),
        _P("unavailable.value.placeholder", "__debezium_unavailable_value"),
        _P("tombstones.on.delete", "true", "bool"),
        _P("column.propagate.source.type", kind="regex_list"),
        _P("datatype.propagate.source.type", kind="regex_list"),
        _P("schema.name.adjustment.mode", "none", "enum", ("none", "avro", "avro_unicode")),
        _P("field.name.adjustment.mode", "none", "enum", ("none", "avro", "avro_unicode")),
        _P("converters"),
        # topics
        _P("topic.naming.strategy", "io.debezium.schema.SchemaTopicNamingStrategy"),
        _P("topic.delimiter", "."),
        _P("topic.cache.size", "10000", "int", check=_positive),
        _P("topic.heartbeat.prefix", "__debezium-heartbeat"),
        _P("topic.heartbeat.name", ""),
        _P("topic.transaction", "transaction"),
        # snapshots
        _P("snapshot.mode", "initial", "enum",
           ("always", "initial", "initial_only", "no_data", "when_needed", "configuration_based", "custom")),
        _P("snapshot.mode.configuration.based.snapshot.data", "false", "bool"),
        _P("snapshot.mode.configuration.based.snapshot.schema", "false", "bool"),
        _P("snapshot.mode.configuration.based.start.stream", "false", "bool"),
        _P("snapshot.mode.configuration.based.snapshot.on.schema.error", "false", "bool"),
        _P("snapshot.mode.configuration.based.snapshot.on.data.error", "false", "bool"),
        _P("snapshot.mode.custom.name"),
        _P("snapshot.isolation.mode", "serializable", "enum", ("serializable", "repeatable_read", "read_committed", "read_uncommitted")),
        _P("snapshot.locking.mode", "none", "enum", ("shared", "none", "custom")),
        _P("snapshot.locking.mode.custom.name"),
        _P("snapshot.query.mode", "select_all", "enum", ("select_all", "custom")),
        _P("snapshot.query.mode.custom.name"),
        _P("snapshot.include.collection.list", kind="regex_list"),
        _P("snapshot.lock.timeout.ms", "10000", "int", check=_non_negative),
        _P("snapshot.select.statement.overrides"),
        _P("snapshot.fetch.size", "10240", "int", check=_positive),
        _P("snapshot.max.threads", "1", "int", check=_positive),
        _P("snapshot.delay.ms", "0", "int", check=_non_negative),
        _P("snapshot.tables.order.by.row.count", "disabled", "enum", ("disabled", "ascending", "descending")),
        _P("streaming.delay.ms", "0", "int", check=_non_negative),
        # incremental snapshots and signals
        _P("signal.data.collection"),
        _P("signal.enabled.channels", "source"),
        _P("incremental.snapshot.chunk.size", "1024", "int", check=_positive),
        _P("incremental.snapshot.watermarking.strategy", "insert_insert", "enum", ("insert_insert", "insert_delete")),
        _P("read.only", "false", "bool"),
        # events and runtime behaviour
        _P("provide.transaction.metadata", "false", "bool"),
        _P("heartbeat.interval.ms", "0", "int", check=_non_negative),
        _P("heartbeat.action.query"),
        _P("event.processing.failure.handling.mode", "fail", "enum", ("fail", "warn", "skip")),
        _P("event.converting.failure.handling.mode", "warn", "enum", ("fail", "warn", "skip")),
        _P("max.batch.size", "2048", "int", check=_positive),
        _P("max.queue.size", "8192", "int", check=_positive),
        _P("max.queue.size.in.bytes", "0", "int", check=_non_negative),
        _P("poll.interval.ms", "500", "int", check=_positive),
        _P("xmin.fetch.interval.ms", "0", "int", check=_non_negative),
        _P("schema.refresh.mode", "columns_diff", "enum", ("columns_diff", "columns_diff_exclude_unchanged_toast")),
        _P("errors.max.retries", "-1", "int"),
        _P("retriable.restart.connector.wait.ms", "10000", "int", check=_non_negative),
        _P("extended.headers.enabled", "true", "bool"),
        _P("include.schema.comments", "false", "bool"),
        # sparkcdc's own (Spark runtime)
        _P("sparkcdc.state.location", doc="directory for the streaming state handed between micro-batches"),
        _P("sparkcdc.max.batch.wal.bytes", "268435456", "int", check=_non_negative,
           doc="WAL bytes one streaming micro-batch covers at most (0: no limit)"),
        _P("sparkcdc.snapshot.chunk.rows", "100000", "int", check=_positive,
           doc="rows a parallel snapshot chunk is sized to hold (one Spark task each)"),
        _P("sparkcdc.snapshot.render.sql", "true", "bool",
           doc="let PostgreSQL render the snapshot's key and row payloads as JSON where every column's type allows"),
        _P("sparkcdc.output.layout", "columns", "enum", ("columns", "lines"),
           doc="the source's rows: the record's columns, or (lines) topic, its topic-files JSON line, lsn, commit_lsn, ordinal"),
        # converter settings (Kafka Connect JsonConverter)
        _P("key.converter.schemas.enable", "true", "bool"),
        _P("value.converter.schemas.enable", "true", "bool"),
    ]
}

# Properties whose name carries a parameter (Debezium's column.* and overrides families).
_DYNAMIC = [
    re.compile(r"column\.truncate\.to\.(\d+)\.chars"),
    re.compile(r"column\.mask\.with\.(\d+)\.chars"),
    re.compile(r"column\.mask\.hash\.([^.]+(?:-[^.]+)*)\.with\.salt\.(.+)"),
    re.compile(r"snapshot\.select\.statement\.overrides\..+"),
    re.compile(r"(driver|signal|notification|converters?|offset|schema\.history\.internal|internal)\..+"),
    re.compile(r"(key|value|header)\.converter(\..+)?"),
]


class ConnectorConfig:
    """Validated connector properties: raw strings plus typed accessors with Debezium's defaults."""

    def __init__(self, properties: Mapping[str, Any], *, strict: bool = False) -> None:
        """``strict`` rejects properties sparkcdc does not know (otherwise they are kept, unused)."""
        self.raw: dict[str, str] = {str(k): _as_text(v) for k, v in properties.items()}
        for name, prop in PROPERTIES.items():
            value = self.raw.get(name)
            if value is None or value == "":
                if prop.required:
                    raise ConfigError(name, "is required")
                continue
            prop.validate(value)
        for name in self.raw:
            if name not in PROPERTIES and not any(p.fullmatch(name) for p in _DYNAMIC) and strict:
                raise ConfigError(name, "is not a property sparkcdc knows")
        if self.get("snapshot.mode") == "custom":
            raise ConfigError("snapshot.mode", "custom snapshotters are Java classes; sparkcdc cannot load them")
        for prefix in ("table", "schema", "column", "message.prefix"):
            if self.raw.get(f"{prefix}.include.list") and self.raw.get(f"{prefix}.exclude.list"):
                raise ConfigError(f"{prefix}.exclude.list", f"cannot be combined with {prefix}.include.list")

    # -- typed access ----------------------------------------------------------------------------
    def get(self, name: str) -> str | None:
        value = self.raw.get(name)
        if value is None or value == "":
            prop = PROPERTIES.get(name)
            return prop.default if prop else None
        prop = PROPERTIES.get(name)
        if prop is not None and prop.kind == "enum":
            return value.strip().lower()
        return value

    def get_int(self, name: str) -> int:
        value = self.get(name)
        if value is None:
            raise ConfigError(name, "has no value")
        return int(value)

    def get_bool(self, name: str) -> bool:
        value = self.get(name)
        return value is not None and value.strip().lower() == "true"

    def get_list(self, name: str) -> list[str]:
        return split_list(self.get(name))

    def get_patterns(self, name: str) -> list[re.Pattern[str]]:
        return compile_patterns(self.get(name))

    def items_matching(self, pattern: re.Pattern[str]) -> Iterable[tuple[re.Match[str], str]]:
        for name, value in self.raw.items():
            match = pattern.fullmatch(name)
            if match:
                yield match, value

    # -- frequently used values ------------------------------------------------------------------
    @cached_property
    def topic_prefix(self) -> str:
        value = self.get("topic.prefix")
        assert value is not None
        return value

    @cached_property
    def skipped_operations(self) -> frozenset[str]:
        ops = set(self.get_list("skipped.operations"))
        return frozenset() if "none" in ops else frozenset(ops)

    @cached_property
    def tombstones_on_delete(self) -> bool:
        return self.get_bool("tombstones.on.delete")

    @cached_property
    def provide_transaction_metadata(self) -> bool:
        return self.get_bool("provide.transaction.metadata")

    @cached_property
    def key_schemas_enable(self) -> bool:
        return self.get_bool("key.converter.schemas.enable")

    @cached_property
    def value_schemas_enable(self) -> bool:
        return self.get_bool("value.converter.schemas.enable")

    def __repr__(self) -> str:
        shown = {k: ("********" if PROPERTIES.get(k, Property(k)).kind == "password" else v) for k, v in self.raw.items()}
        return f"ConnectorConfig({shown!r})"


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
