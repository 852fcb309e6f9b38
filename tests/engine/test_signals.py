"""Signals and the chunk window's rules, without a server: parsing, pattern matching, deduplication."""

from __future__ import annotations

import json

import pytest

from sparkcdc.debezium.records import ChangeRecord
from sparkcdc.engine.core.incremental import ChunkWindow, IncrementalState, SnapshotCollection, Visibility
from sparkcdc.engine.core.signals import (
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalError,
    StopSnapshot,
    match_collections,
    parse_action,
)
from sparkcdc.engine.core.snapshot_window import StreamSignals, WindowNotClosedError
from sparkcdc.engine.core.streaming import SIGNAL_OP


def _signal(kind: str, data: object = None) -> Signal:
    return Signal("s1", kind, data if data is None or isinstance(data, str) else json.dumps(data))


def test_execute_snapshot_with_conditions_and_surrogate_key() -> None:
    action = parse_action(_signal("execute-snapshot", {
        "data-collections": ["public.a", "public\\.b.*"], "type": "INCREMENTAL",
        "additional-conditions": [{"data-collection": "public.a", "filter": "id > 5"}], "surrogate-key": "k",
    }))
    assert action == ExecuteSnapshot(("public.a", "public\\.b.*"), "incremental", (("public.a", "id > 5"),), "k")
    assert action.condition_for("public.a") == "id > 5" and action.condition_for("public.b1") is None


def test_legacy_additional_condition_applies_to_every_collection() -> None:
    action = parse_action(_signal("execute-snapshot", {"data-collections": ["public.a", "public.b"], "additional-condition": "x = 1"}))
    assert isinstance(action, ExecuteSnapshot)
    assert action.condition_for("public.b") == "x = 1"


@pytest.mark.parametrize(("kind", "data", "expected"), [
    ("stop-snapshot", {"data-collections": [], "type": "incremental"}, StopSnapshot((), "incremental")),
    ("stop-snapshot", None, StopSnapshot()),
    ("pause-snapshot", None, PauseSnapshot()),
    ("resume-snapshot", "", ResumeSnapshot()),
    ("log", {"message": "hello"}, LogMessage("hello")),
    ("LOG", {"message": "hi"}, LogMessage("hi")),
])
def test_other_signal_types(kind, data, expected) -> None:
    assert parse_action(_signal(kind, data)) == expected


@pytest.mark.parametrize(("kind", "data", "error"), [
    ("explode", None, "unknown signal type 'explode'"),
    ("execute-snapshot", "{not json", "not valid JSON"),
    ("execute-snapshot", {"type": "incremental"}, "\"data-collections\" is missing"),
    ("execute-snapshot", {"data-collections": []}, "is empty"),
    ("execute-snapshot", {"data-collections": ["public.("]}, "not a valid regular expression"),
    ("execute-snapshot", {"data-collections": ["public.a"], "type": "sideways"}, "snapshot type 'sideways'"),
    ("execute-snapshot", {"data-collections": ["public.a"], "additional-conditions": [{"filter": "x"}]}, "\"data-collection\""),
    ("execute-snapshot", {"data-collections": ["public.a"], "additional-conditions": [{"data-collection": "public.(", "filter": "x"}]},
     "'public.(' is not a valid regular expression"),
    ("log", {}, "\"message\""),
    ("execute-snapshot", "[1]", "must be a JSON object"),
])
def test_bad_signals_name_the_signal_and_the_fault(kind, data, error) -> None:
    with pytest.raises(SignalError, match="signal 's1'") as raised:
        parse_action(_signal(kind, data))
    assert error in str(raised.value)


def test_collection_patterns_are_anchored_regexes_or_quoted_names() -> None:
    tables = [("public", "a"), ("public", "ab"), ("public", "My.Table"), ("other", "a")]
    assert match_collections(["public.a"], tables) == ([("public", "a")], [])
    assert match_collections(["public.a.*", "nothing.here"], tables) == ([("public", "a"), ("public", "ab")], ["nothing.here"])
    assert match_collections(['"public"."My.Table"'], tables) == ([("public", "My.Table")], [])


def test_state_round_trips_and_moves_on_after_a_chunk() -> None:
    chunk = ChunkWindow("w", "public", "a", ("id",), ("integer",), None, ("7",), None, "0000-1", 0)
    state = IncrementalState("sig", (SnapshotCollection("public", "a"), SnapshotCollection("public", "b", "x > 1")),
                             max_key=("40",), chunk=chunk)
    assert IncrementalState.from_dict(json.loads(json.dumps(state.to_dict()))) == state
    after, finished = state.chunk_read()
    assert not finished and after.last_key == ("7",) and after.chunk is None
    last = IncrementalState("sig", state.collections, last_key=("7",), max_key=("40",),
                            chunk=ChunkWindow("w2", "public", "a", ("id",), ("integer",), ("7",), ("40",), None, "0000-2", 1))
    after, finished = last.chunk_read()
    assert finished and after.collections == (SnapshotCollection("public", "b", "x > 1"),) and after.max_key is None


def test_visibility_places_a_32_bit_xid_in_the_snapshot_epoch() -> None:
    epoch = 3 << 32
    visibility = Visibility(epoch + 100, epoch + 110, (epoch + 105,), 0)
    assert visibility.sees(99) and visibility.sees(104) and not visibility.sees(105) and not visibility.sees(110)
    wrapped = Visibility(epoch + 5, epoch + 10, (), 0)
    assert wrapped.sees(0xFFFFFFF0)  # the previous epoch's xid: long committed


def _record(op: str, key: int | None, *, table: str = "a", tx: int = 1, commit: int = 100, value: dict | None = None) -> ChangeRecord:
    record = ChangeRecord("srv.public." + table, None if key is None else {"id": key}, None, value or {"op": op}, None, (), op,
                          "public", table)
    record.tx_id, record.commit_lsn, record.lsn = tx, commit, commit
    return record


def _marker(row_op: str, signal_id: str, kind: str, *, commit: int = 100) -> ChangeRecord:
    return _record(SIGNAL_OP, None, table="sig", commit=commit, value={"op": row_op, "id": signal_id, "type": kind, "data": None})


def _reader(keys: list[int]):
    def read(chunk, lsn, commit_lsn, ordinal, sequence):
        for index, key in enumerate(keys):
            record = _record("r", key, commit=commit_lsn)
            record.ordinal = ordinal + index
            yield record
    return read


CHUNK = ChunkWindow("w", "public", "a", ("id",), ("integer",), None, ("5",), None, "0000-1", 0)


def test_window_drops_keys_changed_inside_it_and_emits_at_the_close_watermark() -> None:
    records = [
        _record("u", 1, commit=90),  # before the window: kept, and key 1 is still read
        _marker("c", "w-open", "snapshot-window-open", commit=95),
        _record("u", 2, commit=96), _record("d", 3, commit=97), _record("c", 4, table="other", commit=97),
        _marker("c", "w-close", "snapshot-window-close", commit=98),
        _record("u", 5, commit=99),  # after: comes after the read
    ]
    window = StreamSignals(CHUNK, _reader([1, 2, 3, 4, 5]), end_lsn=200)
    out = [(r.op, r.key["id"]) for r in window.filter(records)]
    assert out == [("u", 1), ("u", 2), ("d", 3), ("c", 4), ("r", 1), ("r", 4), ("r", 5), ("u", 5)]
    assert window.signals == []


def test_insert_delete_closes_on_the_open_rows_delete_and_source_signals_are_collected() -> None:
    records = [
        _marker("c", "w-open", "snapshot-window-open"), _record("u", 2),
        _marker("c", "user-1", "log"), _marker("d", "w-open", "snapshot-window-open"), _record("u", 2, commit=120),
    ]
    window = StreamSignals(CHUNK, _reader([1, 2]), end_lsn=200)
    assert [(r.op, r.key["id"]) for r in window.filter(records)] == [("u", 2), ("r", 1), ("u", 2)]
    assert window.signals == [Signal("user-1", "log", None, "source")]


def test_read_only_window_uses_visibility_and_the_high_mark() -> None:
    chunk = ChunkWindow("w", "public", "a", ("id",), ("integer",), None, ("5",), None, "0000-1", 0,
                        Visibility(xmin=10, xmax=12, xip=(11,), high=150))
    records = [
        _record("u", 1, tx=9, commit=100),  # seen by the snapshot: the read of key 1 stays
        _record("u", 2, tx=11, commit=110),  # in progress at the snapshot: key 2's read is dropped
        _record("u", 3, tx=12, commit=140),  # started after it: dropped
        _record("u", 4, tx=13, commit=160),  # at/after the high mark: the read comes first
    ]
    window = StreamSignals(chunk, _reader([1, 2, 3, 4]), end_lsn=200)
    assert [(r.op, r.key["id"]) for r in window.filter(records)] == [
        ("u", 1), ("u", 2), ("u", 3), ("r", 1), ("r", 4), ("u", 4)]


def test_a_window_without_its_close_watermark_fails_clearly() -> None:
    window = StreamSignals(CHUNK, _reader([1]), end_lsn=0x200)
    with pytest.raises(WindowNotClosedError, match="w-close"):
        list(window.filter([_marker("c", "w-open", "snapshot-window-open")]))
