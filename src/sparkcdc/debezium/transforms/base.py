"""What every single message transform and predicate is made of: its options, its errors, and the
per-schema compilation that keeps a transform's work per record small.

Kafka Connect configures a transform as ``transforms.<alias>.<option>``; each class here declares its
options (:class:`Option`: name, default, kind, older names) once, and :class:`Options` reads them for
one alias, typed, naming ``transforms.<alias>.<option>`` in every error. An option a class does not
have is reported by the chain (:mod:`.chain`) with the closest name it has, as unknown connector
properties are.

Transforms are compiled, not interpreted: a transform's decisions that depend only on the record's
schema (which fields to keep, where a field is, what the new schema is) are made once per schema
object by :class:`PerSchema`, and per record only the values move. A table version's schemas are
shared objects, so the cache is hit record after record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from ...errors import ConfigurationError, PipelineError
from ..connect import ConnectSchema
from ..property_table import split_list
from ..records import ChangeRecord, Header

__all__ = [
    "Option", "Options", "PerSchema", "Predicate", "RecordError", "Transform", "TransformConfigError", "copy_record",
]


class TransformConfigError(ConfigurationError):
    """A transform or predicate is configured wrongly; ``property`` names the property at fault
    (``transforms.<alias>.<option>``)."""


class RecordError(PipelineError):
    """A transform cannot transform a record (Kafka Connect's ``DataException``): the run stops, naming
    the transform, the record's topic and its LSN, and nothing of the batch is committed."""

    def __init__(self, alias: str, record: ChangeRecord, message: str) -> None:
        where = f"{record.schema}.{record.table}" if record.table else None
        super().__init__(f"transform {alias!r} failed on a record of topic {record.topic!r}: {message}",
                         lsn=record.lsn or None, table=where)
        self.alias = alias


_KINDS = ("string", "int", "bool", "enum", "list", "password")


@dataclass(frozen=True)
class Option:
    """One option of a transform or predicate class, as Connect's ``ConfigDef`` declares it.

    ``old_names`` are deprecated names that still set it (their use is warned about, naming this
    one); ``required`` options have no default; ``choices`` are the values of an enum (compared in
    lower case, as Debezium's enums are)."""

    name: str
    default: str | None = None
    kind: str = "string"
    choices: tuple[str, ...] = ()
    required: bool = False
    old_names: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"option {self.name}: kind {self.kind!r} is not one of {_KINDS}")

    def problem(self, raw: str) -> str | None:
        if self.kind == "int":
            try:
                int(raw.strip())
            except ValueError:
                return f"{raw!r} is not an integer"
        elif self.kind == "bool":
            if raw.strip().lower() not in ("true", "false"):
                return f"{raw!r} is not a boolean (true or false)"
        elif self.kind == "enum" and raw.strip().lower() not in self.choices:
            return f"{raw!r} is not one of {', '.join(self.choices)}"
        return None


class Options:
    """One alias's option values (prefix ``transforms.<alias>.`` stripped), typed by the class's
    :class:`Option` declarations. Values given under an option's old name count as given under it."""

    def __init__(self, prefix: str, declared: tuple[Option, ...], given: Mapping[str, str], warnings: list[str]) -> None:
        self.prefix = prefix
        self._declared = {option.name: option for option in declared}
        self._given: dict[str, str] = {}
        self.explicit: set[str] = set()
        for option in declared:
            for old in option.old_names:
                if old in given and given[old] != "":
                    if option.name in given and given[option.name] != "":
                        continue  # the current name wins; the class decides whether both together are an error
                    warnings.append(f"{prefix}{old} is deprecated: use {prefix}{option.name} (read as that)")
                    self._given[option.name] = given[old]
            if option.name in given and given[option.name] != "":
                self._given[option.name] = given[option.name]
            if option.name in self._given:
                self.explicit.add(option.name)
                problem = option.problem(self._given[option.name])
                if problem:
                    raise TransformConfigError(problem, prop=prefix + option.name)
            elif option.required:
                raise TransformConfigError("is required", prop=prefix + option.name)
        self.raw_given = dict(given)
        self._warnings = warnings

    def error(self, option: str, message: str) -> TransformConfigError:
        return TransformConfigError(message, prop=self.prefix + option)

    def warn(self, option: str, message: str) -> None:
        """Reports what an accepted option does differently here (with the configuration's warnings)."""
        self._warnings.append(f"{self.prefix}{option}: {message}")

    def given(self, name: str) -> bool:
        return name in self.explicit

    def raw(self, name: str) -> str | None:
        if name not in self._declared:
            raise KeyError(f"{name} is not a declared option")  # a programming error, not the user's
        value = self._given.get(name)
        return self._declared[name].default if value is None else value

    def text(self, name: str) -> str:
        value = self.raw(name)
        return "" if value is None else value

    def enum(self, name: str) -> str:
        return self.text(name).strip().lower()

    def int(self, name: str) -> int:
        return int(self.text(name).strip())

    def bool(self, name: str) -> bool:
        return self.text(name).strip().lower() == "true"

    def list(self, name: str) -> list[str]:
        return split_list(self.raw(name))


class Transform:
    """A single message transform: :meth:`apply` turns a record into a record, or None to drop it.

    Subclasses declare ``OPTIONS`` and read them in ``__init__`` (every configuration error raised
    there, before anything connects); ``apply`` is called once per record and must not be slower
    than its job needs (compile per schema with :class:`PerSchema`)."""

    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    #: Options older Debezium releases had and the current one no longer reads (option -> what to
    #: use instead): reported by the chain as such, not as typos, and refused under strict.
    REMOVED: ClassVar[Mapping[str, str]] = {}

    def __init__(self, alias: str, options: Options) -> None:
        self.alias = alias
        self.options = options

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        raise NotImplementedError

    def fail(self, record: ChangeRecord, message: str) -> RecordError:
        return RecordError(self.alias, record, message)


class Predicate:
    """A predicate of Kafka Connect's ``predicates=``: :meth:`test` says whether a record matches."""

    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, alias: str, options: Options) -> None:
        self.alias = alias
        self.options = options

    def test(self, record: ChangeRecord) -> bool:
        raise NotImplementedError


T = TypeVar("T")


class PerSchema(Generic[T]):
    """What ``build`` makes of a schema, made once per schema object.

    Keyed by identity (the schema object is held, so its id cannot be reused while cached), checked
    against the last schema first: a table's records share their schema objects. Bounded, for
    runtimes that would make a schema per record: the cache starts over when full."""

    __slots__ = ("_build", "_entries", "_last", "_last_value", "_limit")

    def __init__(self, build: Callable[[ConnectSchema | None], T], limit: int = 1024) -> None:
        self._build = build
        self._entries: dict[int, tuple[ConnectSchema | None, T]] = {}
        self._last: ConnectSchema | None | object = _NOTHING
        self._last_value: T | None = None
        self._limit = limit

    def __call__(self, schema: ConnectSchema | None) -> T:
        if schema is self._last:
            return self._last_value  # type: ignore[return-value]
        entry = self._entries.get(id(schema))
        if entry is None or entry[0] is not schema:
            if len(self._entries) >= self._limit:
                self._entries.clear()
            entry = (schema, self._build(schema))
            self._entries[id(schema)] = entry
        self._last, self._last_value = schema, entry[1]
        return entry[1]


_NOTHING = object()


def copy_record(
    record: ChangeRecord,
    *,
    topic: str | None = None,
    key: Any = _NOTHING,
    key_schema: Any = _NOTHING,
    value: Any = _NOTHING,
    value_schema: Any = _NOTHING,
    headers: tuple[Header, ...] | None = None,
) -> ChangeRecord:
    """A new record with the parts given replaced (Connect's ``record.newRecord``); its position
    (LSNs, ordinal), operation, table and partition stay the record's, so ordering and exactly-once
    downstream are unchanged by a transform."""
    new = ChangeRecord(
        record.topic if topic is None else topic,
        record.key if key is _NOTHING else key,
        record.key_schema if key_schema is _NOTHING else key_schema,
        record.value if value is _NOTHING else value,
        record.value_schema if value_schema is _NOTHING else value_schema,
        record.headers if headers is None else headers,
        record.op, record.schema, record.table, record.lsn, record.commit_lsn, record.ordinal, record.tx_id,
        record.source_ts_us, record.snapshot, record.table_schema,
    )
    new.partition = record.partition
    return new
