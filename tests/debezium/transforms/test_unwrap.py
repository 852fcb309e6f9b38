"""ExtractNewRecordState: configuration errors and the cases the differential tests do not reach
(tests/conformance/test_transforms_debezium_conformance.py compares the rest with Debezium)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparkcdc.debezium.connect import string, struct
from sparkcdc.debezium.events import notification_record
from sparkcdc.debezium.records import ChangeRecord, Header
from sparkcdc.debezium.schemas import message_key_schema, message_value_schema, transaction_key_schema, transaction_value_schema
from sparkcdc.debezium.transforms import RecordError, TransformConfigError

from .events import ROW, UNWRAP, chain_of, change, config, heartbeat, run, source, tombstone

ALICE = {"id": 1, "name": "alice", "dest": "routed", "qty": 3}


def test_default_flattens_rows_and_makes_deletes_null_valued_records() -> None:
    chain = chain_of("u", UNWRAP)
    created, deleted, truncated, beat = change("c", after=ALICE), change("d", before=ALICE), change("t"), heartbeat()
    out = run(chain, created, deleted, tombstone({"id": 1}), truncated, beat)
    assert [(r.value, r.value_schema) for r in out[:2]] == [(ALICE, ROW.as_optional(False)), (None, ROW)]
    assert out[2] is beat  # not a change event: untouched
    assert (out[0].lsn, out[0].op, out[0].headers, out[0].topic) == (100, "c", created.headers, created.topic)


@pytest.mark.parametrize("mode, kept", [
    ("drop", []),
    ("tombstone", [("d", None)]),
    ("delete-to-tombstone", [("d", None)]),
    ("rewrite", [("d", {**ALICE, "__deleted": "true"})]),
    ("rewrite-with-tombstone", [("d", {**ALICE, "__deleted": "true"}), (None, None)]),
])
def test_delete_tombstone_handling_modes(mode: str, kept: list[tuple[str | None, object]]) -> None:
    out = run(chain_of("u", UNWRAP, **{"delete.tombstone.handling.mode": mode.upper()}), change("d", before=ALICE),
              tombstone({"id": 1}))
    assert [(r.op, r.value) for r in out] == kept
    if mode == "delete-to-tombstone":
        assert out[0].value_schema is None  # a true tombstone, unlike the tombstone mode's
    if mode.startswith("rewrite"):
        assert run(chain_of("u", UNWRAP, **{"delete.tombstone.handling.mode": mode}), change("u", after=ALICE))[0].value == {
            **ALICE, "__deleted": "false"}


def test_added_fields_are_optional_copies_named_by_prefix_or_rename() -> None:
    chain = chain_of("u", UNWRAP, **{"add.fields": "op,source.ts_ms:WHEN,ts_ms,table,snapshot,id,before.qty,nonexistent",
                                     "add.fields.prefix": "m_"})
    [streamed, snapshot] = run(chain, change("c", after=ALICE), change("r", after=ALICE))
    added = {f.name: f.schema for f in streamed.value_schema.fields[len(ROW.fields):]}
    assert list(added) == ["m_op", "m_WHEN", "m_ts_ms", "m_table", "m_snapshot", "m_id", "m_before_qty"]
    assert all(schema.optional and not schema.has_default for schema in added.values())
    assert added["m_snapshot"].name == "io.debezium.data.Enum"  # name and parameters kept, the default not
    assert streamed.value == {**ALICE, "m_op": "c", "m_WHEN": 1_700_000_000_000, "m_ts_ms": 1, "m_table": "orders",
                              "m_snapshot": None, "m_id": None, "m_before_qty": None}
    assert snapshot.value["m_snapshot"] == "true" and snapshot.value_schema is streamed.value_schema
    [bare] = run(chain_of("u", UNWRAP, **{"add.fields": "op", "add.fields.prefix": ""}), change("c", after=ALICE))
    assert bare.value == {**ALICE, "op": "c"}  # an empty prefix is a prefix, not the default "__"


def test_a_null_column_with_a_default_is_copied_as_null() -> None:
    """sparkcdc's row carries a NULL as the default's own object (JsonConverter writes the default);
    Debezium's copy of it is null."""
    default = ROW.field("name").schema.default
    plans = [SimpleNamespace(name="name", null_value=default)]
    before = {**ALICE, "name": default}
    record = change("u", before=before, after={**ALICE, "name": "".join(["no", "ne"])})  # equal to the default, but a value
    record.table_schema = SimpleNamespace(value_fields=plans)
    [out] = run(chain_of("u", UNWRAP, **{"add.fields": "before.name,after.name"}), record)
    assert (out.value["__before_name"], out.value["__after_name"]) == (None, "none")


def test_added_headers_and_a_kept_tombstone_sharing_its_deletes_headers() -> None:
    chain = chain_of("u", UNWRAP, **{"add.headers": "op:OP,db,nonexistent", "add.headers.prefix": "h.",
                                     "delete.tombstone.handling.mode": "rewrite-with-tombstone"})
    deleted, dead = run(chain, change("d", before=ALICE), tombstone({"id": 1}))
    added = [(h.name, h.value, h.schema.optional) for h in deleted.headers[1:]]
    assert added == [("h.OP", "d", True), ("h.db", "shop", True)]
    # Debezium's tombstone has the delete's headers object, changed in place, and then its own "op".
    assert [(h.name, h.value, h.schema.optional) for h in dead.headers[1:]] == [*added, ("h.OP", "d", False)]
    [other] = run(chain, tombstone({"id": 2}))
    assert [h.name for h in other.headers[1:]] == ["h.OP"]


def test_route_by_field() -> None:
    chain = chain_of("u", UNWRAP, **{"route.by.field": "dest", "delete.tombstone.handling.mode": "rewrite-with-tombstone"})
    out = run(chain, change("c", after=ALICE), change("c", after={**ALICE, "dest": None}), change("d", before=ALICE),
              tombstone({"id": 1}))
    assert [r.topic for r in out] == ["routed", "shop.public.orders", "routed", "shop.public.orders"]
    with pytest.raises(RecordError, match="Field 'qty' is not of type STRING"):
        run(chain_of("u", UNWRAP, **{"route.by.field": "qty"}), change("c", after=ALICE))
    with pytest.raises(RecordError, match="nope is not a valid field name"):
        run(chain_of("u", UNWRAP, **{"route.by.field": "nope"}), change("c", after=ALICE))


def test_drop_fields_named_by_a_header() -> None:
    listing = (Header("gone", ["id", "name", "unknown"], None),)
    record = change("u", before=ALICE, after=ALICE, headers=listing)
    [kept] = run(chain_of("u", UNWRAP, **{"drop.fields.header.name": "gone", "drop.fields.from.key": "true"}), record)
    assert kept.value == {"id": 1, "dest": "routed", "qty": 3} and kept.key == {"id": 1}  # required fields kept
    [dropped] = run(chain_of("u", UNWRAP, **{"drop.fields.header.name": "gone", "drop.fields.from.key": "true",
                                             "drop.fields.keep.schema.compatible": "false"}), record)
    assert dropped.value == {"dest": "routed", "qty": 3} and dropped.key == {} and not dropped.key_schema.fields
    assert [f.name for f in dropped.value_schema.fields] == ["dest", "qty"]
    with pytest.raises(RecordError, match="is not a list of field names"):
        run(chain_of("u", UNWRAP, **{"drop.fields.header.name": "gone"}),
            change("u", after=ALICE, headers=(Header("gone", "id", string()),)))


def test_an_added_field_named_like_a_column_fails_the_record() -> None:
    with pytest.raises(RecordError, match="dest twice"):
        run(chain_of("u", UNWRAP, **{"add.fields": "source.db:dest", "add.fields.prefix": ""}), change("c", after=ALICE))


@pytest.mark.parametrize("options, prop, words", [
    ({"delete.tombstone.handling.mode": "none"}, "delete.tombstone.handling.mode", "is not one of drop, tombstone"),
    ({"drop.fields.keep.schema.compatible": "yes"}, "drop.fields.keep.schema.compatible", "is not a boolean"),
    ({"add.fields": "op,before"}, "add.fields", "names the envelope's struct 'before'"),
    ({"add.headers": "op.x"}, "add.headers", "'op' is not one of the envelope's blocks"),
    ({"add.fields": "op,table,op"}, "add.fields", "adds the field(s) __op twice"),
])
def test_configuration_errors_name_the_option(options: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        config(transforms="u", **{"transforms.u.type": UNWRAP}, **{f"transforms.u.{k}": v for k, v in options.items()})
    assert caught.value.property == f"transforms.u.{prop}"
    assert words in str(caught.value)


def test_the_options_debezium_removed_are_reported_and_refused_when_strict() -> None:
    given = {"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.delete.handling.mode": "rewrite",
             "transforms.u.drop.tombstones": "false"}
    notes = config(**given).warnings
    assert any(n.startswith("transforms.u.delete.handling.mode: Debezium 3.6 no longer reads it") for n in notes)
    assert any(n.startswith("transforms.u.drop.tombstones: Debezium 3.6 no longer reads it") for n in notes)
    with pytest.raises(TransformConfigError) as caught:
        config(**given, **{"sparkcdc.strict": "true"})
    assert caught.value.property == "transforms.u.delete.handling.mode"


def test_snapshot_source_fields_keep_their_values() -> None:
    snap = change("r", after=ALICE, src=source(snapshot="last"))
    [out] = run(chain_of("u", UNWRAP, **{"add.headers": "snapshot"}), snap)
    assert out.headers[-1].value == "last"


def _not_change_events() -> list[ChangeRecord]:
    tx = ChangeRecord("shop.transaction", {"id": "7:100"}, transaction_key_schema(),
                      {"status": "BEGIN", "id": "7:100", "event_count": None, "data_collections": None, "ts_ms": 1},
                      transaction_value_schema())
    message = ChangeRecord("shop.message", {"prefix": "app"}, message_key_schema(),
                           {"op": "m", "ts_ms": 1, "source": source(table=""), "transaction": None,
                            "message": {"prefix": "app", "content": "eA=="}}, message_value_schema("bytes"), op="m")
    notice = notification_record("shop.notifications", "n1", "Initial Snapshot", "Snapshot", {}, 1, commit_lsn=1, ordinal=0)
    schema_change = ChangeRecord("shop", {"databaseName": "d"}, None, {"databaseName": "d"},
                                 struct([("databaseName", string())], name="io.debezium.connector.postgresql.SchemaChangeValue"))
    return [heartbeat(), tx, message, notice, schema_change]


@pytest.mark.parametrize("class_name, options", [
    (UNWRAP, {"add.fields": "op", "add.headers": "db", "delete.tombstone.handling.mode": "rewrite"}),
    ("io.debezium.transforms.ExtractChangedRecordState", {"header.changed.name": "c", "header.unchanged.name": "u"}),
    ("io.debezium.transforms.TimezoneConverter", {"converted.timezone": "+01:00", "include.list": "source:orders,app:ts_ms"}),
])
def test_records_that_are_not_change_events_pass_untouched(class_name: str, options: dict[str, str]) -> None:
    records = _not_change_events()
    assert all(a is b for a, b in zip(run(chain_of("x", class_name, **options), *records), records, strict=True))
