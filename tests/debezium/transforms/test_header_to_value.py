"""HeaderToValue: configuration errors and edge cases beyond the differential tests."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.connect import int64, string
from sparkcdc.debezium.records import Header
from sparkcdc.debezium.transforms import RecordError, TransformConfigError

from .events import CONTEXT, HEADER_TO_VALUE, chain_of, change, config, run, tombstone

ALICE = {"id": 1, "name": "alice", "dest": None, "qty": 3}
STAMP = Header("stamp", 42, int64())


@pytest.mark.parametrize("operation, kept", [("copy", ["__debezium.context.connectorName", "stamp"]),
                                             ("move", [])])
def test_headers_become_fields_appended_to_their_struct(operation: str, kept: list[str]) -> None:
    chain = chain_of("h", HEADER_TO_VALUE, headers="stamp,__debezium.context.connectorName", fields="source.stamp,connector",
                     operation=operation)
    [out] = run(chain, change("c", after=ALICE, headers=(*CONTEXT, STAMP)))
    assert [f.name for f in out.value_schema.fields][-1] == "connector"
    source = out.value_schema.field("source").schema
    assert (source.fields[-1].name, source.fields[-1].schema, source.name) == ("stamp", int64(), "io.debezium.connector.postgresql.Source")
    assert (out.value["source"]["stamp"], out.value["connector"]) == (42, "postgresql")
    assert [h.name for h in out.headers] == kept


def test_records_without_the_headers_or_a_value_pass_untouched() -> None:
    chain = chain_of("h", HEADER_TO_VALUE, headers="stamp", fields="stamp", operation="move")
    plain, dead = change("c", after=ALICE), tombstone({"id": 1}, headers=(STAMP,))
    assert run(chain, plain, dead) == [plain, dead]


def test_an_existing_field_takes_the_headers_value() -> None:
    chain = chain_of("h", HEADER_TO_VALUE, headers="__debezium.context.connectorName", fields="op", operation="copy")
    [out] = run(chain, change("c", after=ALICE))
    assert out.value["op"] == "postgresql" and out.value_schema == change("c", after=ALICE).value_schema


def test_the_first_record_with_a_header_decides_the_schema_of_its_value_schema() -> None:
    """As Debezium caches it per value schema: a later record with a header the first lacked fails,
    and one lacking a header whose field is required fails too."""
    chain = chain_of("h", HEADER_TO_VALUE, headers="stamp,other", fields="stamp,other", operation="copy")
    run(chain, change("c", after=ALICE, headers=(STAMP,)))
    with pytest.raises(RecordError, match="other is not a valid field name"):
        run(chain, change("c", after=ALICE, headers=(STAMP, Header("other", "x", string()))))
    chain = chain_of("h", HEADER_TO_VALUE, headers="stamp,other", fields="stamp,other", operation="copy")
    run(chain, change("c", after=ALICE, headers=(STAMP, Header("other", "x", string()))))
    with pytest.raises(RecordError, match="null value for field that is required"):
        run(chain, change("c", after=ALICE, headers=(STAMP,)))


def test_a_field_in_a_null_struct_fails_the_record() -> None:
    chain = chain_of("h", HEADER_TO_VALUE, headers="stamp", fields="after.stamp", operation="copy")
    with pytest.raises(RecordError, match="'after' is null"):
        run(chain, change("d", before=ALICE, headers=(STAMP,)))


@pytest.mark.parametrize("options, prop, words", [
    ({"headers": "a,b", "fields": "x", "operation": "copy"}, "fields", "as many elements as headers"),
    ({"headers": "a", "fields": "x", "operation": "rename"}, "operation", "is not one of move, copy"),
    ({"headers": "a", "fields": "x"}, "operation", "is required"),
    ({"fields": "x", "operation": "move"}, "headers", "is required"),
])
def test_configuration_errors_name_the_option(options: dict[str, str], prop: str, words: str) -> None:
    with pytest.raises(TransformConfigError) as caught:
        config(transforms="h", **{"transforms.h.type": HEADER_TO_VALUE}, **{f"transforms.h.{k}": v for k, v in options.items()})
    assert caught.value.property == f"transforms.h.{prop}"
    assert words in str(caught.value)
