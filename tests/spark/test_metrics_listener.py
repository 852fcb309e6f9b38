"""The connector's metrics for a ``postgres-cdc`` query of one's own: CdcMetricsListener hears each
StreamingQueryProgress and hands over Debezium's figures with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from sparkcdc.spark.metrics import CdcMetricsListener
from sparkcdc.spark.source.options import options_for

from ..support.waiting import wait_until
from .support import properties


def test_listener_gives_the_figures_with_each_progress(spark, db: psycopg.Connection, pg_cluster, unique_name: str,
                                                        tmp_path: Path) -> None:
    table = f"t_{unique_name}"
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
    db.execute(f"INSERT INTO {table} SELECT g, 'v' FROM generate_series(1, 50) g")
    props = properties(pg_cluster, unique_name, [f"public.{table}"], **{"sparkcdc.state.location": str(tmp_path / "state")})
    options = options_for(props)
    heard: list[tuple[dict[str, Any], dict[str, Any]]] = []
    listener = CdcMetricsListener(options, on_progress=lambda progress, figures: heard.append((progress, figures)))
    spark.streams.addListener(listener)
    query = (spark.readStream.format("postgres-cdc").options(**options).load().writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="500 milliseconds").start())
    try:
        wait_until(lambda: listener.metrics()["snapshot"]["SnapshotCompleted"], timeout=120, interval=0.1, what="SnapshotCompleted")
        assert listener.metrics()["snapshot"]["RowsScanned"] == {f"public.{table}": 50}
        db.execute(f"INSERT INTO {table} SELECT g, 'new' FROM generate_series(51, 53) g")
        db.execute(f"DELETE FROM {table} WHERE id = 1")

        def streamed() -> bool:
            return any(f["streaming"]["TotalNumberOfEventsSeen"] >= 4 for _, f in heard)

        wait_until(streamed, timeout=120, interval=0.1, what="the figures of a progress counting the 4 changes")
        progress, figures = next((p, f) for p, f in heard if f["streaming"]["TotalNumberOfEventsSeen"] >= 4)
        assert figures["sparkcdc"]["last_committed_batch_id"] == progress["batchId"]
        streaming = figures["streaming"]
        assert (streaming["TotalNumberOfCreateEventsSeen"], streaming["TotalNumberOfDeleteEventsSeen"]) == (3, 1)
        assert streaming["Connected"] is True and 0 <= streaming["MilliSecondsBehindSource"] < 10_000
        assert figures["sparkcdc"]["slot_wal_status"] == "reserved"
    finally:
        query.stop()
        spark.streams.removeListener(listener)
        listener.close()
    db.execute("SELECT pg_drop_replication_slot(%s)", (unique_name,))
