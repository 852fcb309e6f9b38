"""Arrays, ranges, hstore, geometric and PostGIS types, ltree, and unchanged TOAST values against
Debezium 3.6.3, in the snapshot and in streaming (facts §3.5, §3.6, §3.10).

Every case inserts its rows before the connectors start (snapshot records: Debezium reads them
through JDBC) and again as the workload (streamed: pgoutput text), then updates and deletes them;
see ``typecases.type_case``.
"""

from __future__ import annotations

import pytest

from .typecases import type_case

TIME_MODES = ["adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"]
BINARY_MODES = ["bytes", "base64", "base64-url-safe", "hex"]

# -- arrays (§3.6) -------------------------------------------------------------------------------

ARRAY_TABLE = (
    "int_array INT[], bigint_array BIGINT[], text_array TEXT[], char_array CHAR(10)[], varchar_array VARCHAR(10)[], "
    "date_array DATE[], numeric_array NUMERIC(10, 2)[], varnumeric_array NUMERIC[3], citext_array CITEXT[], "
    "inet_array INET[], cidr_array CIDR[], macaddr_array MACADDR[], tsrange_array TSRANGE[], tstzrange_array TSTZRANGE[], "
    "daterange_array DATERANGE[], int4range_array INT4RANGE[], numerange_array NUMRANGE[], int8range_array INT8RANGE[], "
    "uuid_array UUID[], json_array JSON[], jsonb_array JSONB[], oid_array OID[]"
)
ARRAY_ROW = (
    "('{1,2,3}', '{1550166368505037572}', '{\"one\",\"two\",\"three\"}', '{\"cone\",\"ctwo\",\"cthree\"}', "
    "'{\"vcone\",\"vctwo\",\"vcthree\"}', '{2016-11-04,2016-11-05,2016-11-06}', '{1.2,3.4,5.6}', '{1.1,2.22,3.333}', "
    "'{\"four\",\"five\",\"six\"}', '{\"192.168.2.0/12\",\"192.168.1.1\",\"192.168.0.2/1\"}', "
    "'{\"192.168.100.128/25\", \"192.168.0.0/25\", \"192.168.1.0/24\"}', "
    "'{\"08:00:2b:01:02:03\", \"08-00-2b-01-02-03\", \"08002b:010203\"}', "
    "'{\"[2019-03-31 15:30:00, infinity)\", \"[2019-03-31 15:30:00, 2019-04-30 15:30:00]\"}', "
    "'{\"[2017-06-05 11:29:12.549426+00,)\", \"[2017-06-05 11:29:12.549426+00, 2017-06-05 12:34:56.789012+00]\"}', "
    "'{\"[2019-03-31, infinity)\", \"[2019-03-31, 2019-04-30)\"}', '{\"[1,6)\", \"[1,4)\"}', '{\"[5.3,6.3)\", \"[10.0,20.0)\"}', "
    "'{\"[1000000,6000000)\", \"[5000,9000)\"}', "
    "'{\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\", \"f0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12\"}', "
    "array['{\"bar\": \"baz\"}','{\"foo\": \"qux\"}']::json[], array['{\"bar\": \"baz\"}','{\"foo\": \"qux\"}']::jsonb[], "
    "'{3,4000000000}')"
)


def test_array_table(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=["CREATE EXTENSION IF NOT EXISTS citext"],
        columns=ARRAY_TABLE, rows=[ARRAY_ROW, "(" + ", ".join(["NULL"] * 22) + ")"],
    )


def test_array_null_elements_empty_arrays_and_bounds(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=["CREATE EXTENSION IF NOT EXISTS citext"],
        columns="i INT[], b BIGINT[], t TEXT[], v VARCHAR(5)[], n NUMERIC(6,2)[], vn NUMERIC[], u UUID[], j JSONB[], "
        "f FLOAT8[], r REAL[], bo BOOL[], s SMALLINT[], c CITEXT[], ch \"char\"[]",
        rows=[
            "('{1,NULL,3}', '{NULL}', '{a,NULL,\"NULL\",\"\"}', '{NULL,x}', '{1.5,NULL}', '{NULL,2.25}', "
            "'{NULL,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', '{NULL,\"{}\"}', '{NULL,1.5,NaN,Infinity}', '{NULL,-0,3.25}', "
            "'{t,NULL,f}', '{NULL,-32768}', '{NULL,Ab}', '{a,NULL}')",
            "('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')",
            # Quoted elements with blanks, commas, quotes and backslashes (array_out escapes them).
            r"""('[2:3]={7,8}', '[0:0]={9}', '[5:6]={"a b","c,d"}', '{" x ","\\"}', '{NaN}', '{NaN,Infinity}', """
            r"""NULL, '{"[1, 2]","\"s\""}', '{1e300,-1e-300}', '{1e30}', NULL, NULL, '{"q\"uote"}', '{"\\"}')""",
        ],
    )


def test_array_null_elements_of_other_types(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="ia INET[], ca CIDR[], ma MACADDR[], m8 MACADDR8[], tr TSRANGE[], tzr TSTZRANGE[], dr DATERANGE[], "
        "ir INT4RANGE[], nr NUMRANGE[], lr INT8RANGE[], oa OID[], tt TIMETZ[], ti TIME[], ts TIMESTAMP[], f4 FLOAT4[]",
        rows=[
            "('{NULL,10.0.0.1}', '{NULL}', '{NULL}', '{NULL,08:00:2b:01:02:03:04:05}', '{NULL,empty}', '{NULL}', "
            "'{NULL,\"[2019-03-31,2019-04-30)\"}', '{NULL}', '{NULL}', '{NULL}', '{NULL,1}', '{NULL,12:00:00.5+00}', "
            "'{NULL,12:00:00.5}', '{NULL,\"2020-01-01 00:00:00\"}', '{NULL,1.5}')",
        ],
    )


def test_multidimensional_arrays(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    # Only element types whose sub-arrays Debezium turns into null (string-like ones print a Java
    # array's identity hash, which cannot be reproduced).
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="i INT[][], b BIGINT[][], n NUMERIC(5,2)[][], d DATE[][], f FLOAT8[][], bo BOOL[][], s SMALLINT[][]",
        rows=["('{{1,2},{3,4}}', '{{1},{2}}', '{{1.5,2.5}}', '{{2020-01-01,2020-01-02}}', '{{1.5},{NULL}}', "
              "'{{t,f}}', '{{{1,2}},{{3,4}}}')"],
    )


@pytest.mark.parametrize("unknown", ["false", "true"])
def test_enum_and_domain_arrays(debezium_oracle, pg_cluster, db, unique_name: str, unknown: str) -> None:
    mood, posint, label = f"mood_{unique_name}", f"posint_{unique_name}", f"label_{unique_name}"
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=[
            f"CREATE TYPE {mood} AS ENUM ('sad', 'ok', 'happy')",
            f"CREATE DOMAIN {posint} AS int CHECK (VALUE > 0)",
            f"CREATE DOMAIN {label} AS varchar(8)",
        ],
        columns=f"m {mood}, ma {mood}[], p {posint}, pa {posint}[], la {label}[]",
        rows=[
            "('ok', '{sad,happy}', 5, '{1,2}', '{a,b}')",
            "('happy', '{happy,NULL}', NULL, '{3,NULL}', '{NULL}')",
            "(NULL, '{}', 1, '{}', '{}')",
        ],
        **{"include.unknown.datatypes": unknown},
    )


@pytest.mark.parametrize("mode", TIME_MODES)
def test_temporal_arrays(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    rows = [
        "('{2016-11-04,2016-11-05}', '{00:01:02,01:02:03}', '{13:51:30.123,24:00:00}', '{11:51:02+00,12:51:03+02}', "
        "'{\"2020-04-01 11:51:02\",\"2020-04-01 12:51:03.5\"}', '{\"2020-04-01 11:51:02.123\"}', "
        "'{\"2020-04-01 11:51:02+00\",\"2020-04-01 12:51:03.000001+00\"}', '{\"2020-04-01 11:51:02.7+00\"}', "
        "'{\"1 day\",\"-1 year 2 mons\"}')",
        "('{NULL,2016-11-04}', '{NULL}', '{}', '{24:00:00+00,23:59:59.999999-03,00:00:00+14}', "
        "'{NULL,\"2020-04-01 00:00:00\"}', '{}', '{NULL}', '{}', '{}')",
        "('{infinity,-infinity}', '{23:59:59.999999}', '{00:00:00}', '{13:00:00+05:30}', "
        "'{infinity,-infinity}', '{infinity}', '{infinity,-infinity}', '{-infinity}', NULL)",
        "('{0044-03-15 BC,12345-06-07,1582-10-10}', '{12:00:00}', '{12:00:00}', '{12:00:00-12}', "
        "'{\"0044-03-15 12:00:00.25 BC\",\"12345-06-07 08:09:10.111213\",\"1000-06-30 12:00:00\"}', '{\"1582-10-10 10:00:00\"}', "
        "'{\"0044-03-15 12:00:00.25+00 BC\",\"12345-06-07 08:09:10.111213+00\"}', '{\"1000-06-30 12:00:00+00\"}', NULL)",
    ]
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="d DATE[], t TIME[], t3 TIME(3)[], ttz TIMETZ[], ts TIMESTAMP[], ts3 TIMESTAMP(3)[], tz TIMESTAMPTZ[], "
        "tz0 TIMESTAMPTZ(0)[], iv INTERVAL[]",
        rows=rows,
        **{"time.precision.mode": mode},
    )


@pytest.mark.parametrize("mode", BINARY_MODES)
def test_bytea_arrays(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="ba BYTEA, bytea_array BYTEA[]",
        rows=[
            "(E'\\\\001\\\\002\\\\003', ARRAY[E'\\\\000\\\\001\\\\002'::bytea, E'\\\\003\\\\004\\\\005'::bytea])",
            "('', ARRAY[NULL, ''::bytea, '\\xfbff'::bytea])",
            "(NULL, '{}')",
        ],
        **{"binary.handling.mode": mode},
    )


# -- ranges, hstore, geometric types, PostGIS, ltree (§3.5) -----------------------------------------


def test_range_table(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="unbounded_exclusive_tsrange TSRANGE, bounded_inclusive_tsrange TSRANGE, unbounded_exclusive_tstzrange TSTZRANGE, "
        "bounded_inclusive_tstzrange TSTZRANGE, unbounded_exclusive_daterange DATERANGE, bounded_exclusive_daterange DATERANGE, "
        "int4_number_range INT4RANGE, numerange NUMRANGE, int8_number_range INT8RANGE",
        rows=[
            "('[2019-03-31 15:30:00, infinity)', '[2019-03-31 15:30:00, 2019-04-30 15:30:00]', '[2017-06-05 11:29:12.549426+00,)', "
            "'[2017-06-05 11:29:12.549426+00, 2017-06-05 12:34:56.789012+00]', '[2019-03-31, infinity)', '[2019-03-31, 2019-04-30)', "
            "'[1000,6000)', '[5.3,6.3)', '[1000000,6000000)')",
            "('empty', '(,)', '(-infinity,infinity)', '[0044-03-15 12:00:00+00 BC,12345-01-01 00:00:00+00]', 'empty', "
            "'[0044-03-15 BC,12345-01-01]', '(1,2]', '(,)', 'empty')",
            "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        ],
    )


HSTORE_ROWS = [
    "('\"key\" => \"val\"', NULL)",  # hstore_table
    "('\"key1\" => \"val1\",\"key2\" => \"val2\",\"key3\" => \"val3\"', "
    "array['\"key4\" => \"val4\",\"key5\" => null'::hstore, '\"key6\" => \"val6\"'])",  # hstore_table_mul
    "('\"key1\" => \"val1\",\"key2\" => NULL', '{}')",  # hstore_table_with_null
    "('\"key_#1\" => \"val 1\",\"key 2\" =>\" ##123 78\"', array[''::hstore, NULL])",  # hstore_table_with_special
    r"""('"q\"uote" => "back\\slash", "" => "", "ctl" => "a	b", "uni" => "žš"', NULL)""",
    "('', NULL)",
]


@pytest.mark.parametrize("mode", ["json", "map"])
def test_hstore(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    keys = ", ".join(f'"k{i}" => "v{i}"' for i in range(20))
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=["CREATE EXTENSION IF NOT EXISTS hstore"],
        columns="hs hstore, hsarr hstore[]",
        rows=[*HSTORE_ROWS, f"('{keys}', NULL)"],
        **{"hstore.handling.mode": mode},
    )


GEOMETRIC_ROWS = [
    "('(1,1)', '(0,0),(1,1)', '<(10,4),10>', '{-1,0,0}', '[(0,0),(0,1)]', '((0,0),(0,1),(0,2))', '((0,0),(0,1),(1,0),(0,0))')",
    "('(1e-05,-2.5e+300)', '(1.5,-0),(1e7,1e-3)', '<(0.1,0.2),0.30000000000000004>', '{1,2,3.5}', '[(1e16,2),(3,4)]', "
    "'[(0,0),(0,1),(0,2)]', '((0.5,0.5))')",
    "('(-0,NaN)', NULL, NULL, NULL, NULL, NULL, NULL)",
]


@pytest.mark.parametrize("unknown", ["false", "true"])
def test_geometric_types(debezium_oracle, pg_cluster, db, unique_name: str, unknown: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="p POINT, b BOX, c CIRCLE, l LINE, ls LSEG, pa PATH, po POLYGON",
        rows=GEOMETRIC_ROWS,
        **{"include.unknown.datatypes": unknown},
    )


@pytest.mark.server_feature("postgis")
def test_postgis(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=["CREATE EXTENSION IF NOT EXISTS postgis"],
        columns="p GEOMETRY, g GEOGRAPHY, pn GEOMETRY(POINT, 4326) NOT NULL, ga GEOMETRY[]",
        rows=[
            "('SRID=3187;POINT(174.9479 -36.7208)'::geometry, 'MULTILINESTRING((169.1321 -44.7032, 167.8974 -44.6414))'::geography, "
            "'SRID=4326;POINT(1 2)', ARRAY['GEOMETRYCOLLECTION EMPTY'::geometry, "
            "'POLYGON((166.51 -46.64, 178.52 -48.64, 178.52 -34.45, 166.51 -34.45, 166.51 -46.64))'::geometry])",
            "(NULL, NULL, 'SRID=4326;POINT(-0.5 1e-7)', ARRAY[NULL, 'POINT Z (1 2 3)'::geometry])",
        ],
    )


@pytest.mark.parametrize("unknown", ["false", "true"])
def test_ltree_and_isbn(debezium_oracle, pg_cluster, db, unique_name: str, unknown: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        setup=["CREATE EXTENSION IF NOT EXISTS ltree", "CREATE EXTENSION IF NOT EXISTS isn"],
        columns="lt ltree, i isbn NOT NULL, n TEXT, lt_array ltree[]",
        rows=[
            "('Top.Collections.Pictures.Astronomy.Galaxies', '978-0-393-04002-9', 'Hello World', "
            "'{\"Ship.Frigate\",\"Ship.Destroyer\"}')",
            "(NULL, '0-393-04002-X', NULL, '{NULL}')",
            "('', '0-393-04002-X', '', '{\"\"}')",
        ],
        **{"include.unknown.datatypes": unknown},
    )


# -- unchanged TOAST values (§3.10) ---------------------------------------------------------------

# Every TOASTable column holds more than 2 kB, stored out of line (STORAGE EXTERNAL); the workload's
# UPDATE of ``tag`` leaves them unchanged, so pgoutput sends them as "unchanged TOAST" ('u').
TOAST_COLUMNS = {
    "t": ("TEXT", "repeat('abcdefghij', 400)"),
    "vc": ("VARCHAR(5000)", "repeat('0123456789', 400)"),
    "b": ("BYTEA", "decode(repeat('00ff', 2500), 'hex')"),
    "j": ("JSON", "(SELECT json_agg(g)::json FROM generate_series(1, 1000) g)"),
    "jb": ("JSONB", "(SELECT jsonb_agg(g) FROM generate_series(1, 1000) g)"),
    "ta": ("TEXT[]", "(SELECT array_agg(g::text) FROM generate_series(1, 1000) g)"),
    "ia": ("INT4[]", "(SELECT array_agg(g) FROM generate_series(1, 1000) g)"),
    "la": ("INT8[]", "(SELECT array_agg(g::int8) FROM generate_series(1, 500) g)"),
    "da": ("DATE[]", "(SELECT array_agg(DATE '2020-01-01' + g) FROM generate_series(1, 1000) g)"),
    "ba": ("BYTEA[]", "(SELECT array_agg(decode(repeat('ab', 100), 'hex')) FROM generate_series(1, 30) g)"),
    "ua": ("UUID[]", "(SELECT array_agg(md5(g::text)::uuid) FROM generate_series(1, 300) g)"),
    "jba": ("JSONB[]", "(SELECT array_agg(jsonb_build_object('k', g)) FROM generate_series(1, 500) g)"),
    "hs": ("hstore", "(SELECT hstore(array_agg('k' || g), array_agg('v' || g)) FROM generate_series(1, 400) g)"),
}


def _toast_case(oracle, cluster, db, name: str, columns: list[str], identity: str, **options: str) -> None:
    spec = {c: TOAST_COLUMNS[c] for c in columns}
    type_case(
        oracle, cluster, db, name,
        setup=["CREATE EXTENSION IF NOT EXISTS hstore"],
        columns=", ".join(f"{c} {type_}" for c, (type_, _) in spec.items()) + ", small text",
        names=", ".join(spec) + ", small",
        rows=["(" + ", ".join(value for _, value in spec.values()) + ", 'a')"],
        identity=identity,
        after_create=[f"ALTER TABLE t_{name} ALTER COLUMN {c} SET STORAGE EXTERNAL" for c in spec],
        **options,
    )


PLACEHOLDERS = {"default": None, "custom": "<unchanged>", "hex": "hex:00ff7e41"}


@pytest.mark.parametrize("placeholder", list(PLACEHOLDERS))
@pytest.mark.parametrize("identity", ["DEFAULT", "FULL"])
def test_unchanged_toast(debezium_oracle, pg_cluster, db, unique_name: str, identity: str, placeholder: str) -> None:
    options = {} if PLACEHOLDERS[placeholder] is None else {"unavailable.value.placeholder": PLACEHOLDERS[placeholder]}
    _toast_case(debezium_oracle, pg_cluster, db, unique_name, list(TOAST_COLUMNS), identity, **options)


@pytest.mark.parametrize("mode", ["base64", "base64-url-safe", "hex"])
def test_unchanged_toast_bytea_in_binary_modes(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    _toast_case(debezium_oracle, pg_cluster, db, unique_name, ["b", "ba"], "DEFAULT", **{"binary.handling.mode": mode})


def test_unchanged_toast_hstore_in_map_mode(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    _toast_case(debezium_oracle, pg_cluster, db, unique_name, ["hs"], "DEFAULT", **{"hstore.handling.mode": "map"})
