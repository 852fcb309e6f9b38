"""The topic files sink (``foreachBatch``), called directly with static DataFrames of the source's schema.

A streaming query gives the function exactly this: a DataFrame and the micro-batch id; the end-to-end
path through ``run_pipeline`` is covered by test_stream_source.py and the CLI tests.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.errors import PySparkException

from sparkcdc.spark.outputs.columns import DDL_SCHEMA
from sparkcdc.spark.outputs.topic_files.batch_writer import TopicFilesBatchWriter, local_output_path, topic_lines
from sparkcdc.spark.outputs.topic_files.staging import STAGING_DIR, TopicFilesError


def record(
    topic: str | None,
    key: str | None,
    value: str | None,
    *,
    lsn: int,
    commit_lsn: int,
    ordinal: int = 0,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> tuple[Any, ...]:
    """A row of the source's schema (the columns the sink ignores get plausible values)."""
    op = "d" if value is None else "c"
    return (topic, key, value, headers, op, "public", "t", lsn, commit_lsn, ordinal, 1000, None, None)


def frame(spark: Any, rows: list[tuple[Any, ...]], partitions: int = 1) -> Any:
    return spark.createDataFrame(rows, DDL_SCHEMA).repartition(partitions)


def files(output: Path) -> dict[str, list[str]]:
    """``topic/file`` -> its lines, for every published file."""
    return {f"{p.parent.name}/{p.name}": p.read_text(encoding="utf-8").split("\n")[:-1]
            for p in sorted(output.glob("*/part-*.jsonl"))}


def snapshot_of(output: Path) -> dict[str, bytes]:
    return {p.relative_to(output).as_posix(): p.read_bytes() for p in sorted(output.rglob("*")) if p.is_file()}


def old_sink_line(key: str | None, value: str | None, headers: list[tuple[str, bytes | None]] | None,
                  lsn: int, commit_lsn: int, ordinal: int) -> str:
    """The line the previous (Python) sink wrote for a record, byte for byte."""
    return orjson.dumps({
        "key": key,
        "value": value,
        "headers": [{"name": name, "value": None if data is None else data.decode("utf-8")} for name, data in headers or ()],
        "lsn": lsn,
        "commit_lsn": commit_lsn,
        "ordinal": ordinal,
    }).decode()


def test_line_content(spark: Any, tmp_path: Path) -> None:
    key = '{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}]},"payload":{"id":1}}'
    value = ('{"payload":{"before":null,"after":{"id":1,"txt":"ünïcødé ✓ 😀 \\"quoted\\" back\\\\slash \\n tab\\t </x>"},'
             '"op":"c"}}')
    headers = [("__debezium.context.connectorName", "postgresql".encode()), ("empty", None), ("ütf", "wért".encode())]
    rows = [
        record("srv.public.t", key, value, lsn=100, commit_lsn=200, ordinal=0, headers=headers),
        record("srv.public.t", key, None, lsn=110, commit_lsn=200, ordinal=1),  # a tombstone
        record("srv.public.t", None, '{"payload":{"op":"c"}}', lsn=120, commit_lsn=200, ordinal=2, headers=[]),  # no key
        record("srv.public.t", key, value, lsn=9_223_372_036_854_775_000, commit_lsn=9_223_372_036_854_775_807, ordinal=3),
    ]
    output = tmp_path / "out"

    TopicFilesBatchWriter(output)(frame(spark, rows), 0)

    lines = files(output)["srv.public.t/part-0000000000-00000.jsonl"]
    assert lines[0] == (
        '{"key":' + json.dumps(key) + ',"value":' + json.dumps(value, ensure_ascii=False) + ',"headers":['
        '{"name":"__debezium.context.connectorName","value":"postgresql"},{"name":"empty","value":null},'
        '{"name":"ütf","value":"wért"}],"lsn":100,"commit_lsn":200,"ordinal":0}'
    )
    assert lines[1] == '{"key":' + json.dumps(key) + ',"value":null,"headers":[],"lsn":110,"commit_lsn":200,"ordinal":1}'
    assert lines[2] == '{"key":null,"value":"{\\"payload\\":{\\"op\\":\\"c\\"}}","headers":[],"lsn":120,"commit_lsn":200,"ordinal":2}'
    # Byte for byte what the previous Python sink wrote, for every record.
    assert lines == [old_sink_line(r[1], r[2], r[3], r[7], r[8], r[9]) for r in rows]
    assert json.loads(lines[3])["commit_lsn"] == 9_223_372_036_854_775_807


def test_control_characters_in_a_header_value_are_escaped(spark: Any, tmp_path: Path) -> None:
    # Only a header can hold a raw control character (key and value are JSON texts already). Spark's
    # JSON writer escapes it as \u001F where orjson wrote \u001f: the same JSON.
    headers = [("h", b"a\x01b\x1fc\nd")]
    output = tmp_path / "out"
    TopicFilesBatchWriter(output)(frame(spark, [record("t", "{}", "{}", lsn=1, commit_lsn=2, headers=headers)]), 0)
    (line,) = files(output)["t/part-0000000000-00000.jsonl"]
    assert "\\u0001" in line and "\\n" in line and not re.search(r"[\x00-\x1f]", line)
    assert json.loads(line) == json.loads(old_sink_line("{}", "{}", headers, 1, 2, 0))


def test_escaped_topic_names_come_out_as_the_topic(spark: Any, tmp_path: Path) -> None:
    topics = ["srv.public.a=b", "srv:public.c", "100%.x", "srv.public.ünï", "with space"]
    rows = [record(topic, "{}", f'{{"n":{n}}}', lsn=n, commit_lsn=n) for n, topic in enumerate(topics)]
    output = tmp_path / "out dir %20 with spaces"  # a path Hadoop must not re-interpret either

    TopicFilesBatchWriter(output)(frame(spark, rows), 9)

    assert sorted(p.name for p in output.iterdir()) == sorted(topics)
    for n, topic in enumerate(topics):
        (line,) = (output / topic / "part-0000000009-00000.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(line)["value"] == f'{{"n":{n}}}'


def _ordering_workload(count: int, topics: int, seed: int) -> list[tuple[Any, ...]]:
    """Transactions whose row LSNs interleave (so LSN order is not commit order), shuffled."""
    rng = random.Random(seed)
    rows = []
    txs = [rng.randrange(1, 12) for _ in range(count // 6)]
    lsn = 1000
    pending: list[list[int]] = [[] for _ in txs]
    for tx, size in enumerate(txs):  # row LSNs handed out round-robin over open transactions
        for _ in range(size):
            pending[tx].append(lsn)
            lsn += rng.choice((8, 16, 24))
    rng.shuffle(pending)  # commit order differs from the order of the first LSN
    for tx, lsns in enumerate(pending):
        commit_lsn = 10_000_000 + tx * 100
        for ordinal, row_lsn in enumerate(sorted(lsns)):
            topic = f"srv.public.t{rng.randrange(topics)}"
            rows.append(record(topic, f'{{"id":{len(rows)}}}', f'{{"id":{len(rows)},"tx":{tx}}}',
                               lsn=row_lsn, commit_lsn=commit_lsn, ordinal=ordinal))
    rng.shuffle(rows)
    return rows


def test_each_file_keeps_its_partitions_commit_order_and_the_write_sorts_nothing(spark: Any, tmp_path: Path) -> None:
    """The source's partitions are in commit order, topics interleaved; each topic's file of a
    partition must keep that order, without a sort (one that costs as much as the write and is
    not stable once it spills)."""
    rows = _ordering_workload(3000, topics=5, seed=7)
    output = tmp_path / "out"
    # Four partitions, each in commit order with its topics interleaved, as the source's are.
    batch = frame(spark, rows, partitions=4).sortWithinPartitions("commit_lsn", "lsn", "ordinal")

    TopicFilesBatchWriter(output)(batch, 12)

    published = files(output)
    by_topic: dict[str, int] = {}
    for name, lines in published.items():
        keys = [(line["commit_lsn"], line["lsn"], line["ordinal"]) for line in map(json.loads, lines)]
        assert keys == sorted(keys), f"{name} is not in (commit_lsn, lsn, ordinal) order"
        assert len(set(keys)) == len(keys)
        by_topic[name.split("/")[0]] = by_topic.get(name.split("/")[0], 0) + len(lines)
    assert {name.split("/")[1] for name in published} == {f"part-0000000012-{n:05d}.jsonl" for n in range(4)}
    expected = {}
    for row in rows:
        expected[row[0]] = expected.get(row[0], 0) + 1
    assert by_topic == expected
    assert sorted(json.loads(line)["key"] for lines in published.values() for line in lines) == sorted(r[1] for r in rows)

    # Why the order holds: the only sort in the write's plan is the one that made the input.
    plan = _write_plan(spark, output)
    final_tree = plan.split("== Initial Plan ==", 1)[0]  # the adaptive plan as run ("Final" or "Current Plan")
    sorts = re.findall(r"\bSort \((\d+)\)", final_tree)
    assert len(sorts) == 1 and "empty2null" not in plan, plan
    arguments = re.search(rf"^\({sorts[0]}\) Sort\b.*?^Arguments: \[([^]]*)\]", plan, re.S | re.M)
    assert arguments is not None, plan
    assert re.findall(r"(\w+)#\d+L? ASC", arguments.group(1)) == ["commit_lsn", "lsn", "ordinal"]


def _write_plan(spark: Any, output: Path) -> str:
    """The physical plan of the (one) write into ``output``'s staging, from Spark's SQL status store."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()  # the store is fed by listener events: wait for them
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    plans = [executions.apply(i).physicalPlanDescription() for i in range(executions.size())]
    mine = [plan for plan in plans if f"{output}/{STAGING_DIR}/" in plan and "InsertIntoHadoopFsRelationCommand" in plan]
    assert len(mine) == 1, f"{len(mine)} writes into {output}"
    return mine[0]


def test_rerunning_a_batch_replaces_its_output_exactly(spark: Any, tmp_path: Path) -> None:
    output = tmp_path / "out"
    writer = TopicFilesBatchWriter(output)
    writer(frame(spark, [record("a", "{}", '{"b":4}', lsn=1, commit_lsn=2)]), 4)
    first = [record(topic, "{}", f'{{"first":{n}}}', lsn=10 + n, commit_lsn=100, ordinal=n)
             for n, topic in enumerate(["a", "b", "c", "a", "b", "c"])]
    writer(frame(spark, first, partitions=2), 5)
    assert {name.split("/")[0] for name in files(output) if "-0000000005-" in name} == {"a", "b", "c"}

    again = [record(topic, "{}", f'{{"again":{n}}}', lsn=10 + n, commit_lsn=100, ordinal=n)
             for n, topic in enumerate(["a", "d", "a"])]
    writer(frame(spark, again), 5)

    lines = {name: [json.loads(line)["value"] for line in text] for name, text in files(output).items()}
    assert lines == {
        "a/part-0000000004-00000.jsonl": ['{"b":4}'],
        "a/part-0000000005-00000.jsonl": ['{"again":0}', '{"again":2}'],
        "d/part-0000000005-00000.jsonl": ['{"again":1}'],
    }
    assert not (output / STAGING_DIR).exists()


def test_an_empty_batch_removes_an_earlier_attempts_output(spark: Any, tmp_path: Path) -> None:
    output = tmp_path / "out"
    writer = TopicFilesBatchWriter(output)
    writer(frame(spark, [record("a", "{}", "{}", lsn=1, commit_lsn=2)]), 3)
    writer(spark.createDataFrame([], DDL_SCHEMA), 3)
    assert files(output) == {}
    assert not (output / STAGING_DIR).exists()


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        # evaluating the batch fails in the Spark job: a header that is not UTF-8
        (record("a", "{}", '{"bad":1}', lsn=5, commit_lsn=6, headers=[("h", b"\xff\xfe")]), PySparkException,
         "MALFORMED_CHARACTER_CODING"),
        (record(None, "{}", '{"bad":1}', lsn=5, commit_lsn=6), TopicFilesError, r"batch 2: records without a topic"),
        (record("", "{}", '{"bad":1}', lsn=5, commit_lsn=6), TopicFilesError, r"batch 2: records without a topic"),
        (record("..", "{}", '{"bad":1}', lsn=5, commit_lsn=6), TopicFilesError, r"batch 2: topic '\.\.' cannot be"),
        (record("srv/x", "{}", '{"bad":1}', lsn=5, commit_lsn=6), TopicFilesError, r"batch 2: topic 'srv/x' cannot be"),
    ],
    ids=["invalid-utf8-header", "null-topic", "empty-topic", "dot-dot-topic", "slash-topic"],
)
def test_a_failing_batch_leaves_the_previous_output_and_no_staging(
    spark: Any, tmp_path: Path, bad: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    output = tmp_path / "out"
    writer = TopicFilesBatchWriter(output)
    writer(frame(spark, [record("a", "{}", '{"batch":1}', lsn=1, commit_lsn=2)]), 1)
    writer(frame(spark, [record("a", "{}", '{"batch":2}', lsn=3, commit_lsn=4)]), 2)  # an attempt of batch 2
    before = snapshot_of(output)

    good = [record("a", "{}", '{"batch":2,"again":true}', lsn=3, commit_lsn=4), record("b", "{}", "{}", lsn=4, commit_lsn=4)]
    with pytest.raises(error, match=message):
        writer(frame(spark, [*good, bad], partitions=2), 2)

    assert snapshot_of(output) == before
    assert not (output / STAGING_DIR).exists()


def test_output_paths(tmp_path: Path) -> None:
    assert local_output_path(tmp_path / "out") == tmp_path / "out"
    assert local_output_path(f"file://{tmp_path}/a%20b") == tmp_path / "a b"
    assert local_output_path(f"file:{tmp_path}/x") == tmp_path / "x"
    assert local_output_path("relative/out") == Path.cwd() / "relative" / "out"
    for uri in ("s3a://bucket/out", "hdfs://nn:8020/out", "file://otherhost/out"):
        with pytest.raises(ValueError, match="topic files output"):
            local_output_path(uri)


def test_topic_lines_schema(spark: Any) -> None:
    schema = topic_lines(spark.createDataFrame([], DDL_SCHEMA)).schema
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in schema.fields] == [
        ("topic", "string", False), ("line", "string", True)]
