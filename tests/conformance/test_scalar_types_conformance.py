"""Scalar data types against Debezium 3.6.3: debezium-facts.md §3.2–§3.5, §3.9 and §2.7, plus defaults.

Every case captures one table family in one handling mode twice: as snapshot rows (inserted before
the connectors start) and as streamed changes (the same INSERTs as the workload). The workload then
updates and deletes under REPLICA IDENTITY DEFAULT (``before`` null for the update; the delete's
``before`` holds the key and the NOT NULL fallbacks), switches to REPLICA IDENTITY FULL and updates
and deletes again (full before-images). Temporal, array, hstore, range and geometric types are
covered by their own suites; they appear here only where a family needs them (defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from .differential import run_conformance


@dataclass(frozen=True)
class Family:
    """One table: its columns, the rows inserted (SQL tuples), and an UPDATE's SET clause."""

    columns: str
    rows: tuple[str, ...]
    update: str
    insert_columns: str = ""
    prelude: tuple[str, ...] = ()  # extensions, types, domains ("{t}" stands for the table name everywhere)
    primary_key: bool = True
    extra_rows: tuple[str, ...] = field(default=())  # rows inserted with the column defaults only


def run_family(debezium_oracle, pg_cluster, db, unique_name: str, family: Family, **options: str):
    t = f"t_{unique_name}"

    def sql(text: str) -> str:
        return text.replace("{t}", t)

    pk = "pk SERIAL PRIMARY KEY, " if family.primary_key else "pk SERIAL, "
    columns = f" ({family.insert_columns})" if family.insert_columns else ""
    inserts = [f"INSERT INTO {t}{columns} VALUES {row}" for row in family.rows]
    inserts += [f"INSERT INTO {t} DEFAULT VALUES" for _ in family.extra_rows]
    count = len(inserts)
    setup = [sql(s) for s in family.prelude] + [f"CREATE TABLE {t} ({pk}{sql(family.columns)})"] + inserts
    if family.primary_key:
        # Streamed rows get keys count+1 ... 2*count; snapshot rows 1 ... count.
        workload = inserts + [
            f"UPDATE {t} SET {sql(family.update)} WHERE pk = {count + 1}",
            f"DELETE FROM {t} WHERE pk = 1",
            f"ALTER TABLE {t} REPLICA IDENTITY FULL",
            f"UPDATE {t} SET {sql(family.update)} WHERE pk = {count + 2 if count > 1 else count + 1}",
            f"DELETE FROM {t} WHERE pk = {count + 1}",
        ]
    else:
        workload = inserts + [
            f"ALTER TABLE {t} REPLICA IDENTITY FULL",
            f"UPDATE {t} SET {sql(family.update)} WHERE pk = {count + 1}",
            f"DELETE FROM {t} WHERE pk = 1",
        ]
    debezium, ours = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=setup, tables=[f"public.{t}"], workload=workload, **options
    )
    ops = [r.op for r in debezium if r.op]
    assert ops.count("r") == count and ops.count("c") == count, ops
    assert "u" in ops and "d" in ops, ops
    return debezium, ours


# -- §3.2 numeric_table ------------------------------------------------------------------------------

NUMERIC = Family(
    columns="si SMALLINT, i INTEGER, bi BIGINT, r REAL, db DOUBLE PRECISION, r_int REAL, db_int DOUBLE PRECISION, "
    "r_nan REAL, db_nan DOUBLE PRECISION, r_pinf REAL, db_pinf DOUBLE PRECISION, r_ninf REAL, db_ninf DOUBLE PRECISION, "
    "ss SMALLSERIAL, bs BIGSERIAL, b BOOLEAN, o OID, i_nn INTEGER NOT NULL, r_nn REAL NOT NULL, b_nn BOOLEAN NOT NULL",
    insert_columns="si, i, bi, r, db, r_int, db_int, r_nan, db_nan, r_pinf, db_pinf, r_ninf, db_ninf, ss, bs, b, o, i_nn, r_nn, b_nn",
    rows=(
        "(1, 123456, 1234567890123, 3.3, 4.44, 3, 4, 'NaN', 'NaN', 'Infinity', 'Infinity', '-Infinity', '-Infinity', 1, 123, true, "
        "4000000000, 1, 1, true)",
        "(-32768, -2147483648, -9223372036854775808, '-3.4028235e38', '-1.7976931348623157e308', '-0', '-0', 1e-45, 5e-324, "
        "0.1, 0.1, 16777217, 12345678.9, -32768, -9223372036854775808, false, 0, -2147483648, '-Infinity', false)",
        "(32767, 2147483647, 9223372036854775807, '3.4028235e38', '1.7976931348623157e308', 0, 0, 0.001, 0.0001, 1234567, 10000000, "
        "100, 1e300, 32767, 9223372036854775807, NULL, 4294967295, 0, 'NaN', true)",
        "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, DEFAULT, DEFAULT, NULL, NULL, 7, 0.5, false)",
    ),
    update="i = i + 1, r = 'NaN', db = '-Infinity', b = NOT b, o = 1",
)


def test_numeric_types(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, NUMERIC)


# -- §3.3 numeric_decimal_table -----------------------------------------------------------------------

DECIMAL = Family(
    columns="d DECIMAL(3,2), dzs DECIMAL(4), dvs DECIMAL, d_nn DECIMAL(3,2) NOT NULL, n NUMERIC(6,4), nzs NUMERIC(4), nvs NUMERIC, "
    "d_int DECIMAL(3,2), dzs_int DECIMAL(4), dvs_int DECIMAL, n_int NUMERIC(6,4), nzs_int NUMERIC(4), nvs_int NUMERIC, "
    "d_nan DECIMAL(3,2), dzs_nan DECIMAL(4), dvs_nan DECIMAL, n_nan NUMERIC(6,4), nzs_nan NUMERIC(4), nvs_nan NUMERIC, "
    "n_negscale NUMERIC(3,-1), n_big NUMERIC(38,10), nvs_nn NUMERIC NOT NULL",
    insert_columns="d, dzs, dvs, d_nn, n, nzs, nvs, d_int, dzs_int, dvs_int, n_int, nzs_int, nvs_int, "
    "d_nan, dzs_nan, dvs_nan, n_nan, nzs_nan, nvs_nan, n_negscale, n_big, nvs_nn",
    rows=(
        "(1.1, 10.11, 10.1111, 3.30, 22.22, 22.2, 22.2222, 1, 10, 10, 22, 22, 22, "
        "'NaN', 'NaN', 'NaN', 'NaN', 'NaN', 'NaN', 1234, 1.5, 0)",
        "(-1.1, -10, -10.1111, -9.99, -22.22, -9999, -0.0000001, -1, 0, 0.0000, 0, -1, 100, "
        "NULL, NULL, 'Infinity', NULL, NULL, '-Infinity', -1234, -12345678901234567890.0123456789, -1.5)",
        "(9.99, 9999, 123456789012345678901234567890.123456789012345678901234567890, 0, 99.9999, 0, 1e-30, "
        "0, -0, 1e30, -0.0001, 0, '1.000', NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 99999999999999999999999999)",
        "(NULL, NULL, NULL, 0.005, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, -0.5)",
    ),
    update="d = 2.22, dvs = 0.5, nvs = 'NaN', n_negscale = 5, d_nan = 'NaN'",
)


@pytest.mark.parametrize("mode", ["precise", "double", "string"])
def test_decimal_handling_modes(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, DECIMAL, **{"decimal.handling.mode": mode})


def test_decimal_propagate_source_type(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    # Debezium's snapshot and streaming schemas differ here: SERIAL vs INT4, unconstrained NUMERIC's length.
    run_family(debezium_oracle, pg_cluster, db, unique_name, DECIMAL,
               **{"decimal.handling.mode": "double", "column.propagate.source.type": rf"public\.t_{unique_name}\..*"})


# -- §3.4 cash_table ----------------------------------------------------------------------------------

CASH = Family(
    columns="csh MONEY, csh_nn MONEY NOT NULL",
    insert_columns="csh, csh_nn",
    rows=(
        "('$1234.11', 0)",
        "('($1234.11)', '-0.01')",
        "(123.4567, 1)",
        "('92233720368547758.07', '-92233720368547758.08')",
        "(NULL, '$1,000,000.5')",
        "(0.25, '-0.35')",
        "('0.05', '-0.05')",
    ),
    update="csh = csh + 1::money",
)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"money.fraction.digits": "1"},
        {"money.fraction.digits": "0"},
        {"decimal.handling.mode": "double"},
        {"decimal.handling.mode": "string"},
        {"decimal.handling.mode": "string", "money.fraction.digits": "1"},
    ],
    ids=["precise", "fraction1", "fraction0", "double", "string", "string_fraction1"],
)
def test_money(debezium_oracle, pg_cluster, db, unique_name: str, options: dict[str, str]) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, CASH, **options)


# -- §3.4 strings, network addresses, bits, binary ----------------------------------------------------

STRINGS = Family(
    prelude=("CREATE EXTENSION IF NOT EXISTS citext",),
    columns="vc VARCHAR(2), vcv CHARACTER VARYING(2), ch CHARACTER(4), c CHAR(3), t TEXT, b BYTEA, bnn BYTEA NOT NULL, ct CITEXT, "
    "c1 \"char\", nm NAME, vcu VARCHAR, bp BPCHAR, t_nn TEXT NOT NULL, ct_nn CITEXT NOT NULL, ch_nn CHAR(2) NOT NULL",
    insert_columns="vc, vcv, ch, c, t, b, bnn, ct, c1, nm, vcu, bp, t_nn, ct_nn, ch_nn",
    rows=(
        "('žš', 'bb', 'cdef', 'abc', 'some text', E'\\\\000\\\\001\\\\002'::bytea, E'\\\\003\\\\004\\\\005'::bytea, 'Hello World', "
        "'x', 'a_name', 'unbounded', 'bp', 'nn', 'NN', 'n')",
        "('', '', '', 'a', '', ''::bytea, ''::bytea, '', ' ', '', '', '', '', '', '')",
        "('😀', 'a''', 'a b', 'a\\b', E'tab\\there\\nnewline \"quoted\" \\\\ back', '\\xdeadbeef', '\\x00', 'ÄÖÜ', "
        "'\\', repeat('n', 63), repeat('long ', 2000), 'padded   ', E'\\u00e9', 'Mixed Case', 'ab')",
        "(NULL, NULL, NULL, NULL, NULL, NULL, '\\xff', NULL, NULL, NULL, NULL, NULL, 'x', 'y', 'z')",
    ),
    update="t = 'changed', b = '\\x01', ct = 'CHANGED'",
)

NETWORK = Family(
    columns="i INET, cidr_ CIDR, m MACADDR, m8 MACADDR8, i_nn INET NOT NULL, m_nn MACADDR NOT NULL",
    insert_columns="i, cidr_, m, m8, i_nn, m_nn",
    rows=(
        "('192.168.2.0/12', '192.168.100.128/25', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', '10.0.0.1', '08-00-2b-01-02-03')",
        "('192.168.1.1', '192.168/24', '08002b:010203', '08002b01:02030405', '::1', 'ffff.ffff.ffff')",
        "('2001:db8::1/64', '2001:db8::/32', '00:00:00:00:00:00', '08:00:2b:01:02:03', '0.0.0.0/0', '00:00:00:00:00:00')",
        "(NULL, NULL, NULL, NULL, '::ffff:1.2.3.4', 'AA:BB:CC:DD:EE:FF')",
    ),
    update="i = '127.0.0.1', m8 = NULL",
)

BITS = Family(
    columns="ba BYTEA, bol BIT(1), bol2 BIT, bs BIT(2), bs7 BIT(7), bv1 BIT VARYING(1), bv BIT VARYING(2), bv2 BIT VARYING(24), "
    "bvl BIT VARYING(64), bvunlimited1 BIT VARYING, bvunlimited2 BIT VARYING, b64 BIT(64), b_nn BIT(3) NOT NULL, "
    "b1_nn BIT(1) NOT NULL, bv_nn BIT VARYING(5) NOT NULL",
    insert_columns="ba, bol, bol2, bs, bs7, bv1, bv, bv2, bvl, bvunlimited1, bvunlimited2, b64, b_nn, b1_nn, bv_nn",
    rows=(
        "(E'\\\\001\\\\002\\\\003', '0', '1', '11', '1'::bit(7), '1', '00', '000000110000001000000001', ('1' || repeat('0', 63))::varbit, "
        "'101', '111011010001000110000001000000001', repeat('1', 64)::bit(64), '101', '1', '10101')",
        "('\\x', '1', '0', '00', '0000000', '0', '1', '', '', '', '0', repeat('0', 64)::bit(64), '000', '0', '')",
        "(NULL, NULL, NULL, '01', '1111111', NULL, '11', '1', ('1' || repeat('0', 63))::varbit, ('1' || repeat('0', 200))::varbit, "
        "repeat('1', 9)::varbit, ('1' || repeat('0', 63))::bit(64), '111', '1', '1')",
        "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '010', '0', '00000')",
    ),
    update="bs = '10', bv2 = '101', bol = '1'",
)

BYTEA = Family(
    columns="ba BYTEA, bytea_array BYTEA[], ba_nn BYTEA NOT NULL",
    insert_columns="ba, bytea_array, ba_nn",
    rows=(
        "(E'\\\\001\\\\002\\\\003', ARRAY[E'\\\\000\\\\001\\\\002'::bytea, E'\\\\003\\\\004\\\\005'::bytea], '\\x00')",
        "('\\x', '{}', '\\x')",
        "('\\xfbfffe3e3f', ARRAY['\\xfbff'::bytea, NULL], '\\xffffffff')",
        "(NULL, NULL, 'plain text'::bytea)",
    ),
    update="ba = '\\x0a0b'",
)


def test_strings(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, STRINGS)


def test_network_addresses(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, NETWORK)


def test_bits(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, BITS)


@pytest.mark.parametrize("mode", ["bytes", "base64", "base64-url-safe", "hex"])
def test_binary_handling_modes(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, BYTEA, **{"binary.handling.mode": mode})


# -- §3.5 json, jsonb, xml, uuid; custom and unknown types; enums ------------------------------------

TEXT_LIKE = Family(
    columns="j JSON, jb JSONB, x XML, u UUID, j_nn JSON NOT NULL, jb_nn JSONB NOT NULL, x_nn XML NOT NULL, u_nn UUID NOT NULL",
    insert_columns="j, jb, x, u, j_nn, jb_nn, x_nn, u_nn",
    rows=(
        "('{\"bar\": \"baz\"}', '{\"bar\": \"baz\"}', '<foo>bar</foo><foo>bar</foo>', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
        "'{}', '{}', '<a/>', '00000000-0000-0000-0000-000000000000')",
        "('[1, 2.50, {\"a\" : null}]', '{\"b\": [1, 2.50], \"a\": {\"z\": true}}', '<?xml version=\"1.0\"?><r x=\"1\">t</r>', "
        "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '\"just a string\"', 'null', 'text only', '{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}')",
        "('  {\"spaced\" :  1 }  ', '\"žš 😀\"', '', NULL, '123', '[]', '<x>&amp;</x>', 'ffffffff-ffff-ffff-ffff-ffffffffffff')",
        "(NULL, NULL, NULL, NULL, 'null', '{\"k\": \"\\\\u0041\"}', '<e/>', gen_random_uuid())",
    ),
    update="jb = '{\"changed\": 1}', u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'",
)

CUSTOM = Family(
    prelude=("CREATE EXTENSION IF NOT EXISTS ltree", "CREATE EXTENSION IF NOT EXISTS isn"),
    columns="lt ltree, i isbn NOT NULL, n TEXT, lt_array ltree[], tsq tsquery, tsv tsvector, lt_nn ltree NOT NULL, "
    "tsq_nn tsquery NOT NULL, ean ean13",
    insert_columns="lt, i, n, lt_array, tsq, tsv, lt_nn, tsq_nn, ean",
    rows=(
        "('Top.Collections.Pictures.Astronomy.Galaxies', '978-0-393-04002-9', NULL, '{\"Ship.Frigate\",\"Ship.Destroyer\"}', "
        "'fat <-> cat', 'a fat cat', 'Top', 'x & y', '978-0-393-04002-9')",
        "('', '0-393-04002-X', 'text', '{}', '!a | b', '', 'A.B', 'z', NULL)",
        "(NULL, '9780393040029', NULL, NULL, NULL, NULL, 'a', 'q', NULL)",
    ),
    update="lt = 'Top.Changed', tsq = 'changed'",
)


@pytest.mark.parametrize("include_unknown", ["true", "false"])
def test_custom_and_unknown_types(debezium_oracle, pg_cluster, db, unique_name: str, include_unknown: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, CUSTOM, **{"include.unknown.datatypes": include_unknown})


@pytest.mark.parametrize("mode", ["base64-url-safe", "hex"])
def test_unknown_types_follow_binary_mode(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, CUSTOM,
               **{"include.unknown.datatypes": "true", "binary.handling.mode": mode})


@pytest.mark.server_feature("xml")
def test_text_like_types(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, TEXT_LIKE)


ENUMS = Family(
    prelude=(
        "CREATE TYPE {t}_e AS ENUM ('V1', 'V2', 'with space', 'comma,inside', '')",
        "ALTER TYPE {t}_e ADD VALUE 'V0' BEFORE 'V1'",
    ),
    columns="e {t}_e NOT NULL DEFAULT 'V1', e_opt {t}_e, e_arr {t}_e[]",
    insert_columns="e, e_opt, e_arr",
    rows=(
        "('V1', 'V2', '{V1,V2}')",
        "('with space', 'comma,inside', '{\"with space\"}')",
        "('', NULL, NULL)",
        "('V0', 'V0', '{}')",
    ),
    update="e = 'V2', e_opt = NULL",
)


@pytest.mark.parametrize("propagate", [False, True], ids=["plain", "propagate"])
def test_enums(debezium_oracle, pg_cluster, db, unique_name: str, propagate: bool) -> None:
    options = {"column.propagate.source.type": f"public\\.t_{unique_name}\\..*"} if propagate else {}
    run_family(debezium_oracle, pg_cluster, db, unique_name, ENUMS, **options)


# -- §3.9 domain types ---------------------------------------------------------------------------------

_DOMAINS = [  # (domain name suffix, definition, value)
    ("bit2", "BIT(3)", "B'101'"),
    ("smallint2", "SMALLINT", "1"),
    ("integer2", "INTEGER", "1"),
    ("bigint2", "BIGINT", "1000"),
    ("real2", "REAL", "3.14"),
    ("bool2", "BOOL DEFAULT false", "true"),
    ("float82", "FLOAT8", "3.14"),
    ("numeric2", "NUMERIC(6,2)", "1234.12"),
    ("numericv2", "NUMERIC", "1234.125"),
    ("string2", "VARCHAR(25)", "'hello'"),
    ("char2", "CHAR", "'a'"),
    ("text2", "TEXT", "'Hello World'"),
    ("json2", "JSON", "'{\"key\": \"value\"}'"),
    ("jsonb2", "JSONB", "'{\"key\": \"value\"}'"),
    ("xml2", "XML", "'<foo>Hello</foo>'"),
    ("uuid2", "UUID", "'40e6215d-b5c6-4896-987c-f30f3678f608'"),
    ("varbit2", "VARBIT(3)", "B'101'"),
    ("inet2", "INET", "'192.168.0.1'"),
    ("cidr2", "CIDR", "'192.168/24'"),
    ("macaddr2", "MACADDR", "'08:00:2b:01:02:03'"),
    ("macaddr82", "MACADDR8", "'08:00:2b:01:02:03:04:05'"),
    ("bytea2", "BYTEA", "'\\x0102'"),
    ("money2", "MONEY DEFAULT 0.0", "12.34"),
    ("oid2", "OID", "4000000000"),
    ("citext2", "CITEXT", "'CiText'"),
]


def _domains_family() -> Family:
    prelude = ["CREATE EXTENSION IF NOT EXISTS citext"]
    columns, names, values = [], [], []
    for suffix, definition, value in _DOMAINS:
        base = definition.split(" DEFAULT ")[0]
        prelude.append(f"CREATE DOMAIN {{t}}_{suffix} AS {definition}")
        columns += [f"{suffix}_base {base} NOT NULL", f"{suffix}_alias {{t}}_{suffix} NOT NULL"]
        names += [f"{suffix}_base", f"{suffix}_alias"]
        values += [value, value]
    # A domain of a domain (inherits neither its own length nor scale), a domain with a NOT NULL
    # constraint and a default, and a nullable domain column with a default.
    prelude += [
        "CREATE DOMAIN {t}_numeric3 AS {t}_numeric2",
        "CREATE DOMAIN {t}_int_nn AS INTEGER NOT NULL DEFAULT 42",
        "CREATE DOMAIN {t}_text_d AS TEXT DEFAULT 'dflt'",
        "CREATE DOMAIN {t}_string3 AS {t}_string2 DEFAULT 'inner'",
    ]
    columns += ["numeric3_alias {t}_numeric3 NOT NULL", "int_nn {t}_int_nn", "text_d {t}_text_d", "string3 {t}_string3",
                "money_d {t}_money2", "bool_d {t}_bool2"]
    names += ["numeric3_alias", "int_nn", "text_d", "string3"]
    values += ["5.5", "7", "'t'", "'s'"]
    return Family(
        prelude=tuple(prelude),
        columns=", ".join(columns),
        insert_columns=", ".join(names),
        rows=("(" + ", ".join(values) + ")", "(" + ", ".join(values).replace("'hello'", "'bye'") + ")"),
        update="integer2_base = 2, integer2_alias = 2, text2_alias = 'changed'",
    )


@pytest.mark.server_feature("xml")
@pytest.mark.parametrize("mode", ["double", "precise"])
def test_domain_types(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, _domains_family(), **{"decimal.handling.mode": mode})


@pytest.mark.server_feature("xml")
def test_domain_types_propagate_source_type(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, _domains_family(),
               **{"column.propagate.source.type": ".*_alias", "decimal.handling.mode": "double"})


# -- §2.7 NOT NULL fallbacks, tables without a primary key ---------------------------------------------

NOT_NULL = Family(
    prelude=(
        "CREATE EXTENSION IF NOT EXISTS citext",
        "CREATE EXTENSION IF NOT EXISTS ltree",
        "CREATE TYPE {t}_e AS ENUM ('a', 'b')",
    ),
    columns="i2 INT2 NOT NULL, i4 INT4 NOT NULL, i8 INT8 NOT NULL, f4 FLOAT4 NOT NULL, f8 FLOAT8 NOT NULL, bo BOOL NOT NULL, "
    "n NUMERIC(5,2) NOT NULL, nv NUMERIC NOT NULL, m MONEY NOT NULL, t TEXT NOT NULL, vc VARCHAR(5) NOT NULL, "
    "ch CHAR(2) NOT NULL, by BYTEA NOT NULL, b1 BIT(1) NOT NULL, b3 BIT(3) NOT NULL, vb VARBIT NOT NULL, "
    "ip INET NOT NULL, ci CIDR NOT NULL, mac MACADDR NOT NULL, mac8 MACADDR8 NOT NULL, j JSON NOT NULL, jb JSONB NOT NULL, "
    "x XML NOT NULL, u UUID NOT NULL, e {t}_e NOT NULL, ct CITEXT NOT NULL, lt LTREE NOT NULL, o OID NOT NULL, "
    "nm NAME NOT NULL, i4d INT4 NOT NULL DEFAULT 5, td TEXT NOT NULL DEFAULT 'd', nd NUMERIC(5,2) NOT NULL DEFAULT 1.5, "
    "opt TEXT",
    insert_columns="i2, i4, i8, f4, f8, bo, n, nv, m, t, vc, ch, by, b1, b3, vb, ip, ci, mac, mac8, j, jb, x, u, e, ct, lt, o, nm",
    rows=(
        "(1, 2, 3, 1.5, 2.5, true, 1.23, 4.5, 6.78, 't', 'vc', 'ch', '\\x01', '1', '101', '11', '1.2.3.4', '10.0.0.0/8', "
        "'08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', '{\"a\": 1}', '{\"a\": 1}', '<a/>', "
        "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'b', 'Ci', 'A.B', 7, 'nm')",
        "(-1, -2, -3, -1.5, -2.5, false, -1.23, -4.5, -6.78, '', '', '', '\\x', '0', '000', '', '::1', '::/0', "
        "'00:00:00:00:00:00', '00:00:00:00:00:00:00:00', '[]', '[]', '', '00000000-0000-0000-0000-000000000000', 'a', '', '', 0, '')",
    ),
    update="t = 'changed', i4d = 6",
)


@pytest.mark.server_feature("xml")
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"decimal.handling.mode": "double", "binary.handling.mode": "hex"},
        {"decimal.handling.mode": "string", "binary.handling.mode": "base64"},
    ],
    ids=["precise_bytes", "double_hex", "string_base64"],
)
def test_not_null_fallbacks(debezium_oracle, pg_cluster, db, unique_name: str, options: dict[str, str]) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, NOT_NULL, **options)


WITHOUT_PK = Family(
    columns="val INTEGER, n NUMERIC(4,1) NOT NULL, t TEXT NOT NULL DEFAULT 'x', b BYTEA",
    insert_columns="val, n, t, b",
    rows=("(1, 1.5, 'a', '\\x01')", "(NULL, -2, 'b', NULL)"),
    update="val = 2",
    primary_key=False,
)


def test_table_without_primary_key(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, WITHOUT_PK)


# -- column defaults -----------------------------------------------------------------------------------

LITERAL_DEFAULTS = Family(
    prelude=("CREATE EXTENSION IF NOT EXISTS citext", "CREATE TYPE {t}_e AS ENUM ('V1', 'V2', 'it''s')"),
    columns="i2 SMALLINT DEFAULT 7, i4 INTEGER DEFAULT 42, i8 BIGINT DEFAULT -9000000000, neg INTEGER DEFAULT -5, "
    "negp INTEGER DEFAULT (-(5)), par INTEGER DEFAULT (12), "
    "f4 REAL DEFAULT 1.5, f8 DOUBLE PRECISION DEFAULT -2.25, f8e FLOAT8 DEFAULT 1e10, f8n FLOAT8 DEFAULT 'NaN', "
    "f8i FLOAT8 DEFAULT '-Infinity', f4i REAL DEFAULT 'Infinity', f8int FLOAT8 DEFAULT 3, "
    "bt BOOL DEFAULT true, bf BOOL DEFAULT false, "
    "n NUMERIC(5,2) DEFAULT 1.5, nv NUMERIC DEFAULT 3.14159, nneg NUMERIC(6,2) DEFAULT -12.5, nnan NUMERIC DEFAULT 'NaN', "
    "ninf NUMERIC DEFAULT 'Infinity', nint NUMERIC(4) DEFAULT 10, nstr NUMERIC DEFAULT '2.50', "
    "m MONEY DEFAULT 12.34, mneg MONEY DEFAULT '-1.5'::money, mstr MONEY DEFAULT '$1,000.00', "
    "t TEXT DEFAULT 'abc', tq TEXT DEFAULT 'it''s', te TEXT DEFAULT '', vc VARCHAR(10) DEFAULT 'v', ch CHAR(3) DEFAULT 'c', "
    "tnull TEXT DEFAULT NULL, inull INTEGER DEFAULT NULL::integer, tcast TEXT DEFAULT 'x'::character varying, "
    "tnum TEXT DEFAULT 42, ct CITEXT DEFAULT 'Ci', "
    "by BYTEA DEFAULT '\\x0102'::bytea, bye BYTEA DEFAULT '', "
    "b3 BIT(3) DEFAULT B'101', b1 BIT(1) DEFAULT B'1', vb VARBIT DEFAULT B'11', "
    "j JSON DEFAULT '{}', jb JSONB DEFAULT '{}'::jsonb, jb2 JSONB DEFAULT '{\"a\": [1, 2]}', x XML DEFAULT '<a/>', "
    "u UUID DEFAULT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
    "ip INET DEFAULT '127.0.0.1', ci CIDR DEFAULT '10.0.0.0/8', mac MACADDR DEFAULT '08:00:2b:01:02:03', "
    "mac8 MACADDR8 DEFAULT '08:00:2b:01:02:03:04:05', "
    "e {t}_e DEFAULT 'V1', e_nn {t}_e NOT NULL DEFAULT 'V2', eq {t}_e DEFAULT 'it''s', o OID DEFAULT 4000000000, "
    "nround NUMERIC(4,1) DEFAULT 1.25, nzeros NUMERIC(4,1) DEFAULT 1.50, nexp NUMERIC DEFAULT 1e3, tqq TEXT DEFAULT 'a''''b', "
    "usr TEXT DEFAULT CURRENT_USER, bexpr BOOLEAN DEFAULT (1 = 1), tcoll TEXT DEFAULT 'c' COLLATE \"C\", "
    "i_nn INTEGER NOT NULL DEFAULT 3, n_nn NUMERIC(5,2) NOT NULL DEFAULT 0.5, t_nn TEXT NOT NULL DEFAULT 'nn'",
    insert_columns="t",
    rows=("('explicit')",),
    extra_rows=("defaults",),
    update="t = 'changed', i4 = 43",
)

FUNCTION_DEFAULTS = Family(
    columns="s BIGSERIAL, s2 SMALLSERIAL, idn INTEGER GENERATED BY DEFAULT AS IDENTITY, "
    "ida BIGINT GENERATED ALWAYS AS IDENTITY, "
    "seq INTEGER DEFAULT nextval('{t}_pk_seq'::regclass), "
    "u UUID DEFAULT gen_random_uuid(), u_nn UUID NOT NULL DEFAULT gen_random_uuid(), r FLOAT8 DEFAULT random(), "
    "r4 REAL NOT NULL DEFAULT random(), "
    "ts TIMESTAMPTZ DEFAULT now(), ts2 TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP, ts3 TIMESTAMP DEFAULT LOCALTIMESTAMP, "
    "d DATE DEFAULT CURRENT_DATE, tsd TIMESTAMP DEFAULT '2020-01-02 03:04:05', dd DATE DEFAULT '2020-01-02', "
    "tm TIME DEFAULT '01:02:03', sum INTEGER DEFAULT 1 + 1, cat TEXT DEFAULT 'a' || 'b', lo TEXT DEFAULT lower('ABC'), "
    "rnd NUMERIC DEFAULT round(1.5), n_nn NUMERIC(6,2) NOT NULL DEFAULT random(), b_nn BOOLEAN NOT NULL DEFAULT (1 = 1), "
    "txt_nn TEXT NOT NULL DEFAULT md5('x'), by_nn BYTEA NOT NULL DEFAULT decode('01', 'hex'), "
    "j_nn JSONB NOT NULL DEFAULT jsonb_build_object('a', 1), usr TEXT DEFAULT CURRENT_USER, "
    "plain TEXT",
    insert_columns="plain",
    rows=("('explicit')",),
    extra_rows=("defaults",),
    update="plain = 'changed'",
)


@pytest.mark.server_feature("xml")
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"decimal.handling.mode": "double", "binary.handling.mode": "hex"},
        {"decimal.handling.mode": "string", "binary.handling.mode": "base64-url-safe", "money.fraction.digits": "3"},
    ],
    ids=["precise_bytes", "double_hex", "string_base64url"],
)
def test_literal_defaults(debezium_oracle, pg_cluster, db, unique_name: str, options: dict[str, str]) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, LITERAL_DEFAULTS, **options)


@pytest.mark.parametrize(
    "options",
    [{}, {"decimal.handling.mode": "string", "binary.handling.mode": "hex"}],
    ids=["precise_bytes", "string_hex"],
)
def test_function_and_expression_defaults(debezium_oracle, pg_cluster, db, unique_name: str, options: dict[str, str]) -> None:
    run_family(debezium_oracle, pg_cluster, db, unique_name, FUNCTION_DEFAULTS, **options)
