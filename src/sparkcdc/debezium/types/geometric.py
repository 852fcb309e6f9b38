"""POINT, the other built-in geometric types (BOX, CIRCLE, LINE, LSEG, PATH, POLYGON) and PostGIS.

What Debezium 3.6 does, checked against the real connector (3.6.3, pgoutput):

* ``point`` -> struct ``io.debezium.data.geometry.Point`` v1 (doc ``Geometry (POINT)``): ``x``, ``y``
  (float64), ``wkb`` (optional bytes: the little-endian OGC WKB of the 2-D point) and ``srid``
  (optional int32, always null). A NOT NULL fallback is the point (0, 0).
* ``box``, ``circle``, ``line``, ``lseg``, ``path``, ``polygon`` have no mapping of their own in 3.6:
  they are *unknown* types, dropped unless ``include.unknown.datatypes`` is on, and then bytes per
  ``binary.handling.mode``. The bytes are not PostgreSQL's text but what pgjdbc's ``PGbox`` (...)
  ``getValue()`` prints after parsing it, i.e. every coordinate in Java's ``Double.toString`` form:
  ``(1,1),(0,0)`` becomes ``(1.0,1.0),(0.0,0.0)`` and ``1e-05`` becomes ``1.0E-5``.
* PostGIS ``geometry`` / ``geography`` -> struct ``io.debezium.data.geometry.Geometry`` /
  ``Geography`` v1 (doc ``Geometry`` / ``Geography``): ``wkb`` (bytes: the EWKB exactly as PostGIS
  printed it in hex, SRID flag and SRID included) and ``srid`` (optional int32: the SRID embedded in
  the EWKB, else null). Debezium's Geometry schema is optional even for NOT NULL columns (its
  builder says ``optional()``; Geography's does not): ``extra["always_optional"]`` carries that to
  the table layer. The NOT NULL fallback is ``GEOMETRYCOLLECTION EMPTY`` (``010700000000000000``)
  with a null SRID, for both. An unchanged TOAST geometry/geography becomes null in Debezium (the
  placeholder string does not fit the struct): ``extra["toast_null"]``.

Open questions: the digits of the legacy types' coordinates depend on the JVM running Debezium.
:func:`java_double` prints the shortest round-trip digits (JDK 19+); JDK 17 (the oracle's JVM)
prints one more digit for about 1% of doubles, nearly all with |v| >= 1e16
(``5.7310999236141248E17`` instead of ``5.731099923614125E17``).
"""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal

from ..connect import ConnectSchema, bytes_, float64, int32
from ..connect import struct as struct_schema
from .base import ColumnType, ConversionError, MappingOptions, ValueMapping
from .text import binary_mapping

__all__ = [
    "GEOGRAPHY_NAME",
    "GEOMETRY_NAME",
    "POINT_NAME",
    "java_double",
    "map_geometric_type",
    "point_wkb",
]

POINT_NAME = "io.debezium.data.geometry.Point"
GEOMETRY_NAME = "io.debezium.data.geometry.Geometry"
GEOGRAPHY_NAME = "io.debezium.data.geometry.Geography"

#: Built-in geometric types that Debezium <= 3.6 only emits as unknown (binary) types.
LEGACY_GEOMETRIC_TYPES = frozenset({"box", "circle", "line", "lseg", "path", "polygon"})

_WKB_POINT = struct.Struct("<BIdd")  # byte order mark (1 = little endian), type 1 = Point, x, y
_EWKB_SRID_FLAG = 0x20000000
_EMPTY_COLLECTION_WKB = base64.b64encode(bytes.fromhex("010700000000000000")).decode("ascii")
_NON_FINITE_JSON = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


# -- Java's Double.toString -------------------------------------------------------------------------


def java_double(value: float) -> str:
    """``Double.toString(value)``: the shortest round-trip digits, in Java's layout.

    Plain notation with at least one fractional digit for 1e-3 <= |v| < 1e7 (``9999999.0``,
    ``0.001``), computerized scientific notation otherwise (``1.0E7``, ``1.0E-4``, ``-2.5E-10``).
    The digits are the shortest that round-trip, which is what JDK 19+ prints; JDK <= 18 sometimes
    printed one digit more (mostly for |v| >= 1e16), see the module's open questions.
    """
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent_text = text.partition("e")
    integer_part, _, fraction_part = mantissa.partition(".")
    all_digits = integer_part + fraction_part
    significant = all_digits.lstrip("0")
    # ``point``: where the decimal point sits relative to the first significant digit.
    point = len(integer_part) + (int(exponent_text) if exponent_text else 0) - (len(all_digits) - len(significant))
    digits = significant.rstrip("0")
    magnitude = -value if sign else value
    if len(digits) == 1:
        digits, point = _two_digit_refinement(magnitude, digits, point)
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def _two_digit_refinement(magnitude: float, digits: str, point: int) -> tuple[str, int]:
    """Java picks, when one digit suffices, the closest of the 1- *or* 2-digit decimals.

    Only matters where doubles are far apart relative to their value (subnormals): Double.MIN_VALUE
    prints as ``4.9E-324``, not ``5.0E-324``.
    """
    exact = Decimal(magnitude)
    two = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 1), rounding=ROUND_HALF_EVEN)
    two_digits = "".join(map(str, two.as_tuple().digits)).rstrip("0")
    if len(two_digits) != 2 or float(two) != magnitude:
        return digits, point
    return two_digits, two.adjusted() + 1


def _json_double(value: float) -> float | str:
    """A double as JsonConverter prints it: non-finite values as the strings Jackson writes."""
    if math.isfinite(value):
        return value
    return _NON_FINITE_JSON[repr(value)]


# -- POINT -------------------------------------------------------------------------------------------


def point_wkb(x: float, y: float) -> str:
    """Base64 of the 21-byte little-endian OGC WKB of the point (x, y), as Debezium builds it."""
    return base64.b64encode(_WKB_POINT.pack(1, 1, x, y)).decode("ascii")


def _point_schema() -> ConnectSchema:
    return struct_schema(
        [("x", float64()), ("y", float64()), ("wkb", bytes_(optional=True)), ("srid", int32(optional=True))],
        name=POINT_NAME,
        version=1,
        doc="Geometry (POINT)",
    )


def _parse_point(text: str) -> tuple[float, float]:
    """``(x,y)`` (point_out) -> (x, y)."""
    if len(text) < 5 or text[0] != "(" or text[-1] != ")":
        raise ConversionError(f"{text!r} is not a point")
    x_text, comma, y_text = text[1:-1].partition(",")
    try:
        if not comma:
            raise ValueError
        return float(x_text), float(y_text)
    except ValueError:
        raise ConversionError(f"{text!r} is not a point") from None


def _point_value(x: float, y: float) -> dict[str, object]:
    return {"x": _json_double(x), "y": _json_double(y), "wkb": point_wkb(x, y), "srid": None}


def _convert_point(text: str) -> dict[str, object]:
    x, y = _parse_point(text)
    return _point_value(x, y)


def _point_mapping() -> ValueMapping:
    return ValueMapping(_point_schema(), _convert_point, zero=_point_value(0.0, 0.0))


# -- BOX, CIRCLE, LINE, LSEG, PATH, POLYGON (unknown types in Debezium <= 3.6) -----------------------

# Everything in their text output that is not punctuation is one float8 (``1``, ``-2.5e-07``, ``NaN``).
_COORDINATE = re.compile(r"[^()\[\]{}<>,]+")


def _java_coordinate(match: re.Match[str]) -> str:
    token = match.group()
    try:
        return java_double(float(token))
    except ValueError:
        raise ConversionError(f"{token!r} is not a coordinate") from None


def java_geometric_text(text: str) -> str:
    """PostgreSQL's text of a box/circle/line/lseg/path/polygon as pgjdbc's ``getValue()`` prints it.

    pgjdbc parses the value into doubles and prints them back with ``Double.toString``; the
    punctuation (brackets, which mark open/closed paths, and commas) stays as PostgreSQL wrote it.
    """
    return _COORDINATE.sub(_java_coordinate, text)


def _legacy_mapping(type_name: str, options: MappingOptions) -> ValueMapping:
    def to_bytes(text: str) -> bytes:
        if not text or text[0] not in "([{<":
            raise ConversionError(f"{text[:60]!r} is not a {type_name} value")
        return java_geometric_text(text).encode("ascii")

    return binary_mapping(to_bytes, options)


# -- PostGIS -----------------------------------------------------------------------------------------


def _postgis_schema(name: str, doc: str) -> ConnectSchema:
    return struct_schema([("wkb", bytes_()), ("srid", int32(optional=True))], name=name, version=1, doc=doc)


def ewkb_srid(ewkb: bytes) -> int | None:
    """The SRID embedded in (E)WKB, or ``None`` when its type word has no SRID flag.

    Same rule as Debezium's ``PostgisGeometry``: byte 0 is the byte order (0 = big endian), bytes
    1-4 the geometry type; with flag 0x20000000 set, bytes 5-8 are the SRID (a signed int32).
    """
    if len(ewkb) < 9:
        raise ConversionError(f"EWKB {ewkb.hex()!r} is shorter than 9 bytes")
    order = "<" if ewkb[0] else ">"
    geometry_type, srid = struct.unpack_from(order + "Ii", ewkb, 1)
    return srid if geometry_type & _EWKB_SRID_FLAG else None


def _postgis_converter(type_name: str) -> Callable[[str], dict[str, object]]:
    def convert(text: str) -> dict[str, object]:
        try:
            ewkb = bytes.fromhex(text)
        except ValueError:
            raise ConversionError(f"{text[:60]!r} is not hex EWKB ({type_name})") from None
        return {"wkb": base64.b64encode(ewkb).decode("ascii"), "srid": ewkb_srid(ewkb)}

    return convert


def _postgis_mapping(type_name: str) -> ValueMapping:
    if type_name == "geometry":
        schema = _postgis_schema(GEOMETRY_NAME, "Geometry")
        extra = {"always_optional": True, "toast_null": True}
    else:
        schema = _postgis_schema(GEOGRAPHY_NAME, "Geography")
        extra = {"toast_null": True}
    zero = {"wkb": _EMPTY_COLLECTION_WKB, "srid": None}
    return ValueMapping(schema, _postgis_converter(type_name), zero=zero, extra=extra)


# -- dispatch ----------------------------------------------------------------------------------------


def map_geometric_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    name = column.name
    if name == "point":
        return _point_mapping()
    if name in LEGACY_GEOMETRIC_TYPES:
        # Unknown to Debezium <= 3.6: dropped (None) unless include.unknown.datatypes is on.
        return _legacy_mapping(name, options) if options.include_unknown_datatypes else None
    if name in ("geometry", "geography"):
        return _postgis_mapping(name)
    return None
