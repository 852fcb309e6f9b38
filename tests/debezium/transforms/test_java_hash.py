"""Java's hashCode and Debezium's MurmurHash3 of Connect values, as PartitionRouting hashes them:
each vector was printed by the JVM of Debezium 3.6.3 (``Object.hashCode()`` and
``io.debezium.util.MurmurHash3.getInstance().hash(Object)`` of the Java object Connect holds the
value as), and every column type of a PostgreSQL table agreed through PartitionRouting itself."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.connect import (  # noqa: F401 - the vectors' schema expressions use them
    array,
    boolean,
    bytes_,
    float32,
    float64,
    int16,
    int32,
    int64,
    map_,
    string,
    struct,
)
from sparkcdc.debezium.transforms.java_hash import Unhashable, debezium_murmur3, java_hash_code, murmur_hash_code
from sparkcdc.debezium.types.numeric import decimal_schema  # noqa: F401

# (what, schema expression, JSON-ready payload, Java hashCode (None: an identity hash), MurmurHash3.hash)
VECTORS = [
    ('int32 0', 'int32()', 0, 0, 1805505889),
    ('int32 1', 'int32()', 1, 1, -1931162451),
    ('int32 -1', 'int32()', -1, -1, 171705313),
    ('int32 2147483647', 'int32()', 2147483647, 2147483647, 925940511),
    ('int32 -2147483648', 'int32()', -2147483648, -2147483648, -797218156),
    ('int32 123456789', 'int32()', 123456789, 123456789, 1798169500),
    ('int16 -7', 'int16()', -7, -7, -1990014637),
    ('int16 32767', 'int16()', 32767, 32767, -403733677),
    ('int16 -32768', 'int16()', -32768, -32768, 827707054),
    ('int64 0', 'int64()', 0, 0, 1805505889),
    ('int64 -1', 'int64()', -1, 0, 1805505889),
    ('int64 1099511627776', 'int64()', 1099511627776, 256, -1356379757),
    ('int64 -9223372036854775808', 'int64()', -9223372036854775808, -2147483648, -797218156),
    ('int64 9223372036854775807', 'int64()', 9223372036854775807, -2147483648, -797218156),
    ('int64 4294967295', 'int64()', 4294967295, -1, 171705313),
    ('boolean True', 'boolean()', True, 1231, -1891831265),
    ('boolean False', 'boolean()', False, 1237, -682375457),
    ("string ''", 'string()', '', 0, 89125410),
    ("string 'a'", 'string()', 'a', 97, -1119243492),
    ("string 'hello'", 'string()', 'hello', 99162322, 1671093224),
    ("string 'héllo ✓'", 'string()', 'héllo ✓', 289802561, 161129263),
    ("string '😀 astral'", 'string()', '😀 astral', -1615254600, -606903914),
    ("string 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'", 'string()', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 847293440, -1159536893),
    ('double 1.5', 'float64()', 1.5, 1073217536, -1122085266),
    ('double -25000000000.0', 'float64()', -25000000000.0, 706168950, -409697578),
    ('double 0.0', 'float64()', 0.0, 0, 1805505889),
    ('double -0.0', 'float64()', -0.0, -2147483648, -797218156),
    ('double NaN', 'float64()', 'NaN', 2146959360, -1249978784),
    ('double Infinity', 'float64()', 'Infinity', 2146435072, -722737251),
    ('double -Infinity', 'float64()', '-Infinity', -1048576, -1812493044),
    ('float 1.25', 'float32()', 1.25, 1067450368, -689982270),
    ('float 0.10000000149011612', 'float32()', 0.10000000149011612, 1036831949, 1362821355),
    ('float NaN', 'float32()', 'NaN', 2143289344, -831917046),
    ('float -Infinity', 'float32()', '-Infinity', -8388608, -533763894),
    ("bytes b''", 'bytes_()', '', 1, -1931162451),
    ("bytes b'\\x01\\xff\\x80'", 'bytes_()', 'Af+A', -93247, -1431325797),
    ("bytes b'\\x00\\x01\\x02\\x03'", 'bytes_()', 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJw==', 117113965, 139191700),
    ("bytes b'\\xff\\xff\\xff\\xff'", 'bytes_()', '//////////////////////8=', -1536498914, -969892149),
    ('decimal -12345e-3', 'decimal_schema(3, 20)', 'z8c=', -382692, -587659212),
    ('decimal 0e-2', 'decimal_schema(2, 20)', 'AA==', 2, -351805952),
    ('decimal 999999999999e-3', 'decimal_schema(3, 20)', 'AOjUpQ//', -1073719604, 571529552),
    ('decimal -1180591620717411303424e-0', 'decimal_schema(0, 20)', 'wAAAAAAAAAAA', -1906624, 1177836944),
    ('decimal 1099511627781e-10', 'decimal_schema(10, 20)', 'AQAAAAAF', 246181, -2008405643),
    ('decimal 1e-0', 'decimal_schema(0, 20)', 'AQ==', 31, 293746424),
    ('decimal -1e-5', 'decimal_schema(5, 20)', '/w==', -26, 1516651799),
    ("bits b'\\x16' (murmur only)", 'bytes_(name="io.debezium.data.Bits", version=1)', 'Fg==', None, 246792204),
    ("bits b'\\x00\\x01' (murmur only)", 'bytes_(name="io.debezium.data.Bits", version=1)', 'AAE=', None, 1007395149),
    ('array [1, 2, None]', 'array(int32(optional=True))', [1, 2, None], 30814, 814707627),
    ('array []', 'array(int32(optional=True))', [], 1, -1931162451),
    ('array [-1]', 'array(int32(optional=True))', [-1], 30, -264651451),
    ("array ['x', None, 'z']", 'array(string(optional=True))', ['x', None, 'z'], 145233, -2047725604),
    ("map {'a': '1', 'b': None}", 'map_(string(), string(optional=True))', {'a': '1', 'b': None}, 178, 606714421),
    ('connect date 0', 'int32(name="org.apache.kafka.connect.data.Date", version=1)', 0, 0, 1805505889),
    ('connect date 19756', 'int32(name="org.apache.kafka.connect.data.Date", version=1)', 19756, 1816383885, -699185785),
    ('connect date -719162', 'int32(name="org.apache.kafka.connect.data.Date", version=1)', -719162, 304934780, 339322704),
    ('connect timestamp 0', 'int64(name="org.apache.kafka.connect.data.Timestamp", version=1)', 0, 0, 1805505889),
    ('connect timestamp 45296789', 'int64(name="org.apache.kafka.connect.data.Timestamp", version=1)', 45296789, 45296789, -1210665649),
    ('connect timestamp 1704070923456', 'int64(name="org.apache.kafka.connect.data.Timestamp", version=1)', 1704070923456, -1031092916, -341320003),
    ('connect timestamp -1', 'int64(name="org.apache.kafka.connect.data.Timestamp", version=1)', -1, 0, 1805505889),
]


@pytest.mark.parametrize("what, schema, payload, java, murmur", VECTORS, ids=[v[0] for v in VECTORS])
def test_hash_codes_are_the_jvm_s(what: str, schema: str, payload: Any, java: int | None, murmur: int) -> None:
    connect_schema = eval(schema)  # noqa: S307 - the test's own literals
    if java is not None:
        assert java_hash_code(payload, connect_schema) == java
    assert murmur_hash_code(payload, connect_schema) == murmur


def test_murmur3_of_bytes_is_debezium_s_x64_32_with_its_seed() -> None:
    # MurmurHash3_x64_32(bytes, 9001), printed by the JVM: empty, a tail only, one block and a tail with high bytes
    assert debezium_murmur3(b"") == 0x054FF222
    assert debezium_murmur3(b"hello") == 0x639ADBE8
    assert debezium_murmur3(bytes(range(200, 240))) & 0xFFFFFFFF == 0xCD50D8E6
    assert debezium_murmur3(b"", seed=0) & 0xFFFFFFFF == 0x94031E01


@pytest.mark.parametrize("schema, payload", [
    (struct([("scale", int32()), ("value", bytes_())], name="io.debezium.data.VariableScaleDecimal"), {"scale": 1, "value": "AQ=="}),
    (bytes_(name="io.debezium.data.Bits", version=1), "Fg=="),
])
def test_values_whose_java_hash_changes_with_the_jvm_run_are_refused(schema: Any, payload: Any) -> None:
    with pytest.raises(Unhashable, match="changes with every JVM run"):
        java_hash_code(payload, schema, "the field after.x")
