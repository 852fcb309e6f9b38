"""Java's ``SimpleDateFormat``, in UTC and the English locale, as Kafka Connect's transforms use it.

``TimestampRouter``'s ``timestamp.format`` is a ``SimpleDateFormat`` pattern, and ``Cast`` prints
Connect's Date, Time and Timestamp values with three fixed ones. Java formats through
``GregorianCalendar``: Julian dates before 1582-10-15, years of an era (1 BC is year 1 of era BC),
weeks that start on Sunday with week 1 the one holding January 1st (the US locale the JVM runs in).
A pattern is compiled once into a list of field printers; a letter Java does not know, or an
unterminated quote, is refused as Java refuses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import ConfigurationError

__all__ = ["DatePatternError", "JavaDate", "compile_date_pattern", "java_date"]

_MS_PER_DAY = 86_400_000
_EPOCH_JULIAN_DAY = 2_440_588  # 1970-01-01
_GREGORIAN_CUTOVER_MS = -12_219_292_800_000  # 1582-10-15T00:00Z, GregorianCalendar's default
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_LETTERS = "GyYMLwWDdFEuaHkKhmsSzZX"


class DatePatternError(ConfigurationError):
    """A pattern ``SimpleDateFormat`` refuses (Java's ``IllegalArgumentException`` message); the
    transform reading the pattern names its property."""


@dataclass(frozen=True, slots=True)
class JavaDate:
    """The calendar fields of an instant, as ``GregorianCalendar`` in UTC computes them."""

    era: int  # 1 AD, 0 BC
    year: int  # year of the era (>= 1)
    month: int  # 1..12
    day: int
    day_of_year: int
    day_of_week: int  # 1 Sunday .. 7 Saturday
    week_of_year: int
    week_year: int  # proleptic (1 BC is 0): Java prints a week year before 1 AD with its sign
    week_of_month: int
    hour: int
    minute: int
    second: int
    millisecond: int


def _julian_day_to_date(julian_day: int, gregorian: bool) -> tuple[int, int, int]:
    """(proleptic year, month, day) of a Julian day number in the Gregorian or Julian calendar."""
    if gregorian:
        a = julian_day + 32044
        b = (4 * a + 3) // 146097
        c = a - 146097 * b // 4
    else:
        b = 0
        c = julian_day + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = 100 * b + d - 4800 + m // 10
    return year, month, day


def _date_to_julian_day(year: int, month: int, day: int, gregorian: bool) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    if gregorian:
        return day + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083


_CUTOVER_JULIAN_DAY = _EPOCH_JULIAN_DAY + _GREGORIAN_CUTOVER_MS // _MS_PER_DAY


def _first_of_year(year: int) -> int:
    """Julian day number of January 1st of a proleptic year, in the calendar in force that day."""
    gregorian_first = _date_to_julian_day(year, 1, 1, True)
    return gregorian_first if gregorian_first >= _CUTOVER_JULIAN_DAY else _date_to_julian_day(year, 1, 1, False)


def _week_start(first_day: int) -> int:
    """The Sunday on or before ``first_day`` (a Julian day number): where week 1 of its year starts."""
    return first_day - (first_day + 1) % 7


def java_date(epoch_ms: int) -> JavaDate:
    """The calendar fields of ``epoch_ms`` in UTC."""
    days, ms_of_day = divmod(epoch_ms, _MS_PER_DAY)
    julian_day = days + _EPOCH_JULIAN_DAY
    year, month, day = _julian_day_to_date(julian_day, julian_day >= _CUTOVER_JULIAN_DAY)
    first = _first_of_year(year)
    day_of_week = (julian_day + 1) % 7 + 1
    week_year = year
    next_start = _week_start(_first_of_year(year + 1))
    if julian_day >= next_start:
        week_year, week_of_year = year + 1, 1
    else:
        week_of_year = (julian_day - _week_start(first)) // 7 + 1
    first_of_month = julian_day - day + 1
    week_of_month = (julian_day - _week_start(first_of_month)) // 7 + 1
    era = 1 if year > 0 else 0
    return JavaDate(
        era=era, year=year if era else 1 - year, month=month, day=day, day_of_year=julian_day - first + 1,
        day_of_week=day_of_week, week_of_year=week_of_year, week_year=week_year,
        week_of_month=week_of_month, hour=ms_of_day // 3_600_000, minute=ms_of_day // 60_000 % 60,
        second=ms_of_day // 1000 % 60, millisecond=ms_of_day % 1000,
    )


def _number(get: Callable[[JavaDate], int], count: int) -> Callable[[JavaDate], str]:
    return lambda date: str(get(date)).zfill(count)


def _year(get: Callable[[JavaDate], int], count: int) -> Callable[[JavaDate], str]:
    """A year: two letters print its last two digits; a negative (week) year keeps its sign."""
    def text(date: JavaDate) -> str:
        value = get(date)
        digits = str(abs(value) % 100 if count == 2 else abs(value)).zfill(count)
        return "-" + digits if value < 0 else digits

    return text


def _text(full: Callable[[JavaDate], str], short: Callable[[JavaDate], str], count: int) -> Callable[[JavaDate], str]:
    return full if count >= 4 else short


def _field(letter: str, count: int) -> Callable[[JavaDate], str]:
    if letter == "G":
        return lambda date: "AD" if date.era else "BC"
    if letter == "y":
        return _year(lambda date: date.year, count)
    if letter == "Y":
        return _year(lambda date: date.week_year, count)
    if letter in "ML":
        if count >= 3:
            return _text(lambda date: _MONTHS[date.month - 1], lambda date: _MONTHS[date.month - 1][:3], count)
        return _number(lambda date: date.month, count)
    if letter == "E":
        return _text(lambda date: _DAYS[date.day_of_week - 1], lambda date: _DAYS[date.day_of_week - 1][:3], count)
    if letter == "a":
        return lambda date: "AM" if date.hour < 12 else "PM"
    if letter == "z":
        return _text(lambda _date: "Coordinated Universal Time", lambda _date: "UTC", count)
    if letter == "Z":
        return lambda _date: "+0000"
    if letter == "X":
        if count > 3:
            raise DatePatternError(f"invalid ISO 8601 format: length={count}")
        return lambda _date: "Z"
    numbers: dict[str, Callable[[JavaDate], int]] = {
        "w": lambda date: date.week_of_year,
        "W": lambda date: date.week_of_month,
        "D": lambda date: date.day_of_year,
        "d": lambda date: date.day,
        "F": lambda date: (date.day - 1) // 7 + 1,
        "u": lambda date: (date.day_of_week + 5) % 7 + 1,
        "H": lambda date: date.hour,
        "k": lambda date: date.hour or 24,
        "K": lambda date: date.hour % 12,
        "h": lambda date: date.hour % 12 or 12,
        "m": lambda date: date.minute,
        "s": lambda date: date.second,
        "S": lambda date: date.millisecond,
    }
    return _number(numbers[letter], count)


def compile_date_pattern(pattern: str) -> Callable[[int], str]:
    """``new SimpleDateFormat(pattern)`` in UTC: a function of epoch milliseconds. Letters are
    fields (repeated for width or the long form), ``'text'`` is literal, ``''`` is a quote."""
    pieces: list[str | Callable[[JavaDate], str]] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            if i + 1 < len(pattern) and pattern[i + 1] == "'":
                pieces.append("'")
                i += 2
                continue
            literal: list[str] = []
            i += 1
            while True:
                if i >= len(pattern):
                    raise DatePatternError("Unterminated quote")
                if pattern[i] == "'":
                    if i + 1 < len(pattern) and pattern[i + 1] == "'":
                        literal.append("'")
                        i += 2
                        continue
                    i += 1
                    break
                literal.append(pattern[i])
                i += 1
            pieces.append("".join(literal))
        elif ("a" <= char <= "z") or ("A" <= char <= "Z"):
            if char not in _LETTERS:
                raise DatePatternError(f"Illegal pattern character '{char}'")
            count = 1
            while i + count < len(pattern) and pattern[i + count] == char:
                count += 1
            pieces.append(_field(char, count))
            i += count
        else:
            pieces.append(char)
            i += 1

    def format_instant(epoch_ms: int) -> str:
        date = java_date(epoch_ms)
        return "".join(piece if isinstance(piece, str) else piece(date) for piece in pieces)

    return format_instant
