"""The connector's property table: every property a configuration may name, and what sparkcdc does with it.

This is the one place a property's type, default, check and status are written. Every other view
of the configuration is derived from it: :class:`~sparkcdc.debezium.config.ConnectorConfig`
(validation, aliases, warnings), :class:`~sparkcdc.debezium.settings.Settings` (typed access) and
the table in ``docs/properties.md`` (a test keeps it equal to this one).

A property's status says what a Debezium user gets here (no property is silently ignored):

* ``honoured``: it does what Debezium documents (``doc`` says where sparkcdc differs);
* ``alias``: an older name (or value) of a current property; it is translated, with a deprecation
  warning naming the current property;
* ``warned``: accepted with a warning that it has no effect here and what replaces it;
* ``refused``: an error naming it and saying why (sparkcdc would otherwise silently differ).

``quiet`` values of a warned or refused property ask for what sparkcdc does anyway, so they pass
without a word (``tasks.max=1``, ``slot.failover=false``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from .converter_values import JSON_CONVERTER, converter_problem, metadata_source_problem

__all__ = [
    "ALIAS", "FAMILIES", "HONOURED", "PROPERTIES", "REFUSED", "STATUSES", "WARNED", "Family", "Property",
    "closest", "closest_known", "compile_patterns", "split_list",
]

HONOURED, ALIAS, WARNED, REFUSED = "honoured", "alias", "warned", "refused"
STATUSES = (HONOURED, ALIAS, WARNED, REFUSED)

#: An alias's translation: (its value, the configuration as given) -> the current properties to set.
Translation = Callable[[str, Mapping[str, str]], dict[str, str]]


@dataclass(frozen=True)
class Property:
    name: str
    default: str | None = None
    kind: str = "string"  # string | int | count_or_auto | bool | enum | list | regex_list | password
    choices: tuple[str, ...] = ()
    required: bool = False
    required_with: tuple[str, str] = ()  # (list property, value): required when that property lists the value
    doc: str = ""  # what it does here, where that is not simply "as in Debezium"; for warned/refused: why
    check: Callable[[str], str | None] | None = None  # returns an error message or None
    status: str = HONOURED
    quiet: tuple[str, ...] = ()  # values of a warned/refused property that ask for what happens anyway
    alias_of: tuple[str, ...] = ()  # alias: the current properties it sets
    translate: Translation | None = None  # alias: how its value becomes theirs
    merges: bool = False  # alias: its translation combines with the current property instead of conflicting
    old_values: tuple[tuple[str, str], ...] = ()  # deprecated values of an honoured enum -> current values
    refused_values: tuple[tuple[str, str], ...] = ()  # values refused (lower case) -> why

    def problem(self, raw: str) -> str | None:
        """What is wrong with ``raw`` as this property's value, or None."""
        if self.kind == "int":
            try:
                int(raw)
            except ValueError:
                return f"{raw!r} is not an integer"
        elif self.kind == "count_or_auto":
            if raw.strip().lower() == "auto":
                return None
            if not raw.strip().isdigit() or int(raw) < 1:
                return f"{raw!r} is neither a positive integer nor auto"
        elif self.kind == "bool":
            if raw.strip().lower() not in ("true", "false"):
                return f"{raw!r} is not a boolean (true or false)"
        elif self.kind == "enum":
            if raw.strip().lower() not in self.choices:  # the check, if any, may say why better
                return (self.check(raw) if self.check is not None else None) or f"{raw!r} is not one of {', '.join(self.choices)}"
        elif self.kind == "regex_list":
            for pattern in split_list(raw):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    return f"{pattern!r} is not a valid regular expression: {exc}"
        return self.check(raw) if self.check is not None else None

    def is_quiet(self, raw: str) -> bool:
        return raw.strip().lower() in {value.lower() for value in self.quiet}


@dataclass(frozen=True)
class Family:
    """Properties whose name carries a parameter (``column.mask.with.<n>.chars``, ``signal.*``)."""

    pattern: re.Pattern[str]
    shown: str  # the name as the docs show it
    status: str = HONOURED
    doc: str = ""
    quiet: tuple[str, ...] = ()

    def is_quiet(self, raw: str) -> bool:
        return raw.strip().lower() in {value.lower() for value in self.quiet}


def split_list(raw: str | None) -> list[str]:
    """Comma-separated list, as Debezium splits it (a doubled comma escapes a comma)."""
    if raw is None or not raw.strip():
        return []
    parts = re.split(r"(?<!,),(?!,)", raw)
    return [part.replace(",,", ",").strip() for part in parts if part.strip()]


def compile_patterns(raw: str | None) -> list[re.Pattern[str]]:
    """A regex list property, compiled as Debezium does: case-insensitive, matched in full."""
    return [re.compile(pattern, re.IGNORECASE) for pattern in split_list(raw)]


# -- checks ------------------------------------------------------------------------------------------


def _positive(raw: str) -> str | None:
    return None if int(raw) > 0 else f"must be positive, not {raw}"


def _ports(raw: str) -> str | None:
    """``database.port``: a port, or comma-separated ports (one per host of ``database.hostname``)."""
    for part in raw.split(","):
        try:
            port = int(part)
        except ValueError:
            return f"{part.strip()!r} is not an integer (a port, or one port per host: 5432,5433)"
        if port <= 0 or port > 65535:
            return f"must be positive, not {port}" if port <= 0 else f"{port} is not a port number (1-65535)"
    return None


def _non_negative(raw: str) -> str | None:
    return None if int(raw) >= 0 else f"must not be negative, not {raw}"


def _slot_name(raw: str) -> str | None:
    if re.fullmatch(r"[a-z0-9_]{1,63}", raw):
        return None
    return f"{raw!r} is not a valid slot name (lower-case letters, digits and underscores, at most 63)"


def _slot_assignment(raw: str) -> str | None:
    for entry in split_list(raw):
        name, sep, index = entry.rpartition(":")
        if not sep or "." not in name or not index.strip().isdigit():
            return f"{entry!r} must be <schema>.<table>:<slot index>"
    return None


def _topic_prefix(raw: str) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9._-]+", raw) else f"{raw!r} may contain only A-Z, a-z, 0-9, '.', '_' and '-'"


def _column_list_pairs(raw: str) -> str | None:
    for entry in raw.split(";"):
        if entry.strip() and ":" not in entry:
            return f"{entry!r} must be <table regex>:<column>,<column>"
    return None


def _skipped_operations(raw: str) -> str | None:
    if all(op in ("c", "u", "d", "t", "none") for op in split_list(raw)):
        return None
    return f"{raw!r} must list c, u, d, t or be none"


_CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
_TOPIC_NAMING = "io.debezium.schema.SchemaTopicNamingStrategy"


def _plugin(raw: str) -> str | None:
    if raw.strip().lower() == "pgoutput":
        return None
    return f"{raw.strip()!r} is not supported: sparkcdc decodes pgoutput only (set plugin.name=pgoutput or remove it)"


def _stream_params(raw: str) -> str | None:
    from .stream_params import stream_params_problem

    return stream_params_problem(raw)


def _metric_tags(raw: str) -> str | None:
    from .metric_tags import metric_tags_problem

    return metric_tags_problem(raw)


def _connector_class(raw: str) -> str | None:
    if raw.strip() in (_CONNECTOR_CLASS, "PostgresConnector"):
        return None
    return f"{raw.strip()!r} is not the Debezium PostgreSQL connector ({_CONNECTOR_CLASS})"


def _regex(raw: str) -> str | None:
    try:
        re.compile(raw)
    except re.error as exc:
        return f"{raw!r} is not a valid regular expression: {exc}"
    return None


def _topic_naming(raw: str) -> str | None:
    if raw.strip() == _TOPIC_NAMING:
        return None
    return f"{raw.strip()!r} is a Java class sparkcdc cannot load; only {_TOPIC_NAMING} is supported"


def _converter(part: str) -> Callable[[str], str | None]:
    """The check of ``<part>.converter`` (and ``.class``): JsonConverter, CloudEvents for values."""
    def check(raw: str) -> str | None:
        return converter_problem(part, raw)
    return check


_NO_REGISTRY = ("needs a schema registry, and none runs beside sparkcdc (a registry's schema ids would name schemas nobody can "
                "resolve); sparkcdc writes CloudEvents in JSON: use json")
_NUMERIC = ("NUMERIC is not implemented: sparkcdc writes decimals as JsonConverter's default, BASE64 (a decimal column's "
            "default in the schema would need its own scale)")
_NULL_DEFAULT = "false is not implemented: a null field that has a default is written as the default, JsonConverter's default"


def _json_settings(prefix: str, what: str) -> list[Property]:
    """JsonConverter's settings under ``prefix`` (``key.converter.``, CloudEvents' ``value.converter.json.``)."""
    return [
        Property(f"{prefix}schemas.cache.size", "1000", "int", status=WARNED, quiet=("1000",),
                 doc=f"has no effect here: the size of {what}'s schema cache; sparkcdc renders each schema once, without a bound"),
        Property(f"{prefix}decimal.format", "BASE64", "enum", ("base64", "numeric"), refused_values=(("numeric", _NUMERIC),),
                 doc=f"{what}: BASE64 only (NUMERIC is refused)"),
        Property(f"{prefix}replace.null.with.default", "true", "bool", refused_values=(("false", _NULL_DEFAULT),),
                 doc=f"{what}: true only (false is refused)"),
    ]


# -- alias translations ------------------------------------------------------------------------------


def _same_value(target: str) -> Translation:
    def translate(value: str, given: Mapping[str, str]) -> dict[str, str]:
        return {target: value}
    return translate


def _truncate_handling(value: str, given: Mapping[str, str]) -> dict[str, str]:
    """Debezium 1.x: ``truncate.handling.mode`` (skip/include) beside ``skipped.operations`` (c,u,d)."""
    ops = [op for op in split_list(given.get("skipped.operations")) if op not in ("t", "none")]
    if value.strip().lower() == "skip":
        ops.append("t")
    return {"skipped.operations": ",".join(ops) or "none"}


def _sanitize_field_names(value: str, given: Mapping[str, str]) -> dict[str, str]:
    mode = "avro" if value.strip().lower() == "true" else "none"
    return {"schema.name.adjustment.mode": mode, "field.name.adjustment.mode": mode}


def _flush_lsn_source(value: str, given: Mapping[str, str]) -> dict[str, str]:
    return {"lsn.flush.mode": "connector" if value.strip().lower() == "true" else "manual"}


_SIGNAL_CHANNELS = ("source", "file", "kafka")
_NOTIFICATION_CHANNELS = ("log", "sink")


def _channel_check(known: tuple[str, ...], what: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        unknown = [c.strip() for c in value.split(",") if c.strip() and c.strip() not in known]
        if unknown:
            jmx = ""
            if "jmx" in unknown:
                jmx = " (the jmx channel needs a JVM" + (": use `sparkcdc signal` to send signals)" if what == "signal" else ")")
            return f"unknown {what} channel(s) {', '.join(unknown)}; sparkcdc has {', '.join(known)}{jmx}"
        return None

    return check


_signal_channels = _channel_check(_SIGNAL_CHANNELS, "signal")
_notification_channels = _channel_check(_NOTIFICATION_CHANNELS, "notification")

# -- the table ---------------------------------------------------------------------------------------

_SIGNALS = ("has no effect here: not a setting of the signal channels sparkcdc has (signal.data.collection, "
            "signal.enabled.channels, signal.poll.interval.ms, signal.file, signal.kafka.*, signal.consumer.*)")
_QUEUE = ("has no effect here: Debezium's in-memory queue between the log reader and Kafka Connect; sparkcdc reads "
          "in Spark micro-batches, sized by sparkcdc.max.batch.wal.bytes and the trigger interval")
_JAVA_CUSTOM = "has no effect here: it names a Java implementation for a custom mode, and sparkcdc refuses custom modes"
_CUSTOM_REFUSED = "custom implementations are Java classes; sparkcdc cannot load them"
#: Debezium's default custom.sanitize.pattern: names of properties whose values are never shown.
SANITIZE_PATTERN = (r".*secret$|.*password$|.*sasl\.jaas\.config$|.*basic\.auth\.user\.info|.*registry\.auth\.client-secret|"
                    r".*credentials\.json$|.*connectionstring$|.*connection\.string$")
_TABLE_MAPPING = "io.debezium.relational.ConcurrentMapTableMappingStorage"
_SOURCE_INFO = "io.debezium.connector.postgresql.PostgresSourceInfoStructMaker"
_TX_FACTORY = "io.debezium.pipeline.txmetadata.DefaultTransactionMetadataFactory"
_CONNECT_RETRIES = ("has no effect here: Kafka Connect's retries of a failed conversion, transformation or send; a failing record "
                    "stops sparkcdc (errors.tolerance=none), and `sparkcdc run` restarts after retriable server errors only "
                    "(errors.max.retries, retriable.restart.connector.wait.ms)")
_CONNECT_ERROR_LOG = ("has no effect here: a failing record stops sparkcdc with an error naming its table, topic and LSN; "
                      "there are no tolerated errors to log (errors.tolerance=none)")
_TRANSACTION_BOUNDARY = ("has no effect here: with sparkcdc.output.layout=kafka each reader task commits one Kafka transaction per "
                         "micro-batch (what poll is closest to); the trigger interval sets how often")

_P = Property
_ALL = [
    # connection
    _P("name", "sparkcdc", doc="the connector's name: application_name of its connections, Spark query name"),
    _P("connector.class", _CONNECTOR_CLASS, check=_connector_class, doc="must be the PostgreSQL connector"),
    _P("tasks.max", "1", "int", status=WARNED, quiet=("1",),
       doc="has no effect here: the PostgreSQL connector runs one task; sparkcdc's parallelism is Spark's "
           "(snapshot.max.threads, sparkcdc.snapshot.chunk.rows)"),
    _P("plugin.name", "pgoutput", "enum", ("pgoutput",), check=_plugin, doc="pgoutput only (Debezium's default is decoderbufs); other plugins are refused"),
    _P("database.hostname", required=True,
       doc="one host, or several comma-separated (h1,h2): then sparkcdc connects to the first that accepts writes "
           "(libpq target_session_attrs=read-write), for every connection, so a run goes on against a promoted standby "
           "(see docs/high-availability.md)"),
    _P("database.port", "5432", check=_ports,
       doc="one port, or one per host of database.hostname (5432,5433)"),
    _P("database.user", required=True),
    _P("database.password", None, "password"),
    _P("database.dbname", required=True),
    _P("database.sslmode", "prefer", "enum", ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
    _P("database.sslcert"),
    _P("database.sslkey"),
    _P("database.sslpassword", None, "password"),
    _P("database.sslrootcert"),
    _P("database.sslfactory", status=WARNED,
       doc="has no effect here: a pgjdbc Java class; sparkcdc connects with libpq, configured by database.sslmode, "
           "database.sslrootcert, database.sslcert and database.sslkey"),
    _P("database.tcpKeepAlive", "true", "bool"),
    _P("database.initial.statements"),
    _P("database.query.timeout.ms", "600000", "int", check=_non_negative,
       doc="statement_timeout of sparkcdc's SQL connections (set-up, planning, catalog, heartbeats; 0: none); "
           "not of the snapshot's COPY reads nor of the replication stream"),
    _P("connection.validation.timeout.ms", "60000", "int", check=_positive,
       doc="how long `sparkcdc validate --connect` and `sparkcdc status` wait for their connection to the server "
           "(rounded up to whole seconds: libpq's connect_timeout)"),
    _P("topic.prefix", required=True, check=_topic_prefix),
    # slot and publication
    _P("slot.name", "debezium", check=_slot_name),
    _P("slot.drop.on.stop", "false", "bool"),
    _P("slot.failover", "false", "bool",
       doc="the slots sparkcdc creates are failover slots (PostgreSQL 17+; refused on older servers), and a slot it "
           "finds is made one, so standbys with sync_replication_slots copy them (see docs/high-availability.md)"),
    _P("slot.stream.params", check=_stream_params,
       doc="name=value;... passed to pgoutput when the stream starts: origin=none (only changes made on this server, "
           "not those a replication origin applied) or origin=any, PostgreSQL 16+ (refused on an older server before "
           "streaming); any other parameter is refused, naming it (sparkcdc chooses pgoutput's others itself)"),
    _P("slot.max.retries", "6", "int", check=_non_negative),
    _P("slot.retry.delay.ms", "10000", "int", check=_non_negative,
       doc="the wait between attempts to reconnect to the slot when the server went away"),
    _P("publication.name", "dbz_publication"),
    _P("publication.autocreate.mode", "all_tables", "enum", ("all_tables", "disabled", "filtered", "no_tables")),
    _P("publish.via.partition.root", "false", "bool"),
    _P("replica.identity.autoset.values"),
    _P("offset.mismatch.strategy", "no_validation", "enum", ("no_validation", "trust_offset", "trust_slot", "trust_greater_lsn"),
       doc="a restarted query whose checkpoint and slot disagree: slot ahead: no_validation reads from the checkpoint "
           "and the server skips to the slot (warned), trust_offset refuses, trust_slot and trust_greater_lsn resume from "
           "the slot; checkpoint ahead: trust_offset and trust_greater_lsn advance the slot to it at the start (not with "
           "lsn.flush.mode=manual), no_validation and trust_slot leave the slot until a batch commits. A slot that is "
           "gone: trust_slot and trust_greater_lsn create it and go on from it, the others refuse"),
    _P("status.update.interval.ms", "10000", "int", check=_positive),
    _P("lsn.flush.mode", "connector", "enum", ("manual", "connector", "connector_and_driver"),
       doc="connector: the slot advances when Spark has committed a batch, to the batch's end, which already covers "
           "WAL that carried nothing captured (what connector_and_driver adds in Debezium), so both behave alike; "
           "manual: sparkcdc never advances the slot"),
    _P("lsn.flush.timeout.ms", "30000", "int", check=_positive,
       doc="how long the driver keeps trying to confirm a committed batch's end to the slot (pg_replication_slot_advance, "
           "retried while the last batch's walsender still holds the slot) before lsn.flush.timeout.action applies"),
    _P("lsn.flush.timeout.action", "fail", "enum", ("fail", "warn", "ignore"),
       doc="fail: the query stops with an error naming the slot; warn: a warning is logged and the slot is confirmed with "
           "a later batch; ignore: the same, without the warning"),
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
    _P("skipped.operations", "t", check=_skipped_operations),
    _P("skip.messages.without.change", "false", "bool",
       doc="an UPDATE whose captured columns did not change emits nothing (needs REPLICA IDENTITY FULL to compare)"),
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
    _P("converters", status=REFUSED, doc="custom converters are Java classes; sparkcdc cannot load them"),
    # topics
    _P("topic.naming.strategy", _TOPIC_NAMING, check=_topic_naming, doc="the default strategy only; other classes are refused"),
    _P("topic.delimiter", "."),
    _P("topic.cache.size", "10000", "int", check=_positive, status=WARNED,
       doc="has no effect here: sparkcdc names topics without Debezium's bounded name cache"),
    _P("topic.heartbeat.prefix", "__debezium-heartbeat"),
    _P("topic.heartbeat.name", ""),
    _P("topic.transaction", "transaction"),
    # snapshots
    _P("snapshot.mode", "initial", "enum",
       ("always", "initial", "initial_only", "no_data", "when_needed", "configuration_based", "custom"),
       old_values=(("never", "no_data"), ("exported", "initial")),
       refused_values=(("custom", "custom snapshotters are Java classes; sparkcdc cannot load them"),),
       doc="custom is refused; the older values never (no_data) and exported (initial) are aliases"),
    _P("snapshot.mode.configuration.based.snapshot.data", "false", "bool"),
    _P("snapshot.mode.configuration.based.snapshot.schema", "false", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here: the PostgreSQL connector keeps no schema history; table schemas come from the "
           "catalog and pgoutput's Relation messages"),
    _P("snapshot.mode.configuration.based.start.stream", "false", "bool"),
    _P("snapshot.mode.configuration.based.snapshot.on.schema.error", "false", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here: there is no schema history that could be invalid"),
    _P("snapshot.mode.configuration.based.snapshot.on.data.error", "false", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here yet: with configuration_based a lost slot stops the query; use snapshot.mode=when_needed "
           "for a new snapshot when the slot or its WAL is gone"),
    _P("snapshot.mode.custom.name", status=WARNED, doc=_JAVA_CUSTOM),
    _P("snapshot.isolation.mode", "serializable", "enum", ("serializable", "repeatable_read", "read_committed", "read_uncommitted"),
       status=WARNED, quiet=("serializable", "repeatable_read"),
       doc="has no effect here: every sparkcdc snapshot is taken from a newly created slot and reads the snapshot it "
           "exported at REPEATABLE READ, which is what Debezium does with a newly created slot whatever this says"),
    _P("snapshot.locking.mode", "none", "enum", ("shared", "none", "custom"),
       refused_values=(("custom", _CUSTOM_REFUSED),), doc="custom is refused"),
    _P("snapshot.locking.mode.custom.name", status=WARNED, doc=_JAVA_CUSTOM),
    _P("snapshot.query.mode", "select_all", "enum", ("select_all", "custom"),
       refused_values=(("custom", _CUSTOM_REFUSED),), doc="custom is refused"),
    _P("snapshot.query.mode.custom.name", status=WARNED, doc=_JAVA_CUSTOM),
    _P("snapshot.include.collection.list", kind="regex_list"),
    _P("snapshot.lock.timeout.ms", "10000", "int", check=_non_negative),
    _P("snapshot.select.statement.overrides",
       doc="as Debezium: the statement of snapshot.select.statement.overrides.SCHEMA.TABLE applies only to a "
           "table listed here; one for an unlisted table, or a listed table without one, is warned about"),
    _P("snapshot.fetch.size", "10240", "int", check=_positive, status=WARNED,
       doc="has no effect here: the snapshot reads by COPY, which streams a chunk's rows without a round trip per "
           "batch; the rows one Spark task reads are set by sparkcdc.snapshot.chunk.rows"),
    _P("snapshot.max.threads", "1", "int", check=_positive),
    _P("snapshot.max.threads.multiplier", "1", "int", check=_positive, status=WARNED, quiet=("1",),
       doc="has no effect here: a table's snapshot chunks are sized by sparkcdc.snapshot.chunk.rows (the rows one Spark "
           "task reads), not counted per thread"),
    _P("legacy.snapshot.max.threads", "false", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here: sparkcdc's snapshot always splits tables into chunks read by Spark tasks "
           "(sparkcdc.snapshot.chunk.rows); there is no table-per-thread algorithm"),
    _P("snapshot.delay.ms", "0", "int", check=_non_negative, doc="the driver waits this long before taking a snapshot"),
    _P("snapshot.tables.order.by.row.count", "disabled", "enum", ("disabled", "ascending", "descending"),
       status=WARNED, quiet=("disabled",),
       doc="has no effect here: Spark tasks read the tables' chunks in parallel; records keep the captured tables' order"),
    _P("streaming.delay.ms", "0", "int", check=_non_negative,
       doc="the driver waits this long before planning the first streaming batch of a query"),
    # incremental snapshots and signals
    _P("signal.data.collection", doc="the signal table (<schema>.<table>): signals arrive through the WAL, and incremental "
                                     "snapshots write their watermark rows there; added to a filtered publication"),
    _P("signal.enabled.channels", "source", check=_signal_channels,
       doc="source (the signal table), file (signal.file), kafka (signal.kafka.*); `sparkcdc signal` sends through them"),
    _P("signal.poll.interval.ms", "5000", "int", check=_non_negative,
       doc="the driver polls the file and kafka channels when it plans a batch, at most this often (the source channel "
           "arrives with the WAL)"),
    _P("signal.file", "file-signals.txt",
       doc="the file channel's file, one JSON signal per line; sparkcdc never empties it (Debezium does): the position "
           "read is kept in the checkpoint, and a replaced or truncated file is read from its start"),
    _P("signal.kafka.topic", doc="the kafka channel's topic (default <topic.prefix>-signal, as Debezium's code); every "
                                 "partition is read, from offsets kept in the checkpoint"),
    _P("signal.kafka.bootstrap.servers", doc="the kafka channel's brokers; required when the channel is enabled"),
    _P("signal.kafka.groupId", "kafka-signal",
       doc="the kafka channel's consumer group: offsets are committed to it after their batch commits, and a partition "
           "the checkpoint has no offset for starts at the group's (else the earliest)"),
    _P("signal.kafka.poll.timeout.ms", "100", "int", check=_non_negative,
       doc="how long one poll of the kafka channel waits for messages"),
    _P("incremental.snapshot.chunk.size", "1024", "int", check=_positive,
       doc="rows per incremental snapshot chunk: one chunk is read per micro-batch"),
    _P("incremental.snapshot.watermarking.strategy", "insert_insert", "enum", ("insert_insert", "insert_delete")),
    _P("incremental.snapshot.allow.schema.changes", "false", "bool", status=WARNED, quiet=("true",),
       doc="has no effect here: schema changes are always allowed during an incremental snapshot (a chunk's window holds "
           "no lock on its table, and a chunk is read as the table is when it is read)"),
    _P("read.only", "false", "bool",
       doc="incremental snapshots write no watermark rows: the chunk's snapshot (pg_current_snapshot) tells which "
           "streamed changes it contains"),
    _P("notification.enabled.channels", check=_notification_channels,
       doc="log (the connector's log); sink (records on notification.sink.topic.name, in the pipeline's output "
           "exactly once); see docs/signals.md"),
    _P("notification.sink.topic.name", required_with=("notification.enabled.channels", "sink"), check=_topic_prefix,
       doc="the topic of the sink channel's notification records"),
    # events and runtime behaviour
    _P("provide.transaction.metadata", "false", "bool"),
    _P("include.schema.changes", "false", "bool",
       doc="not a property of Debezium's PostgreSQL connector, which has no schema change topic (its Db2, MySQL, ... "
           "connectors have one): true sends a CREATE record for each table of the initial snapshot and one per "
           "table whose pgoutput Relation message content changes (ALTER; a new table: CREATE) to the <topic.prefix> "
           "topic, with ddl null, in every layout that writes topics (the changes layout carries row changes only); "
           "refused with sparkcdc.stream.decode.processes > 1 (see docs/schema-change-topic.md)"),
    _P("heartbeat.interval.ms", "0", "int", check=_non_negative),
    _P("heartbeat.action.query"),
    _P("event.processing.failure.handling.mode", "fail", "enum", ("fail", "warn", "skip")),
    _P("event.converting.failure.handling.mode", "warn", "enum", ("fail", "warn", "skip"), status=WARNED,
       doc="has no effect here: a value sparkcdc cannot convert raises an error; while streaming, "
           "event.processing.failure.handling.mode decides what happens to its event"),
    _P("max.batch.size", "2048", "int", check=_positive, status=WARNED, doc=_QUEUE),
    _P("max.queue.size", "8192", "int", check=_positive, status=WARNED, doc=_QUEUE),
    _P("max.queue.size.in.bytes", "0", "int", check=_non_negative, status=WARNED, doc=_QUEUE),
    _P("poll.interval.ms", "500", "int", check=_positive, status=WARNED, doc=_QUEUE),
    _P("xmin.fetch.interval.ms", "0", "int", check=_non_negative, status=WARNED, quiet=("0",),
       doc="has no effect here: source.xmin stays null"),
    _P("schema.refresh.mode", "columns_diff", "enum", ("columns_diff", "columns_diff_exclude_unchanged_toast"),
       status=WARNED, quiet=("columns_diff",),
       doc="has no effect here: sparkcdc takes a table's schema from each pgoutput Relation message, so it is always "
           "in step (what columns_diff promises); there is no catalog refresh to tune"),
    _P("errors.max.retries", "-1", "int",
       doc="how often sparkcdc run restarts after a retriable error such as a server restart (-1: no limit, 0: never)"),
    _P("retriable.restart.connector.wait.ms", "10000", "int", check=_non_negative,
       doc="the wait before sparkcdc run restarts after a retriable error"),
    _P("extended.headers.enabled", "true", "bool"),
    _P("custom.metric.tags", check=_metric_tags,
       doc="k1=v1,k2=v2: Debezium appends them to its metrics' MBean names; here each is a label of every sample of the "
           "Prometheus exposition (sparkcdc run --metrics-port, CdcMetricsListener.serve), named as a JMX exporter names "
           "labels (characters a label name cannot hold become _), and the JSON attributes carry the tags and the MBean "
           "names; a key an MBean name cannot hold, or one that would be plugin, name, context, table or wal_status, is "
           "refused"),
    _P("guardrail.collections.max", "0", "int", check=_non_negative,
       doc="the most tables a connector captures (0: no limit), counted when a query sets up (a new query, or a restart "
           "from its checkpoint); more: guardrail.collections.limit.action"),
    _P("guardrail.collections.limit.action", "warn", "enum", ("warn", "fail"),
       doc="warn: a warning names the number of captured tables and the limit, and the query goes on; fail: the query "
           "stops before it reads anything, naming guardrail.collections.max"),
    _P("custom.sanitize.pattern", SANITIZE_PATTERN, check=_regex,
       doc="properties whose name matches (case-insensitively, in full) show ******** instead of their value wherever "
           "sparkcdc shows a configuration (a ConnectorConfig's repr, `sparkcdc validate`); password properties always do"),
    _P("executor.shutdown.timeout.ms", "4000", "int", check=_non_negative, status=WARNED,
       doc="has no effect here: Debezium's task executor; sparkcdc's work runs in Spark tasks, which stop with the query"),
    _P("query.fetch.size", "0", "int", check=_non_negative, status=WARNED, quiet=("0",),
       doc="has no effect here: the stream reads the replication protocol and snapshots read by COPY; nothing is fetched "
           "through JDBC (the rows one snapshot task reads: sparkcdc.snapshot.chunk.rows)"),
    _P("statistics.metrics.enabled", "true", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here: Debezium 3.x's statistics (MilliSecondsBehindSource quantiles) are not served; the "
           "metrics sparkcdc serves are in docs/metrics.md"),
    _P("memory.management.schemas.class", _TABLE_MAPPING, status=WARNED, quiet=(_TABLE_MAPPING,),
       doc="has no effect here: a Java storage class for Debezium's in-memory table schemas; sparkcdc keeps each table's "
           "schema per pgoutput Relation message"),
    _P("memory.management.tables.class", _TABLE_MAPPING, status=WARNED, quiet=(_TABLE_MAPPING,),
       doc="has no effect here: a Java storage class for Debezium's in-memory tables; sparkcdc keeps each table's "
           "schema per pgoutput Relation message"),
    _P("sourceinfo.struct.maker", _SOURCE_INFO, status=REFUSED, quiet=(_SOURCE_INFO,),
       doc="another Java class would shape the source block differently, and sparkcdc cannot load one; it writes the "
           "PostgreSQL connector's own source block"),
    _P("transaction.metadata.factory", _TX_FACTORY, status=REFUSED, quiet=(_TX_FACTORY,),
       doc="another Java class would shape transaction metadata differently, and sparkcdc cannot load one; it writes "
           "Debezium's default transaction metadata (provide.transaction.metadata)"),
    _P("openlineage.integration.enabled", "false", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here: sparkcdc emits no OpenLineage events"),
    _P("include.schema.comments", "false", "bool", status=WARNED, quiet=("false",),
       doc="has no effect here: column comments are not added to the schemas"),
    # sparkcdc's own (Spark runtime)
    _P("sparkcdc.strict", "false", "bool",
       doc="true: a property name sparkcdc does not know, a transform option its class does not have, is an error naming "
           "it and the closest known name, instead of a warning (the command line's --strict sets it)"),
    _P("sparkcdc.state.location", doc="directory for the streaming state handed between micro-batches"),
    _P("sparkcdc.output.topic.files",
       doc="with sparkcdc.output.layout=topic_files: the topic files directory the reader tasks write into "
           "(local, or mounted at the same path on every node); refused with any other layout"),
    _P("sparkcdc.output.topic.files.compression", "none", "enum", ("none", "zstd"),
       doc="with sparkcdc.output.layout=topic_files: (zstd) the reader tasks write each topic file zstd-compressed "
           "(level 1, part-*.jsonl.zst; Spark, zstdcat and jq via zstdcat read them): the JSON lines with schemas "
           "compress about 100x, and writing their bytes was the largest single cost of a streamed change; refused with "
           "other layouts"),
    _P("sparkcdc.output.kafka.bootstrap.servers",
       doc="with sparkcdc.output.layout=kafka: the Kafka cluster the reader tasks produce to (required); refused with any "
           "other layout"),
    _P("sparkcdc.output.kafka.pipeline.id",
       doc="with sparkcdc.output.layout=kafka: the pipeline's name in Kafka, in its transactional ids "
           "(sparkcdc-<id>-<task>) and fence topic (_sparkcdc.fence.<id>); one per checkpoint (default: topic.prefix)"),
    _P("sparkcdc.output.kafka.topic.partitions", "1", "int",
       doc="with sparkcdc.output.layout=kafka: partitions of a topic the tasks create (-1: the broker's default)"),
    _P("sparkcdc.output.kafka.topic.replication.factor", "-1", "int",
       doc="with sparkcdc.output.layout=kafka: replication factor of a topic the tasks create (-1: the broker's default)"),
    _P("sparkcdc.output.kafka.topic.compact", "false", "bool",
       doc="with sparkcdc.output.layout=kafka: create missing topics with cleanup.policy=compact"),
    _P("sparkcdc.output.kafka.timeout.ms", "30000", "int", check=_positive,
       doc="with sparkcdc.output.layout=kafka: the limit of each exchange with the brokers outside producing records "
           "(metadata, topic creation, starting and committing a transaction, reading the fence)"),
    _P("sparkcdc.stream.slots", "1", "int", check=_positive,
       doc="parallel streaming: the captured tables split over this many replication slots and publications "
           "(<slot.name>_<i>, <publication.name>_<i> for i > 0), read by as many tasks per micro-batch; per-table order "
           "is kept, a transaction spanning tables of several slots is seen in each of their streams "
           "(see docs/spark-source.md, \"Parallel streaming over several slots\")"),
    _P("sparkcdc.stream.slots.assignment", check=_slot_assignment,
       doc="with sparkcdc.stream.slots > 1: <schema>.<table>:<slot index>,... places the listed tables; the others "
           "go to the slot their name hashes to (crc32 of schema.table)"),
    _P("sparkcdc.stream.decode.processes", "auto", "count_or_auto",
       doc="with sparkcdc.output.layout=topic_files or changes: the stream task decodes its slot's changes in this "
           "many processes of its own (whole transactions each; their topic files' bytes, or the changes' typed blocks, "
           "in commit order), while it reads the WAL; auto: as many as the executor's cores (at most 4) where they pay "
           "(zstd topic files and the changes layout, which apply_changes and --apply-to read; see docs/performance.md), "
           "else 1; give the task as many cores (spark.task.cpus) on a cluster; a number above 1 is refused with signals "
           "(signal.data.collection), include.schema.changes=true or post.processors, which auto leaves at 1 "
           "(see docs/spark-source.md, \"Decoding one slot in several processes\")"),
    _P("sparkcdc.stream.decode.chunk.messages", "16384", "int", check=_positive,
       doc="with several decoding processes (sparkcdc.stream.decode.processes): WAL messages a process is given at least before the next "
           "one takes over, at the next commit (a transaction is never split between processes)"),
    _P("sparkcdc.max.batch.wal.bytes", "268435456", "int", check=_non_negative,
       doc="WAL bytes one streaming micro-batch covers at most (0: no limit)"),
    _P("sparkcdc.snapshot.chunk.rows", "100000", "int", check=_positive,
       doc="rows a parallel snapshot chunk is sized to hold (one Spark task each)"),
    _P("sparkcdc.snapshot.render.sql", "true", "bool",
       doc="let PostgreSQL render the snapshot's key and row payloads as JSON where every column's type allows"),
    _P("sparkcdc.apply.changes.per.task", "200000", "int", check=_positive,
       doc="apply: a table's micro-batch beyond this many changes is split by key over several fold tasks "
           "(at least the cluster's default parallelism)"),
    _P("sparkcdc.apply.schema.evolution", "evolve", "enum", ("evolve", "strict", "ignore-new-columns"),
       doc="apply: how a mirror follows its source table's shape (docs/schema-evolution.md): evolve adds, renames and "
           "widens columns and keeps dropped ones; strict stops at any change, naming it; ignore-new-columns does what "
           "evolve does but leaves new columns out of the mirror. A change no mirror can follow safely (a narrower or "
           "incompatible type, a key change) stops under every policy"),
    _P("sparkcdc.apply.schema.dropped.columns", "keep", "enum", ("keep", "drop"),
       doc="apply: a column dropped from the source table stays in the mirror, nullable, with the values it had (keep), "
           "or is dropped from it (drop)"),
    _P("sparkcdc.output.layout", "columns", "enum", ("columns", "lines", "changes", "topic_files", "kafka"),
       doc="the source's rows: the record's columns; (lines) topic, its topic-files JSON line, lsn, commit_lsn, ordinal; "
           "(topic_files) the reader tasks write the topic files under sparkcdc.output.topic.files themselves and the rows "
           "name them (topic, file, records), for the topic files sink to publish; "
           "(changes) each table's row changes as typed Arrow blocks, no JSON (what table_changes and apply_changes read fastest); "
           "(kafka) the reader tasks produce the records to Kafka exactly once themselves (sparkcdc.output.kafka.*) and the rows "
           "count them (index, topic, records, skipped)"),
    # converters (docs/converters.md): Kafka Connect's JsonConverter, Debezium's CloudEventsConverter for values
    _P("key.converter", JSON_CONVERTER, check=_converter("key"),
       doc="org.apache.kafka.connect.json.JsonConverter only; a converter that needs a schema registry (Avro, Protobuf, "
           "JSON Schema) or any other class is refused, naming it"),
    _P("value.converter", JSON_CONVERTER, check=_converter("value"),
       doc="org.apache.kafka.connect.json.JsonConverter or io.debezium.converters.CloudEventsConverter (JSON envelope and "
           "data, as Debezium writes them: docs/converters.md); a converter that needs a schema registry (Avro, Protobuf, "
           "JSON Schema) or any other class is refused, naming it"),
    _P("header.converter", JSON_CONVERTER, check=_converter("header"),
       doc="org.apache.kafka.connect.json.JsonConverter only (headers are written with their schemas); any other class "
           "(SimpleHeaderConverter among them) is refused, naming it"),
    _P("key.converter.class", JSON_CONVERTER, check=_converter("key"),
       doc="Debezium's embedded engine's name of key.converter (the same values; the two must agree)"),
    _P("value.converter.class", JSON_CONVERTER, check=_converter("value"),
       doc="Debezium's embedded engine's name of value.converter (the same values; the two must agree)"),
    _P("header.converter.class", JSON_CONVERTER, check=_converter("header"),
       doc="Debezium's embedded engine's name of header.converter (the same values; the two must agree)"),
    _P("key.converter.schemas.enable", "true", "bool"),
    _P("value.converter.schemas.enable", "true", "bool",
       doc="JsonConverter's; with CloudEventsConverter it has no effect (as in Debezium: value.converter.json.schemas.enable "
           "says whether data carries its schema), and a value other than true is warned about"),
    _P("header.converter.schemas.enable", "true", "bool",
       refused_values=(("false", "false is not implemented: sparkcdc writes headers with their schemas (the typed views "
                                 "read the __debezium.oldkey header so)"),),
       doc="true only (false is refused)"),
    *_json_settings("key.converter.", "JsonConverter"),
    *_json_settings("value.converter.", "JsonConverter"),
    *_json_settings("header.converter.", "JsonConverter"),
    _P("value.converter.serializer.type", "json", "enum", ("json", "avro"), refused_values=(("avro", "avro " + _NO_REGISTRY),),
       doc="CloudEventsConverter: the envelope in JSON (avro is refused)"),
    _P("value.converter.data.serializer.type", "json", "enum", ("json", "avro"),
       refused_values=(("avro", "avro " + _NO_REGISTRY),), doc="CloudEventsConverter: the data attribute in JSON (avro is refused)"),
    _P("value.converter.json.schemas.enable", "true", "bool",
       doc="CloudEventsConverter: whether the data attribute is {\"schema\", \"payload\"} (true) or the bare before and after"),
    *_json_settings("value.converter.json.", "the JsonConverter of CloudEventsConverter's data"),
    _P("value.converter.extension.attributes.enable", "true", "bool",
       doc="CloudEventsConverter: whether the iodebezium* attributes (op, every source field, the transaction) are written"),
    _P("value.converter.metadata.source", "value,id:generate,type:generate,traceparent:header,dataSchemaName:generate",
       check=metadata_source_problem,
       doc="CloudEventsConverter: value with id:generate and type:generate; header (global, or for id or type) is refused: "
           "it reads headers that Kafka's HeaderFrom or InsertHeader would add, and no transform sparkcdc runs adds them"),
    _P("value.converter.opentelemetry.tracing.attributes.enable", "false", "bool",
       refused_values=(("true", "true takes each CloudEvent's traceparent from a 'traceparent' header, which no transform "
                                "sparkcdc runs adds: Debezium's converter would fail on every change event"),),
       doc="CloudEventsConverter: false only (true is refused)"),
    _P("value.converter.schema.data.name.source.header.enable", "false", "bool",
       doc="CloudEventsConverter: with metadata.source's dataSchemaName:header it is refused (no transform sparkcdc runs adds "
           "a dataSchemaName header); otherwise it has no effect, as in Debezium, and is warned about"),
    _P("value.converter.schema.name.adjustment.mode", "none", "enum", ("none", "avro", "avro_unicode"), status=WARNED,
       quiet=("none",), doc="has no effect here (nor in Debezium with serializer.type=json): it adjusts the names of the "
                            "CloudEvents Avro schemas, and the JSON envelope has none"),
    _P("value.converter.schema.cloudevents.name", status=WARNED,
       doc="has no effect here (nor in Debezium with serializer.type=json): it names the CloudEvents Avro schema, and the "
           "JSON envelope has none"),
    # older names (Debezium 1.x, the PostgreSQL connector manual in reference/seeds)
    _P("database.server.name", check=_topic_prefix, status=ALIAS, alias_of=("topic.prefix",), translate=_same_value("topic.prefix"),
       doc="removed in Debezium 2.0; its value is the topic prefix"),
    _P("heartbeat.topics.prefix", status=ALIAS, alias_of=("topic.heartbeat.prefix",),
       translate=_same_value("topic.heartbeat.prefix"), doc="renamed in Debezium 2.0"),
    _P("toasted.value.placeholder", status=ALIAS, alias_of=("unavailable.value.placeholder",),
       translate=_same_value("unavailable.value.placeholder"), doc="renamed in Debezium 1.8; hex: works the same"),
    _P("truncate.handling.mode", kind="enum", choices=("skip", "include"), status=ALIAS, alias_of=("skipped.operations",),
       translate=_truncate_handling, merges=True, doc="skip adds t to skipped.operations, include removes it (Debezium 1.x skipped no "
                                         "operation by default, so include alone means skipped.operations=none)"),
    _P("sanitize.field.names", kind="bool", status=ALIAS, alias_of=("schema.name.adjustment.mode", "field.name.adjustment.mode"),
       translate=_sanitize_field_names, doc="true: both adjustment modes avro; false: none"),
    _P("flush.lsn.source", kind="bool", status=ALIAS, alias_of=("lsn.flush.mode",), translate=_flush_lsn_source,
       doc="true: lsn.flush.mode=connector; false: manual"),
    _P("snapshot.custom.class", status=REFUSED,
       doc="a Java Snapshotter class (replaced by snapshot.mode.custom.name); sparkcdc cannot load Java classes"),
    # Kafka Connect settings a connector configuration often carries
    _P("transforms", kind="list",
       doc="single message transforms, run as Kafka Connect runs them on every record sparkcdc emits (topic files, "
           "Kafka, lines, columns); the changes layout, typed views and apply_changes read records before them "
           "(docs/transforms.md lists the classes and their options)"),
    _P("predicates", kind="list", doc="predicates of the transforms (transforms.<alias>.predicate), as Kafka Connect's"),
    _P("post.processors", kind="list",
       doc="Debezium's post processors, run on the streamed change events before anything else sees them (transforms, "
           "the changes layout, views, apply_changes): io.debezium.processors.reselect.ReselectColumnsPostProcessor, which "
           "reads columns that arrive as the unavailable-value (TOAST) placeholder or null again, by key, from the table "
           "as it is when the batch is read (as Debezium: the current row, not the row as of the change); other classes are "
           "refused, naming them; not with sparkcdc.stream.decode.processes > 1. Settings: post.processors.<name>.*, or "
           "the deprecated <name>.* (warned, as Debezium does)"),
    _P("errors.tolerance", "none", "enum", ("none", "all"),
       refused_values=(("all", "would skip records that fail to convert, transform or be written, without a word; sparkcdc "
                               "stops at the first failing record, naming it (errors.tolerance=none)"),),
       doc="none: a failing record stops the run, naming it; all (skip failing records) is refused"),
    _P("errors.log.enable", "false", "bool", status=WARNED, quiet=("false",), doc=_CONNECT_ERROR_LOG),
    _P("errors.log.include.messages", "false", "bool", status=WARNED, quiet=("false",), doc=_CONNECT_ERROR_LOG),
    _P("errors.retry.timeout", "0", "int", status=WARNED, quiet=("0",), doc=_CONNECT_RETRIES),
    _P("errors.retry.delay.max.ms", "60000", "int", check=_non_negative, status=WARNED, doc=_CONNECT_RETRIES),
    _P("exactly.once.support", "requested", "enum", ("requested", "required"),
       doc="both are met: every output sparkcdc writes is written exactly once (topic files, the kafka layout's "
           "transactions, apply_changes); with the columns, lines and changes layouts, your sink decides"),
    _P("transaction.boundary", "poll", "enum", ("poll", "interval", "connector"), status=WARNED, quiet=("poll",),
       doc=_TRANSACTION_BOUNDARY),
    _P("transaction.boundary.interval.ms", status=WARNED, doc=_TRANSACTION_BOUNDARY),
    _P("offsets.storage.topic", status=WARNED,
       doc="has no effect here: offsets live in the Spark checkpoint (sparkcdc run --checkpoint)"),
    _P("config.action.reload", "restart", "enum", ("restart", "none"), status=WARNED, quiet=("none",),
       doc="has no effect here: sparkcdc reads its configuration (and ${env:...} references) once, when a run starts"),
    _P("tasks.max.enforce", "true", "bool", status=WARNED, quiet=("true",),
       doc="has no effect here: the PostgreSQL connector runs one task; sparkcdc's parallelism is Spark's"),
    _P("connector.plugin.version", status=WARNED,
       doc="has no effect here: a Kafka Connect plugin version; sparkcdc has one implementation of the connector"),
    _P("topic.creation.groups", kind="list",
       doc="with sparkcdc.output.layout=kafka: the groups of topic.creation.<group>.* settings, as Kafka Connect's (a topic "
           "takes the first listed group whose include matches and exclude does not, else topic.creation.default.*); "
           "other layouts create no topics and warn"),
    _P("topic.creation.enable", "true", "bool",
       doc="with sparkcdc.output.layout=kafka (Kafka Connect's worker setting): false leaves topic.creation.* unused, and "
           "missing topics are created with sparkcdc.output.kafka.topic.*"),
]

PROPERTIES: dict[str, Property] = {p.name: p for p in _ALL}

FAMILIES: list[Family] = [
    Family(re.compile(r"column\.truncate\.to\.(\d+)\.chars"), "column.truncate.to.<n>.chars"),
    Family(re.compile(r"column\.mask\.with\.(\d+)\.chars"), "column.mask.with.<n>.chars"),
    Family(re.compile(r"column\.mask\.hash\.(?:v2\.)?([^.]+)\.with\.salt\.(.+)"),
           "column.mask.hash.<algorithm>.with.salt.<salt>, column.mask.hash.v2.<algorithm>.with.salt.<salt>",
           doc="the salt, then the value, digested with the Java algorithm (MD5, SHA-1, SHA-256, SHA-512, SHA3-256...), in "
               "lower-case hex cut to the column's length: the value as Java serialises a String (v1), or its UTF-8 bytes "
               "(v2, what Debezium does on Java 18 and later, whose default charset is UTF-8)"),
    Family(re.compile(r"snapshot\.select\.statement\.overrides\..+"), "snapshot.select.statement.overrides.<schema>.<table>",
           doc="applies when the table is listed in snapshot.select.statement.overrides (as in Debezium)"),
    Family(re.compile(r"sparkcdc\.output\.kafka\.client\..+"), "sparkcdc.output.kafka.client.*",
           doc="with sparkcdc.output.layout=kafka: librdkafka settings of every client (producers, admin, fence consumer), prefix "
               "stripped (security, SASL, linger.ms, compression.type); enable.idempotence and acks=all stay required"),
    Family(re.compile(r"signal\.consumer\..+"), "signal.consumer.*",
           doc="the kafka signal channel's librdkafka client settings, prefix stripped (security, timeouts); also used by "
               "`sparkcdc signal` to produce; Java (de)serializer classes are ignored with a warning"),
    Family(re.compile(r"signal\..+"), "signal.*", WARNED, _SIGNALS),
    Family(re.compile(r"notification\..+"), "notification.*", WARNED,
           "has no effect here: sparkcdc's notification channels are log and sink, configured by "
           "notification.enabled.channels and notification.sink.topic.name"),
    Family(re.compile(r"driver\..+"), "driver.*", WARNED,
           "has no effect here: pgjdbc driver settings; sparkcdc connects with libpq (database.* properties)"),
    Family(re.compile(r"(key|value|header)\.converter\..+"), "key.converter.*, value.converter.*, header.converter.*", WARNED,
           "has no effect here: not a setting of any converter sparkcdc runs (Kafka's converters ignore settings they do not "
           "have; CloudEventsConverter's avro.* ones serve its refused Avro serializers)"),
    Family(re.compile(r"converters?\..+"), "converter.*, converters.*", WARNED,
           "has no effect here: settings of custom converters, which sparkcdc refuses (converters)"),
    Family(re.compile(r"transforms\..+|predicates\..+"), "transforms.<alias>.*, predicates.<alias>.*",
           doc="type, predicate, negate and the class's options; an option the class does not have is reported with "
               "the closest one it has (refused under sparkcdc.strict)"),
    Family(re.compile(r"post\.processors\..+"), "post.processors.<name>.*",
           doc="type and the reselect post processor's options: reselect.columns.include.list / exclude.list "
               "(schema.table:column regexes), reselect.unavailable.values (true), reselect.null.values (true), "
               "reselect.use.event.key (false), reselect.error.handling.mode (warn, fail); an option it does not have is "
               "reported with the closest one (refused under sparkcdc.strict)"),
    Family(re.compile(r"topic\.creation\.default\..+"), "topic.creation.default.*",
           doc="with sparkcdc.output.layout=kafka: partitions, replication.factor and any topic-level setting (cleanup.policy, "
               "compression.type, retention.ms...) of the topics the reader tasks create, as Kafka Connect's default group; "
               "partitions and replication.factor stand for sparkcdc.output.kafka.topic.partitions / .replication.factor "
               "(the two may not disagree); other layouts create no topics and warn"),
    Family(re.compile(r"topic\.creation\.[^.]+\..+"), "topic.creation.<group>.*",
           doc="with sparkcdc.output.layout=kafka: a group of topic.creation.groups: include and exclude (regular expression "
               "lists over topic names), partitions and replication.factor (else the default group's) and topic-level "
               "settings, as Kafka Connect's; other layouts create no topics and warn"),
    Family(re.compile(r"errors\.deadletterqueue\..+"), "errors.deadletterqueue.*", WARNED,
           "has no effect here (nor in Kafka Connect for a source connector): dead-letter queues take the records a sink "
           "tolerated; a failing record stops sparkcdc (errors.tolerance=none)"),
    Family(re.compile(r"(producer|consumer|admin)\.override\..+"), "producer.override.*, consumer.override.*, admin.override.*",
           WARNED, "has no effect here: Kafka Connect's per-connector client settings; the kafka layout's clients take "
                   "sparkcdc.output.kafka.client.* (librdkafka names), the kafka signal channel's signal.consumer.*"),
    Family(re.compile(r"openlineage\.integration\..+"), "openlineage.integration.*", WARNED,
           "has no effect here: settings of OpenLineage events, which sparkcdc does not emit"),
    Family(re.compile(r"database\..+"), "database.*", WARNED,
           "has no effect here: Debezium hands database.* settings it does not know to the pgjdbc driver; sparkcdc connects "
           "with libpq, configured by the database.* properties of this table"),
    Family(re.compile(r"offset\..+"), "offset.*", WARNED,
           "has no effect here: offsets live in the Spark checkpoint (sparkcdc run --checkpoint)"),
    Family(re.compile(r"schema\.history\.internal(\..+)?"), "schema.history.internal.*", WARNED,
           "has no effect here: the PostgreSQL connector keeps no schema history"),
    Family(re.compile(r"internal\..+"), "internal.*", WARNED, "has no effect here: Debezium's internal settings"),
]


def family_of(name: str) -> Family | None:
    """The parameterised family ``name`` belongs to (the first that matches), if any."""
    return next((family for family in FAMILIES if family.pattern.fullmatch(name)), None)


def closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name most like ``name`` (a typo's likely intent), if one is close enough.

    One measure for every report of an unknown name (a property here, a transform's option in
    :mod:`sparkcdc.debezium.transforms.chain`), so that they all suggest alike."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return matches[0] if matches else None


#: What an unknown name is compared with: every property and every family as the docs show it.
_KNOWN_NAMES = (*PROPERTIES, *(shown.strip() for family in FAMILIES for shown in family.shown.split(",")))


@lru_cache(maxsize=1024)
def closest_known(name: str, cutoff: float = 0.6, *, families: bool = True) -> str | None:
    """The property (or, with ``families``, family as the docs show it) a name sparkcdc does not know
    most likely means.

    Cached: the library path builds the same configuration many times (every Spark callback)."""
    return closest(name, _KNOWN_NAMES if families else [known for known in PROPERTIES if known != name], cutoff)
