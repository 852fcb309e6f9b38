"""``JsonSerializer.quoted_into``: a record's text as a JSON string, appended in pieces built from a
schema prefix escaped once; joined, it must be exactly the serialized text quoted, and the length it
returns must be the joined length."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sparkcdc.debezium.connect import ConnectSchema, string, struct
from sparkcdc.debezium.serialization import JsonSerializer, escape_json_text


def _quoted(serializer: JsonSerializer, payload: Any, schema: ConnectSchema | None, *, with_schema: bool) -> bytes:
    pieces: list[bytes] = [b"before"]
    length = serializer.quoted_into(pieces, payload, schema, with_schema=with_schema)
    assert pieces[0] == b"before"  # appended, never replaced
    text = b"".join(pieces[1:])
    assert length == len(text)
    return text

SCHEMA = struct([("id", string()), ("txt", string(optional=True))], name='srv.public."odd\\name".Value', optional=True)


@pytest.mark.parametrize("payload", [
    {"id": "1", "txt": None},
    {"id": 'q"uote \\ back \n nl \t tab \u0001 \u2028 é ✓ 😀', "txt": "\\\\"},
    None,
])
@pytest.mark.parametrize("schema", [SCHEMA, None])
@pytest.mark.parametrize("with_schema", [True, False])
def test_quoted_is_the_encoded_text_as_a_json_string(payload: Any, schema: ConnectSchema | None, with_schema: bool) -> None:
    serializer = JsonSerializer()
    for _ in range(2):  # the second time from the cached prefix
        encoded = serializer.encode(payload, schema, with_schema=with_schema)
        quoted = _quoted(serializer, payload, schema, with_schema=with_schema)
        if encoded is None:
            assert quoted == b"null"
        else:
            assert quoted == orjson.dumps(encoded.decode())
            assert orjson.loads(orjson.loads(quoted)) == orjson.loads(encoded)


def test_a_new_schema_at_a_recycled_id_gets_its_own_prefix() -> None:
    serializer = JsonSerializer()
    first = _quoted(serializer, {"id": "1"}, struct([("id", string())], name="a"), with_schema=True)
    second = _quoted(serializer, {"id": "1"}, struct([("id", string())], name="b"), with_schema=True)
    assert b'\\"a\\"' in first and b'\\"b\\"' in second


def test_escape_json_text() -> None:
    assert escape_json_text(b'{"a":"\\\\ \\""}') == b'{\\"a\\":\\"\\\\\\\\ \\\\\\"\\"}'
    assert escape_json_text(b"no quotes") == b"no quotes"
    assert escape_json_text(b"\\") == b"\\\\"
