"""DATE, TIME, TIMETZ, TIMESTAMP, TIMESTAMPTZ and INTERVAL in every ``time.precision.mode``.

Debezium's pgoutput path first turns the text PostgreSQL sends into Java objects
(``ReplicationMessageColumnValueResolver``: DATE -> ``LocalDate``, TIMESTAMP -> ``Instant``,
TIMESTAMPTZ -> ``OffsetDateTime``, TIME -> text, TIMETZ -> ``OffsetTime``, INTERVAL -> pgjdbc
``PGInterval``) and then into Connect values (``PostgresValueConverter`` / ``JdbcValueConverters``).
Every quirk of that chain is part of the output contract, so this module reproduces it from the text
with exact integer arithmetic; the expected values in the tests were obtained by running the
Debezium 3.6.3 classes themselves on the same texts. The quirks worth knowing:

* Calendar: proleptic Gregorian for every year, BC years as ``1 - year`` (``4713 BC`` = -4712), which
  Python's ``datetime`` cannot represent; the arithmetic uses the 400-year (146097-day) cycle.
* ``±infinity``: TIMESTAMP uses pgjdbc's ``DATE_POSITIVE/NEGATIVE_INFINITY`` read as *microseconds*
  (9223372036825200000 / -9223372036832400000). Millisecond modes divide that instant (so
  9223372036825200 ms), ``isostring`` prints it (``+294247-01-10T04:00:25.2Z``), ``nanoseconds`` uses
  Long.MAX/MIN. DATE maps to ``LocalDate`` -5877611-06-21 / -5877611-06-22 (epoch days -2147472692 /
  -2147472691). TIMESTAMPTZ keeps the strings ``infinity`` / ``-infinity``.
* Java ``long`` arithmetic: micro-timestamps past 294247-01-10T04:00:54.775807 saturate and wrap like
  ``TimeUnit.SECONDS.toMicros`` + overflowing addition; nano-timestamps outside
  1677-09-22 .. 2262-04-11T23:47:16.854775 cannot be represented (:class:`TemporalRangeError`).
* TIMETZ is normalised to UTC modulo one day, so ``24:00:00+00`` becomes ``00:00:00Z`` in 3.6.3
  (Debezium's main branch, dbz#2100, keeps ``24:00:00Z``; see :data:`TIMETZ_END_OF_DAY`).
* INTERVAL goes through pgjdbc's ``double`` seconds: MicroDuration is
  ``(long)((((months*30.4375 + days)*24 + h)*60 + m)*60 + s)*1e6`` in IEEE doubles, and the ISO
  string prints ``BigDecimal.valueOf(seconds)`` truncated to 9 decimals, so ``00:00:01.305106`` gives
  1305105 µs and ``P0Y0M0DT0H0M1.305105999S`` exactly as Debezium does.

``ValueMapping.extra`` carries facts the table layer needs (all optional keys):

* ``"default_zero"``: the value Debezium emits as the schema default for a *function* default
  (``now()``, ``CURRENT_DATE`` ...); it differs from ``zero`` (the NOT NULL fallback) only for
  TIMESTAMPTZ, where it is printed with the column's fraction width.
* ``"defaults_supported": False`` for TIMETZ: Debezium has no default-value parser for it and drops
  every default, literal or function.
* ``"missing_value_fails": True`` for TIMESTAMP in ``nanoseconds`` mode: Debezium's converter
  returns null before the NOT NULL fallback applies, so an event that needs the fallback fails.

Three other paths, each observed end to end (``tests/conformance/test_temporal_conformance.py``):

* Snapshot rows: Debezium reads DATE through JDBC (a ``java.sql.Date``), every other temporal type
  as text. ``ValueMapping.snapshot_convert`` of DATE reproduces ``toLocalDate()`` of that object:
  era dropped, 1582-10-05..14 moved ten days on, ``±infinity`` the dates of pgjdbc's sentinels.
* Literal defaults (``extra["default_literal"]``, used by ``defaults.py``): pgjdbc's
  ``TimestampUtils`` objects, which differ from values only on ``±infinity`` (MAX/MIN objects) and
  ``24:00:00`` (``LocalTime.MAX``).
* Array elements (:func:`jdbc_array_element`): ``java.sql`` objects in the snapshot and in
  streaming alike (TIMESTAMP[] read as instants of the Julian/Gregorian calendar, TIME[] in
  milliseconds, TIMETZ[] in seconds, DATE[] and TIMESTAMPTZ[] by calendar fields without era).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import ROUND_DOWN, Decimal
from typing import Any

from ..connect import int32, int64, string
from .base import ColumnType, ConversionError, MappingOptions, TemporalRangeError, ValueMapping

# TemporalRangeError is defined in .base: this module is compiled with mypyc, which cannot compile an
# exception class deriving from sparkcdc's (interpreted) hierarchy.

__all__ = [
    "DATE_NEGATIVE_INFINITY_DAYS",
    "DATE_POSITIVE_INFINITY_DAYS",
    "TEMPORAL_TYPES",
    "TIMESTAMP_NEGATIVE_INFINITY_MICROS",
    "TIMESTAMP_POSITIVE_INFINITY_MICROS",
    "TIMETZ_END_OF_DAY",
    "TIME_PRECISION_MODES",
    "TemporalRangeError",
    "civil_from_epoch_day",
    "epoch_day",
    "format_iso_date",
    "jdbc_array_element",
    "julian_epoch_day",
    "map_temporal_type",
    "parse_interval",
]

TEMPORAL_TYPES = frozenset({"date", "time", "timetz", "timestamp", "timestamptz", "interval"})
TIME_PRECISION_MODES = frozenset(
    {"adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"}
)

DATE_NAME = "io.debezium.time.Date"
TIME_NAME = "io.debezium.time.Time"
MICRO_TIME_NAME = "io.debezium.time.MicroTime"
NANO_TIME_NAME = "io.debezium.time.NanoTime"
TIMESTAMP_NAME = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP_NAME = "io.debezium.time.MicroTimestamp"
NANO_TIMESTAMP_NAME = "io.debezium.time.NanoTimestamp"
ZONED_TIMESTAMP_NAME = "io.debezium.time.ZonedTimestamp"
ZONED_TIME_NAME = "io.debezium.time.ZonedTime"
MICRO_DURATION_NAME = "io.debezium.time.MicroDuration"
INTERVAL_NAME = "io.debezium.time.Interval"
ISO_DATE_NAME = "io.debezium.time.IsoDate"
ISO_TIME_NAME = "io.debezium.time.IsoTime"
ISO_TIMESTAMP_NAME = "io.debezium.time.IsoTimestamp"
CONNECT_DATE_NAME = "org.apache.kafka.connect.data.Date"
CONNECT_TIME_NAME = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"

#: pgjdbc's ``PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY``, which Debezium reads as epoch microseconds.
TIMESTAMP_POSITIVE_INFINITY_MICROS = 9223372036825200000
TIMESTAMP_NEGATIVE_INFINITY_MICROS = -9223372036832400000
#: Epoch days of Debezium's ``POSITIVE/NEGATIVE_INFINITY_LOCAL_DATE`` (-5877611-06-21 / -06-22).
DATE_POSITIVE_INFINITY_DAYS = -2147472692
DATE_NEGATIVE_INFINITY_DAYS = -2147472691
#: What Debezium 3.6.3 prints for TIMETZ ``24:00:00+00`` (its main branch prints ``24:00:00Z``).
TIMETZ_END_OF_DAY = "00:00:00Z"

_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)
_INT_MIN = -(1 << 31)
#: ``ValueMapping.extra`` key of the literal-default parser (``defaults.DEFAULT_LITERAL``).
DEFAULT_LITERAL = "default_literal"
_MICROS_PER_SECOND = 1_000_000
_MICROS_PER_DAY = 86_400_000_000
_NANOS_PER_DAY = _MICROS_PER_DAY * 1000
_EPOCH_ORDINAL = 719_163  # date(1970, 1, 1).toordinal()
_DAYS_PER_400_YEARS = 146_097
_MAX_ORDINAL = 3_652_059  # date(9999, 12, 31).toordinal()
# TimeUnit.SECONDS.toMicros saturates beyond this many seconds.
_MAX_MICRO_SECONDS = _LONG_MAX // _MICROS_PER_SECOND
# Debezium computes nanos as epochDay * 86400e9 (multiplyExact) + nanoOfDay (addExact).
_MIN_NANO_TIMESTAMP_MICROS = -(_LONG_MAX // (_MICROS_PER_DAY * 1000)) * _MICROS_PER_DAY
_MAX_NANO_TIMESTAMP_MICROS = _LONG_MAX // 1000
_FRACTION_SCALE = (0, 100_000, 10_000, 1_000, 100, 10, 1)
_DAYS_PER_MONTH_AVG = 365.25 / 12.0  # MicroDuration.DAYS_PER_MONTH_AVG = 30.4375
# Memo tables (bounded; cleared when full): date text -> epoch day, epoch day -> ISO date text.
_CACHE_LIMIT = 4096
_DAY_CACHE: dict[str, int] = {}
_ISO_DATE_CACHE: dict[int, str] = {}


# -- calendar -----------------------------------------------------------------------------------------


def epoch_day(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (year 0 = 1 BC, any year).

    ``datetime.date`` covers years 1..9999 only; the calendar repeats every 400 years (146097 days),
    so other years are shifted into that range and the cycles added back.
    """
    if 0 < year < 10000:
        return _dt.date(year, month, day).toordinal() - _EPOCH_ORDINAL
    cycles, year_in_cycle = divmod(year - 1, 400)
    return cycles * _DAYS_PER_400_YEARS + _dt.date(year_in_cycle + 1, month, day).toordinal() - _EPOCH_ORDINAL


def civil_from_epoch_day(days: int) -> tuple[int, int, int]:
    """(year, month, day) of an epoch day in the proleptic Gregorian calendar (inverse of :func:`epoch_day`)."""
    ordinal = days + _EPOCH_ORDINAL
    if 0 < ordinal <= _MAX_ORDINAL:
        date = _dt.date.fromordinal(ordinal)
        return date.year, date.month, date.day
    cycles, rest = divmod(ordinal - 1, _DAYS_PER_400_YEARS)
    date = _dt.date.fromordinal(rest + 1)
    return date.year + 400 * cycles, date.month, date.day


def julian_epoch_day(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 (Gregorian) of a date in the proleptic Julian calendar (year 0 = 1 BC)."""
    shift = (14 - month) // 12
    y, m = year + 4800 - shift, month + 12 * shift - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - 2440588


def _java_year(year: int) -> str:
    """A year as ``DateTimeFormatter.ISO_LOCAL_DATE`` prints it: 4 digits, ``+`` above 9999, ``-`` below 0."""
    if 0 <= year <= 9999:
        return f"{year:04d}"
    if year > 9999:
        return f"+{year}"
    return f"-{-year:04d}"


def format_iso_date(days: int) -> str:
    """An epoch day as Java's ISO_LOCAL_DATE (``2016-11-04``, ``+21016-11-04``, ``-4712-01-01``).

    Memoised: a change stream's timestamps fall on few distinct days.
    """
    text = _ISO_DATE_CACHE.get(days)
    if text is None:
        year, month, day = civil_from_epoch_day(days)
        text = f"{_java_year(year)}-{month:02d}-{day:02d}"
        if len(_ISO_DATE_CACHE) >= _CACHE_LIMIT:
            _ISO_DATE_CACHE.clear()
        _ISO_DATE_CACHE[days] = text
    return text


def _format_clock(micros_of_day: int, width: int) -> str:
    """``HH:MM:SS`` plus the fraction: ``width`` digits (truncated), or stripped of zeros when ``width <= 0``.

    Java's ISO formatters print only the significant fraction digits; ZonedTimestamp's formatter
    prints exactly the column's fractional precision.
    """
    seconds, fraction = divmod(micros_of_day, _MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    clock = f"{hour:02d}:{minute:02d}:{second:02d}"
    if width > 0:
        return f"{clock}.{f'{fraction:06d}'[:width]}"
    if fraction:
        return f"{clock}.{f'{fraction:06d}'.rstrip('0')}"
    return clock


def _format_iso_datetime(micros: int, width: int) -> str:
    """Epoch microseconds as ``<ISO date>T<clock>Z`` (Java ISO_OFFSET_DATE_TIME at UTC)."""
    days, micros_of_day = divmod(micros, _MICROS_PER_DAY)
    return f"{format_iso_date(days)}T{_format_clock(micros_of_day, width)}Z"


# -- parsing PostgreSQL's text output -----------------------------------------------------------------


def _fraction_micros(digits: str) -> int:
    """``123`` (the digits after the decimal point, at most 6) -> microseconds."""
    if not digits.isdigit() or len(digits) > 6:
        raise ValueError(digits)
    return int(digits) * _FRACTION_SCALE[len(digits)]


def _clock_micros(text: str, start: int, end: int) -> int:
    """``HH:MM:SS[.ffffff]`` in ``text[start:end]`` -> microseconds past midnight (24:00:00 allowed)."""
    if end - start < 8 or text[start + 2] != ":" or text[start + 5] != ":":
        raise ValueError(text)
    hour, minute, second = int(text[start : start + 2]), int(text[start + 3 : start + 5]), int(text[start + 6 : start + 8])
    if hour > 24 or minute > 59 or second > 59:
        raise ValueError(text)
    micros = ((hour * 60 + minute) * 60 + second) * _MICROS_PER_SECOND
    if end > start + 8:
        if text[start + 8] != ".":
            raise ValueError(text)
        micros += _fraction_micros(text[start + 9 : end])
    return micros


def _offset_seconds(text: str, start: int, end: int) -> int:
    """``+HH``, ``-HH:MM`` or ``+HH:MM:SS`` in ``text[start:end]`` -> signed seconds east of UTC."""
    length = end - start
    if length not in (3, 6, 9):
        raise ValueError(text)
    seconds = int(text[start + 1 : start + 3]) * 3600
    if length > 3:
        if text[start + 3] != ":":
            raise ValueError(text)
        seconds += int(text[start + 4 : start + 6]) * 60
        if length > 6:
            if text[start + 6] != ":":
                raise ValueError(text)
            seconds += int(text[start + 7 : start + 9])
    sign = text[start]
    if sign == "-":
        return -seconds
    if sign != "+":
        raise ValueError(text)
    return seconds


def _date_days(text: str, end: int, bc: bool) -> int:
    """``Y..Y-MM-DD`` in ``text[:end]`` (``BC`` flagged separately) -> epoch day, memoised by that text."""
    key = text[:end] if not bc else text[:end] + " BC"
    days = _DAY_CACHE.get(key)
    if days is None:
        if end < 10 or text[end - 6] != "-" or text[end - 3] != "-" or not text[: end - 6].isdigit():
            raise ValueError(text)
        year = int(text[: end - 6])
        if year < 1:
            raise ValueError(text)
        days = epoch_day(1 - year if bc else year, int(text[end - 5 : end - 3]), int(text[end - 2 : end]))
        if len(_DAY_CACHE) >= _CACHE_LIMIT:
            _DAY_CACHE.clear()
        _DAY_CACHE[key] = days
    return days


def _offset_start(text: str, start: int) -> int:
    """Index of the UTC offset's sign at or after ``start`` (a fraction never contains a sign)."""
    plus = text.find("+", start)
    return plus if plus >= 0 else text.index("-", start)


def _parse_date(text: str) -> int:
    """DATE text (``2016-11-04``, ``4713-01-01 BC``, ``5874897-12-31``) -> epoch day."""
    bc = text.endswith(" BC")
    return _date_days(text, len(text) - 3 if bc else len(text), bc)


def _parse_timestamp(text: str) -> int:
    """TIMESTAMP text (``2016-11-04 13:51:30.123456``, ``... BC``) -> epoch microseconds, read as UTC."""
    bc = text.endswith(" BC")
    end = len(text) - 3 if bc else len(text)
    space = text.index(" ")
    return _date_days(text, space, bc) * _MICROS_PER_DAY + _clock_micros(text, space + 1, end)


def _parse_timestamptz(text: str) -> int:
    """TIMESTAMPTZ text (``2016-11-04 11:51:30.123456+00``, ``... -03:30:52 BC``) -> UTC epoch microseconds."""
    bc = text.endswith(" BC")
    end = len(text) - 3 if bc else len(text)
    space = text.index(" ")
    sign = _offset_start(text, space + 9)
    local = _date_days(text, space, bc) * _MICROS_PER_DAY + _clock_micros(text, space + 1, sign)
    return local - _offset_seconds(text, sign, end) * _MICROS_PER_SECOND


def _parse_timetz(text: str) -> int:
    """TIMETZ text (``13:51:30.123789+02``) -> microseconds past midnight UTC, modulo one day."""
    sign = _offset_start(text, 8)
    local = _clock_micros(text, 0, sign)
    return (local - _offset_seconds(text, sign, len(text)) * _MICROS_PER_SECOND) % _MICROS_PER_DAY


def _parse_time(text: str) -> int:
    """TIME text (``13:51:30.123``, ``24:00:00``) -> microseconds past midnight."""
    return _clock_micros(text, 0, len(text))


def parse_interval(text: str) -> tuple[int, int, int, int, int, int]:
    """INTERVAL text in IntervalStyle=postgres -> (years, months, days, hours, minutes, second_micros).

    The fields are what pgjdbc's ``PGInterval`` holds: each printed unit separately, and the
    ``[-]H:MM:SS[.ffffff]`` part with its sign applied to hours, minutes and seconds.
    """
    years = months = days = hours = minutes = second_micros = 0
    tokens = text.split()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if ":" in token:
            hours, minutes, second_micros = _interval_clock(token)
            index += 1
            continue
        value = int(token)
        unit = tokens[index + 1]
        index += 2
        if unit.startswith("year"):
            years = value
        elif unit.startswith("mon"):
            months = value
        elif unit.startswith("day"):
            days = value
        elif unit.startswith("hour"):
            hours = value
        elif unit.startswith("min"):
            minutes = value
        elif unit.startswith("sec"):
            second_micros = value * _MICROS_PER_SECOND
        else:
            raise ValueError(text)
    return years, months, days, hours, minutes, second_micros


def _interval_clock(token: str) -> tuple[int, int, int]:
    """``-04:05:06.789`` -> (hours, minutes, second_micros), all carrying the leading sign."""
    negative = token[0] == "-"
    body = token[1:] if token[0] in "+-" else token
    hours_text, minutes_text, seconds_text = body.split(":")
    whole, _, fraction = seconds_text.partition(".")
    if not (hours_text.isdigit() and minutes_text.isdigit() and whole.isdigit()):
        raise ValueError(token)
    micros = int(whole) * _MICROS_PER_SECOND + (_fraction_micros(fraction) if fraction else 0)
    hours, minutes = int(hours_text), int(minutes_text)
    return (-hours, -minutes, -micros) if negative else (hours, minutes, micros)


# -- Java arithmetic ------------------------------------------------------------------------------------


def _wrap_long(value: int) -> int:
    """Two's-complement wrap-around of Java ``long`` addition."""
    return ((value - _LONG_MIN) % (1 << 64)) + _LONG_MIN


def _java_epoch_micros(micros: int) -> int:
    """``TimeUnit.SECONDS.toMicros(epochSecond) + nano/1000`` with Java's saturation and overflow."""
    if _LONG_MIN <= micros <= _LONG_MAX:
        return micros
    seconds, fraction = divmod(micros, _MICROS_PER_SECOND)
    if seconds > _MAX_MICRO_SECONDS:
        base = _LONG_MAX
    elif seconds < -_MAX_MICRO_SECONDS:
        base = _LONG_MIN
    else:
        base = seconds * _MICROS_PER_SECOND
    return _wrap_long(base + fraction)


def _java_double_to_long(value: float) -> int:
    """Java's ``(long) double``: truncation toward zero, saturating, NaN -> 0."""
    if value != value:
        return 0
    if value >= 9.223372036854775807e18:
        return _LONG_MAX
    if value <= -9.223372036854775808e18:
        return _LONG_MIN
    return int(value)


def _pginterval_seconds(second_micros: int) -> float:
    """pgjdbc's ``getSeconds()``: ``wholeSeconds + microSeconds / 1e6`` in doubles (signs truncate to zero)."""
    whole = abs(second_micros) // _MICROS_PER_SECOND
    if second_micros < 0:
        whole = -whole
    return whole + (second_micros - whole * _MICROS_PER_SECOND) / 1e6


def _micro_duration(years: int, months: int, days: int, hours: int, minutes: int, second_micros: int) -> int:
    """``MicroDuration.durationMicros`` with 365.25/12 days per month, evaluated in IEEE doubles like Java."""
    number_of_days = float(years * 12 + months) * _DAYS_PER_MONTH_AVG + days
    seconds = ((number_of_days * 24.0 + hours) * 60.0 + minutes) * 60.0 + _pginterval_seconds(second_micros)
    return _java_double_to_long(seconds * 1e6 + 0.0)


def _interval_seconds_text(second_micros: int) -> str:
    """The seconds of ``Interval.toIsoString``: ``BigDecimal.valueOf(double)``, at most 9 decimals
    (rounded down), trailing zeros stripped, plain notation."""
    if second_micros % _MICROS_PER_SECOND == 0:
        return str(second_micros // _MICROS_PER_SECOND)
    value = Decimal(repr(_pginterval_seconds(second_micros)))
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -9:
        value = value.quantize(Decimal("1e-9"), rounding=ROUND_DOWN)
    return format(value.normalize(), "f")


def _interval_iso(years: int, months: int, days: int, hours: int, minutes: int, second_micros: int) -> str:
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{_interval_seconds_text(second_micros)}S"


# -- mappings -----------------------------------------------------------------------------------------


def _precision(modifier: int) -> int:
    """Fractional-second precision of time/timestamp(p): the typmod, 6 when unconstrained (pgjdbc's scale)."""
    return modifier if 0 <= modifier <= 6 else 6


def _guard(kind: str, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Wrap a parser so malformed text raises :class:`ConversionError` naming the value and the type."""

    def guarded(text: str) -> Any:
        try:
            return parse(text)
        except (ValueError, IndexError):
            raise ConversionError(f"{text!r} is not a valid PostgreSQL {kind} value") from None

    return guarded


_date = _guard("date", _parse_date)
_time = _guard("time", _parse_time)
_timetz = _guard("timetz", _parse_timetz)
_timestamp = _guard("timestamp", _parse_timestamp)
_timestamptz = _guard("timestamptz", _parse_timestamptz)
_interval = _guard("interval", parse_interval)


#: Epoch days of LocalDate.MAX / LocalDate.MIN.
_LOCAL_DATE_MAX_DAYS = 365_241_780_471
_LOCAL_DATE_MIN_DAYS = -365_243_219_162
#: The dates pgjdbc's ``DATE_POSITIVE/NEGATIVE_INFINITY`` milliseconds fall on, as ``java.sql.Date``'s
#: ``toLocalDate()`` reports them (+292278994-08-16, and 292269055-12-02 BC with the era dropped).
_JDBC_DATE_INFINITY = {"infinity": epoch_day(292_278_994, 8, 16), "-infinity": epoch_day(292_269_055, 12, 2)}
_GREGORIAN_GAP_START = epoch_day(1582, 10, 5)
_GREGORIAN_GAP_END = epoch_day(1582, 10, 15)


def _wrap_int(value: int) -> int:
    """Java's ``(int)`` cast of a ``long``: the low 32 bits, signed."""
    return ((value - _INT_MIN) % (1 << 32)) + _INT_MIN


def _jdbc_date_days(text: str) -> int:
    """Epoch day of the ``LocalDate`` Debezium's snapshot gets for DATE text.

    The snapshot reads DATE with ``ResultSet.getObject`` (a ``java.sql.Date``, built by pgjdbc in
    the JVM's Julian/Gregorian calendar) and Debezium calls ``toLocalDate()``, which keeps the
    calendar fields but not the era: ``0044-03-15 BC`` becomes 0044-03-15 (AD), and ``±infinity``
    (pgjdbc's millisecond sentinels) become the dates those instants fall on, era dropped too.
    Dates inside the Julian-to-Gregorian gap (1582-10-05 .. 14) are shifted the way the lenient
    calendar shifts them.
    """
    special = _JDBC_DATE_INFINITY.get(text)
    if special is not None:
        return special
    if text[-3:] == " BC":
        return _date(text[:-3])  # the year of era, read as an AD year
    days = _date(text)
    if _GREGORIAN_GAP_START <= days < _GREGORIAN_GAP_END:
        days += 10  # the Julian calendar's 1582-10-05 .. 14 is ten days after Gregorian's
    return days


def _date_mapping(mode: str) -> ValueMapping:
    def to_days(text: str) -> int:
        if text[-1:] == "y":
            if text == "infinity":
                return DATE_POSITIVE_INFINITY_DAYS
            if text == "-infinity":
                return DATE_NEGATIVE_INFINITY_DAYS
        return _date(text)

    if mode == "isostring":

        def to_iso(text: str) -> str:
            days = to_days(text)
            if len(text) == 10:  # a valid 4-digit AD date: PostgreSQL already printed it in ISO form
                return f"{text}Z"
            return f"{format_iso_date(days)}Z"

        def snapshot_iso(text: str) -> str:
            return f"{format_iso_date(_jdbc_date_days(text))}Z"

        return ValueMapping(
            string(name=ISO_DATE_NAME, version=1),
            to_iso,
            zero="1970-01-01Z",
            extra={DEFAULT_LITERAL: _date_default(mode)},
            snapshot_convert=snapshot_iso,
        )

    def snapshot_days(text: str) -> int:
        return _wrap_int(_jdbc_date_days(text))  # Date.toEpochDay casts the long epoch day to int

    name = CONNECT_DATE_NAME if mode == "connect" else DATE_NAME
    return ValueMapping(
        int32(name=name, version=1),
        to_days,
        zero=0,
        extra={DEFAULT_LITERAL: _date_default(mode)},
        snapshot_convert=snapshot_days,
    )


# -- literal column defaults --------------------------------------------------------------------------
# Debezium parses a temporal default's literal with pgjdbc's TimestampUtils into a Java object and
# runs the column's converter on that object: DATE -> LocalDateTime (toLocalDateTime), TIME ->
# LocalTime (toLocalTime), TIMESTAMP -> OffsetDateTime (toOffsetDateTime), TIMESTAMPTZ -> the same
# at UTC. That differs from a streamed value only where pgjdbc has special values: 'infinity' and
# '-infinity' become the MAX/MIN objects (not pgjdbc's sentinels), and TIME '24:00:00' becomes
# LocalTime.MAX (23:59:59.999999999). The functions below return the default, or raise
# ConversionError where Debezium's conversion throws (it then exports no default).


def _date_default(mode: str) -> Callable[[str], Any]:
    def parse(literal: str) -> Any:
        if literal == "infinity" or literal == "-infinity":
            days = _LOCAL_DATE_MAX_DAYS if literal == "infinity" else _LOCAL_DATE_MIN_DAYS
        else:
            days = _date(literal)
        if mode == "isostring":
            return f"{format_iso_date(days)}Z"
        return _wrap_int(days)  # io.debezium.time.Date casts LocalDate.MAX's epoch day to int: 169560311

    return parse


def _time_default(mapping: ValueMapping, mode: str, precision: int) -> Callable[[str], Any]:
    convert = mapping.convert

    def parse(literal: str) -> Any:
        if not literal.startswith("24:00:00"):
            return convert(literal)
        # LocalTime.MAX, in the column's representation.
        if mode == "isostring":
            return "23:59:59.999999999Z"
        if mode == "nanoseconds":
            return _NANOS_PER_DAY - 1
        if mode == "connect" or (mode == "adaptive" and precision <= 3):
            return _MICROS_PER_DAY // 1000 - 1
        return _MICROS_PER_DAY - 1

    return parse


def _timestamp_default(mapping: ValueMapping, mode: str, precision: int) -> Callable[[str], Any]:
    convert = mapping.convert

    def parse(literal: str) -> Any:
        if literal != "infinity" and literal != "-infinity":
            return convert(literal)
        positive = literal == "infinity"
        # OffsetDateTime.MAX / MIN: only the ISO string and the microsecond conversion (saturating,
        # then overflowing on the nanos: Long.MAX + 999999) survive; the others throw.
        if mode == "isostring":
            return "+999999999-12-31T23:59:59.999999999Z" if positive else "-999999999-01-01T00:00:00Z"
        millis = mode == "connect" or (mode in ("adaptive", "adaptive_time_microseconds") and precision <= 3)
        if mode == "nanoseconds" or millis:
            raise TemporalRangeError(f"timestamp default {literal!r} has no {mode} representation")
        return _wrap_long(_LONG_MAX + 999_999) if positive else _LONG_MIN

    return parse


def _timestamptz_default(mapping: ValueMapping) -> Callable[[str], Any]:
    convert = mapping.convert

    def parse(literal: str) -> Any:
        if literal == "infinity" or literal == "-infinity":
            # OffsetDateTime.MAX/MIN.atZoneSameInstant(UTC) is outside LocalDateTime's range: throws.
            raise TemporalRangeError(f"timestamptz default {literal!r} cannot be moved to UTC")
        return convert(literal)

    return parse


def _time_mapping(precision: int, mode: str) -> ValueMapping:
    mapping = _plain_time_mapping(precision, mode)
    mapping.extra[DEFAULT_LITERAL] = _time_default(mapping, mode, precision)
    return mapping


def _plain_time_mapping(precision: int, mode: str) -> ValueMapping:
    if mode == "isostring":

        def to_iso(text: str) -> str:
            return f"{_format_clock(_time(text) % _MICROS_PER_DAY, 0)}Z"

        return ValueMapping(string(name=ISO_TIME_NAME, version=1), to_iso, zero="00:00:00Z")
    if mode == "nanoseconds":
        return ValueMapping(int64(name=NANO_TIME_NAME, version=1), lambda text: _time(text) * 1000, zero=0)
    if mode == "connect" or (mode == "adaptive" and precision <= 3):
        name = CONNECT_TIME_NAME if mode == "connect" else TIME_NAME
        return ValueMapping(int32(name=name, version=1), lambda text: _time(text) // 1000, zero=0)
    return ValueMapping(int64(name=MICRO_TIME_NAME, version=1), _time, zero=0)


def _timestamp_micros(text: str) -> int:
    """TIMESTAMP text -> epoch microseconds, ``±infinity`` as pgjdbc's sentinels."""
    if text[-1:] == "y":
        if text == "infinity":
            return TIMESTAMP_POSITIVE_INFINITY_MICROS
        if text == "-infinity":
            return TIMESTAMP_NEGATIVE_INFINITY_MICROS
    return _timestamp(text)


def _to_nanos(text: str) -> int:
    micros = _timestamp_micros(text)
    if _MIN_NANO_TIMESTAMP_MICROS <= micros <= _MAX_NANO_TIMESTAMP_MICROS:
        return micros * 1000
    if micros == TIMESTAMP_POSITIVE_INFINITY_MICROS:
        return _LONG_MAX
    if micros == TIMESTAMP_NEGATIVE_INFINITY_MICROS:
        return _LONG_MIN
    raise TemporalRangeError(f"timestamp {text!r} is outside the NanoTimestamp range (1677-09-22 .. 2262-04-11)")


def _to_iso_timestamp(text: str) -> str:
    micros = _timestamp_micros(text)
    if text[4] == "-" and text[-1] != "C" and text[-1] != "y":  # a valid 4-digit AD year: reuse PostgreSQL's text
        return f"{text[:10]}T{text[11:]}Z"
    return _format_iso_datetime(micros, 0)


def _timestamp_mapping(precision: int, mode: str) -> ValueMapping:
    mapping = _plain_timestamp_mapping(precision, mode)
    mapping.extra[DEFAULT_LITERAL] = _timestamp_default(mapping, mode, precision)
    return mapping


def _plain_timestamp_mapping(precision: int, mode: str) -> ValueMapping:
    if mode == "isostring":
        return ValueMapping(string(name=ISO_TIMESTAMP_NAME, version=1), _to_iso_timestamp, zero="1970-01-01T00:00:00Z")
    if mode == "nanoseconds":
        return ValueMapping(
            int64(name=NANO_TIMESTAMP_NAME, version=1), _to_nanos, zero=0, extra={"missing_value_fails": True}
        )
    if mode == "connect" or (mode in ("adaptive", "adaptive_time_microseconds") and precision <= 3):
        name = CONNECT_TIMESTAMP_NAME if mode == "connect" else TIMESTAMP_NAME
        return ValueMapping(int64(name=name, version=1), lambda text: _timestamp_micros(text) // 1000, zero=0)

    def to_micros(text: str) -> int:
        micros = _timestamp_micros(text)
        return micros if micros <= _LONG_MAX else _java_epoch_micros(micros)  # PostgreSQL's minimum fits a long

    return ValueMapping(int64(name=MICRO_TIMESTAMP_NAME, version=1), to_micros, zero=0)


def _timestamptz_mapping(precision: int) -> ValueMapping:
    """ZonedTimestamp in every mode: UTC, fraction exactly ``precision`` digits (0: none)."""
    width = precision

    def to_zoned(text: str) -> str:
        # Fast path for what sparkcdc's UTC sessions print for AD years 1..9999: the ISO text is already
        # there and only needs rearranging (the layout is checked; PostgreSQL's digits are trusted).
        if text.endswith("+00") and len(text) >= 22 and text[4] == "-" and text[10] == " " and text[13] == ":" and text[16] == ":":
            if width <= 0 or (len(text) == 23 + width and text[19] == "."):  # no fraction, or exactly ``width`` digits
                return f"{text[:10]}T{text[11:-3]}Z"
            digits = text[20:-3]
            return f"{text[:10]}T{text[11:19]}.{(digits + '000000')[:width]}Z"
        if text == "infinity" or text == "-infinity":
            return text
        return _format_iso_datetime(_timestamptz(text), width)

    default_zero = f"1970-01-01T00:00:00.{'0' * width}Z" if width > 0 else "1970-01-01T00:00:00Z"
    mapping = ValueMapping(
        string(name=ZONED_TIMESTAMP_NAME, version=1),
        to_zoned,
        zero="1970-01-01T00:00:00Z",
        extra={"default_zero": default_zero},
    )
    mapping.extra[DEFAULT_LITERAL] = _timestamptz_default(mapping)
    return mapping


def _timetz_mapping() -> ValueMapping:
    """ZonedTime in every mode: the time at UTC (modulo one day), significant fraction digits only."""

    def to_zoned(text: str) -> str:
        utc = _timetz(text)
        if utc == 0 and text[:2] == "24":
            return TIMETZ_END_OF_DAY
        return f"{_format_clock(utc, 0)}Z"

    return ValueMapping(
        string(name=ZONED_TIME_NAME, version=1), to_zoned, zero="00:00:00Z", extra={"defaults_supported": False}
    )


def _interval_mapping(options: MappingOptions) -> ValueMapping:
    mode = options.interval_handling_mode.strip().lower()
    if mode not in ("numeric", "string"):
        raise ValueError(f"unknown interval.handling.mode {options.interval_handling_mode!r}")
    if mode == "string":
        return ValueMapping(
            string(name=INTERVAL_NAME, version=1), lambda text: _interval_iso(*_interval(text)), zero="P0Y0M0DT0H0M0S"
        )
    return ValueMapping(
        int64(name=MICRO_DURATION_NAME, version=1), lambda text: _micro_duration(*_interval(text)), zero=0
    )


def _time_precision_mode(options: MappingOptions) -> str:
    mode = options.time_precision_mode.strip().lower()
    if mode not in TIME_PRECISION_MODES:
        raise ValueError(f"unknown time.precision.mode {options.time_precision_mode!r}")
    return mode


def map_temporal_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    """The mapping of a date/time column, or None when ``column`` is not one of :data:`TEMPORAL_TYPES`."""
    name = column.name
    if name not in TEMPORAL_TYPES:
        return None
    mode = _time_precision_mode(options)
    if name == "interval":
        return _interval_mapping(options)
    if name == "timestamptz":
        return _timestamptz_mapping(_precision(column.modifier))
    if name == "timetz":
        return _timetz_mapping()
    if name == "date":
        return _date_mapping(mode)
    if name == "time":
        return _time_mapping(_precision(column.modifier), mode)
    return _timestamp_mapping(_precision(column.modifier), mode)


# -- array elements: java.sql objects -------------------------------------------------------------------
# Debezium reads array elements through pgjdbc's PgArray.getArray(), in the snapshot and in streaming
# alike, so temporal elements arrive as java.sql.Date / Time / Timestamp built in the JVM's
# Julian/Gregorian calendar (UTC). What survives depends on how Debezium then reads each object:
# DATE and TIMESTAMPTZ keep the calendar fields (era dropped, 1582-10-05..14 moved ten days on),
# TIMESTAMP keeps the instant (dates before 1582-10-15 read as Julian dates), TIME keeps
# milliseconds (24:00:00 wraps to 0) and TIMETZ whole seconds.


def _hybrid_days(text: str, end: int, bc: bool) -> int:
    """Epoch day of the instant java.util.GregorianCalendar gives the date fields in ``text[:end]``."""
    days = _date_days(text, end, bc)
    if days >= _GREGORIAN_GAP_END:
        return days
    year, month, day = int(text[: end - 6]), int(text[end - 5 : end - 3]), int(text[end - 2 : end])
    return julian_epoch_day(1 - year if bc else year, month, day)


def _jdbc_timestamp_micros(text: str) -> int:
    """TIMESTAMP element text -> epoch microseconds of the java.sql.Timestamp pgjdbc builds."""
    if text[-1:] == "y":
        return _timestamp_micros(text)
    try:
        bc = text.endswith(" BC")
        end = len(text) - 3 if bc else len(text)
        space = text.index(" ")
        return _hybrid_days(text, space, bc) * _MICROS_PER_DAY + _clock_micros(text, space + 1, end)
    except (ValueError, IndexError):
        raise ConversionError(f"{text!r} is not a valid PostgreSQL timestamp value") from None


def _jdbc_timestamptz_text(text: str) -> str:
    """TIMESTAMPTZ element text with the era dropped and gap dates moved, as Debezium reads its fields."""
    if text == "-infinity":
        return "292269055-12-02 23:00:00+00"  # pgjdbc's -infinity instant, era dropped
    if text[-3:] == " BC":
        text = text[:-3]
    if text.startswith("1582-10-"):
        day = int(text[8:10])
        if 5 <= day <= 14:
            text = f"1582-10-{day + 10}{text[10:]}"
    return text


def jdbc_array_element(column: ColumnType, options: MappingOptions) -> Callable[[str], Any] | None:
    """The converter of a temporal array element (``column`` is the element type), or None."""
    name = column.name
    if name not in ("date", "time", "timetz", "timestamp", "timestamptz"):
        return None
    mode = _time_precision_mode(options)
    precision = _precision(column.modifier)
    if name == "date":
        if mode == "isostring":
            return lambda text: f"{format_iso_date(_jdbc_date_days(text))}Z"
        return lambda text: _wrap_int(_jdbc_date_days(text))
    if name == "timetz":
        return lambda text: f"{_format_clock(_timetz(text) // _MICROS_PER_SECOND * _MICROS_PER_SECOND, 0)}Z"
    if name == "timestamptz":
        to_zoned = _timestamptz_mapping(precision).convert
        return lambda text: to_zoned(_jdbc_timestamptz_text(text))
    millis = mode == "connect" or (mode in ("adaptive", "adaptive_time_microseconds") and precision <= 3)
    if name == "time":
        millis = mode == "connect" or (mode == "adaptive" and precision <= 3)

        def time_micros(text: str) -> int:
            return _time(text) // 1000 * 1000 % _MICROS_PER_DAY

        if mode == "isostring":
            return lambda text: f"{_format_clock(time_micros(text), 0)}Z"
        if mode == "nanoseconds":
            return lambda text: time_micros(text) * 1000
        if millis:
            return lambda text: time_micros(text) // 1000
        return time_micros
    if mode == "isostring":
        return lambda text: _format_iso_datetime(_jdbc_timestamp_micros(text), 0)
    if mode == "nanoseconds":

        def to_nanos(text: str) -> int | None:
            micros = _jdbc_timestamp_micros(text)
            if micros in (TIMESTAMP_POSITIVE_INFINITY_MICROS, TIMESTAMP_NEGATIVE_INFINITY_MICROS):
                return _to_nanos(text)
            if not _MIN_NANO_TIMESTAMP_MICROS <= micros <= _MAX_NANO_TIMESTAMP_MICROS:
                return None  # Debezium logs "Failed to convert value" and nulls just this element
            return micros * 1000

        return to_nanos
    if millis:
        return lambda text: _jdbc_timestamp_micros(text) // 1000
    return lambda text: _java_epoch_micros(_jdbc_timestamp_micros(text))
