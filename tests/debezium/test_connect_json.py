"""Connect schemas read back from JsonConverter's JSON are the schemas that wrote it."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.connect import ConnectSchema, array, int32, map_, string, struct
from sparkcdc.debezium.connect_json import schema_from_json
from sparkcdc.debezium.schemas import envelope_schema
from sparkcdc.debezium.types.numeric import decimal_schema

ROW = struct([("id", int32()), ("name", string(optional=True).with_default("none")), ("price", decimal_schema(2, 10).as_optional()),
              ("tags", array(string(optional=True), optional=True)), ("attrs", map_(string(), string(optional=True), optional=True))],
             optional=True, name="shop.public.t.Value")


@pytest.mark.parametrize("schema", [ROW, envelope_schema(ROW, "shop.public.t.Envelope"), string(optional=True, name="io.debezium.data.Json",
                                                                                                 version=1)])
def test_round_trip(schema: ConnectSchema) -> None:
    assert schema_from_json(schema.to_json()) == schema
    assert schema_from_json(schema.to_json()).to_json() == schema.to_json()


def test_malformed_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Connect schema"):
        schema_from_json({"fields": []})
