"""What an executor does for one partition: the target kept per process, the keys read, the stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.apply import ApplySpec
from sparkcdc.apply import partition as partition_module
from sparkcdc.apply.fold import fold_changes
from sparkcdc.apply.partition import distinct_keys, old_keys, stage_partition, with_target
from sparkcdc.apply.staged import StagedBatch
from sparkcdc.apply.targets import TargetColumn
from sparkcdc.apply.targets.delta import DeltaTarget

from .support import Events
from .targets import SEQ_COLUMNS


@pytest.fixture(autouse=True)
def _no_kept_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition_module, "_OPENED", {})


def test_the_target_is_kept_per_process_and_a_failing_kept_one_replaced_once(tmp_path: Path) -> None:
    options = {"storage_options": {"timeout": "10s"}}  # a dict among the options: still a key of the cache
    first = with_target(str(tmp_path), options, lambda target: target)
    assert isinstance(first, DeltaTarget) and with_target(str(tmp_path), options, lambda target: target) is first
    tried = []

    def stale_once(target: DeltaTarget) -> str:
        tried.append(target)
        if len(tried) == 1:
            raise OSError("the kept target's server restarted")
        return "done"

    assert with_target(str(tmp_path), options, stale_once) == "done"
    assert tried[0] is first and tried[1] is not first  # tried again on a new target
    fresh = with_target(str(tmp_path), options, lambda target: target)
    assert fresh is tried[1]

    def broken(target: DeltaTarget) -> None:
        raise ValueError("a real error")

    with pytest.raises(ValueError, match="a real error"):
        with_target(str(tmp_path), options, broken)
    assert with_target(str(tmp_path), options, lambda target: target) is not fresh  # dropped after the failure


def test_the_keys_a_partition_reads() -> None:
    events = (Events().upsert(1, "a", "x", 1).upsert(1, "b", "x", 2).truncate().upsert(2, "c", "y", 3)
              .key_change(5, 6, "d", 4).key_change(7, 8, "e", 5, unchanged=()))
    assert sorted(distinct_keys(events.table(), ["id"]).column("id").to_pylist()) == [1, 2, 5, 6, 7, 8]  # not the truncate's
    assert old_keys(events.table(), ["id"]) == [(5,)]  # only the create that lacks a column


def test_a_partition_is_folded_against_the_target_and_staged(tmp_path: Path) -> None:
    target = DeltaTarget(str(tmp_path))
    spec = ApplySpec("public.items").resolve(Events.columns, Events.keys)
    columns = [TargetColumn(f.name, f.type) for f in Events.schema]
    target.prepare(spec, columns, SEQ_COLUMNS)
    assert target.apply(fold_changes(spec, Events(1).upsert(1, "a", "BIG", 1).delete(2).table()), pipeline_id="p", batch_id=0)
    # In another process: the target attached, not prepared; the key change takes the stored body.
    executor = DeltaTarget(str(tmp_path))
    late = Events(0).upsert(2, "zombie", "z", 9)  # older than the recorded delete of key 2
    events = Events(2).key_change(1, 11, "a", 2).table()
    part = stage_partition(executor, spec, columns, SEQ_COLUMNS, events, pipeline_id="p", batch_id=1)
    part_late = stage_partition(executor, spec, columns, SEQ_COLUMNS, late.table(), pipeline_id="p", batch_id=1)
    assert part.events == 2 and part_late.dropped_late == 1
    assert dict(part.seconds).keys() == {"read", "fold", "stage"} and part.worker is not None
    assert target.commit(StagedBatch(spec, (part, part_late)), pipeline_id="p", batch_id=1)
    rows = sorted(target._main(spec).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 11, "name": "a", "body": "BIG", "n": 2}]
