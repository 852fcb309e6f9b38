"""pgvector types: schemas, converters and the sparse map's ``java.util.HashMap`` order.

Expected values are what the real Debezium 3.6.3 connector emitted for the same text (the
differential cases in tests/conformance/test_vector_conformance.py run it on PostgreSQL 18).
"""

from __future__ import annotations

import random

import pytest

from sparkcdc.debezium.types import ColumnType, ConversionError, MappingOptions, map_type
from sparkcdc.debezium.types.base import UnrepresentableValueError
from sparkcdc.debezium.types.hstore import _HashMap, _table_size_for, java_sized_hashmap_order


def _mapping(name: str, element: ColumnType | None = None):  # noqa: ANN202 - a ValueMapping
    column = ColumnType(oid=91234, name=name, namespace="public", modifier=-1, declared_name=name, element=element)
    mapping = map_type(column, MappingOptions())
    assert mapping is not None, name
    return mapping


def test_schemas_as_debezium_writes_them() -> None:
    assert _mapping("vector").schema.to_json() == {
        "type": "array", "items": {"type": "double", "optional": False}, "optional": False,
        "name": "io.debezium.data.DoubleVector", "version": 1}
    assert _mapping("halfvec").schema.to_json()["items"] == {"type": "float", "optional": False}
    assert _mapping("halfvec").schema.name == "io.debezium.data.FloatVector"
    sparse = _mapping("sparsevec").schema.to_json()
    assert sparse == {
        "type": "struct", "optional": False, "name": "io.debezium.data.SparseDoubleVector", "version": 1,
        "doc": "Sparse double vector",
        "fields": [
            {"type": "int16", "optional": False, "field": "dimensions"},
            {"type": "map", "keys": {"type": "int16", "optional": False}, "values": {"type": "double", "optional": False},
             "optional": False, "field": "vector"},
        ]}


def test_values() -> None:
    assert _mapping("vector").convert("[1,2.5,-3.25e-07]") == [1.0, 2.5, -3.25e-07]
    assert _mapping("halfvec").convert("[1.5,0.099975586,65504,-5.9604645e-08]") == [1.5, 0.099975586, 65504.0, -5.9604645e-08]
    sparse = _mapping("sparsevec").convert
    assert sparse("{1:1.5,3:-2,7:0.1}/10") == {"dimensions": 10, "vector": [[1, 1.5], [3, -2.0], [7, 0.1]]}
    assert sparse("{2:1,5:2,8:3}/10") == {"dimensions": 10, "vector": [[8, 3.0], [5, 2.0], [2, 1.0]]}  # HashMap(3): 4 buckets
    assert sparse("{}/5") == {"dimensions": 5, "vector": []}
    # Eleven indices in one bucket: a tree bin, whose root HashMap moves to the front.
    collide = "{" + ",".join(f"{64 * k}:1" for k in range(1, 12)) + "}/32000"
    assert [k for k, _ in sparse(collide)["vector"]] == [256, 64, 128, 192, 320, 384, 448, 512, 576, 640, 704]
    assert _mapping("vector", None).extra["toast_null"] and _mapping("sparsevec").extra["toast_null"]


@pytest.mark.parametrize("text", ["{40000:1}/100000", "{1:1}/32768"])
def test_sparse_past_a_java_short_is_unrepresentable(text: str) -> None:
    with pytest.raises(UnrepresentableValueError, match="32767"):
        _mapping("sparsevec").convert(text)


@pytest.mark.parametrize(("name", "text"), [("vector", "1,2"), ("vector", "[1,x]"), ("halfvec", "[]"),
                                            ("sparsevec", "{1:1}"), ("sparsevec", "{1-1}/3"), ("sparsevec", "{1:x}/3")])
def test_malformed_text_names_the_value(name: str, text: str) -> None:
    with pytest.raises(ConversionError, match="is not"):
        _mapping(name).convert(text)


def test_sparsevec_arrays_are_null_unless_empty() -> None:
    element = ColumnType(oid=91235, name="sparsevec", namespace="public", modifier=-1, declared_name="sparsevec")
    mapping = _mapping("_sparsevec", element)
    assert mapping.convert("{}") == [] and mapping.convert('{"{1:1}/3"}') is None and mapping.convert("{NULL}") is None
    vectors = _mapping("_vector", ColumnType(oid=1, name="vector", namespace="public", modifier=-1, declared_name="vector"))
    assert vectors.convert('{"[1,2]","[3]"}') == [[1.0, 2.0], [3.0]] and vectors.convert('{NULL,"[1]"}') is None


def test_sized_hashmap_fast_path_equals_the_replay() -> None:
    rng = random.Random(7)
    for _ in range(400):
        if rng.random() < 0.4:
            step = rng.choice([16, 32, 64, 128])
            keys = sorted({step * rng.randint(1, 250) for _ in range(rng.randint(2, 60))})
        else:
            keys = sorted(rng.sample(range(1, rng.choice([50, 400, 32767])), rng.randint(2, 45)))
        replay = _HashMap(range(len(keys)), hashes=keys, capacity=_table_size_for(len(keys))).order()
        assert java_sized_hashmap_order(keys, len(keys)) == replay, keys
