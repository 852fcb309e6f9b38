"""Java's regular expressions and replacement strings, as Kafka Connect's transforms use them.

Connect compiles a transform's ``regex``/``pattern`` with ``java.util.regex.Pattern`` and matches a
whole name (``Matcher.matches``); a replacement names groups as ``$1`` or ``${name}`` and escapes with
a backslash. Python's ``re`` covers the syntax configurations use; a replacement is translated once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .base import TransformConfigError

__all__ = ["compile_java_regex", "java_replacement"]

# Java names a group (?<name>...), Python (?P<name>...); (?<= and (?<! are lookbehinds in both.
_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<(?=[A-Za-z])")


def compile_java_regex(prop: str, pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled; an error names ``prop``. Java's possessive quantifiers and ``\\p{...}``
    classes beyond Python's are refused by ``re`` with its own message."""
    try:
        return re.compile(_NAMED_GROUP.sub("(?P<", pattern))
    except re.error as exc:
        raise TransformConfigError(f"{pattern!r} is not a valid regular expression: {exc}", prop=prop) from None


def java_replacement(prop: str, replacement: str) -> Callable[[re.Match[str]], str]:
    """``Matcher.replaceFirst(replacement)``'s text for a match: ``$n`` and ``${name}`` are groups,
    ``\\x`` is ``x``; anything else is literal."""
    pieces: list[str | tuple[str | int]] = []  # literal text, or (group,)
    literal: list[str] = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\":
            if i + 1 >= len(replacement):
                raise TransformConfigError(f"{replacement!r} ends with a lone backslash", prop=prop)
            literal.append(replacement[i + 1])
            i += 2
        elif char == "$":
            if i + 1 < len(replacement) and replacement[i + 1] == "{":
                end = replacement.find("}", i + 2)
                if end < 0:
                    raise TransformConfigError(f"{replacement!r} has an unclosed ${{ group reference", prop=prop)
                group: str | int = replacement[i + 2:end]
                if not (group and group[0].isalpha() and group.isalnum()):
                    raise TransformConfigError(f"{replacement!r}: ${{{group}}} is not a group name (a letter, then "
                                                     "letters or digits; a group number is written $1)", prop=prop)
                i = end + 1
            else:
                j = i + 1
                while j < len(replacement) and replacement[j].isdigit():
                    j += 1
                if j == i + 1:
                    raise TransformConfigError(f"{replacement!r} has a $ that names no group (escape it as \\$)", prop=prop)
                group = int(replacement[i + 1:j])
                i = j
            if literal:
                pieces.append("".join(literal))
                literal = []
            pieces.append((group,))
        else:
            literal.append(char)
            i += 1
    if literal:
        pieces.append("".join(literal))

    def expand(match: re.Match[str]) -> str:
        return "".join(piece if isinstance(piece, str) else (match.group(piece[0]) or "") for piece in pieces)

    return expand
