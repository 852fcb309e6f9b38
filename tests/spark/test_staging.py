"""Publishing staged topic files (sparkcdc.spark.outputs.topic_files.staging), on real files; no Spark needed.

A staging directory is laid out as Spark's ``partitionBy("topic").text(...)`` leaves it:
``topic=<escaped topic>/part-<task>-<uuid>.c000.txt`` with ``.crc`` side files and ``_SUCCESS``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.spark.outputs.topic_files.staging import (
    STAGING_DIR,
    TopicFilesError,
    new_staging_dir,
    publish_batch,
    remove_staging,
    unescape_partition_value,
)


def stage(output: Path, batch_id: int, partitions: dict[str, list[str]]) -> Path:
    """A staging directory for ``batch_id`` holding, per partition directory name (``topic=...``
    without the prefix), one Spark part file per text, in that order."""
    staging = new_staging_dir(output, batch_id)
    staging.mkdir(parents=True)
    (staging / "_SUCCESS").write_bytes(b"")
    (staging / "._SUCCESS.crc").write_bytes(b"crc")
    for escaped, texts in partitions.items():
        directory = staging / f"topic={escaped}"
        directory.mkdir()
        for task, text in enumerate(texts):
            name = f"part-{task:05d}-0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9.c000.txt"
            (directory / name).write_text(text, encoding="utf-8")
            (directory / f".{name}.crc").write_bytes(b"crc")
    return staging


def published(output: Path) -> dict[str, str]:
    """Every published file as ``topic/name`` -> content."""
    return {f"{p.parent.name}/{p.name}": p.read_text(encoding="utf-8") for p in sorted(output.glob("*/part-*.jsonl"))}


def test_publish_lays_out_the_batch_and_removes_its_staging(tmp_path: Path) -> None:
    output = tmp_path / "out"
    staging = stage(output, 3, {"srv.public.a": ["a0\n", "a1\n"], "srv.public.b": ["b0\n"]})

    result = publish_batch(output, staging, 3)

    assert published(output) == {
        "srv.public.a/part-0000000003-00000.jsonl": "a0\n",
        "srv.public.a/part-0000000003-00001.jsonl": "a1\n",
        "srv.public.b/part-0000000003-00000.jsonl": "b0\n",
    }
    assert result.batch_id == 3
    assert result.files == {
        "srv.public.a": [output / "srv.public.a" / "part-0000000003-00000.jsonl",
                         output / "srv.public.a" / "part-0000000003-00001.jsonl"],
        "srv.public.b": [output / "srv.public.b" / "part-0000000003-00000.jsonl"],
    }
    # Only the data files were published (no _SUCCESS, no .crc), and no staging is left.
    assert sorted(p.relative_to(output).as_posix() for p in output.rglob("*")) == [
        "srv.public.a", "srv.public.a/part-0000000003-00000.jsonl", "srv.public.a/part-0000000003-00001.jsonl",
        "srv.public.b", "srv.public.b/part-0000000003-00000.jsonl",
    ]


def test_publish_without_fsync_gives_the_same_output(tmp_path: Path) -> None:
    output = tmp_path / "out"
    publish_batch(output, stage(output, 0, {"t": ["x\n"]}), 0, fsync=False)
    assert published(output) == {"t/part-0000000000-00000.jsonl": "x\n"}
    assert not (output / STAGING_DIR).exists()


def test_publish_replaces_an_earlier_attempt_of_the_same_batch_only(tmp_path: Path) -> None:
    output = tmp_path / "out"
    publish_batch(output, stage(output, 4, {"a": ["a4\n"], "b": ["b4\n"]}), 4)
    publish_batch(output, stage(output, 5, {"a": ["a5 first\n", "a5 first, task 1\n"], "b": ["b5 first\n"]}), 5)
    publish_batch(output, stage(output, 6, {"b": ["b6\n"]}), 6)

    # Batch 5 again (a replay after a crash before Spark committed it), with different records:
    # topic a in one file instead of two, nothing for topic b, a new topic c.
    publish_batch(output, stage(output, 5, {"a": ["a5 again\n"], "c": ["c5 again\n"]}), 5)

    assert published(output) == {
        "a/part-0000000004-00000.jsonl": "a4\n",
        "a/part-0000000005-00000.jsonl": "a5 again\n",
        "b/part-0000000004-00000.jsonl": "b4\n",
        "b/part-0000000006-00000.jsonl": "b6\n",
        "c/part-0000000005-00000.jsonl": "c5 again\n",
    }


def test_a_batch_with_no_records_removes_an_earlier_attempts_output(tmp_path: Path) -> None:
    output = tmp_path / "out"
    publish_batch(output, stage(output, 2, {"a": ["a2\n"]}), 2)
    publish_batch(output, stage(output, 3, {"a": ["a3\n"]}), 3)
    publish_batch(output, stage(output, 3, {}), 3)
    assert published(output) == {"a/part-0000000002-00000.jsonl": "a2\n"}


@pytest.mark.parametrize(
    ("escaped", "topic"),
    [
        ("srv.public.a%3Db", "srv.public.a=b"),  # what Spark makes of "=" in a partition value
        ("srv%3Aschema.t", "srv:schema.t"),
        ("100%25%20x", "100% x"),
        ("%7Bcurly%7D%5Bsq%5D%23%3F%2A", "{curly}[sq]#?*"),
        ("srv.public.ünïcødé", "srv.public.ünïcødé"),  # Spark leaves non-ASCII as it is
    ],
)
def test_escaped_topic_names_are_unescaped(tmp_path: Path, escaped: str, topic: str) -> None:
    output = tmp_path / "out"
    result = publish_batch(output, stage(output, 1, {escaped: ["line\n"]}), 1)
    assert list(result.files) == [topic]
    assert (output / topic / "part-0000000001-00000.jsonl").read_text(encoding="utf-8") == "line\n"
    assert unescape_partition_value(escaped) == topic


def test_records_without_a_topic_are_refused(tmp_path: Path) -> None:
    output = tmp_path / "out"
    staging = stage(output, 8, {"__HIVE_DEFAULT_PARTITION__": ["no topic\n"]})
    with pytest.raises(TopicFilesError, match=r"^batch 8: records without a topic \(null or empty\)") as caught:
        publish_batch(output, staging, 8)
    assert "topic=__HIVE_DEFAULT_PARTITION__" in str(caught.value)


@pytest.mark.parametrize(
    ("escaped", "topic"),
    [("..", ".."), (".", "."), ("srv%2Fpublic.t", "srv/public.t"), (STAGING_DIR, STAGING_DIR), ("a%00b", "a\0b")],
)
def test_topics_that_cannot_be_a_directory_are_refused_before_anything_changes(
    tmp_path: Path, escaped: str, topic: str
) -> None:
    output = tmp_path / "out"
    publish_batch(output, stage(output, 7, {"good": ["earlier attempt\n"]}), 7)
    staging = stage(output, 7, {"good": ["this attempt\n"], escaped: ["bad\n"]})

    with pytest.raises(TopicFilesError) as caught:
        publish_batch(output, staging, 7)

    message = str(caught.value)
    assert message.startswith("batch 7: ") and repr(topic) in message
    # The earlier attempt's output is still there, and nothing of this one was published.
    assert published(output) == {"good/part-0000000007-00000.jsonl": "earlier attempt\n"}


def test_a_missing_staging_directory_raises(tmp_path: Path) -> None:
    output = tmp_path / "out"
    publish_batch(output, stage(output, 2, {"a": ["a2\n"]}), 2)
    missing = new_staging_dir(output, 2)
    with pytest.raises(TopicFilesError, match=r"^batch 2: the staging directory .* does not exist"):
        publish_batch(output, missing, 2)
    assert published(output) == {"a/part-0000000002-00000.jsonl": "a2\n"}


def test_dead_staging_directories_of_this_and_earlier_batches_are_removed_later_ones_kept(tmp_path: Path) -> None:
    output = tmp_path / "out"
    root = output / STAGING_DIR
    dead = [stage(output, 3, {"a": ["dead\n"]}), stage(output, 5, {"a": ["dead\n"]}), stage(output, 6, {"a": ["dead\n"]})]
    later = [stage(output, 7, {"a": ["later\n"]}), stage(output, 12, {"a": ["later\n"]})]
    foreign = root / "not-a-batch"
    foreign.mkdir()

    publish_batch(output, stage(output, 6, {"a": ["a6\n"]}), 6)

    assert not any(path.exists() for path in dead)
    assert all(path.exists() for path in later) and foreign.exists()
    assert sorted(p.name for p in root.iterdir()) == sorted([later[0].name, later[1].name, "not-a-batch"])
    assert published(output) == {"a/part-0000000006-00000.jsonl": "a6\n"}

    # Once batch 12 is reached, only the directory that names no batch is left.
    remove_staging(output, up_to=12)
    assert [p.name for p in root.iterdir()] == ["not-a-batch"]
    foreign.rmdir()
    remove_staging(output, up_to=12)
    assert not root.exists()


def test_new_staging_directories_are_unique_and_named_by_batch(tmp_path: Path) -> None:
    first, second = new_staging_dir(tmp_path, 42), new_staging_dir(tmp_path, 42)
    assert first != second
    assert first.parent == second.parent == tmp_path / STAGING_DIR
    assert first.name.startswith("42-") and not first.exists()
