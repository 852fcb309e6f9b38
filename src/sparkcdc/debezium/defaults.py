"""Column defaults as Debezium 3.6.3 puts them into schemas (``PostgresDefaultValueConverter``).

Debezium does not evaluate default expressions. It takes the text of ``pg_get_expr`` and, only for
the column types it has a parser for (looked up by the column's *declared* type name, so domains
never qualify), pulls a value out of it:

* an expression that starts like a function call (``nextval(...)``, ``now()``, ``(now())::text``)
  or is one of ``CURRENT_TIMESTAMP``/``CURRENT_TIME``/``CURRENT_DATE``/``LOCALTIME``/
  ``LOCALTIMESTAMP`` gives a fixed placeholder per type (``0``, ``0.0``, ``false``, ``''``, ``{}``,
  the zero UUID, the epoch);
* otherwise the first quoted literal anywhere in the text (``''`` unescaped), or, when the text has
  no quote at all, the whole text: ``CURRENT_USER`` on a text column becomes the default
  ``"CURRENT_USER"``, ``('a'::text || 'b'::text)`` becomes ``"a"``, and ``(1 = 1)`` on a boolean
  becomes ``false`` (Java's ``Boolean.parseBoolean``);
* the value then goes through the column's converter; a value that does not parse, a variable
  scale decimal (a struct cannot be a default) or a decimal that would need rounding to the
  column's scale gives no default.

Enums get the label before ``::<enum type>`` with its quotes removed but ``''`` left doubled.
Types without a parser (money, bytea, inet/cidr/macaddr, citext, oid, name, timetz, ltree, ranges,
arrays, geometric types, domains, ...) never have a default.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from .connect import NO_DEFAULT
from .types.base import ColumnType, ConversionError, ValueMapping
from .types.numeric import numeric_modifier, plain_string

__all__ = ["DEFAULT_LITERAL", "debezium_type_name", "default_value"]

#: ``ValueMapping.extra`` key: a function from the literal Debezium extracted out of a default
#: expression (``2020-01-02`` out of ``'2020-01-02'::date``) to the schema default, for types whose
#: literals Debezium does not parse like values (temporal types: pgjdbc's ``TimestampUtils``). It
#: raises ``ConversionError``/``ValueError`` or returns None for "no default". Without it the
#: literal goes through the mapping's converter.
DEFAULT_LITERAL = "default_literal"

# Java's Pattern "^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)": a name, "(", and a ")" later on the line.
_FUNCTION = re.compile(r"[(]?[A-Za-z0-9_.]+\([^\n\r\u0085\u2028\u2029]*\)")
_CURRENT_DATE_TIMES = frozenset({"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"})
_LITERAL = re.compile(r"'([^']*(?:''[^']*)*)'")
_TRIMMED = frozenset({"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "serial", "int8", "bigserial",
                      "smallserial", "uuid", "date", "time", "timestamp", "timestamptz", "interval"})  # fmt: skip
_NULL_AWARE = frozenset({"bool", "numeric", "float4", "float8", "int2", "int4", "serial", "int8", "bigserial", "smallserial"})

# Java's BigDecimal(String), Integer/Long/Short.parseInt, Float/Double.parseDouble (decimal forms).
_BIG_DECIMAL = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_JAVA_FLOAT = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_INTEGER_BITS = {"int2": 16, "smallserial": 16, "int4": 32, "serial": 32, "int8": 64, "bigserial": 64}
_SERIALS = {"int2": "smallserial", "int4": "serial", "int8": "bigserial"}


class _NoDefault(Exception):
    """Debezium would log "Cannot parse column default value" and export no default."""


def debezium_type_name(column: ColumnType, default_expression: str | None, *, snapshot: bool) -> str:
    """The column's type name as Debezium's ``Column.typeName()`` has it.

    The declared type's name (a domain's own name); in the snapshot, where pgjdbc's
    ``DatabaseMetaData.getColumns`` describes the table, integer columns defaulting to
    ``nextval(...)`` are ``serial``/``smallserial``/``bigserial`` (streaming reads the type from the
    Relation message and keeps ``int4``...).
    """
    name = column.declared_name
    if snapshot and default_expression is not None and "nextval(" in default_expression:
        return _SERIALS.get(name, name)
    return name


def _java_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _extract(expression: str) -> str | None:
    """The literal of an expression: the first quoted string (unescaped), else the whole text."""
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    match = _LITERAL.search(expression)
    if match is None:  # an unbalanced quote: Java's matcher.group() throws
        raise _NoDefault
    return match.group(1).replace("''", "'")


def _is_generated(expression: str) -> bool:
    return _FUNCTION.match(expression) is not None or expression.lower() in _CURRENT_DATE_TIMES


def _big_decimal(text: str) -> tuple[int, int]:
    """Java's ``new BigDecimal(text)`` -> (unscaled, scale); the scale may be negative."""
    match = _BIG_DECIMAL.fullmatch(text)
    if not match or not (match.group(2) or match.group(3)):
        raise _NoDefault
    sign, whole, fraction, exponent = match.groups()
    fraction = fraction or ""
    unscaled = int((whole + fraction) or "0")
    scale = len(fraction) - int(exponent or 0)
    return (-unscaled if sign == "-" else unscaled), scale


def _numeric_text(raw: str, column: ColumnType) -> str | None:
    """The numeric default as PostgreSQL-style text for the converter, or None for "no default"."""
    unscaled, scale = _big_decimal(raw)
    _, column_scale = numeric_modifier(column.modifier)
    if column_scale is not None:
        # Debezium sets the value to the column's scale without a rounding mode: digits that would
        # be dropped must be zeros, or there is no default.
        if scale > column_scale:
            divisor = 10 ** (scale - column_scale)
            if unscaled % divisor:
                raise _NoDefault
            unscaled //= divisor
        else:
            unscaled *= 10 ** (column_scale - scale)
        scale = column_scale
    elif scale < 0:
        unscaled *= 10**-scale
        scale = 0
    return plain_string(unscaled, scale)


def _type_id_name(text: str) -> str:
    """The type name of ``schema.name`` / ``"Schema"."Name"`` (Debezium's ``TypeId.parse``), unquoted."""
    parts: list[str] = []
    current, quoted, i = [], False, 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == '"':
                if text[i + 1 : i + 2] == '"':
                    current.append('"')
                    i += 1
                else:
                    quoted = False
            else:
                current.append(char)
        elif char == '"':
            quoted = True
        elif char == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts[-1]


def _enum_label(expression: str, column: ColumnType) -> str:
    """``'label'::enum_type`` -> ``label`` (quotes stripped, ``''`` kept as Debezium does)."""
    position = expression.rfind("::")
    if position < 0 or _type_id_name(expression[position + 2 :]) != column.declared_name:
        raise _NoDefault
    literal = expression[:position]
    if len(literal) >= 2 and literal.startswith("'") and literal.endswith("'"):
        return literal[1:-1]  # Debezium does not unescape '' here: 'it''s' stays it''s
    raise _NoDefault


def _convert(mapping: ValueMapping, text: str) -> Any:
    try:
        value = mapping.convert(text)
    except (ConversionError, ValueError, ArithmeticError):
        raise _NoDefault from None
    if value is None or isinstance(value, dict):
        raise _NoDefault  # null, or a struct (Kafka cannot use a Struct as a default: KAFKA-12694)
    return value


def _generated_value(type_name: str, mapping: ValueMapping, column: ColumnType) -> Any:
    """The default Debezium gives a column whose default is computed (``now()``, ``nextval``...)."""
    if type_name in ("bit", "varbit", "bool", "int2", "int4", "int8", "serial", "smallserial", "bigserial", "float4",
                     "float8", "numeric", "uuid"):  # fmt: skip
        return _literal_value(type_name, _PLACEHOLDERS[type_name], mapping, column)
    if type_name in ("bpchar", "varchar", "text", "json", "jsonb", "xml"):
        return _convert(mapping, _PLACEHOLDERS[type_name])
    # date/time/timestamp/timestamptz/interval: the epoch, as the type's converter prints it.
    value = mapping.extra.get("default_zero", mapping.zero)
    if value is None:
        raise _NoDefault
    return value


_PLACEHOLDERS = {
    "bit": "00", "varbit": "0", "bool": "false", "bpchar": "", "varchar": "", "text": "", "numeric": "0.0",
    "float4": "0.0", "float8": "0.0", "int2": "0", "int4": "0", "serial": "0", "int8": "0", "bigserial": "0",
    "smallserial": "0", "json": "{}", "jsonb": "{}", "xml": "", "uuid": "00000000-0000-0000-0000-000000000000",
}  # fmt: skip


def _literal_value(type_name: str, raw: str, mapping: ValueMapping, column: ColumnType) -> Any:
    """Convert the literal Debezium extracted for a column of ``type_name``."""
    if type_name == "bool":
        return _convert(mapping, "t" if raw.lower() == "true" else "f")  # Boolean.parseBoolean
    if type_name in _INTEGER_BITS:
        bits = _INTEGER_BITS[type_name]
        if not _JAVA_INTEGER.fullmatch(raw) or not -(1 << (bits - 1)) <= int(raw) < 1 << (bits - 1):
            raise _NoDefault
        return _convert(mapping, str(int(raw)))
    if type_name in ("float4", "float8"):
        text = _java_trim(raw)
        if not _JAVA_FLOAT.fullmatch(text):
            raise _NoDefault
        text = text.rstrip("fFdD").lstrip("+")
        return _convert(mapping, "NaN" if text == "-NaN" else text)
    if type_name == "numeric":
        return _convert(mapping, _numeric_text(raw, column))
    if type_name == "uuid":
        if not _UUID.fullmatch(raw):
            raise _NoDefault
        return _convert(mapping, str(uuid.UUID(raw)))
    if type_name == "bit" and len(raw) == 1:
        return raw == "1"  # Debezium treats a one-character bit default as a boolean
    parser = mapping.extra.get(DEFAULT_LITERAL)
    if parser is not None:  # the type parses literals its own way (pgjdbc's TimestampUtils for temporals)
        try:
            value = parser(raw)
        except (ConversionError, ValueError, ArithmeticError):
            raise _NoDefault from None
        if value is None:
            raise _NoDefault
        return value
    return _convert(mapping, raw)


_MAPPED = frozenset(_PLACEHOLDERS) | {"date", "time", "timestamp", "timestamptz", "interval"}


def default_value(expression: str | None, mapping: ValueMapping, column: ColumnType, *, type_name: str | None = None) -> Any:
    """The JSON-ready schema default for a column whose ``pg_get_expr`` default is ``expression``.

    ``type_name`` is Debezium's name for the column's type (see :func:`debezium_type_name`; the
    declared type's name when not given). Returns ``NO_DEFAULT`` when Debezium exports none.
    """
    if expression is None or not mapping.extra.get("defaults_supported", True):
        return NO_DEFAULT
    name = type_name or column.declared_name
    is_enum = column.typtype == "e" and column.declared_name == column.name and column.element is None
    if name not in _MAPPED and not is_enum:
        return NO_DEFAULT
    if name in _TRIMMED:
        expression = _java_trim(expression)
    try:
        if is_enum and name not in _MAPPED:
            return _convert(mapping, _enum_label(expression, column))
        if name in _NULL_AWARE and expression.startswith("NULL::"):
            return NO_DEFAULT
        if _is_generated(expression):
            return _generated_value(name, mapping, column)
        raw = _extract(expression)
        if raw is None:
            return NO_DEFAULT
        return _literal_value(name, raw, mapping, column)
    except _NoDefault:
        return NO_DEFAULT

