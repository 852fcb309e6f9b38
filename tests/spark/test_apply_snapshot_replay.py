"""Exactly once across the one batch a target cannot simply skip: the initial snapshot.

The process dies after the targets committed the snapshot's batch (batch 0) but before Spark
recorded it done. The exported snapshot died with the driver, so Spark's re-execution of batch 0
snapshots again at a newer consistent point and streams on from there; the changes made in
between are only in that newer image. Skipping the replay, as for any other batch, would lose them:
the targets must take the newer image in its place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyspark.errors import StreamingQueryException

from sparkcdc.spark.apply import ChangeApplier
from sparkcdc.spark.source.options import options_for

from . import apply_workload as workload
from .support import properties

pytestmark = pytest.mark.slow


class CrashAfterTheTargets(RuntimeError):
    """Raised in foreachBatch once every target has applied batch 0: Spark never commits it."""


def _positions(conn: psycopg.Connection, pipeline_id: str) -> set[int]:
    rows = conn.execute("SELECT batch_id FROM sparkcdc.apply_positions WHERE pipeline_id = %s", (pipeline_id,)).fetchall()
    return {row[0] for row in rows}


def _run(spark: Any, props: dict[str, str], checkpoint: Path, on_batch: Any) -> Any:
    options = options_for({**props, "sparkcdc.state.location": str(checkpoint / "sparkcdc-state")})
    frame = spark.readStream.format("postgres-cdc").options(**options).load()
    query = (frame.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(300) is not False, "the availableNow query did not finish"
    return query


def test_a_snapshot_batch_run_again_after_the_targets_applied_it_replaces_their_image(
        spark, pg_cluster, db, tmp_path, unique_name):
    prefix = f"sr{abs(hash(unique_name)) % 10**6}"
    workload.create(db, prefix, rows=300)
    base = f"postgresql://{pg_cluster.user}@{pg_cluster.host}:{pg_cluster.port}"
    for name in (f"{prefix}_mirror", f"{prefix}_history"):
        db.execute(f'CREATE DATABASE "{name}"')
    delta = tmp_path / "delta"
    checkpoint = tmp_path / "checkpoint"
    pipeline_id = str(checkpoint)
    props = properties(pg_cluster, f"{prefix}_slot", workload.tables(prefix), **{"skipped.operations": "none"})
    appliers = [
        ChangeApplier(target, props, pipeline_id=pipeline_id, all_tables=True, defaults={"stored_as_scd_type": scd})
        for target, scd in ((f"{base}/{prefix}_mirror", 1), (f"{base}/{prefix}_history", 2), (str(delta), 1),
                            (f"iceberg+file://{tmp_path / 'iceberg'}", 2))
    ]

    def crash_after_batch_0(batch: Any, batch_id: int) -> None:
        for applier in appliers:
            applier(batch, batch_id)
        if batch_id == 0:
            raise CrashAfterTheTargets("the targets committed batch 0; Spark has not")

    with pytest.raises(StreamingQueryException, match="CrashAfterTheTargets"):
        _run(spark, props, checkpoint, crash_after_batch_0)
    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as mirror:
        assert _positions(mirror, pipeline_id) == {0}
    assert not (checkpoint / "commits" / "0").exists()

    # While the pipeline is down: updates (keys too), deletes, unchanged-TOAST updates, a TRUNCATE.
    counts = workload.run_workload(db, prefix, 3_000, seed=11)
    assert counts["items truncate"] == 1

    def apply_all(batch: Any, batch_id: int) -> None:
        for applier in appliers:
            applier(batch, batch_id)

    query = _run(spark, props, checkpoint, apply_all)
    assert query.exception() is None
    assert (checkpoint / "commits" / "0").exists()
    assert all(applier.stats.images == 2 for applier in appliers)  # batch 0 applied twice, the second image won
    # Streaming goes on from the newer image's consistent point: later changes arrive too.
    workload.run_workload(db, prefix, 2_000, seed=12, truncate_at=None, first_new=2 * 10**6)
    assert _run(spark, props, checkpoint, apply_all).exception() is None

    with psycopg.connect(pg_cluster.conninfo(f"{prefix}_mirror"), autocommit=True) as m, \
            psycopg.connect(pg_cluster.conninfo(f"{prefix}_history"), autocommit=True) as h:
        assert workload.mirror_mismatches(db, m, prefix) == []
        assert workload.history_problems(db, h, prefix) == []
    assert workload.delta_mismatches(db, delta, prefix) == []
    assert workload.iceberg_history_problems(db, appliers[3].target.catalog(), prefix) == []
    for applier in appliers:
        applier.close()
