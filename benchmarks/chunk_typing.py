"""CPU-seconds of reading one snapshot chunk of the 6-column ``bench`` table and typing it into the
``changes`` layout's blocks (what each snapshot task of ``sparkcdc run --apply-to`` does before the
census), on a throwaway cluster. Best of ``--repeat``; ``--profile`` prints the top functions of a
last, profiled pass.

    python benchmarks/chunk_typing.py [--rows 200000] [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from snapshot import prepare_table  # noqa: E402

from sparkcdc.debezium.config import ConnectorConfig  # noqa: E402
from sparkcdc.embedded_postgres import ThrowawayCluster  # noqa: E402
from sparkcdc.engine.planner import ConnectorPlanner  # noqa: E402
from sparkcdc.engine.snapshot_plan import SnapshotChunk  # noqa: E402
from sparkcdc.engine.snapshot_reader import read_chunk_columns  # noqa: E402
from sparkcdc.postgres import drop_slot  # noqa: E402
from sparkcdc.spark.outputs.changes.blocks import chunk_blocks  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with (ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as conn,
          tempfile.TemporaryDirectory(prefix="sparkcdc-bench-chunk-typing-") as tmp):
        prepare_table(conn, args.rows)
        config = ConnectorConfig({
            "name": "typing", "database.hostname": cluster.host, "database.port": str(cluster.port), "database.user": cluster.user,
            "database.dbname": "postgres", "topic.prefix": "srv", "slot.name": "typing", "publication.name": "typing",
            "publication.autocreate.mode": "filtered", "table.include.list": "public.bench",
            "sparkcdc.snapshot.chunk.rows": str(args.rows * 2), "sparkcdc.state.location": tmp})
        planner = ConnectorPlanner(config)
        try:
            start = planner.initial_offset()
            chunks = [w for w in planner.partitions(start, planner.latest_offset(start)) if isinstance(w, SnapshotChunk)]

            def typed() -> int:
                return sum(sum(batch.column("rows").to_pylist()) for chunk in chunks
                           for batch in chunk_blocks(read_chunk_columns(config, chunk, run_id="r"), config))

            seconds = []
            for _ in range(args.repeat):
                began = time.process_time()
                rows = typed()
                seconds.append(time.process_time() - began)
            if rows != args.rows:
                raise SystemExit(f"typed {rows:,} rows, the table has {args.rows:,}")
            best = min(seconds)
            print(f"{rows:,} rows read and typed into blocks: {best:.3f} CPU-s (best of {args.repeat}), "
                  f"{rows / best:,.0f} rows per CPU-second")
            if args.profile:
                profile = cProfile.Profile()
                profile.runcall(typed)
                pstats.Stats(profile).sort_stats("tottime").print_stats(15)
        finally:
            planner.stop()
            drop_slot(conn, "typing", wait=30)


if __name__ == "__main__":
    main()
