"""The contract between PostgreSQL column types and Debezium's Connect representation.

For each column the connector derives a :class:`ValueMapping`: the Connect schema of the field and a
function from PostgreSQL's *text output* of a value (what pgoutput sends and what COPY ... TO STDOUT
prints) to the JSON-ready payload value that JsonConverter would print for Debezium's value. Keeping
payload values JSON-ready (bytes already base64, decimals already encoded, NaN already a string)
lets serialization be one ``orjson.dumps`` per event.

Converters receive the exact text PostgreSQL produced under the session settings sparkcdc pins on
its own connections (``DateStyle=ISO``, ``IntervalStyle=postgres``, ``TimeZone=UTC``,
``bytea_output=hex``, ``extra_float_digits=1``); see :data:`SESSION_SETTINGS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import PipelineError
from ...text_format import TEXT_OUTPUT_SETTINGS
from ..config import ConnectorConfig
from ..connect import ConnectSchema
from ..property_table import PROPERTIES

__all__ = [
    "SESSION_SETTINGS",
    "ColumnType",
    "ConversionError",
    "MappingOptions",
    "TemporalRangeError",
    "UnrepresentableValueError",
    "UnsupportedTypeError",
    "ValueMapping",
]

#: GUCs under which PostgreSQL's text output is what the converters parse.
SESSION_SETTINGS = TEXT_OUTPUT_SETTINGS

Converter = Callable[[str], Any]


class ConversionError(PipelineError, ValueError):
    """A value could not be converted; the message names the value and the target type."""


class UnrepresentableValueError(ConversionError):
    """A valid value that Debezium's converter cannot represent in the chosen schema: Debezium logs a
    warning and emits null (so an event needing it in a required field fails)."""


class TemporalRangeError(UnrepresentableValueError):
    """A valid PostgreSQL value that Debezium's chosen representation cannot hold.

    Debezium logs a warning and emits null when the column is optional and fails the event only
    for NOT NULL columns; the table layer emits null for optional fields. (Raised by, and importable
    from, :mod:`sparkcdc.debezium.types.temporal`; defined here because that module is compiled.)
    """


class UnsupportedTypeError(PipelineError, LookupError):
    """No mapping exists for a column type (and ``include.unknown.datatypes`` is off)."""


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A column's type as the mapping sees it, domains already resolved to their base type.

    ``name`` is the base (root) type's ``typname`` (``int4``, ``varchar``, ``_int4`` for arrays,
    ``geometry`` for PostGIS ...); ``modifier`` is the effective ``atttypmod`` (the domain's when
    the column has none); ``declared_name`` is the column's own type name (the domain's name).
    """

    oid: int
    name: str
    namespace: str
    modifier: int
    declared_name: str
    typtype: str = "b"
    category: str = "U"
    enum_labels: tuple[str, ...] = ()
    element: ColumnType | None = None  # for arrays

    @property
    def is_array(self) -> bool:
        return self.element is not None


def _default(name: str) -> str:
    """The property table's default (the one place defaults are written)."""
    default = PROPERTIES[name].default
    assert default is not None, name
    return default


@dataclass(frozen=True)
class MappingOptions:
    """The connector options that change how values are represented (defaults: the property table's)."""

    time_precision_mode: str = _default("time.precision.mode")
    decimal_handling_mode: str = _default("decimal.handling.mode")
    binary_handling_mode: str = _default("binary.handling.mode")
    hstore_handling_mode: str = _default("hstore.handling.mode")
    interval_handling_mode: str = _default("interval.handling.mode")
    money_fraction_digits: int = int(_default("money.fraction.digits"))
    include_unknown_datatypes: bool = _default("include.unknown.datatypes") == "true"
    unavailable_value_placeholder: str = _default("unavailable.value.placeholder")

    @classmethod
    def from_config(cls, config: ConnectorConfig) -> MappingOptions:
        s = config.settings
        return cls(
            time_precision_mode=s.time_precision_mode,
            decimal_handling_mode=s.decimal_handling_mode,
            binary_handling_mode=s.binary_handling_mode,
            hstore_handling_mode=s.hstore_handling_mode,
            interval_handling_mode=s.interval_handling_mode,
            money_fraction_digits=s.money_fraction_digits,
            include_unknown_datatypes=s.include_unknown_datatypes,
            unavailable_value_placeholder=s.unavailable_value_placeholder,
        )

    @property
    def placeholder_text(self) -> str:
        """The placeholder as text columns carry it (a ``hex:`` value decoded, as Debezium does)."""
        return self.placeholder_bytes.decode("utf-8", errors="replace")

    @property
    def placeholder_bytes(self) -> bytes:
        """The placeholder as bytes; a ``hex:`` prefix means the rest is hex octets."""
        text = self.unavailable_value_placeholder
        if text.startswith("hex:"):
            return bytes.fromhex(text[4:])
        return text.encode("utf-8")


@dataclass(frozen=True)
class ValueMapping:
    """How one column's values appear in events.

    ``schema`` is the field's schema as a required (non-optional) schema without default; the
    table layer applies optionality and defaults. ``zero`` is the value Debezium uses where a NOT
    NULL column has no value (partial before-images) and for function defaults. ``toast`` is the
    value for an unchanged TOAST column. ``snapshot_convert``, when set, replaces ``convert`` for
    snapshot rows: Debezium reads those through JDBC (``ResultSet.getObject``), and for a few types
    pgjdbc's Java object converts differently from the text pgoutput sends (DATE: see temporal.py).
    """

    schema: ConnectSchema
    convert: Converter
    zero: Any = None
    toast: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    snapshot_convert: Converter | None = None
