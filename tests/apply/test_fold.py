"""The fold alone: what one batch becomes, without a target."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkcdc.apply import ApplySpec, ApplySpecError
from sparkcdc.apply.errors import ApplyError
from sparkcdc.apply.fold import fold_changes

from .support import Events


def resolve(**parameters):
    return ApplySpec(table="public.items", **parameters).resolve(Events.columns, Events.keys)


def test_scd1_last_event_per_key_wins_and_toast_takes_the_earlier_value_of_the_batch():
    events = Events().upsert(1, "a", "big", 1).upsert(1, "b", None, 2, unchanged=["body"]).upsert(2, "x", None, 0, unchanged=["body"])
    changes = fold_changes(resolve(), events.table())
    (segment,) = changes.segments
    assert segment.final[(1,)] == (False, [1, "b", "big", 2], ())
    # No earlier value in the batch: the target keeps its stored body.
    assert segment.final[(2,)] == (False, [2, "x", None, 0], ("body",))


def test_scd1_events_are_taken_in_sequence_order_not_arrival_order():
    events = Events().upsert(1, "new", "b", 2).upsert(1, "old", "a", 1)
    events.rows[0]["__commit_lsn"], events.rows[1]["__commit_lsn"] = 20, 10
    (segment,) = fold_changes(resolve(), events.table()).segments
    assert segment.final[(1,)][1][1] == "new"


def test_delete_records_a_tombstone_and_late_events_are_dropped():
    events = Events().upsert(1, "a", "x", 1).delete(1)
    changes = fold_changes(resolve(), events.table())
    assert changes.segments[0].final[(1,)][0] is True
    assert changes.tombstones == {(1,): (1002, 1002, 0)}
    late = Events(start=1).upsert(1, "zombie", "x", 9)  # sequence 1001 <= the delete's 1002
    again = fold_changes(resolve(), late.table(), tombstones=changes.tombstones)
    assert again.dropped_late == 1 and not again.segments[0].final


def test_truncate_drops_what_came_before_it_for_scd1():
    events = Events().upsert(1, "a", "x", 1).truncate().upsert(2, "b", None, 2, unchanged=["body"])
    (segment,) = fold_changes(resolve(), events.table()).segments
    assert segment.truncate_at == (1002, 1002, 0)
    assert segment.final == {(2,): (False, [2, "b", None, 2], ())}  # nothing stored to keep after a truncate


def test_ignore_null_updates_keeps_stored_values_of_null_columns():
    events = Events().upsert(1, None, None, 5)
    (segment,) = fold_changes(resolve(ignore_null_updates=True), events.table()).segments
    assert segment.final[(1,)] == (False, [1, None, None, 5], ("body", "name"))


def test_scd2_versions_close_on_tracked_changes_and_rewrite_on_untracked_ones():
    spec = resolve(stored_as_scd_type=2, track_history_except_column_list=["n"])
    stored = {(1,): ([1, "a", "x", 1], (500, 500, 0))}
    events = Events().upsert(1, "a", "x", 2).upsert(1, "b", None, 2, unchanged=["body"]).delete(1)
    (segment,) = fold_changes(spec, events.table(), open_versions=stored).segments
    assert segment.versions == [
        ([1, "a", "x", 2], (500, 500, 0), (1002, 1002, 0)),  # n changed in place, then name closed it
        ([1, "b", "x", 2], (1002, 1002, 0), (1003, 1003, 0)),  # TOAST body from the earlier version
    ]


def test_scd2_truncate_closes_the_versions_open_at_that_moment():
    spec = resolve(stored_as_scd_type=2)
    events = Events().upsert(1, "a", "x", 1).truncate().upsert(1, "a2", "y", 1)
    first, second = fold_changes(spec, events.table()).segments
    assert first.versions == [([1, "a", "x", 1], (1001, 1001, 0), (1002, 1002, 0))]
    assert second.truncate_at == (1002, 1002, 0)
    assert second.versions == [([1, "a2", "y", 1], (1003, 1003, 0), None)]


def test_an_image_carries_every_open_version_and_its_sequence():
    spec = resolve(stored_as_scd_type=2)
    stored = {(1,): ([1, "a", "x", 1], (500, 500, 0)), (2,): ([2, "b", "y", 2], (500, 500, 0))}
    image = Events(start=2).upsert(1, "a", "x", 1).upsert(2, "b2", "y", 2)
    changes = fold_changes(spec, image.table(), open_versions=stored, replace_at=(2001, 2001, 0))
    assert changes.is_image and changes.segments[0].replace_at == (2001, 2001, 0)
    # Key 1 is unchanged, yet emitted open: the target must see that the image holds it.
    assert sorted(changes.segments[0].versions, key=lambda v: (v[0][0], v[1])) == [
        ([1, "a", "x", 1], (500, 500, 0), None),
        ([2, "b", "y", 2], (500, 500, 0), (2002, 2002, 0)),
        ([2, "b2", "y", 2], (2002, 2002, 0), None),
    ]
    assert not fold_changes(spec, image.table(), open_versions=stored).is_image
    with pytest.raises(ApplyError, match=r"replaces at \(3000, 3000, 0\), after its first event"):
        fold_changes(spec, image.table(), replace_at=(3000, 3000, 0))


def test_scd1_a_key_change_takes_the_old_rows_unchanged_toast_column():
    # From the target's stored row of the old key.
    events = Events().key_change(1, 101, "a", 1)
    (segment,) = fold_changes(resolve(), events.table(), stored={(1,): [1, "a", "BIG", 0]}).segments
    assert segment.final[(1,)][0] is True
    assert segment.final[(101,)] == (False, [101, "a", "BIG", 1], ())
    # From this batch when the old key was written in it; a chain of key changes follows it along.
    events = Events().upsert(2, "b", "fresh", 1).key_change(2, 102, "b", 2).key_change(102, 202, "b", 3)
    (segment,) = fold_changes(resolve(), events.table(), stored={(2,): [2, "b", "stale", 0]}).segments
    assert segment.final[(202,)] == (False, [202, "b", "fresh", 3], ())
    # The old key updated in this batch without its body: the stored body still counts.
    events = Events().upsert(3, "c", None, 1, unchanged=["body"]).key_change(3, 103, "c", 2)
    (segment,) = fold_changes(resolve(), events.table(), stored={(3,): [3, "c", "kept", 0]}).segments
    assert segment.final[(103,)] == (False, [103, "c", "kept", 2], ())
    # No stored row (nothing to take): null, as for an insert.
    (segment,) = fold_changes(resolve(), Events().key_change(4, 104, "d", 1).table()).segments
    assert segment.final[(104,)] == (False, [104, "d", None, 1], ())


def test_scd2_a_key_change_takes_the_old_versions_unchanged_toast_column():
    spec = resolve(stored_as_scd_type=2)
    stored = {(1,): ([1, "a", "BIG", 0], (500, 500, 0))}
    changes = fold_changes(spec, Events(start=2).key_change(1, 101, "a", 1).table(), open_versions=stored)
    versions = sorted(changes.segments[0].versions, key=lambda v: v[0][0])
    assert versions == [([1, "a", "BIG", 0], (500, 500, 0), (2001, 2001, 0)), ([101, "a", "BIG", 1], (2002, 2002, 0), None)]


def test_null_sequence_is_refused():
    table = Events().upsert(1, "a", "x", 1).table()
    table = table.set_column(table.schema.get_field_index("__lsn"), "__lsn", pa.array([None], pa.int64()))
    with pytest.raises(ApplyError, match="__lsn"):
        fold_changes(resolve(), table)


@pytest.mark.parametrize(
    ("parameters", "named"),
    [
        ({"keys": ["nope"]}, "keys"),
        ({"column_list": ["id"], "except_column_list": ["n"]}, "column_list"),
        ({"except_column_list": ["id"]}, "except_column_list"),
        ({"stored_as_scd_type": 3}, "stored_as_scd_type"),
        ({"track_history_column_list": ["name"]}, "track_history_column_list"),
        ({"stored_as_scd_type": 2, "track_history_column_list": ["zzz"]}, "track_history_column_list"),
    ],
)
def test_invalid_parameters_name_the_parameter(parameters, named):
    with pytest.raises(ApplySpecError) as raised:
        resolve(**parameters)
    assert raised.value.parameter == named
