"""Debezium's CloudEvents for values (sparkcdc.debezium.cloudevents), without a JVM: a golden value
Debezium 3.6.3 wrote, what is not a change event, the time attribute's edges, malformed envelopes,
and the same bytes on both serializer paths (records and topic-files lines).

tests/conformance/test_cloudevents_conformance.py compares whole captures with Debezium's.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from sparkcdc.debezium.cloudevents import CloudEventsConverter, CloudEventsError
from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.connect import ConnectSchema, bytes_, int32, string, struct
from sparkcdc.debezium.converters import CloudEventsSettings
from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.debezium.schemas import envelope_schema, heartbeat_key_schema, heartbeat_value_schema
from sparkcdc.engine.core.emission import serializer_for
from sparkcdc.engine.core.encoded import encode_records
from sparkcdc.engine.core.lines import encode_lines

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "test_server"}
CLOUDEVENTS = {"value.converter": "io.debezium.converters.CloudEventsConverter"}

_ROW = struct(
    [
        ("id", int32()),
        ("name", string(optional=True)),
        ("amount", bytes_(optional=True, name="org.apache.kafka.connect.data.Decimal", version=1).with_parameters(
            {"scale": "2", "connect.decimal.precision": "10"})),
        ("d", int32(optional=True).with_default(5)),
    ],
    name="test_server.public.ce_ch_1.Value",
)
_ENVELOPE = envelope_schema(_ROW, "test_server.public.ce_ch_1.Envelope")
_KEY = struct([("id", int32())], name="test_server.public.ce_ch_1.Key")

# An update Debezium 3.6.3 streamed with provide.transaction.metadata=true, and its CloudEvent as its
# CloudEventsConverter wrote it (tests/conformance/test_cloudevents_conformance.py makes such captures).
_PAYLOAD: dict[str, Any] = {
    "before": None, "after": {"id": 1, "name": "c", "amount": "AJY=", "d": 5},
    "source": {"version": "3.6.3.Final", "connector": "postgresql", "name": "test_server", "ts_ms": 1795800259950,
               "snapshot": "false", "db": "postgres", "sequence": '["22044840","22044840"]', "ts_us": 1795800259950206,
               "ts_ns": 1795800259950206000, "schema": "public", "table": "ce_ch_1", "txId": 729, "lsn": 22044840, "xmin": None,
               "origin": None, "origin_lsn": None},
    "transaction": {"id": "729:22044840", "total_order": 1, "data_collection_order": 1},
    "op": "u", "ts_ms": 1795800260013, "ts_us": 1795800260013964, "ts_ns": 1795800260013964301,
}
_DEBEZIUM = (
    '{"id":"name:test_server;lsn:22044840;txId:729;sequence:[\\"22044840\\",\\"22044840\\"]",'
    '"source":"/debezium/postgresql/test_server","specversion":"1.0","type":"io.debezium.connector.postgresql.DataChangeEvent",'
    '"time":"2026-11-27T17:24:19.950Z","datacontenttype":"application/json","iodebeziumop":"u",'
    '"iodebeziumversion":"3.6.3.Final","iodebeziumconnector":"postgresql","iodebeziumname":"test_server",'
    '"iodebeziumtsms":"1795800259950","iodebeziumsnapshot":"false","iodebeziumdb":"postgres",'
    '"iodebeziumsequence":"[\\"22044840\\",\\"22044840\\"]","iodebeziumtsus":"1795800259950206",'
    '"iodebeziumtsns":"1795800259950206000","iodebeziumschema":"public","iodebeziumtable":"ce_ch_1","iodebeziumtxId":"729",'
    '"iodebeziumlsn":"22044840","iodebeziumxmin":null,"iodebeziumorigin":null,"iodebeziumoriginlsn":null,'
    '"iodebeziumtxid":"729:22044840","iodebeziumtxtotalorder":"1","iodebeziumtxdatacollectionorder":"1",'
    '"data":{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
    '{"type":"string","optional":true,"field":"name"},{"type":"bytes","optional":true,'
    '"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},'
    '"field":"amount"},{"type":"int32","optional":true,"default":5,"field":"d"}],"optional":true,'
    '"name":"test_server.public.ce_ch_1.Value","field":"before"},{"type":"struct","fields":[{"type":"int32","optional":false,'
    '"field":"id"},{"type":"string","optional":true,"field":"name"},{"type":"bytes","optional":true,'
    '"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},'
    '"field":"amount"},{"type":"int32","optional":true,"default":5,"field":"d"}],"optional":true,'
    '"name":"test_server.public.ce_ch_1.Value","field":"after"}],"optional":false,"name":"io.debezium.connector.postgresql.Data"},'
    '"payload":{"before":null,"after":{"id":1,"name":"c","amount":"AJY=","d":5}}}}'
)


def _record(payload: dict[str, Any] | None = None, schema: ConnectSchema | None = _ENVELOPE, topic: str = "test_server.public.ce_ch_1",
            **source: Any) -> ChangeRecord:
    value = json.loads(json.dumps(_PAYLOAD if payload is None else payload))
    value["source"].update(source)
    return ChangeRecord(topic, {"id": 1}, _KEY, value, schema, op="u", lsn=22044840, commit_lsn=22044840)


def _encode(record: ChangeRecord, **settings: bool) -> Any:
    text = CloudEventsConverter(CloudEventsSettings(**settings)).encode(record)
    return None if text is None else json.loads(text)


def test_a_change_event_is_the_cloudevent_debezium_wrote() -> None:
    assert CloudEventsConverter(CloudEventsSettings()).encode(_record()) == _DEBEZIUM.encode()


def test_without_data_schema_or_extension_attributes() -> None:
    event = _encode(_record(), data_schemas=False, extension_attributes=False)
    assert list(event) == ["id", "source", "specversion", "type", "time", "datacontenttype", "data"]
    assert event["data"] == {"before": None, "after": {"id": 1, "name": "c", "amount": "AJY=", "d": 5}}


def test_no_transaction_block_makes_null_transaction_attributes_and_nulls_read_null_in_the_id() -> None:
    payload = dict(_PAYLOAD, transaction=None)
    event = _encode(_record(payload, txId=None, lsn=None, sequence=None))
    assert event["id"] == "name:test_server;lsn:null;txId:null;sequence:null"
    assert (event["iodebeziumtxid"], event["iodebeziumtxtotalorder"], event["iodebeziumtxdatacollectionorder"]) == (None, None, None)
    assert (event["iodebeziumtxId"], event["iodebeziumlsn"]) == (None, None)


@pytest.mark.parametrize("millis, time", [
    (1795800204000, "2026-11-27T17:23:24.000Z"), (1795800204120, "2026-11-27T17:23:24.120Z"), (1, "1970-01-01T00:00:00.001Z"),
    (0, "1970-01-01T00:00:00.000Z"), (-1, "1969-12-31T23:59:59.999Z"),
])
def test_time_is_source_ts_ms_in_utc_with_three_digits_of_milliseconds(millis: int, time: str) -> None:
    # The values Debezium's converter wrote for these source.ts_ms (through JPype, tests' oracle JVM).
    assert _encode(_record(ts_ms=millis))["time"] == time


def test_what_is_not_a_change_event_is_a_null_value() -> None:
    heartbeat = ChangeRecord("__debezium-heartbeat.test_server", {"serverName": "test_server"}, heartbeat_key_schema(),
                             {"ts_ms": 1}, heartbeat_value_schema())
    tombstone = ChangeRecord("test_server.public.ce_ch_1", {"id": 1}, _KEY, None, None)
    unwrapped = ChangeRecord("test_server.public.ce_ch_1", {"id": 1}, _KEY, {"id": 1}, _ROW)
    renamed = _record(schema=replace(_ENVELOPE, name="x.yEnvelope", _json=None))  # Debezium too: only *.Envelope
    for record in (heartbeat, tombstone, unwrapped, renamed):
        assert _encode(record) is None, record.topic


def test_an_envelope_without_what_a_cloudevent_is_made_of_fails_naming_the_topic() -> None:
    schema = struct([f for f in _ENVELOPE.fields if f.name != "source"], name=_ENVELOPE.name)
    with pytest.raises(CloudEventsError, match=r"topic 'test_server.public.ce_ch_1'.*has no field source"):
        _encode(_record(schema=schema))


def test_records_and_topic_file_lines_carry_the_same_values() -> None:
    """The serializer's two paths (the columns layout's records, the topic files' lines) write one
    value text per record: the line's value is the record's, quoted."""
    serializer = serializer_for(ConnectorConfig(BASE | CLOUDEVENTS))
    heartbeat = ChangeRecord("__debezium-heartbeat.test_server", {"serverName": "test_server"}, heartbeat_key_schema(),
                             {"ts_ms": 1}, heartbeat_value_schema())
    records = [_record(), heartbeat, _record(ts_ms=5)]
    [batch] = list(encode_records(records, serializer))
    values = list(batch.value)
    assert values[0] == _DEBEZIUM.encode() and values[1] is None
    [lines] = list(encode_lines(records, serializer, line_end=b"\n"))
    texts = [bytes(line) for line in lines.line]
    assert [json.loads(line)["value"] for line in texts] == [None if v is None else v.decode() for v in values]
    assert [json.loads(line)["key"] for line in texts] == [k.decode() for k in batch.key]


def test_the_key_and_headers_stay_json_and_the_plain_path_is_unchanged() -> None:
    plain = serializer_for(ConnectorConfig(BASE))
    converted = serializer_for(ConnectorConfig(BASE | CLOUDEVENTS | {"value.converter.json.schemas.enable": "false"}))
    record = _record()
    assert converted.key(record) == plain.key(record)
    assert converted.headers(record) == plain.headers(record)
    assert json.loads(plain.value(record))["payload"]["op"] == "u"
    assert json.loads(converted.value(record))["data"].keys() == {"before", "after"}


def test_source_fields_are_written_as_java_writes_them_as_text() -> None:
    event = _encode(_record(txId=2**62, snapshot="last", xmin=0))
    assert (event["iodebeziumtxId"], event["iodebeziumsnapshot"], event["iodebeziumxmin"]) == (str(2**62), "last", "0")
