"""Column defaults as Debezium puts them into schemas.

PostgreSQL deparses a constant default (``pg_get_expr``) as the value's *output* text with a cast,
``'2020-01-01'::date`` or ``42`` or ``true``; that text goes through the column's converter. A
default computed by a function (``nextval(...)``, ``now()``) has no value until a row is written, so
Debezium exports the type's zero instead (see the "Default values" section of the connector docs).
Anything else (``CURRENT_TIMESTAMP`` without parentheses, expressions) is not propagated.
"""

from __future__ import annotations

import re
from typing import Any

from .connect import NO_DEFAULT
from .types.base import ConversionError, ValueMapping

__all__ = ["default_value"]

_QUOTED = re.compile(r"^\(*'((?:[^']|'')*)'(?:::[A-Za-z_][\w .\"\[\]()]*?)*\)*$")
_NUMBER = re.compile(r"^\(*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\)*(?:::[A-Za-z_][\w .\"\[\]()]*)?$")
_FUNCTION = re.compile(r"^[A-Za-z_][\w.\"]*\(")
_BOOLEANS = {"true": "t", "false": "f"}


def default_value(expression: str | None, mapping: ValueMapping) -> Any:
    """The JSON-ready schema default for ``expression``, or ``NO_DEFAULT``.

    A mapping can say that Debezium propagates no default for its type (``defaults_supported``) and
    what a function default becomes when that differs from the NOT NULL fallback (``default_zero``).
    """
    if expression is None or not mapping.extra.get("defaults_supported", True):
        return NO_DEFAULT
    text = expression.strip()
    if text.upper().startswith("NULL"):
        return NO_DEFAULT
    literal: str | None = None
    match = _QUOTED.match(text)
    if match:
        literal = match.group(1).replace("''", "'")
    elif text in _BOOLEANS:
        literal = _BOOLEANS[text]
    else:
        number = _NUMBER.match(text)
        if number:
            literal = number.group(1)
        elif _FUNCTION.match(text):
            zero = mapping.extra.get("default_zero", mapping.zero)
            return zero if zero is not None else NO_DEFAULT
    if literal is None:
        return NO_DEFAULT
    try:
        value = mapping.convert(literal)
    except (ConversionError, ValueError):
        return NO_DEFAULT
    return NO_DEFAULT if value is None else value
