"""Debezium's ``TimezoneConverter``: the temporal columns of change events shown in another timezone.

What it converts, as Debezium 3.6.3 does (each kind checked against it, including daylight-saving
edges; tests/conformance/test_transforms_debezium_conformance.py and tests/debezium/transforms/
test_timezone.py), in the ``before`` and ``after`` rows of change events (envelopes) only:

* ``io.debezium.time.ZonedTimestamp`` (TIMESTAMPTZ): the same instant, written with the offset the
  zone has at the value's UTC wall-clock time read as local time (so ``2024-11-03T05:30:00Z`` in
  America/New_York is ``2024-11-03T00:30:00-05:00``, although that instant is still -04:00), as Java's
  ``ISO_OFFSET_DATE_TIME`` writes it: seconds always, the fraction without trailing zeros, ``Z`` for
  +00:00.
* ``io.debezium.time.ZonedTime`` (TIMETZ): moved to the offset the zone has now.
* ``MicroTimestamp``, ``NanoTimestamp``, ``Timestamp`` and Connect's ``Timestamp`` (TIMESTAMP, in
  every ``time.precision.mode``): the value, read as a local date-time in the zone, becomes that
  local time's UTC instant: ``value - offset(value as wall clock)`` (a wall clock in a
  daylight-saving gap or overlap takes the offset before the transition, as Java does).
* the source block's ``ts_ms``, ``ts_us`` and ``ts_ns``: ``value + offset(at that instant)``, each
  only where a matching ``include.list`` rule names it (``source.ts_us``), or, with an
  ``exclude.list``, all three but the excluded ones where a matching rule names a ``source.`` field
  (any: ``source.db`` too).

The create of a primary key change shares its delete's source block in Debezium, so its source
times are converted twice (see ``_second_of_key_change``). Dates, times without zone (``MicroTime``, ``Time``, ...), the ``isostring`` types, arrays, keys and
other records are left as they are; schemas do not change.

``include.list`` / ``exclude.list`` (one or the other) hold rules ``source:<table>[:<field>]``,
``topic:<topic>[:<field>]`` or ``<table or topic>:<field>``, where ``<field>`` is ``before.<column>``,
``after.<column>``, ``source.ts_ms`` or a column of both rows. The list is checked as Debezium checks
it (names of letters, digits, ``_`` and ``.``; a three-part rule only first), so a configuration
Debezium refuses is refused here too.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..connect import ConnectSchema
from ..records import ChangeRecord
from .base import Option, Options, Transform, copy_record
from .envelope import is_envelope

__all__ = ["TimezoneConverter"]

# Schema name -> how its values convert ("zoned" strings, "time" strings, or the unit per second of
# a local-time epoch count).
_ZONED_TIMESTAMP: Final = "io.debezium.time.ZonedTimestamp"
_ZONED_TIME: Final = "io.debezium.time.ZonedTime"
_LOCAL_UNITS: Final = {
    "io.debezium.time.MicroTimestamp": 1_000_000,
    "io.debezium.time.NanoTimestamp": 1_000_000_000,
    "io.debezium.time.Timestamp": 1000,
    "org.apache.kafka.connect.data.Timestamp": 1000,
}
_LIST_FORMAT: Final = re.compile(r"([A-Za-z0-9_.]+:)?[A-Za-z0-9_.]+(:[A-Za-z0-9_.]+)?(,[A-Za-z0-9_.]+(:[A-Za-z0-9_.]+)?)*")
_OFFSET: Final = re.compile(r"([+-])(\d{2}):(\d{2})(?::(\d{2}))?")
#: Java's ``ZoneId.SHORT_IDS``: names Java's zone database does not resolve by themselves, so
#: Debezium accepts them and then fails on every record.
_JAVA_SHORT_IDS: Final = frozenset({
    "ACT", "AET", "AGT", "ART", "AST", "BET", "BST", "CAT", "CNT", "CST", "CTT", "EAT", "ECT", "EST", "HST", "IET", "IST",
    "JST", "MIT", "MST", "NET", "NST", "PLT", "PNT", "PRT", "PST", "SST", "VST",
})
_ZONED_TIMESTAMP_TEXT: Final = re.compile(
    r"([+-]?\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}(?::\d{2})?)")
_ZONED_TIME_TEXT: Final = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}(?::\d{2})?)")
_EPOCH: Final = datetime(1970, 1, 1)
_CYCLE_DAYS: Final = 146097  # days in 400 Gregorian years
_FIRST_DAY: Final = (datetime(1, 1, 1) - _EPOCH).days
_LAST_DAY: Final = (datetime(9999, 12, 31) - _EPOCH).days
_FAR_FUTURE: Final = (datetime(2400, 1, 1) - _EPOCH).days
_ROWS: Final = ("before", "after")


def _zone(prop: str, text: str, options: Options) -> tzinfo:
    """``converted.timezone`` as Debezium accepts it: a region of the zone database (exact case, no
    surrounding blanks) or an offset ``±hh:mm[:ss]``."""
    offset = _OFFSET.fullmatch(text)
    if offset is not None:
        sign, hours, minutes, seconds = offset.groups()
        if int(hours) > 18 or int(minutes) > 59 or int(seconds or 0) > 59:
            raise options.error(prop, f"{text!r} is not a UTC offset Java accepts (hours up to 18); Debezium fails every record with it")
        delta = timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds or 0))
        return timezone(-delta if sign == "-" else delta)
    if text in _JAVA_SHORT_IDS:
        raise options.error(prop, f"{text!r}: Debezium accepts this short name but Java's zone database does not know it, "
                                  "so every record fails; use a region such as America/New_York")
    try:
        if not text or text != text.strip():
            raise ValueError(text)
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise options.error(prop, f"{text!r} is not a geographic timezone (e.g. America/Los_Angeles) or a UTC offset in the format "
                                  "+/-hh:mm (e.g. +08:00), as Debezium requires") from None


def _offset_text(seconds: int) -> str:
    if seconds == 0:
        return "Z"
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{secs:02d}" if secs else "")


def _fraction(text: str | None) -> str:
    """Java's fraction printing: no trailing zeros, nothing for zero."""
    digits = (text or "")[1:].rstrip("0")
    return f".{digits}" if digits else ""


def _offset_seconds(zone: tzinfo, wall: datetime) -> int:
    """The zone's offset at a local wall-clock time (the one before a transition, in a gap or an overlap)."""
    offset = zone.utcoffset(wall)
    return 0 if offset is None else int(offset.total_seconds())


def _wall(seconds: int) -> datetime:
    """The UTC wall clock of an epoch second count. A year beyond Python's 1..9999 is brought into it
    on the 400-year Gregorian cycle, to a year whose zone rules are the same: 2400-2799 (the rules
    after the last listed transition repeat every year) or 1-400 (before the first transition)."""
    days, rest = divmod(seconds, 86400)
    if days > _LAST_DAY:
        days = _FAR_FUTURE + (days - _FAR_FUTURE) % _CYCLE_DAYS
    elif days < _FIRST_DAY:
        days = _FIRST_DAY + (days - _FIRST_DAY) % _CYCLE_DAYS
    return _EPOCH + timedelta(days=days, seconds=rest)


def _kafka_list(raw: str | None) -> list[str]:
    """A Kafka Connect ``LIST`` value as Debezium reads this one: split on commas (no escaping),
    blanks around items and empty items dropped."""
    return [item.strip() for item in (raw or "").split(",") if item.strip()]


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Epoch days of a proleptic Gregorian date, any year (Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def _year_text(year: int) -> str:
    """Java's ISO year: four digits, a sign beyond 9999 or before year 0."""
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return f"+{year}" if year > 0 else f"-{-year:04d}"


class _Rules:
    """An include or exclude list, read as Debezium 3.6.3 reads it (worked out rule by rule against it).

    Rules fill two maps, topic -> fields and table -> fields, where an empty field list means every
    field: ``source:<table>[:<field>]`` fills the table map, ``topic:<topic>[:<field>]`` the topic
    map, and ``<name>:<field>`` the map of the last ``source:``/``topic:`` rule before it, or both
    maps when there is none. A rule with a field appends it to its name's list; a rule without one
    empties the list (every field), so the later of the two wins. A record's fields are the topic
    map's entry for its topic, else the table map's for its ``source.table``.
    """

    __slots__ = ("tables", "topics")

    def __init__(self, items: list[str]) -> None:
        self.topics: dict[str, list[str]] = {}
        self.tables: dict[str, list[str]] = {}
        kind = "either"
        for item in items:
            parts = item.split(":")
            first = parts[0].lower()
            if first in ("source", "topic"):
                kind = "table" if first == "source" else "topic"
                name, field = parts[1], (parts[2] if len(parts) == 3 else None)
                targets = [self.tables if kind == "table" else self.topics]
            else:
                name, field = parts[0], parts[1]  # a third part is ignored, as Debezium does
                targets = {"table": [self.tables], "topic": [self.topics]}.get(kind, [self.topics, self.tables])
            for target in targets:
                if field is None:
                    target[name] = []
                else:
                    target.setdefault(name, []).append(field)

    def fields(self, topic: str, table: str | None) -> list[str] | None:
        """The fields for a record (empty: every field), None when no rule matches it."""
        found = self.topics.get(topic)
        if found is None and table is not None:
            found = self.tables.get(table)
        return found


def _rules(prop: str, items: list[str], options: Options) -> _Rules:
    if not items or _LIST_FORMAT.fullmatch(",".join(items)) is None:
        raise options.error(prop, f"{options.raw_given.get(prop)!r} is not a list of rules in the format of "
                                  "\"source:<tablename>:<fieldnames>\", \"topic:<topicname>:<fieldnames>\", \"<matchname>:<fieldnames>\" "
                                  "(names of letters, digits, _ and .; only the first rule may have three parts), as Debezium requires")
    return _Rules(items)


_SOURCE_TIMES: Final = {"ts_ms": 1000, "ts_us": 1_000_000, "ts_ns": 1_000_000_000}


class _Conversions:
    """What to convert in one kind of record (value schema, topic, table): per row (before, after)
    the columns and their converter kinds, and the source block's times (name, units per second)."""

    __slots__ = ("rows", "source")

    def __init__(self, rows: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...], source: tuple[tuple[str, int], ...]) -> None:
        self.rows = rows
        self.source = source


class TimezoneConverter(Transform):
    """``io.debezium.transforms.TimezoneConverter``: see the module's docstring."""

    OPTIONS = (
        Option("converted.timezone", None, required=True, doc="a region (America/New_York) or an offset (+05:30)"),
        Option("include.list", None, "list", doc="rules naming what to convert"),
        Option("exclude.list", None, "list", doc="rules naming what not to convert"),
    )

    def __init__(self, alias: str, options: Options) -> None:
        super().__init__(alias, options)
        self.zone = _zone("converted.timezone", options.text("converted.timezone"), options)
        included, excluded = "include.list" in options.raw_given, "exclude.list" in options.raw_given
        if included and excluded:
            raise options.error("exclude.list", "and include.list are both given; Debezium takes one or the other")
        self.include = _rules("include.list", _kafka_list(options.raw_given.get("include.list")), options) if included else None
        self.exclude = _rules("exclude.list", _kafka_list(options.raw_given.get("exclude.list")), options) if excluded else None
        self._plans: dict[tuple[int, str, str | None], tuple[ConnectSchema, _Conversions | None]] = {}
        self._key_change: tuple[str, Any] | None = None

    # -- what converts -------------------------------------------------------------------------------
    def _conversions(self, schema: ConnectSchema, topic: str, table: str | None) -> _Conversions | None:
        key = (id(schema), topic, table)
        cached = self._plans.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        plan = self._decide(schema, topic, table)
        if len(self._plans) > 4096:
            self._plans.clear()
        self._plans[key] = (schema, plan)
        return plan

    def _decide(self, schema: ConnectSchema, topic: str, table: str | None) -> _Conversions | None:
        named: set[str] = set()
        if self.include is not None:
            fields = self.include.fields(topic, table)
            if fields is None:
                return None
            named = set(fields)
        elif self.exclude is not None:
            fields = self.exclude.fields(topic, table)
            if fields == []:
                return None  # every field excluded
            named = set(fields or ())
        rows = []
        for block in _ROWS:
            row = next((f.schema for f in schema.fields if f.name == block and f.schema.type == "struct"), None)
            if row is None:
                continue
            columns = []
            for column in row.fields:
                kind = self._kind(column.schema)
                if kind is None:
                    continue
                listed = bool({column.name, f"{block}.{column.name}"} & named)
                if self.include is not None:
                    chosen = not named or listed
                else:
                    chosen = not listed
                if chosen:
                    columns.append((column.name, kind))
            if columns:
                rows.append((block, tuple(columns)))
        if self.include is not None:
            times = [name for name in _SOURCE_TIMES if f"source.{name}" in named]
        elif any(name.startswith("source.") for name in named):
            times = [name for name in _SOURCE_TIMES if f"source.{name}" not in named]
        else:
            times = []
        source = tuple((name, _SOURCE_TIMES[name]) for name in times)
        return _Conversions(tuple(rows), source) if rows or source else None

    @staticmethod
    def _kind(schema: ConnectSchema) -> Any:
        name = schema.name
        if name == _ZONED_TIMESTAMP or name == _ZONED_TIME:
            return name
        return _LOCAL_UNITS.get(name) if name is not None else None

    # -- per record ----------------------------------------------------------------------------------
    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        value, schema = record.value, record.value_schema
        if value is None or schema is None or not is_envelope(schema):
            return record
        source = value.get("source")
        table = source.get("table") if isinstance(source, dict) else None
        plan = self._conversions(schema, record.topic, table)
        if plan is None:
            return record
        out = dict(value)
        try:
            for block, columns in plan.rows:
                row = value.get(block)
                if row is None:
                    continue
                converted = dict(row)
                for name, kind in columns:
                    item = row.get(name)
                    if item is not None:
                        converted[name] = self._convert(kind, item)
                out[block] = converted
            if plan.source and isinstance(source, dict):
                times = dict(source)
                for _ in range(2 if self._second_of_key_change(record, value) else 1):
                    for name, unit in plan.source:
                        if times.get(name) is not None:
                            instant = _wall(times[name] // unit).replace(tzinfo=timezone.utc)
                            offset = instant.astimezone(self.zone).utcoffset()
                            times[name] += (0 if offset is None else int(offset.total_seconds())) * unit
                out["source"] = times
        except (ValueError, OverflowError) as problem:
            raise self.fail(record, f"cannot convert to {self.options.text('converted.timezone')}: {problem}") from None
        return copy_record(record, value=out)

    def _second_of_key_change(self, record: ChangeRecord, value: dict[str, Any]) -> bool:
        """Whether ``record`` is the create of a primary key change whose delete came just before.

        Debezium builds the two events of a key change (the delete with ``__debezium.newkey``, the
        create with ``__debezium.oldkey``) on one source struct, and this transform changes that
        struct in place: the create's source times are converted a second time."""
        op = value.get("op")
        if op == "d":
            newkey = next((h.value for h in record.headers if h.name == "__debezium.newkey"), None)
            self._key_change = None if newkey is None else (record.topic, newkey)
            return False
        if op == "c" and self._key_change is not None:
            topic, newkey = self._key_change
            self._key_change = None
            return topic == record.topic and newkey == record.key and any(h.name == "__debezium.oldkey" for h in record.headers)
        self._key_change = None
        return False

    def _convert(self, kind: Any, item: Any) -> Any:
        if kind == _ZONED_TIMESTAMP:
            return self._zoned_timestamp(item)
        if kind == _ZONED_TIME:
            return self._zoned_time(item)
        seconds = item // kind  # the unit's count in whole seconds (floor), for the wall clock
        result = item - _offset_seconds(self.zone, _wall(seconds)) * kind
        return (result + 2**63) % 2**64 - 2**63  # Java's long arithmetic wraps (PostgreSQL's infinity is near its end)

    def _zoned_timestamp(self, text: str) -> str:
        parsed = _ZONED_TIMESTAMP_TEXT.fullmatch(text)
        if parsed is None:
            raise ValueError(f"Text {text!r} could not be parsed as a zoned timestamp")
        year, month, day, hour, minute, second, fraction, offset = parsed.groups()
        if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31 and int(hour) <= 23 and int(minute) <= 59 and int(second) <= 59):
            raise ValueError(f"Text {text!r} could not be parsed as a zoned timestamp")
        epoch = (_days_from_civil(int(year), int(month), int(day)) * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)
                 - self._text_offset(offset))
        shift = _offset_seconds(self.zone, _wall(epoch))
        days, rest = divmod(epoch + shift, 86400)
        y, m, d = _civil_from_days(days)
        return (f"{_year_text(y)}-{m:02d}-{d:02d}T{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
                f"{_fraction(fraction)}{_offset_text(shift)}")

    def _zoned_time(self, text: str) -> str:
        parsed = _ZONED_TIME_TEXT.fullmatch(text)
        if parsed is None:
            raise ValueError(f"Text {text!r} could not be parsed as a zoned time")
        hour, minute, second, fraction, offset = parsed.groups()
        if int(hour) > 23 or int(minute) > 59 or int(second) > 59:
            raise ValueError(f"Text {text!r} could not be parsed as a zoned time")
        now = datetime.now(timezone.utc).astimezone(self.zone).utcoffset()
        shift = 0 if now is None else int(now.total_seconds())
        seconds = (int(hour) * 3600 + int(minute) * 60 + int(second) - self._text_offset(offset) + shift) % 86400
        hours, rest = divmod(seconds, 3600)
        return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}{_fraction(fraction)}{_offset_text(shift)}"

    @staticmethod
    def _text_offset(offset: str) -> int:
        if offset == "Z":
            return 0
        parts = offset[1:].split(":")
        seconds = int(parts[0]) * 3600 + int(parts[1]) * 60 + (int(parts[2]) if len(parts) > 2 else 0)
        return -seconds if offset[0] == "-" else seconds
