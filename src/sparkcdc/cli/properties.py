"""A reader for Java ``.properties`` files with ``java.util.Properties.load`` semantics.

Debezium users keep connector configurations as Kafka Connect ``.properties`` files, which Java
reads with ``Properties.load``; a file must mean the same here as there. So this follows that
method's rules rather than an INI dialect: natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``; an odd
number of trailing backslashes continues the line (the next line's leading whitespace is dropped);
lines whose first non-blank character is ``#`` or ``!`` are comments (and never continue); the key
ends at the first unescaped ``=``, ``:`` or blank, after which blanks and one ``=``/``:`` are
skipped; the value keeps its trailing blanks; ``\\t \\n \\r \\f \\uXXXX`` are escapes and a backslash
before any other character stands for that character.

Deviations, both to report mistakes Java would swallow: a malformed ``\\uXXXX`` is an error naming
the line (Java throws too, without a line), and so is an empty key.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["PropertiesSyntaxError", "PropertyEntry", "parse_properties"]

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesSyntaxError(ConfigurationError):
    """The text is not a valid properties file; ``line`` is 1-based (the logical line's first line)."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")


@dataclass(frozen=True, slots=True)
class PropertyEntry:
    key: str
    value: str
    line: int  # 1-based number of the natural line where the entry starts


def parse_properties(text: str) -> list[PropertyEntry]:
    """Entries in file order (a repeated key appears twice; as in Java, the last one wins)."""
    entries = []
    for line_no, logical in _logical_lines(text):
        key_raw, value_raw = _split_key_value(logical)
        key = _unescape(key_raw, line_no)
        if not key:
            raise PropertiesSyntaxError(line_no, "the line has a value but no property name")
        entries.append(PropertyEntry(key, _unescape(value_raw, line_no), line_no))
    return entries


def _natural_lines(text: str) -> list[str]:
    # str.splitlines would also split at \v, \x1c, \u2028 ...; Java splits only at \n, \r and \r\n.
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line) for every non-blank, non-comment logical line."""
    lines = _natural_lines(text)
    result = []
    index = 0
    while index < len(lines):
        start = index
        line = lines[index].lstrip(_BLANKS)
        index += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while _ends_with_continuation(line):
            parts.append(line[:-1])
            if index >= len(lines):
                line = ""  # a continuation at the end of the file continues into nothing
                break
            line = lines[index].lstrip(_BLANKS)
            index += 1
        parts.append(line)
        result.append((start + 1, "".join(parts)))
    return result


def _split_key_value(line: str) -> tuple[str, str]:
    """Java's key/separator scan: the key ends at an unescaped ``=``, ``:`` or blank."""
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for position, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = position, position + 1, True
            break
        if not escaped and char in _BLANKS:
            key_end, value_start = position, position + 1
            break
        escaped = char == "\\" and not escaped
    while value_start < len(line):
        char = line[value_start]
        if char not in _BLANKS:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape(raw: str, line_no: int) -> str:
    out = []
    position = 0
    while position < len(raw):
        char = raw[position]
        position += 1
        if char != "\\":
            out.append(char)
            continue
        if position >= len(raw):
            break  # a lone trailing backslash (continuation into the end of the file) stands for nothing
        escaped = raw[position]
        position += 1
        if escaped == "u":
            digits = raw[position:position + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesSyntaxError(line_no, f"malformed \\uXXXX escape: \\u{digits}")
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_ESCAPES.get(escaped, escaped))
    return _join_surrogates("".join(out))


def _join_surrogates(text: str) -> str:
    """``\\uD83D\\uDE00`` is how Java writes one character outside the BMP: make it that character."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
