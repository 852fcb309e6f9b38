"""Java's ``hashCode`` of Connect values, and Debezium's MurmurHash3 of them: what ``PartitionRouting``
hashes to choose a partition, computed from sparkcdc's JSON-ready values and their schemas.

A Connect value's Java object is fixed by its schema: ``int8``/``int16``/``int32`` are Byte, Short,
Integer (hash: the value), ``int64`` a Long, ``float``/``double`` Float/Double (hash of their bits),
``boolean`` a Boolean (1231/1237), ``string`` a String (UTF-16 polynomial), ``bytes`` a heap
ByteBuffer (hash of its bytes from the last), a ``Decimal`` a BigDecimal (31 × the unscaled
BigInteger's hash + scale), Connect's ``Date``/``Time``/``Timestamp`` a java.util.Date (hash of its
milliseconds), an array a list, a map a hash map. Debezium's ``Bits`` are a ``byte[]`` and structs
(a ``VariableScaleDecimal``, a geometry, ``source``) are Connect Structs: their Java hash codes are
identity hashes or mix in the identity hash of a schema type enum, which change with every JVM run,
so no two Debezium runs agree on them: :class:`Unhashable` says so.

Debezium's ``murmur`` is its ``io.debezium.util.MurmurHash3`` (an early MurmurHash3 x64 variant with
per-block constants, seed 9001, the top 32 bits of the first 64): a String is hashed as its UTF-8
bytes, a ``byte[]`` as itself, anything else as the four little-endian bytes of its Java hash code.
Both were checked value by value against Debezium's JVM (tests/debezium/transforms/test_java_hash.py).
"""

from __future__ import annotations

import base64
import math
import struct as binary
from typing import Any, Final

from ...errors import PipelineError
from ..connect import ConnectSchema

__all__ = ["Unhashable", "debezium_murmur3", "java_hash_code", "murmur_hash_code"]

_MASK64: Final = (1 << 64) - 1
_DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
_BITS: Final = "io.debezium.data.Bits"
_CONNECT_DATE: Final = "org.apache.kafka.connect.data.Date"
_CONNECT_MILLIS: Final = ("org.apache.kafka.connect.data.Time", "org.apache.kafka.connect.data.Timestamp")
_DAY_MILLIS: Final = 86_400_000


class Unhashable(PipelineError):
    """A value whose Java hash code Debezium computes differently in every JVM run."""


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _long_hash(value: int) -> int:
    value &= _MASK64
    return _int32(value ^ (value >> 32))


def _string_hash(text: str) -> int:
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in binary.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return _int32(h)


def _bytes_hash(data: bytes) -> int:
    """``ByteBuffer.hashCode``: 1, then 31 × h + each (signed) byte from the last to the first."""
    h = 1
    for byte in reversed(data):
        h = (31 * h + (byte - 256 if byte > 127 else byte)) & 0xFFFFFFFF
    return _int32(h)


def _big_integer_hash(value: int) -> int:
    """``BigInteger.hashCode``: over the magnitude's 32-bit words, most significant first, times the sign."""
    magnitude = abs(value)
    words = []
    while magnitude:
        words.append(magnitude & 0xFFFFFFFF)
        magnitude >>= 32
    h = 0
    for word in reversed(words):
        h = (31 * h + word) & 0xFFFFFFFF
    return _int32(h * (1 if value > 0 else -1 if value < 0 else 0))


def _float_value(payload: Any) -> float:
    if isinstance(payload, str):  # JSON-ready non-finite numbers
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[payload]
    return float(payload)


def _double_bits(value: float) -> int:
    if math.isnan(value):
        return 0x7FF8000000000000  # doubleToLongBits: one canonical NaN
    return binary.unpack(">q", binary.pack(">d", value))[0]


def _float_bits(value: float) -> int:
    if math.isnan(value):
        return 0x7FC00000  # floatToIntBits: one canonical NaN
    return binary.unpack(">i", binary.pack(">f", value))[0]


def java_hash_code(payload: Any, schema: ConnectSchema, where: str = "the value") -> int:
    """The Java ``hashCode`` of the Connect value ``payload`` (JSON-ready, not null) of ``schema``.
    Raises :class:`Unhashable` for the values whose hash code changes with the JVM run."""
    kind, name = schema.type, schema.name
    if kind == "struct":
        raise Unhashable(f"{where} is a struct ({name or 'unnamed'}), whose Java hash code mixes in the identity hash of "
                         "Connect's schema types: it changes with every JVM run, so Debezium's partition for it does too")
    if name == _CONNECT_DATE:
        return _long_hash(int(payload) * _DAY_MILLIS)
    if name in _CONNECT_MILLIS:
        return _long_hash(int(payload))
    if kind in ("int8", "int16", "int32"):
        return _int32(int(payload))
    if kind == "int64":
        return _long_hash(int(payload))
    if kind == "boolean":
        return 1231 if payload else 1237
    if kind == "string":
        return _string_hash(payload)
    if kind == "double":
        return _long_hash(_double_bits(_float_value(payload)))
    if kind == "float":
        return _float_bits(_float_value(payload))
    if kind == "bytes":
        data = base64.b64decode(payload)
        if name == _DECIMAL:
            scale = int(dict(schema.parameters or ()).get("scale", "0"))
            return _int32(31 * _big_integer_hash(int.from_bytes(data, "big", signed=True)) + scale)
        if name == _BITS:
            raise Unhashable(f"{where} is io.debezium.data.Bits, a byte[] whose Java hash code is its identity hash: it changes "
                             "with every JVM run (partition.hash.function=murmur hashes its bytes)")
        return _bytes_hash(data)
    if kind == "array":
        items = schema.items
        assert items is not None
        h = 1
        for item in payload:
            h = (31 * h + (0 if item is None else java_hash_code(item, items, f"an item of {where}"))) & 0xFFFFFFFF
        return _int32(h)
    if kind == "map":
        keys, values = schema.keys, schema.values
        assert keys is not None and values is not None
        pairs = payload.items() if isinstance(payload, dict) else payload
        total = 0
        for key, value in pairs:
            key_hash = 0 if key is None else java_hash_code(key, keys, f"a key of {where}")
            value_hash = 0 if value is None else java_hash_code(value, values, f"a value of {where}")
            total += key_hash ^ value_hash
        return _int32(total)
    raise Unhashable(f"{where} has the Connect type {kind}, which sparkcdc cannot hash as Java does")


# -- Debezium's MurmurHash3 ---------------------------------------------------------------------------

_C1: Final = 0x87C37B91114253D5
_C2: Final = 0x4CF5AD432745937F
_SEED: Final = 9001


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _MASK64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _MASK64
    return k ^ (k >> 33)


def debezium_murmur3(data: bytes, seed: int = _SEED) -> int:
    """``io.debezium.util.MurmurHash3.MurmurHash3_x64_32(data, seed)``: an early MurmurHash3 x64 128
    whose block constants move after each block, the tail's bytes sign-extended as Java's are; the
    top 32 bits of the first half."""
    h1 = (0x9368E53C2F6AF274 ^ seed) & _MASK64
    h2 = (0x586DCD208F7CD3FD ^ seed) & _MASK64
    c1, c2 = _C1, _C2
    length = len(data)

    def mix(h1: int, h2: int, k1: int, k2: int, c1: int, c2: int) -> tuple[int, int, int, int]:
        k1 = (_rotl((k1 * c1) & _MASK64, 23) * c2) & _MASK64
        h1 = ((h1 ^ k1) + h2) & _MASK64
        h2 = _rotl(h2, 41)
        k2 = (_rotl((k2 * c2) & _MASK64, 23) * c1) & _MASK64
        h2 = ((h2 ^ k2) + h1) & _MASK64
        h1 = (h1 * 3 + 0x52DCE729) & _MASK64
        h2 = (h2 * 3 + 0x38495AB5) & _MASK64
        return h1, h2, (c1 * 5 + 0x7B7D159C) & _MASK64, (c2 * 5 + 0x6BCE6396) & _MASK64

    blocks = length // 16
    for k1, k2 in binary.iter_unpack("<QQ", data[: blocks * 16]):
        h1, h2, c1, c2 = mix(h1, h2, k1, k2, c1, c2)
    tail = data[blocks * 16:]
    if tail:
        k1 = k2 = 0
        for index, byte in enumerate(tail):
            signed = byte - 256 if byte > 127 else byte
            if index < 8:
                k1 ^= (signed << (8 * index)) & _MASK64
            else:
                k2 ^= (signed << (8 * (index - 8))) & _MASK64
        h1, h2, c1, c2 = mix(h1, h2, k1, k2, c1, c2)
    h2 ^= length
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK64
    return _int32(h1 >> 32)


def murmur_hash_code(payload: Any, schema: ConnectSchema, where: str = "the value") -> int:
    """Debezium's ``MurmurHash3.hash(Object)`` of the Connect value: a String's UTF-8 bytes, a
    ``byte[]`` (``io.debezium.data.Bits``) itself, anything else its Java hash code's four bytes."""
    if schema.type == "string" and schema.name not in (_CONNECT_DATE, *_CONNECT_MILLIS):
        return debezium_murmur3(payload.encode("utf-8", "replace"))
    if schema.type == "bytes" and schema.name == _BITS:
        return debezium_murmur3(base64.b64decode(payload))
    return debezium_murmur3(binary.pack("<i", java_hash_code(payload, schema, where)))
