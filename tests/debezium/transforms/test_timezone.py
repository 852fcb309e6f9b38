"""TimezoneConverter: conversions at daylight-saving edges and beyond Python's years, and
configuration errors. The expected values are Debezium 3.6.3's own: its TimezoneConverter run on
the same values (a JVM session, as the differential tests run it)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.connect import int32, int64, string, struct
from sparkcdc.debezium.schemas import envelope_schema
from sparkcdc.debezium.transforms import TransformConfigError

from .events import TIMEZONE, chain_of, change, config, run, source

ROW = struct([
    ("id", int32()),
    ("zts", string(optional=True, name="io.debezium.time.ZonedTimestamp", version=1)),
    ("mts", int64(optional=True, name="io.debezium.time.MicroTimestamp", version=1)),
    ("nts", int64(optional=True, name="io.debezium.time.NanoTimestamp", version=1)),
    ("ts", int64(optional=True, name="io.debezium.time.Timestamp", version=1)),
    ("cts", int64(optional=True, name="org.apache.kafka.connect.data.Timestamp", version=1)),
    ("zt", string(optional=True, name="io.debezium.time.ZonedTime", version=1)),
    ("mt", int64(optional=True, name="io.debezium.time.MicroTime", version=1)),
    ("d", int32(optional=True, name="io.debezium.time.Date", version=1)),
], optional=True, name="shop.public.orders.Value")
ENVELOPE = envelope_schema(ROW, "shop.public.orders.Envelope")


def converted(zone: str, row: dict[str, Any], **options: str) -> dict[str, Any]:
    full = {name: None for name in (f.name for f in ROW.fields)} | {"id": 1} | row
    [out] = run(chain_of("tz", TIMEZONE, **{"converted.timezone": zone}, **options), change("c", after=full, envelope=ENVELOPE))
    return {name: out.value["after"][name] for name in row}


@pytest.mark.parametrize("zone, row, expected", [
    # The offset is the zone's at the UTC wall clock read as local time: 06:30Z on 2024-03-10 is still
    # EST in New York, but 06:30 local is EDT.
    ("America/New_York", {"zts": "2024-03-10T06:30:00.000000Z", "mts": 1710052200000000},
     {"zts": "2024-03-10T02:30:00-04:00", "mts": 1710066600000000}),
    ("America/New_York", {"zts": "2024-03-10T07:30:00.500000Z"}, {"zts": "2024-03-10T03:30:00.5-04:00"}),
    ("America/New_York", {"zts": "2024-01-02T03:04:05.120000Z", "mts": -1000000, "nts": -1000, "ts": -1, "cts": -1},
     {"zts": "2024-01-01T22:04:05.12-05:00", "mts": 17999000000, "nts": 17999999999000, "ts": 17999999, "cts": 17999999}),
    ("America/New_York", {"zts": "2024-01-02T03:04:05.123456789Z"}, {"zts": "2024-01-01T22:04:05.123456789-05:00"}),
    # A wall clock in the spring gap or the autumn overlap takes the offset before the transition.
    ("America/New_York", {"zts": "2024-03-10T02:30:00Z", "mts": 1710037800000000},
     {"zts": "2024-03-09T21:30:00-05:00", "mts": 1710055800000000}),
    ("America/New_York", {"zts": "2024-11-03T01:30:00Z", "mts": 1730597400000000},
     {"zts": "2024-11-02T21:30:00-04:00", "mts": 1730611800000000}),
    ("America/New_York", {"zts": "2024-11-03T05:30:00Z", "mts": 1730611800000000},
     {"zts": "2024-11-03T00:30:00-05:00", "mts": 1730629800000000}),
    # Years Python's datetime cannot hold, local mean time, and Java's wrapping long arithmetic.
    ("America/New_York", {"zts": "+10000-01-01T00:00:00Z", "mts": 253402300800000000},
     {"zts": "9999-12-31T19:00:00-05:00", "mts": 253402318800000000}),
    ("America/New_York", {"zts": "-0043-03-15T12:00:00Z", "mts": -63513000000000000},
     {"zts": "-0043-03-15T07:03:58-04:56:02", "mts": -63512982238000000}),
    ("America/New_York", {"mts": 9223372036825200000}, {"mts": -9223372018884351616}),
    ("Australia/Sydney", {"zts": "2024-03-10T06:30:00.000000Z", "mts": -1000000},
     {"zts": "2024-03-10T17:30:00+11:00", "mts": -36001000000}),
    # Times with a zone move to the zone's current offset (a fixed one here); times without and dates stay.
    ("+05:30", {"zt": "23:59:59.123456Z", "mt": 5, "d": 3}, {"zt": "05:29:59.123456+05:30", "mt": 5, "d": 3}),
    ("-00:00", {"zt": "07:30:00.5Z", "zts": "2024-01-01T00:00:00.000000Z"}, {"zt": "07:30:00.5Z", "zts": "2024-01-01T00:00:00Z"}),
])
def test_values_convert_as_debezium_converts_them(zone: str, row: dict[str, Any], expected: dict[str, Any]) -> None:
    assert converted(zone, row) == expected


@pytest.mark.parametrize("ts_ms, expected", [(1710052200000, 1710034200000), (1730611800000, 1730597400000),
                                             (1730615400000, 1730597400000), (-1, -18000001)])
def test_source_times_move_by_the_offset_at_their_instant(ts_ms: int, expected: int) -> None:
    record = change("c", after={"id": 1}, envelope=ENVELOPE, src=source(ts_ms=ts_ms))
    [out] = run(chain_of("tz", TIMEZONE, **{"converted.timezone": "America/New_York", "include.list": "orders:source.ts_ms"}),
                record)
    assert out.value["source"]["ts_ms"] == expected and out.value["source"]["ts_us"] == ts_ms * 1000


@pytest.mark.parametrize("rules, converted_fields", [
    ("source:orders", {"zts", "mts"}),
    ("orders:after.zts,orders:mts", {"zts", "mts"}),
    ("orders:before.zts", set()),
    ("topic:shop.public.orders:zts", {"zts"}),
    ("topic:other,orders:zts", set()),  # a rule without kind takes the last kind before it: a topic here
    ("source:other,orders:zts", {"zts"}),
    ("source:orders,orders:mts", {"mts"}),  # a field after "every field" narrows it; the reverse widens
    ("orders:mts,source:orders", {"zts", "mts"}),
    ("shop.public.orders:mts,orders:zts", {"mts"}),  # the topic's entry is looked up before the table's
])
def test_include_rules(rules: str, converted_fields: set[str]) -> None:
    row = {"zts": "2024-01-02T03:04:05.000000Z", "mts": 0}
    out = converted("+01:00", row, **{"include.list": rules})
    assert {name for name in row if out[name] != row[name]} == converted_fields


@pytest.mark.parametrize("rules, converted_fields", [("orders:zts", {"mts"}), ("source:orders", set()), ("other:zts", {"zts", "mts"})])
def test_exclude_rules(rules: str, converted_fields: set[str]) -> None:
    row = {"zts": "2024-01-02T03:04:05.000000Z", "mts": 0}
    out = converted("+01:00", row, **{"exclude.list": rules})
    assert {name for name in row if out[name] != row[name]} == converted_fields


@pytest.mark.parametrize("options, prop, words", [
    ({"converted.timezone": "+5"}, "converted.timezone", "is not a geographic timezone"),
    ({"converted.timezone": "europe/paris"}, "converted.timezone", "is not a geographic timezone"),
    ({"converted.timezone": " +02:00"}, "converted.timezone", "is not a geographic timezone"),
    ({"converted.timezone": "+25:00"}, "converted.timezone", "hours up to 18"),
    ({"converted.timezone": "EST"}, "converted.timezone", "Java's zone database does not know it"),
    ({"converted.timezone": "UTC", "include.list": "a:b", "exclude.list": "c:d"}, "exclude.list", "both given"),
    ({"converted.timezone": "UTC", "include.list": "my-table:ts"}, "include.list", "is not a list of rules"),
    ({"converted.timezone": "UTC", "include.list": "a:b,source:t:ts"}, "include.list", "only the first rule may have three parts"),
    ({"converted.timezone": "UTC", "exclude.list": ""}, "exclude.list", "is not a list of rules"),
])
def test_configuration_errors_name_the_option(options: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        config(transforms="tz", **{"transforms.tz.type": TIMEZONE}, **{f"transforms.tz.{k}": v for k, v in options.items()})
    assert caught.value.property == f"transforms.tz.{prop}"
    assert words in str(caught.value)
