"""The column-at-a-time SCD1 fold gives what the event-by-event fold gives, for every batch it takes.

Hypothesis draws batches of inserts, updates, deletes and primary-key changes that carry every
column (in any arrival order, sequences sometimes equal), the target's recorded deletes, and
whether the batch is an image; both folds must give the same staged rows, tombstones, segment
bounds and counts."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.apply import ApplySpec
from sparkcdc.apply.errors import ApplyError
from sparkcdc.apply.fold import fold_arrow, fold_changes, fold_scd1_vectorized, staged_form, vectorizable
from sparkcdc.apply.staged import Folded

from .support import Events

SPEC = ApplySpec(table="public.items").resolve(Events.columns, Events.keys)
BY_N = ApplySpec(table="public.items", sequence_by="n").resolve(Events.columns, Events.keys)


@st.composite
def batches(draw: st.DrawFn) -> tuple[pa.Table, dict[tuple[Any, ...], tuple[Any, ...]], bool]:
    events = Events()
    count = draw(st.integers(0, 30))
    lsns = draw(st.lists(st.integers(1, 60), min_size=count, max_size=count))  # duplicates: equal sequences
    for lsn in lsns:
        kind = draw(st.sampled_from(["upsert", "upsert", "delete", "key_change"]))
        key = draw(st.integers(1, 6))
        name = draw(st.sampled_from(["a", "b", None]))
        n = draw(st.one_of(st.none(), st.integers(0, 3)))
        if kind == "upsert":
            events.upsert(key, name, draw(st.sampled_from(["x", None])), n)
        elif kind == "delete":
            events.delete(key)
        else:  # a primary-key change whose create carries every column
            events.key_change(key, draw(st.integers(1, 6)), name, n, unchanged=())
            events.rows[-1]["body"] = draw(st.sampled_from(["y", None]))
        events.rows[-1].update({"__commit_lsn": lsn, "__lsn": lsn, "__ordinal": draw(st.integers(0, 1))})
    table = events.table()
    if draw(st.booleans()):  # arrival order is not sequence order
        order = draw(st.permutations(list(range(table.num_rows))))
        table = table.take(pa.array(order, type=pa.int64()))
    recorded = draw(st.dictionaries(st.integers(1, 6), st.integers(0, 61), max_size=4))
    tombstones = {(key,): (lsn, lsn, 0) for key, lsn in recorded.items()}
    return table, tombstones, draw(st.booleans())


def _normal(folded: Folded) -> dict[str, Any]:
    return {
        "rows": sorted(folded.rows.to_pylist(), key=lambda r: (r["__sparkcdc_segment"], r["id"])),
        "tombstones": sorted(folded.tombstones.to_pylist(), key=lambda r: r["id"]),
        "segments": folded.segments, "events": folded.events, "dropped_late": folded.dropped_late,
        "rows_schema": folded.rows.schema, "tombstones_schema": folded.tombstones.schema,
    }


@pytest.mark.parametrize("spec", [SPEC, BY_N], ids=["commit-order", "sequence_by-n"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches())
def test_the_vectorized_fold_equals_the_event_by_event_fold(spec, batch) -> None:
    table, tombstones, image = batch
    if spec is BY_N:
        tombstones = {key: (seq[0],) for key, seq in tombstones.items()}
        table = table.set_column(table.schema.get_field_index("n"), "n", pa.array(
            [v if v is not None else 0 for v in table.column("n").to_pylist()], pa.int32()))
    assert vectorizable(spec, table)
    vectorized = fold_scd1_vectorized(spec, table, tombstones=tombstones, image=image)
    expected = staged_form(fold_changes(spec, table, tombstones=tombstones, image=image), table.schema)
    if vectorized is None:  # only when two events of a key share a sequence: the event-by-event fold decides
        keys_and_sequences = list(zip(table.column("id").to_pylist(), *(table.column(s).to_pylist() for s in spec.sequence),
                                      strict=True))
        assert len(set(keys_and_sequences)) < len(keys_and_sequences)
        assert _normal(fold_arrow(spec, table, tombstones=tombstones, image=image)) == _normal(expected)
        return
    assert _normal(vectorized) == _normal(expected)


def test_batches_the_vectorized_fold_does_not_take() -> None:
    truncating = Events().upsert(1, "a", "x", 1).truncate().table()
    toast = Events().upsert(1, "a", None, 1, unchanged=["body"]).table()
    plain = Events().upsert(1, "a", "x", 1).key_change(1, 2, "b", 2, unchanged=()).table()
    assert not vectorizable(SPEC, truncating) and not vectorizable(SPEC, toast)
    assert not vectorizable(ApplySpec("public.items", ignore_null_updates=True).resolve(Events.columns, Events.keys), plain)
    assert not vectorizable(ApplySpec("public.items", stored_as_scd_type=2).resolve(Events.columns, Events.keys), plain)
    assert vectorizable(SPEC, plain)
    folded = fold_arrow(SPEC, plain)
    assert sorted(folded.rows.select(["id", "name", "__sparkcdc_delete"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": None, "__sparkcdc_delete": True}, {"id": 2, "name": "b", "__sparkcdc_delete": False}]
    assert folded.tombstones.to_pylist() == [{"id": 1, "__SEQUENCE": {"__commit_lsn": 1002, "__lsn": 1002, "__ordinal": 0}}]


def test_the_vectorized_fold_refuses_what_the_event_by_event_fold_refuses() -> None:
    table = Events().upsert(1, "a", "x", 1).table()
    with pytest.raises(ApplyError, match=r"replaces at \(5000, 5000, 0\), after its first event"):
        fold_scd1_vectorized(SPEC, table, replace_at=(5000, 5000, 0))
    nulls = table.set_column(table.schema.get_field_index("__lsn"), "__lsn", pa.array([None], pa.int64()))
    with pytest.raises(ApplyError, match="__lsn"):
        fold_scd1_vectorized(SPEC, nulls)
    with pytest.raises(ApplyError, match="no column body"):
        fold_scd1_vectorized(SPEC, table.drop_columns(["body"]))
