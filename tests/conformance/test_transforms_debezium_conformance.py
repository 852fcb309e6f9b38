"""Debezium's record-state transforms against Debezium 3.6.3 itself: ``ExtractNewRecordState``,
``ExtractChangedRecordState``, ``HeaderToValue`` and ``TimezoneConverter``, each with the same
``transforms.*`` properties in both connectors, over rows read by the initial snapshot (``setup``)
and changes streamed afterwards (``workload``): inserts, updates (one of a key), deletes, a truncate,
transaction metadata and logical decoding messages.

Every option set is one oracle run. The normalizers blank only what differs between two connectors
by nature, now that a transform has moved it where :func:`differential.normalize` does not look:
processing time (the envelope's ``ts_*``) everywhere, and for snapshot rows the snapshot's own
position and time (``source.ts_*``, ``lsn``, ``txId``, ``sequence``), which each connector takes
from its own slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .differential import run_conformance

UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
CHANGED = "io.debezium.transforms.ExtractChangedRecordState"
HEADER_TO_VALUE = "io.debezium.transforms.HeaderToValue"
TIMEZONE = "io.debezium.transforms.TimezoneConverter"

# Envelope fields that are processing time (always differ) or, on a snapshot row, the snapshot's
# position and time (differ between the two connectors' slots).
_PROCESSING = ("ts_ms", "ts_us", "ts_ns")
_SNAPSHOT_POSITION = ("source_ts_ms", "source_ts_us", "source_ts_ns", "lsn", "txId", "sequence", "source_lsn",
                      "source_txId", "source_sequence")


def _blank_added(prefix: str, renamed: dict[str, str] | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A normalizer for rows and headers to which ``add.fields``/``add.headers`` added envelope
    fields under ``prefix``: processing time always, the snapshot's position on snapshot rows
    (recognised by the added ``op`` field or header, which each option set adds with them).
    ``renamed`` maps a field's usual name (``source_ts_ms``) to the name the option set gave it."""
    renamed = renamed or {}
    processing = {prefix + renamed.get(name, name) for name in _PROCESSING}
    snapshot = {prefix + renamed.get(name, name) for name in _SNAPSHOT_POSITION}
    op_name = prefix + renamed.get("op", "op")

    def normalize(record: dict[str, Any]) -> dict[str, Any]:
        value = record["value"]
        payload = value.get("payload") if isinstance(value, dict) else None
        headers = dict(record["headers"])
        op = payload.get(op_name) if isinstance(payload, dict) else None
        if op is None and isinstance(headers.get(op_name), dict):
            op = headers[op_name].get("payload")
        blank = processing | (snapshot if op == "r" else set())
        if isinstance(payload, dict):
            for name in blank & payload.keys():
                payload[name] = "<differs by nature>"
        record["headers"] = [(name, {**header, "payload": "<differs by nature>"} if name in blank and isinstance(header, dict)
                              else header) for name, header in record["headers"]]
        return record

    return normalize


# -- ExtractNewRecordState ------------------------------------------------------------------------------

def _unwrap_tables(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t}_a (id int PRIMARY KEY, name varchar(20) DEFAULT 'dflt', amount numeric(10,2), ts timestamptz, "
        "dest text, n int NOT NULL DEFAULT 7)",
        f"ALTER TABLE {t}_a REPLICA IDENTITY FULL",
        f"CREATE TABLE {t}_b (id int PRIMARY KEY, code text NOT NULL, note text DEFAULT 'none', dest text)",
        f"INSERT INTO {t}_a VALUES (1, 'alice', 10.5, '2024-01-02 03:04:05.123456+00', 'routed_a', 1), (2, NULL, NULL, NULL, NULL, 2)",
        f"INSERT INTO {t}_b VALUES (1, 'x', NULL, NULL), (2, 'y', 'kept', 'routed_b')",
    ]


def _unwrap_workload(t: str) -> list[str]:
    return [
        f"INSERT INTO {t}_a VALUES (3, 'bob', 3.25, '2024-06-30 23:59:59+05', 'routed_b', 3)",
        f"INSERT INTO {t}_a (id, name) VALUES (4, NULL)",
        f"UPDATE {t}_a SET name = 'carol', amount = 11 WHERE id = 1",
        f"UPDATE {t}_a SET amount = 12 WHERE id = 1",
        f"UPDATE {t}_a SET n = 5 WHERE id = 2",
        f"UPDATE {t}_a SET name = 'dflt' WHERE id = 2",
        f"UPDATE {t}_a SET id = 30 WHERE id = 3",
        f"DELETE FROM {t}_a WHERE id = 1",
        f"BEGIN; INSERT INTO {t}_b VALUES (3, 'z', NULL, NULL); UPDATE {t}_b SET note = 'changed' WHERE id = 2; DELETE FROM {t}_b WHERE id = 1; COMMIT",
        "SELECT pg_logical_emit_message(true, 'app', 'a message')",
        f"TRUNCATE {t}_b",
        f"INSERT INTO {t}_b VALUES (9, 'after truncate', NULL, 'routed_c')",
    ]


def _unwrap(**options: str) -> dict[str, str]:
    return {"transforms": "unwrap", "transforms.unwrap.type": UNWRAP, **{f"transforms.unwrap.{k}": v for k, v in options.items()}}


def _changed_then_unwrap(**unwrap_options: str) -> dict[str, str]:
    return {
        "transforms": "changes,unwrap",
        "transforms.changes.type": CHANGED,
        "transforms.changes.header.unchanged.name": "unchanged",
        "transforms.unwrap.type": UNWRAP,
        "transforms.unwrap.drop.fields.header.name": "unchanged",
        **{f"transforms.unwrap.{k}": v for k, v in unwrap_options.items()},
    }


UNWRAP_CASES: dict[str, tuple[dict[str, str], Callable[[dict[str, Any]], dict[str, Any]] | None]] = {
    "default": (_unwrap(), None),
    "drop": (_unwrap(**{"delete.tombstone.handling.mode": "drop"}), None),
    "rewrite_add_fields": (
        _unwrap(**{"delete.tombstone.handling.mode": "rewrite",
                   "add.fields": "op,table,lsn,source.ts_ms,ts_ms,transaction.id,id,before.amount:OLD_AMOUNT,before.name:OLD_NAME,after.name,db,snapshot,nonexistent",
                   "add.fields.prefix": "meta_"}),
        _blank_added("meta_"),
    ),
    "rewrite_with_tombstone_headers_route": (
        _unwrap(**{"delete.tombstone.handling.mode": "rewrite-with-tombstone", "add.headers": "op,db,source.ts_ms:when,lsn,nonexistent",
                   "add.headers.prefix": "h_", "route.by.field": "dest"}),
        _blank_added("h_", {"source_ts_ms": "when"}),
    ),
    "delete_to_tombstone": (_unwrap(**{"delete.tombstone.handling.mode": "delete-to-tombstone", "add.headers": "op,table",
                                       "add.fields": "op"}), None),
    "tombstone_route_fields": (_unwrap(**{"route.by.field": "dest", "add.fields": "op:OP,source.snapshot", "add.fields.prefix": ""}),
                               None),
    "removed_options_ignored": (_unwrap(**{"delete.handling.mode": "rewrite", "drop.tombstones": "false",
                                          "replace.null.with.default": "false", "add.fields": "op"}), None),
    "changed_fields_dropped": (_changed_then_unwrap(), None),
    "changed_fields_dropped_from_key_incompatible": (
        _changed_then_unwrap(**{"drop.fields.keep.schema.compatible": "false", "drop.fields.from.key": "true",
                                "delete.tombstone.handling.mode": "rewrite"}), None),
}


@pytest.mark.parametrize("case", sorted(UNWRAP_CASES))
def test_extract_new_record_state(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    options, normalizer = UNWRAP_CASES[case]
    t = f"un_{case[:12]}_{unique_name[-3:].strip('_')}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_unwrap_tables(t), tables=[f"public.{t}_a", f"public.{t}_b"],
        workload=_unwrap_workload(t), normalizer=normalizer,
        **{"skipped.operations": "none", "provide.transaction.metadata": "true", **options},
    )
    # The comparison covered flattened snapshot rows and streamed rows alike.
    rows = [r for r in debezium if r.topic.endswith(f"{t}_a") and isinstance(r.value_payload, dict)]
    assert any(r.value_payload.get("id") == 2 for r in rows), "a snapshot row"
    assert any(r.value_payload.get("id") in (3, 4, 30) for r in rows), "a streamed row"


# -- ExtractChangedRecordState --------------------------------------------------------------------------

def _changes_tables(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t} (id int PRIMARY KEY, label text DEFAULT 'unset', raw bytea, price numeric(8,3), free numeric, "
        "doc jsonb, tags text[], ratio double precision, small real, at timestamptz, day date, flag boolean, uid uuid, n bigint)",
        f"ALTER TABLE {t} REPLICA IDENTITY FULL",
        f"CREATE TABLE {t}_plain (id int PRIMARY KEY, v text)",
        f"INSERT INTO {t} VALUES (1, 'one', '\\x0102', 1.5, 2.50, '{{\"a\": 1}}', '{{x,y}}', 0.5, 1.25, '2024-01-01 00:00:00+00', "
        "'2024-01-01', true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 10)",
        f"INSERT INTO {t} (id) VALUES (2)",
        f"INSERT INTO {t}_plain VALUES (1, 'a')",
    ]


def _changes_workload(t: str) -> list[str]:
    return [
        f"UPDATE {t} SET label = 'uno' WHERE id = 1",  # one column changed, the rest compared equal (bytea, jsonb, arrays...)
        f"UPDATE {t} SET raw = '\\x0103', doc = '{{\"a\": 2}}', tags = '{{x}}', free = 2.5, ratio = 'NaN', small = -0.0 WHERE id = 1",
        f"UPDATE {t} SET ratio = 'NaN', small = 0.0, n = n WHERE id = 1",  # NaN to NaN, -0.0 to 0.0
        f"UPDATE {t} SET label = 'unset' WHERE id = 2",  # NULL to the column's default: a change
        f"UPDATE {t} SET label = NULL, n = 3 WHERE id = 2",  # and back
        f"UPDATE {t} SET id = 20 WHERE id = 2",  # a key change: delete, tombstone, create
        f"DELETE FROM {t} WHERE id = 1",
        f"INSERT INTO {t} (id, label) VALUES (3, 'three')",
        f"UPDATE {t}_plain SET v = 'b'",  # REPLICA IDENTITY DEFAULT: no before, so no lists
        "SELECT pg_logical_emit_message(true, 'app', 'a message')",
        f"TRUNCATE {t}_plain",
    ]


CHANGED_CASES = {
    "both_headers": {"transforms": "changes", "transforms.changes.type": CHANGED,
                     "transforms.changes.header.changed.name": "Changed", "transforms.changes.header.unchanged.name": "Unchanged"},
    "changed_only_then_unwrap_with_tombstones": {
        "transforms": "changes,unwrap", "transforms.changes.type": CHANGED, "transforms.changes.header.changed.name": "changed",
        "transforms.unwrap.type": UNWRAP, "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone"},
}


@pytest.mark.parametrize("case", sorted(CHANGED_CASES))
def test_extract_changed_record_state(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"ch_{case[:10]}_{unique_name[-3:].strip('_')}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_changes_tables(t), tables=[f"public.{t}", f"public.{t}_plain"],
        workload=_changes_workload(t), **{"skipped.operations": "none", **CHANGED_CASES[case]},
    )
    header = "Changed" if case == "both_headers" else "changed"
    lists = [r.header(header)["payload"] for r in debezium if header in r.header_names and r.topic.endswith(f".{t}")]
    assert [] in lists and ["label"] in lists, f"empty lists (snapshot, inserts) and a one-column change: {lists}"


# -- HeaderToValue ----------------------------------------------------------------------------------------

HEADER_CASES: dict[str, tuple[dict[str, str], Callable[[dict[str, Any]], dict[str, Any]] | None]] = {
    "envelope_move": ({
        "transforms": "h2v", "transforms.h2v.type": HEADER_TO_VALUE, "transforms.h2v.operation": "move",
        "transforms.h2v.headers": "__debezium.context.connectorName,__debezium.context.taskId",
        "transforms.h2v.fields": "source.connector_name,task",
    }, None),
    "struct_header_copy": ({
        "transforms": "h2v", "transforms.h2v.type": HEADER_TO_VALUE, "transforms.h2v.operation": "copy",
        "transforms.h2v.headers": "__debezium.newkey", "transforms.h2v.fields": "new_key",
    }, None),
    "after_unwrap_headers": ({
        "transforms": "unwrap,h2v", "transforms.unwrap.type": UNWRAP,
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
        "transforms.unwrap.add.headers": "op,source.ts_ms,table",
        "transforms.h2v.type": HEADER_TO_VALUE, "transforms.h2v.operation": "MOVE",
        "transforms.h2v.headers": "__op,__source_ts_ms", "transforms.h2v.fields": "operation,event_ts",
    }, _blank_added("", {"source_ts_ms": "event_ts", "op": "operation"})),
}


@pytest.mark.parametrize("case", sorted(HEADER_CASES))
def test_header_to_value(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    options, normalizer = HEADER_CASES[case]
    t = f"hv_{case[:10]}_{unique_name[-3:].strip('_')}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_unwrap_tables(t), tables=[f"public.{t}_a", f"public.{t}_b"],
        workload=_unwrap_workload(t), normalizer=normalizer,
        **{"skipped.operations": "none", "provide.transaction.metadata": "true", **options},
    )
    assert any(isinstance(r.value_payload, dict) and ({"task", "new_key", "operation"} & r.value_payload.keys()) for r in debezium)


# -- TimezoneConverter ------------------------------------------------------------------------------------

def _timezone_tables(t: str) -> list[str]:
    columns = "id int PRIMARY KEY, at timestamptz, local timestamp, local3 timestamp(3), clock time, zclock timetz, day date"
    return [
        f"CREATE TABLE {t}_a ({columns})",
        f"ALTER TABLE {t}_a REPLICA IDENTITY FULL",
        f"CREATE TABLE {t}_b ({columns})",
        # Values on both sides of America/New_York's and Europe/Paris's daylight-saving changes.
        f"INSERT INTO {t}_a VALUES (1, '2024-03-10 06:30:00+00', '2024-03-10 06:30:00', '2024-03-10 02:30:00.125', '13:14:15.5', "
        "'13:14:15+02', '2024-05-06'), (2, NULL, NULL, NULL, NULL, NULL, NULL)",
        f"INSERT INTO {t}_b VALUES (1, '2024-11-03 05:30:00.5+00', '2024-11-03 01:30:00', '1969-12-31 23:59:59.999', '00:00:00', "
        "'23:59:59.999999-03', '1970-01-01')",
    ]


def _timezone_workload(t: str) -> list[str]:
    return [
        f"INSERT INTO {t}_a VALUES (3, '2024-10-27 00:59:59.123456+00', '2024-10-27 02:30:00', '2024-03-31 02:30:00', '23:59:59', "
        "'01:00:00-03', '2024-12-31')",
        f"UPDATE {t}_a SET at = '2024-07-01 12:00:00+00', local = '1900-01-01 00:00:00' WHERE id = 1",
        f"UPDATE {t}_a SET id = 30 WHERE id = 3",
        f"DELETE FROM {t}_a WHERE id = 1",
        f"INSERT INTO {t}_b VALUES (2, '2000-02-29 23:00:00+00', '2000-02-29 23:00:00', NULL, NULL, NULL, NULL)",
        "SELECT pg_logical_emit_message(true, 'app', 'a message')",
        f"TRUNCATE {t}_b",
    ]


def _timezone(**options: str) -> dict[str, str]:
    return {"transforms": "tz", "transforms.tz.type": TIMEZONE, **{f"transforms.tz.{k}": v for k, v in options.items()}}


TIMEZONE_CASES: dict[str, Callable[[str], dict[str, str]]] = {
    "region_everything": lambda t: _timezone(**{"converted.timezone": "America/New_York"}),
    "offset_include": lambda t: _timezone(**{"converted.timezone": "+05:30",
                                             "include.list": f"source:{t}_b,{t}_a:after.at,{t}_a:local,{t}_a:source.ts_ms,{t}_a:source.ts_us"}),
    "exclude_connect_mode": lambda t: {
        "time.precision.mode": "connect",
        **_timezone(**{"converted.timezone": "Europe/Paris",
                       "exclude.list": f"topic:test_server.public.{t}_a:before.local,{t}_b:source.ts_ns"})},
    "nanoseconds_offset": lambda t: {"time.precision.mode": "nanoseconds", **_timezone(**{"converted.timezone": "-03:30"})},
}


@pytest.mark.parametrize("case", sorted(TIMEZONE_CASES))
def test_timezone_converter(debezium_oracle, pg_cluster, db, unique_name: str, case: str) -> None:
    t = f"tz_{case[:8]}_{unique_name[-3:].strip('_')}"
    debezium, _ = run_conformance(
        debezium_oracle, pg_cluster, db, unique_name, setup=_timezone_tables(t), tables=[f"public.{t}_a", f"public.{t}_b"],
        workload=_timezone_workload(t), **{"skipped.operations": "none", "provide.transaction.metadata": "true", **TIMEZONE_CASES[case](t)},
    )
    converted = [r.value_payload["after"]["at"] for r in debezium if r.op in ("r", "c") and r.value_payload["after"]["at"]]
    assert converted and not all(text.endswith("Z") for text in converted), f"no timestamp was converted: {converted}"
