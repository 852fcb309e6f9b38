"""ExtractChangedRecordState: the cases the differential tests do not reach."""

from __future__ import annotations

import math
from types import SimpleNamespace

from .events import CHANGED, ROW, chain_of, change, heartbeat, run, tombstone

ALICE = {"id": 1, "name": "alice", "dest": None, "qty": 3}


def lists(record: object) -> dict[str, object]:
    return {h.name: h.value for h in record.headers if h.name in ("changed", "same")}  # type: ignore[attr-defined]


def test_updates_list_changed_and_unchanged_columns_in_row_order() -> None:
    chain = chain_of("c", CHANGED, **{"header.changed.name": "changed", "header.unchanged.name": "same"})
    [update] = run(chain, change("u", before=ALICE, after={**ALICE, "qty": 4, "dest": "x"}))
    assert lists(update) == {"changed": ["dest", "qty"], "same": ["id", "name"]}
    header = update.headers[-1]
    assert (header.schema.type, header.schema.name, header.schema.optional, header.schema.items.optional) == (
        "array", "same", True, True)


def test_other_events_get_empty_lists_and_other_records_nothing() -> None:
    chain = chain_of("c", CHANGED, **{"header.changed.name": "changed", "header.unchanged.name": "same"})
    beat = heartbeat()
    out = run(chain, change("c", after=ALICE), change("u", after=ALICE), change("t"), beat, change("d", before=ALICE),
              tombstone({"id": 1}), tombstone({"id": 2}))
    assert [lists(r) for r in out[:3]] == [{"changed": [], "same": []}] * 3  # an update without before too
    assert out[3] is beat
    assert lists(out[5]) == {"changed": [], "same": []}  # the delete's tombstone shares its headers
    assert lists(out[6]) == {}  # another tombstone does not


def test_without_names_nothing_is_added() -> None:
    record = change("u", before=ALICE, after=ALICE)
    assert run(chain_of("c", CHANGED), record) == [record]


def test_floating_point_values_compare_as_java_equals() -> None:
    chain = chain_of("c", CHANGED, **{"header.changed.name": "changed"})
    nan = {**ALICE, "qty": math.nan}
    [same, differs] = run(chain, change("u", before=nan, after={**nan, "qty": math.nan}),
                          change("u", before={**ALICE, "qty": -0.0}, after={**ALICE, "qty": 0.0}))
    assert (lists(same)["changed"], lists(differs)["changed"]) == ([], ["qty"])


def test_a_null_column_with_a_default_differs_from_the_default() -> None:
    default = ROW.field("name").schema.default
    record = change("u", before={**ALICE, "name": default}, after={**ALICE, "name": "".join(["no", "ne"])})
    record.table_schema = SimpleNamespace(value_fields=[SimpleNamespace(name="name", null_value=default)])
    [out] = run(chain_of("c", CHANGED, **{"header.changed.name": "changed"}), record)
    assert lists(out)["changed"] == ["name"]  # Debezium compares its null with "none"
