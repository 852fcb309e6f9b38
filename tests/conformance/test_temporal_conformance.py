"""Temporal types against Debezium 3.6.3, in the snapshot and in streaming (facts §3.7, §3.8).

Every case inserts its rows before the connectors start (snapshot records: Debezium reads them
through JDBC objects) and again as the workload (streamed: pgoutput text), then updates and deletes
them under REPLICA IDENTITY FULL; see ``typecases.type_case``.
"""

from __future__ import annotations

import pytest

from .typecases import type_case

MODES = ["adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"]

# §3.1 time_table and the §3.7 row, column by column.
TIME_TABLE = [
    ("ts", "TIMESTAMP", "'2016-11-04T13:51:30.123456'"),
    ("tsneg", "TIMESTAMP(6) WITHOUT TIME ZONE", "'1936-10-25T22:10:12.608'"),
    ("ts_ms", "TIMESTAMP(3)", "'2016-11-04T13:51:30.123456'"),
    ("ts_us", "TIMESTAMP(6)", "'2016-11-04T13:51:30.123456'"),
    ("tz", "TIMESTAMPTZ", "'2016-11-04T13:51:30.123456+02:00'"),
    ("date", "DATE", "'2016-11-04'"),
    ("date_pinf", "DATE", "'infinity'"),
    ("date_ninf", "DATE", "'-infinity'"),
    ("ti", "TIME", "'13:51:30'"),
    ("tip", "TIME(3)", "'13:51:30.123'"),
    ("ttf", "TIME", "'24:00:00'"),
    ("ttz", "TIME WITH TIME ZONE", "'13:51:30.123789+02:00'"),
    ("tptz", "TIME(3) WITH TIME ZONE", "'13:51:30.123+02:00'"),
    ("it", "INTERVAL", "'P1Y2M3DT4H5M6.78S'"),
    ("tsp", "TIMESTAMP (0) WITH TIME ZONE", "'2016-11-04T13:51:30.123456+02:00'"),
    ("ts_large", "TIMESTAMP", "'21016-11-04T13:51:30.123456'"),
    ("ts_large_us", "TIMESTAMP(6)", "'21016-11-04T13:51:30.123457'"),
    ("ts_large_ms", "TIMESTAMP(3)", "'21016-11-04T13:51:30.124'"),
    ("tz_large", "TIMESTAMPTZ", "'21016-11-04T13:51:30.123456+07:00'"),
    ("ts_max", "TIMESTAMP(6)", "'294247-01-01T23:59:59.999999'"),
    ("ts_min", "TIMESTAMP(6)", "'4713-12-31T23:59:59.999999 BC'"),
    ("tz_max", "TIMESTAMPTZ", "'294247-01-01T23:59:59.999999+00:00'"),
    ("tz_min", "TIMESTAMPTZ", "'4714-12-31T23:59:59.999999Z BC'"),
    ("ts_pinf", "TIMESTAMP(6)", "'infinity'"),
    ("ts_ninf", "TIMESTAMP(6)", "'-infinity'"),
    ("tz_pinf", "TIMESTAMPTZ", "'infinity'"),
    ("tz_ninf", "TIMESTAMPTZ", "'-infinity'"),
    ("tz_zero", "TIMESTAMP WITH TIME ZONE", "'21016-11-04T13:51:30.000000+07:00'"),
]
# TIMESTAMP columns whose §3.7 value NanoTimestamp cannot hold (see test_nanoseconds_out_of_range).
NANO_OUT_OF_RANGE = {"tsneg", "ts_large", "ts_large_us", "ts_large_ms", "ts_max", "ts_min"}


def _columns(spec: list[tuple[str, str, str]]) -> str:
    return ", ".join(f"{name} {type_}" for name, type_, _ in spec)


def _row(values: list[str]) -> str:
    return "(" + ", ".join(values) + ")"


@pytest.mark.parametrize("mode", MODES)
def test_time_table(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    values = [v if not (mode == "nanoseconds" and n in NANO_OUT_OF_RANGE) else "NULL" for n, _, v in TIME_TABLE]
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns=_columns(TIME_TABLE),
        rows=[_row(values), _row(["NULL"] * len(TIME_TABLE))],
        **{"time.precision.mode": mode},
    )


def test_nanoseconds_out_of_range(debezium_oracle, pg_cluster, db, unique_name: str) -> None:
    """NanoTimestamp holds 1677-09-22 .. 2262-04-11 only: Debezium emits null for the others."""
    spec = [c for c in TIME_TABLE if c[0] in NANO_OUT_OF_RANGE]
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns=_columns(spec),
        rows=[_row([v for _, _, v in spec]), "('1677-09-21 00:00:00', NULL, NULL, '2262-04-12 00:00:00', NULL, NULL)"],
        **{"time.precision.mode": "nanoseconds"},
    )


# Edge values, one row each: BC and five-digit years, ±infinity, the Julian/Gregorian switch, 24:00.
EDGE_COLUMNS = "d DATE, ts TIMESTAMP, ts3 TIMESTAMP(3), tz TIMESTAMPTZ, tz0 TIMESTAMPTZ(0), t TIME, t0 TIME(0), ttz TIMETZ"
EDGE_ROWS = [
    "('2016-11-04', '2016-11-04 13:51:30.5', '2016-11-04 13:51:30.5', '2016-11-04 13:51:30.5+00', '2016-11-04 13:51:30+00', "
    "'00:00:00', '23:59:59', '24:00:00+00')",
    "('0044-03-15 BC', '0044-03-15 12:00:00.25 BC', '0001-01-01 00:00:00 BC', '0044-03-15 12:00:00.25+00 BC', "
    "'0001-12-31 23:59:59+00 BC', '23:59:59.999999', '12:00:00', '00:00:00+14')",
    "('1582-10-04', '1582-10-04 23:59:59.999999', '1582-10-15 00:00:00', '1582-10-04 23:59:59.999999+00', "
    "'1000-01-01 00:00:00+00', '24:00:00', '24:00:00', '23:59:59.999999-14:59')",
    "('1582-10-15', '1000-06-30 12:00:00', '1500-02-28 00:00:00', '1000-06-30 12:00:00-03:30', "
    "'1500-02-28 01:02:03+01', '12:34:56.789', '00:00:01', '12:00:00+05:30')",
    "('1582-10-10', '1582-10-10 10:00:00', '1582-10-14 00:00:00.001', '1582-10-10 10:00:00+00', "
    "'1582-10-10 00:00:00+00', '10:00:00', '10:00:00', '10:00:00+00')",
    "('1000-02-28', '1000-03-01 00:00:00', '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', "
    "'0001-01-01 00:00:00+00', '10:00:00', '10:00:00', '10:00:00+00')",
    "('12345-06-07', '12345-06-07 08:09:10.111213', '99999-12-31 23:59:59.999', '12345-06-07 08:09:10.111213+00', "
    "'99999-12-31 23:59:59+00', '01:02:03.000001', '01:02:03', '23:59:59.999999+00')",
    "('5874897-12-31', '294276-12-31 23:59:59.999999', '4713-01-01 00:00:00 BC', '294276-12-31 23:59:59.999999+00', "
    "'4713-01-01 00:00:00+00 BC', '00:00:00.000001', '00:00:00', '00:00:00-00:01')",
    "('4713-01-01 BC', 'infinity', '-infinity', 'infinity', '-infinity', '13:00:00', '13:00:00', '24:00:00-05')",
    "('infinity', '-infinity', 'infinity', '-infinity', 'infinity', '13:00:00', '13:00:00', '00:00:00+00')",
    "('-infinity', '1970-01-01 00:00:00', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999+00', "
    "'1970-01-01 00:00:00+00', '13:00:00', '13:00:00', '13:00:00-12')",
]


@pytest.mark.parametrize("mode", MODES)
def test_edge_values(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    rows = EDGE_ROWS
    if mode == "nanoseconds":  # TIMESTAMP values outside 1677..2262 have their own case
        rows = [r for r in rows if not any(y in r for y in ("BC", "12345", "294276", "1582", "1000-", "0001-"))]
    type_case(
        debezium_oracle, pg_cluster, db, unique_name, columns=EDGE_COLUMNS, rows=rows, **{"time.precision.mode": mode}
    )


INTERVALS = [
    "'P1Y2M3DT4H5M6.78S'", "'-1 year -2 mons +3 days -04:05:06.789'", "'1.305106 seconds'", "'0'",
    "'178000000 years'", "'-178000000 years'", "'0.000001 seconds'", "'1 day 25:00:00'", "'-0.5 seconds'",
    "'2147483647 days 2147483647 hours'", "'1 mon -1 day'", "'12:34:56.123456'", "NULL",
]


@pytest.mark.parametrize("mode", ["numeric", "string"])
def test_intervals(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="it INTERVAL, it_s INTERVAL SECOND(2), it_ym INTERVAL YEAR TO MONTH",
        rows=[f"({v}, {v}, {v})" for v in INTERVALS],
        **{"interval.handling.mode": mode},
    )


# §3.8 temporaltype.test_data_types (row 2), REPLICA IDENTITY FULL.
TEMPORALTYPE = (
    "c_date DATE, c_timestamp0 TIMESTAMP(0), c_timestamp1 TIMESTAMP(1), c_timestamp2 TIMESTAMP(2), "
    "c_timestamp3 TIMESTAMP(3), c_timestamp4 TIMESTAMP(4), c_timestamp5 TIMESTAMP(5), c_timestamp6 TIMESTAMP(6), "
    "c_timestamptz TIMESTAMPTZ, c_time TIMETZ, c_time_whtz TIME, c_interval INTERVAL"
)
TEMPORALTYPE_ROW = (
    "('2017-09-15', '2019-07-09 02:28:57+01', '2019-07-09 02:28:57.1+01', '2019-07-09 02:28:57.12+01', "
    "'2019-07-09 02:28:57.123+01', '2019-07-09 02:28:57.1234+01', '2019-07-09 02:28:57.12345+01', "
    "'2019-07-09 02:28:57.123456+01', '2019-07-09 02:28:10.123456+01', '04:05:11 PST', '04:05:11.789', INTERVAL '1' YEAR)"
)


@pytest.mark.parametrize("mode", MODES)
def test_temporaltype_table(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns=TEMPORALTYPE, rows=[TEMPORALTYPE_ROW, "(" + ", ".join(["NULL"] * 12) + ")"],
        **{"time.precision.mode": mode},
    )


# Defaults: a literal and a function default on every temporal type, nullable and NOT NULL.
DEFAULTS = (
    "d1 DATE DEFAULT '2020-01-02', d2 DATE NOT NULL DEFAULT CURRENT_DATE, d3 DATE DEFAULT now(), "
    "d4 DATE DEFAULT '1500-01-01', d5 DATE DEFAULT 'infinity', d6 DATE NOT NULL DEFAULT '0044-03-15 BC', "
    "ts1 TIMESTAMP DEFAULT '2020-01-02 03:04:05.678', ts2 TIMESTAMP NOT NULL DEFAULT now(), "
    "ts3 TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP, ts4 TIMESTAMP DEFAULT LOCALTIMESTAMP, ts5 TIMESTAMP DEFAULT '1000-06-30 12:00:00', "
    "ts6 TIMESTAMP DEFAULT 'infinity', ts7 TIMESTAMP DEFAULT '12345-01-01 00:00:00', "
    "tz1 TIMESTAMPTZ DEFAULT '2020-01-02 03:04:05.678+02', tz2 TIMESTAMPTZ NOT NULL DEFAULT now(), "
    "tz3 TIMESTAMPTZ(0) DEFAULT now(), tz4 TIMESTAMPTZ(2) DEFAULT '2020-01-02 03:04:05+00', tz5 TIMESTAMPTZ DEFAULT '-infinity', "
    "t1 TIME DEFAULT '13:14:15', t2 TIME NOT NULL DEFAULT LOCALTIME, t3 TIME(3) DEFAULT '13:14:15.123', "
    "t4 TIME DEFAULT '24:00:00', t5 TIME DEFAULT CURRENT_TIME, "
    "ttz1 TIMETZ DEFAULT '13:14:15+02', ttz2 TIMETZ NOT NULL DEFAULT CURRENT_TIME, "
    "i1 INTERVAL DEFAULT '1 day', i2 INTERVAL NOT NULL DEFAULT '1 year 2 mons 3 days 04:05:06.5', "
    "i3 INTERVAL DEFAULT make_interval(days => 1), "
    "d7 DATE DEFAULT '-infinity', ts8 TIMESTAMP(3) DEFAULT 'infinity', ts9 TIMESTAMP DEFAULT '-infinity', "
    "ts10 TIMESTAMP DEFAULT '0044-03-15 12:00:00 BC', ts11 TIMESTAMP DEFAULT (now() + '1 day'::interval), "
    "tz6 TIMESTAMPTZ DEFAULT 'infinity', tz7 TIMESTAMPTZ DEFAULT '0044-03-15 12:00:00+00 BC', t6 TIME(3) DEFAULT '24:00:00', "
    "t7 TIME(6) DEFAULT '23:59:59.999999'"
)


@pytest.mark.parametrize("mode", MODES)
def test_temporal_defaults(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns=DEFAULTS, names="tag", rows=["(0)"],
        **{"time.precision.mode": mode},
    )


@pytest.mark.parametrize("mode", ["numeric", "string"])
def test_interval_defaults(debezium_oracle, pg_cluster, db, unique_name: str, mode: str) -> None:
    type_case(
        debezium_oracle, pg_cluster, db, unique_name,
        columns="i1 INTERVAL DEFAULT '1 day', i2 INTERVAL NOT NULL DEFAULT '-1 year -2 mons +3 days -04:05:06.789', "
        "i3 INTERVAL DEFAULT '1.305106 seconds', i4 INTERVAL NOT NULL DEFAULT make_interval(hours => 1)",
        names="tag", rows=["(0)"],
        **{"interval.handling.mode": mode},
    )
