"""The outbox router's JSON expansion: each case is what Debezium 3.6.3's EventRouter made of the
same text (run through its JVM; a random corpus of 1,500 documents agreed too, see the module
docstring of sparkcdc.debezium.transforms.outbox_json)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.debezium.transforms.outbox_json import NotExpanded, SchemaInterner, Unfit, expand_json


def shape(schema: dict[str, Any] | None) -> str:
    """A compact spelling of a schema: ``?`` optional, ``!`` required, structs with their name."""
    if schema is None:
        return "NULL"
    mark = "?" if schema["optional"] else "!"
    if schema["type"] == "struct":
        name = schema.get("name", "")
        return f"{name}{mark}{{" + ", ".join(f"{f['field']}:{shape(f)}" for f in schema["fields"]) + "}"
    if schema["type"] == "array":
        return f"[{shape(schema['items'])}]{mark}"
    return schema["type"] + mark


def expanded(text: str, nulls_as_bytes: bool = False) -> tuple[str, Any]:
    schema, value = expand_json(text, "payload", nulls_as_bytes)
    return shape(None if schema is None else schema.to_json()), value


@pytest.mark.parametrize("text, nulls_as_bytes, schema, value", [
    ('{"b": 1, "a": 2}', False, "payload?{b:int32?, a:int32?}", {"b": 1, "a": 2}),
    ('{"n": null, "m": 1}', False, "payload?{m:int32?}", {"m": 1}),
    ('{"n": null, "m": 1}', True, "payload?{n:bytes?, m:int32?}", {"n": None, "m": 1}),
    ('{"x": 1, "a": []}', True, "payload?{x:int32?}", {"x": 1}),
    ('{"f": 2147483648, "g": -2147483648, "h": 1.0, "i": 1e3, "j": -0}', False,
     "payload?{f:int64?, g:int32?, h:double?, i:double?, j:int32?}", {"f": 2147483648, "g": -2147483648, "h": 1.0, "i": 1000.0, "j": 0}),
    ('{"a": [1, null], "b": ["x", null, "y"], "c": [[1], [2, 3]], "d": [true]}', False,
     "payload?{a:[int32?]?, b:[string?]?, c:[[int32?]?]?, d:[boolean?]?}", {"a": [1, None], "b": ["x", None, "y"], "c": [[1], [2, 3]], "d": [True]}),
    ('{"a": [{"x": 1}, {"x": 2}]}', False, "payload?{a:[payload.a?{x:int32?}]?}", {"a": [{"x": 1}, {"x": 2}]}),
    ('{"a": [{"x": 1}, {"y": "s"}]}', False, "payload?{a:[payload.a!{x:int32?, y:string?}]?}",
     {"a": [{"x": 1, "y": None}, {"x": None, "y": "s"}]}),
    ('{"a": [{"b": null}, {"c": 1}]}', True, "payload?{a:[payload.a!{b:bytes?, c:int32?}]?}",
     {"a": [{"b": None, "c": None}, {"b": None, "c": 1}]}),
    ('{"a": [{"x": null}, {"x": 1}]}', True, "payload?{a:[payload.a!{x:int32?}]?}", {"a": [{"x": None}, {"x": 1}]}),
    ('{"a": [[{"k": {"z": 1}}]]}', False, "payload?{a:[[?{k:k?{z:int32?}}]?]?}", {"a": [[{"k": {"z": 1}}]]}),
    ('{"o": {"n": null}, "e": {}}', False, "payload?{o:payload.o?{}, e:payload.e?{}}", {"o": {}, "e": {}}),
    ('{"a": 1, "a": "s"}', False, "payload?{a:string?}", {"a": "s"}),
    ('{"trail": 1} xx', False, "payload?{trail:int32?}", {"trail": 1}),
    ('{"a": 1e400}', False, "payload?{a:double?}", {"a": "Infinity"}),
    ("[]", False, "NULL", "[]"),
])
def test_inferred_schemas_and_values(text: str, nulls_as_bytes: bool, schema: str, value: Any) -> None:
    assert expanded(text, nulls_as_bytes) == (schema, value)


@pytest.mark.parametrize("text, nulls_as_bytes", [
    ("", False), ("not json", False), ('"s"', False), ("42", False), ("null", False), ('  {"a": 1}', False),
    ('\ufeff{"a": 1}', False), ("{'a': 1}", False), ('{"a": NaN}', False), ('{"a": 01}', False), ('{"a": 1, /*c*/ "b": 2}', False),
    ('{"": 1}', False), ('{"a": [1, "a"]}', False), ('{"a": [1, 12345678901]}', False), ('{"a": [1, 1.5]}', False),
    ('{"a": [true, 1]}', False), ('{"a": [null]}', False), ('{"a": [[]]}', False), ('{"a": [[], [1]]}', True),
])
def test_text_debezium_leaves_as_it_is(text: str, nulls_as_bytes: bool) -> None:
    with pytest.raises(NotExpanded):
        expand_json(text, "payload", nulls_as_bytes)


@pytest.mark.parametrize("text, nulls_as_bytes", [
    ("[1]", False), ('[{"x": 1}]', False), ("[null]", True), ('{"f": 9223372036854775808}', False),
    ('{"a": [[1], ["x"]]}', False), ('{"a": [{"x": 1}, {"x": "s"}]}', False), ('{"a": [{"x": 1}, {"x": 1.5}]}', False),
    ('{"a": [{"x": 1}, {"y": 1}, null]}', False),
])
def test_schemas_that_do_not_fit_the_values_stop_as_debezium_s_converter_does(text: str, nulls_as_bytes: bool) -> None:
    with pytest.raises(Unfit):
        expand_json(text, "payload", nulls_as_bytes)


def test_the_struct_is_named_after_the_payload_column() -> None:
    schema, _ = expand_json('{"q": {"r": 1}}', "body", False)
    assert schema is not None and schema.name == "body" and schema.fields[0].schema.name == "body.q"


def test_interned_schemas_are_one_object_per_shape() -> None:
    intern = SchemaInterner(limit=2)
    first = intern(expand_json('{"a": 1}', "payload", False)[0])  # type: ignore[arg-type]
    assert intern(expand_json('{"a": 2}', "payload", False)[0]) is first  # type: ignore[arg-type]
