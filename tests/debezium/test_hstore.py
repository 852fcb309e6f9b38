"""hstore in json and map mode: parsing, Java HashMap iteration order, Jackson's JSON text.

Expected values come from debezium-facts.md §3.5/§3.10 and from the real Debezium 3.6.3 connector run
on the same values (noted "Debezium 3.6.3"). Converters are fed PostgreSQL's text output, whose pair
order (hstore's internal order: by key length, then bytes) is the HashMap's insertion order.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

from sparkcdc.debezium.types import ColumnType, ConversionError, MappingOptions, map_type
from sparkcdc.debezium.types.hstore import (
    jackson_object,
    jackson_string,
    java_hashmap_order,
    java_string_hash,
    parse_hstore,
)

JSON_MODE = MappingOptions()
MAP_MODE = MappingOptions(hstore_handling_mode="map")


def column(name: str, element: ColumnType | None = None) -> ColumnType:
    return ColumnType(oid=0, name=name, namespace="public", modifier=-1, declared_name=name, element=element)


def to_json(text: str) -> str:
    mapping = map_type(column("hstore"), JSON_MODE)
    assert mapping is not None
    return mapping.convert(text)


def to_map(text: str) -> dict[str, str | None]:
    mapping = map_type(column("hstore"), MAP_MODE)
    assert mapping is not None
    return mapping.convert(text)


# PostgreSQL's text output and Debezium's JSON text for it.
CASES = [
    ('"key"=>"val"', '{"key":"val"}'),  # facts §3.5
    ('"key1"=>"val1", "key2"=>"val2", "key3"=>"val3"', '{"key1":"val1","key2":"val2","key3":"val3"}'),  # facts
    ('"key4"=>"val4", "key5"=>NULL', '{"key5":null,"key4":"val4"}'),  # facts (HashMap order)
    ('"key6"=>"val6"', '{"key6":"val6"}'),  # facts
    ('"key1"=>"val1", "key2"=>NULL', '{"key1":"val1","key2":null}'),  # facts: null value
    ('"key 2"=>" ##123 78", "key_#1"=>"val 1"', '{"key_#1":"val 1","key 2":" ##123 78"}'),  # facts: special characters
    ('""=>"", "NULL"=>"NULL", "null"=>NULL, "q\\"uote"=>"back\\\\slash", "unicode"=>"žš€😀"',
     '{"":"","NULL":"NULL","null":null,"q\\"uote":"back\\\\slash","unicode":"žš€😀"}'),  # Debezium 3.6.3
    ('"a"=>"1", "b"=>"2", "c"=>"3", "d"=>"4", "e"=>"5", "f"=>"6", "g"=>"7", "h"=>"8", "i"=>"9", "j"=>"10", '
     '"k"=>"11", "l"=>"12", "m"=>"13", "n"=>"14", "Aa"=>"x", "BB"=>"y", "GydZG_"=>"w", "polygenelubricants"=>"z", '
     '"DESIGNING WORKHOUSES"=>"v"',
     '{"Aa":"x","BB":"y","GydZG_":"w","polygenelubricants":"z","DESIGNING WORKHOUSES":"v","a":"1","b":"2","c":"3",'
     '"d":"4","e":"5","f":"6","g":"7","h":"8","i":"9","j":"10","k":"11","l":"12","m":"13","n":"14"}'),  # Debezium 3.6.3: resize, collisions
    ("", "{}"),  # Debezium 3.6.3: empty hstore
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_json_mode(text: str, expected: str) -> None:
    assert to_json(text) == expected


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_map_mode_has_the_same_entries_in_the_same_order(text: str, expected: str) -> None:
    import json

    value = to_map(text)
    assert list(value.items()) == list(json.loads(expected).items())


def test_schemas() -> None:
    json_mapping = map_type(column("hstore"), JSON_MODE)
    map_mapping = map_type(column("hstore"), MAP_MODE)
    assert json_mapping is not None and map_mapping is not None
    assert json_mapping.schema.to_json() == {"type": "string", "optional": False, "name": "io.debezium.data.Json", "version": 1}
    assert map_mapping.schema.to_json() == {
        "type": "map",
        "keys": {"type": "string", "optional": False},
        "values": {"type": "string", "optional": True},
        "optional": False,
    }


def test_fallback_and_toast() -> None:
    json_mapping = map_type(column("hstore"), JSON_MODE)
    map_mapping = map_type(column("hstore"), MAP_MODE)
    assert json_mapping is not None and map_mapping is not None
    assert json_mapping.zero == "{}" and map_mapping.zero == {}  # Debezium 3.6.3 NOT NULL fallbacks
    assert json_mapping.toast == '{"__debezium_unavailable_value":"__debezium_unavailable_value"}'  # Debezium 3.6.3
    assert map_mapping.toast == {"__debezium_unavailable_value": "__debezium_unavailable_value"}  # facts §3.10
    custom = map_type(column("hstore"), MappingOptions(unavailable_value_placeholder="hex:41"))
    assert custom is not None and custom.toast == '{"A":"A"}'


def test_jackson_escaping() -> None:
    # Debezium 3.6.3: short escapes for \b \t \n \f \r, \uXXXX (upper-case hex) for other controls,
    # DEL, U+2028, BOM, '/' and non-ASCII written as they are.
    assert jackson_string("t\tab") == '"t\\tab"'
    assert jackson_string("c\x01\x1f") == '"c\\u0001\\u001F"'
    assert jackson_string("v\x1b") == '"v\\u001B"'
    assert jackson_string("nl\n\r\b\f") == '"nl\\n\\r\\b\\f"'
    assert jackson_string("del\x7f u\u2028\ufeff sl/<>&'") == "\"del\x7f u\u2028\ufeff sl/<>&'\""
    assert jackson_string('q"\\') == '"q\\"\\\\"'
    assert jackson_object([("a", None), ("b", "")]) == '{"a":null,"b":""}'


def test_parse_unescapes_and_reads_null() -> None:
    assert parse_hstore('"a\\"b"=>"c\\\\d", "e"=>NULL, "f"=>"NULL"') == [('a"b', "c\\d"), ("e", None), ("f", "NULL")]
    assert parse_hstore('"k" => "v" ,"k2"=>NULL') == [("k", "v"), ("k2", None)]
    assert parse_hstore('"multi\nline"=>"x"') == [("multi\nline", "x")]


@pytest.mark.parametrize("text", ['"a"=>', '"a"=>"1" "b"=>"2"', 'a=>1', '"a"=>"1", junk', '"a"=>"unterminated'])
def test_parse_rejects_malformed_text(text: str) -> None:
    with pytest.raises(ConversionError, match="not hstore text"):
        parse_hstore(text)


def test_java_string_hash() -> None:
    # Values printed by String.hashCode() (as unsigned 32-bit numbers).
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == 0x80000000  # Integer.MIN_VALUE
    assert java_string_hash("key4") == 3288501
    assert java_string_hash("😀") == 1772899  # surrogate pair: 31 * 0xD83D + 0xDE00
    assert java_string_hash("žš€") == 386409
    assert java_string_hash("") == 0


def test_duplicate_keys_keep_the_first_slot_and_the_last_value() -> None:
    assert to_json('"key5"=>"a", "key4"=>"b", "key5"=>"c"') == '{"key5":"c","key4":"b"}'


def test_order_survives_many_colliding_keys() -> None:
    # 2^6 keys built from "Aa"/"BB" all share one hash: one bin, treeified once the table has 64 slots.
    import itertools

    keys = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=6)]
    order = java_hashmap_order(keys)
    assert sorted(order) == list(range(len(keys)))
    assert order != list(range(len(keys)))  # the tree moved its root to the front


# -- against a real java.util.HashMap ------------------------------------------------------------

JAVA_PROGRAM = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class HashMapOrder {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            Map<String, Integer> map = new HashMap<>();
            int position = 0;
            for (String token : line.isEmpty() ? new String[0] : line.split(" ")) {
                byte[] bytes = new byte[(token.length() - 1) / 2];
                for (int b = 0; b < bytes.length; b++) bytes[b] = (byte) Integer.parseInt(token.substring(1 + 2 * b, 3 + 2 * b), 16);
                map.put(new String(bytes, StandardCharsets.UTF_8), position++);
            }
            StringJoiner order = new StringJoiner(" ");
            for (Integer value : map.values()) order.add(value.toString());
            out.append(order).append('\n');
        }
        System.out.print(out);
    }
}
"""


def _key_sets() -> list[list[str]]:
    """Random and adversarial key sets: resizes, same-bucket keys with different hashes, equal hashes."""
    import itertools

    rnd = random.Random(20261121)
    sets: list[list[str]] = []
    families = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=5)]
    by_bucket: dict[int, list[str]] = {}
    while len(by_bucket.get(7, [])) < 60:
        key = "".join(rnd.choice("abcdefgxyzÄé€😀 ") for _ in range(rnd.randint(1, 7)))
        h = java_string_hash(key)
        by_bucket.setdefault((h ^ (h >> 16)) & 255, []).append(key)
    same_bucket = list(dict.fromkeys(by_bucket[7]))
    for _ in range(120):
        filler = [f"f{rnd.randint(0, 10**6)}" for _ in range(rnd.randint(0, 150))]
        colliding = rnd.sample(same_bucket, rnd.randint(5, min(40, len(same_bucket))))
        mixed = list(dict.fromkeys(filler[: len(filler) // 2] + colliding + filler[len(filler) // 2 :]))
        sets.append(mixed)
        equal_hashes = list(dict.fromkeys(rnd.sample(families, rnd.randint(9, 32)) + filler))
        rnd.shuffle(equal_hashes)
        sets.append(equal_hashes)
        sets.append(list(dict.fromkeys("".join(rnd.choice("abxy€😀") for _ in range(rnd.randint(0, 4))) for _ in range(rnd.randint(0, 60)))))
    return sets


def test_order_matches_java_hashmap(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH to compare with java.util.HashMap")
    source = tmp_path / "HashMapOrder.java"
    source.write_text(JAVA_PROGRAM)
    sets = _key_sets()
    stdin = "\n".join(" ".join("k" + key.encode().hex() for key in keys) for keys in sets) + "\n"
    result = subprocess.run([java, str(source)], input=stdin, capture_output=True, text=True, timeout=120, check=True)
    lines = result.stdout.split("\n")
    mismatches = []
    for keys, line in zip(sets, lines, strict=False):
        expected = [int(x) for x in line.split()]
        if java_hashmap_order(keys) != expected:
            mismatches.append((keys[:5], len(keys)))
    assert not mismatches, f"{len(mismatches)} of {len(sets)} key sets differ from java.util.HashMap, e.g. {mismatches[:3]}"


# -- live: PostgreSQL's text output ----------------------------------------------------------------


@pytest.fixture
def hstore_db(db: psycopg.Connection) -> psycopg.Connection:
    db.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    return db


def hstore_text(db: psycopg.Connection, sql_expression: str) -> str:
    row = db.execute(f"SELECT format('%s', {sql_expression})").fetchone()  # no parameters: % is literal
    assert row is not None
    return str(row[0])


def test_live_text_output(hstore_db: psycopg.Connection) -> None:
    assert to_json(hstore_text(hstore_db, "'\"key\" => \"val\"'::hstore")) == '{"key":"val"}'
    assert to_json(hstore_text(hstore_db, "'\"key4\"=>\"val4\", \"key5\"=>NULL'::hstore")) == '{"key5":null,"key4":"val4"}'
    assert to_json(hstore_text(hstore_db, "'\"key_#1\"=>\"val 1\",\"key 2\"=>\" ##123 78\"'::hstore")) == (
        '{"key_#1":"val 1","key 2":" ##123 78"}'
    )
    special = hstore_text(
        hstore_db, "'\"q\\\"uote\"=>\"back\\\\slash\", \"unicode\"=>\"žš€😀\", \"null\"=>NULL, \"NULL\"=>\"NULL\", \"\"=>\"\"'::hstore"
    )
    assert to_json(special) == '{"":"","NULL":"NULL","null":null,"q\\"uote":"back\\\\slash","unicode":"žš€😀"}'
    assert to_map(special) == {"": "", "NULL": "NULL", "null": None, 'q"uote': "back\\slash", "unicode": "žš€😀"}


def test_live_control_characters(hstore_db: psycopg.Connection) -> None:
    text = hstore_text(
        hstore_db,
        "hstore(ARRAY['t'||chr(9)||'ab', 'c'||chr(1)||chr(31), 'nl'||chr(10)||chr(13)||chr(8)||chr(12), 'del'||chr(127),"
        " 'sl/<>&''', 'u'||chr(8232)||chr(65279)], ARRAY['v'||chr(27), 'x', 'y', 'z', 'w', 'q'])",
    )
    # Debezium 3.6.3, verbatim
    assert to_json(text) == (
        '{"c\\u0001\\u001F":"x","t\\tab":"v\\u001B","sl/<>&\'":"w","del\x7f":"z","u\u2028\ufeff":"q","nl\\n\\r\\b\\f":"y"}'
    )


def test_live_hstore_array(hstore_db: psycopg.Connection) -> None:
    text = hstore_text(hstore_db, "ARRAY['\"key4\"=>\"val4\",\"key5\"=>NULL'::hstore, '\"key6\"=>\"val6\"'::hstore, NULL]")
    mapping = map_type(column("_hstore", column("hstore")), JSON_MODE)
    assert mapping is not None
    assert mapping.schema.to_json()["items"] == {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}
    assert mapping.convert(text) == ['{"key5":null,"key4":"val4"}', '{"key6":"val6"}', None]  # facts §3.5 + NULL
    as_maps = map_type(column("_hstore", column("hstore")), MAP_MODE)
    assert as_maps is not None
    assert as_maps.convert(text) == [{"key5": None, "key4": "val4"}, {"key6": "val6"}, None]


def test_live_random_hstores_round_trip(hstore_db: psycopg.Connection) -> None:
    rnd = random.Random(7)
    alphabet = 'ab"\\ ,=>{}NUL\n\té€😀'
    for _ in range(60):
        pairs = {
            "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))): (
                None if rnd.random() < 0.2 else "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6)))
            )
            for _ in range(rnd.randint(0, 20))
        }
        row = hstore_db.execute("SELECT format('%%s', hstore(%s::text[], %s::text[]))", (list(pairs), list(pairs.values()))).fetchone()
        assert row is not None
        assert dict(parse_hstore(row[0])) == pairs
