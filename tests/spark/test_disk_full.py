"""The topic files' file system full in the middle of a batch (a 4 MB tmpfs mounted as the output).

The batch fails naming the directory and ENOSPC; consumers of the topic files see only whole batches
Spark committed (no part of the failed one, no cut line); once space is freed the next run writes the
rest, every change exactly once. Needs root, for the mount.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from sparkcdc.spark.outputs.topic_files.staging import published_files
from sparkcdc.spark.runner import PipelineError

from .support import checkpoint_batches, output_lines, payload, properties, run_once


def _fill(directory: Path) -> Path:
    """A file that takes every free byte of ``directory``'s file system."""
    ballast = directory / "ballast"
    with open(ballast, "wb") as handle:
        chunk = b"\0" * 65536
        try:
            while True:
                handle.write(chunk)
                handle.flush()
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC
    return ballast


@pytest.mark.timeout(600)
def test_a_full_output_fails_the_batch_clearly_and_the_rerun_writes_everything_once(
    spark, pg_cluster, db: psycopg.Connection, unique_name: str, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    output.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(output)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        table = f"t_{unique_name}"
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        db.execute(f"INSERT INTO {table} SELECT g, repeat('x', 200) FROM generate_series(1, 5) g")
        props = properties(pg_cluster, unique_name, [f"public.{table}"])
        run_once(props, output, checkpoint)  # the snapshot fits
        committed_before = checkpoint_batches(checkpoint, "commits")
        published_before = sorted(published_files(output))

        ballast = _fill(output)
        db.execute(f"INSERT INTO {table} SELECT g, repeat('y', 200) FROM generate_series(6, 200) g")
        with pytest.raises(PipelineError) as failure:
            run_once(props, output, checkpoint)
        text = str(failure.value)
        assert "TopicFilesError" in text and "No space left on device" in text and str(output / "_sparkcdc_staging") in text, \
            text[-2000:]
        assert checkpoint_batches(checkpoint, "commits") == committed_before, "the failed batch is not committed"
        assert sorted(published_files(output)) == published_before, "nothing of the failed batch is published"
        assert len(output_lines(output)) == 5, "the published files are whole"

        ballast.unlink()
        run_once(props, output, checkpoint)
        ids = [change["after"]["id"] for line in output_lines(output) if (change := payload(line))]
        assert sorted(ids) == list(range(1, 201)), "every change once after the space was freed"
        assert not [i for i, n in Counter(ids).items() if n > 1]
        committed = set(checkpoint_batches(checkpoint, "commits"))
        assert {int(path.name.split("-")[1]) for path in published_files(output)} <= committed
    finally:
        subprocess.run(["umount", str(output)], check=False)
