"""Probe for issue 12: how should one source carry a table's typed changes into Spark?

Not a benchmark against a baseline: a measurement of candidate layouts, to choose one before
building it (the choice and these figures go to docs/typed-change-path.md). Each candidate moves
the same N rows of the 6-column ``bench`` table (bigint, int, text, float8, timestamptz, bool) from a
Python data source's reader (a Spark task, as the ``postgres-cdc`` source's are) to typed Spark
columns, and Spark touches every column (``noop`` write of the typed frame). Per candidate:

* ``json``: what the apply path does today: each row a Debezium JSON value string (schemas off, the
  ``after`` struct), parsed by ``from_json`` into the table's struct.
* ``text``: each row its values as PostgreSQL prints them (``array<string>``, what pgoutput sends),
  cast by Spark SQL to the column types.
* ``arrow``: the rows laid out as typed Arrow columns by the reader (one record batch per few
  thousand rows) with the table's own schema: no per-row conversion in Spark.
* ``ipc``: the typed Arrow record batches serialized (IPC) into one binary cell per batch, decoded
  by ``mapInArrow`` into the table's schema: how one source with one schema could carry many
  tables' typed rows (a row per batch and table, the payload opaque until a per-table projection).

The reader's work is included (it builds each layout from Python values, as a decoder would hand
them over); so is Spark's. Times are wall seconds of the whole query, best of ``--repeat``.

    python benchmarks/probes/typed_layouts.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

BATCH = 4096
SCHEMA_DDL = "id BIGINT, qty INT, label STRING, price DOUBLE, created TIMESTAMP, active BOOLEAN"
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _values(start: int, end: int) -> dict[str, list[Any]]:
    ids = list(range(start, end))
    return {
        "id": ids,
        "qty": [i % 1000 for i in ids],
        "label": [f"label-{i}" for i in ids],
        "price": [i * 1.5 for i in ids],
        "created": [EPOCH + timedelta(seconds=i) for i in ids],
        "active": [i % 2 == 0 for i in ids],
    }


def _layout_batches(layout: str, rows: int, partition: int, partitions: int) -> Iterator[Any]:
    import orjson
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("qty", pa.int32()), ("label", pa.string()), ("price", pa.float64()),
                        ("created", pa.timestamp("us", tz="UTC")), ("active", pa.bool_())])
    share = rows // partitions
    first, last = partition * share, rows if partition == partitions - 1 else (partition + 1) * share
    for start in range(first, last, BATCH):
        values = _values(start, min(start + BATCH, last))
        if layout == "json":
            rows_json = [orjson.dumps({"id": i, "qty": q, "label": lb, "price": p, "created": c.isoformat(), "active": a}).decode()
                         for i, q, lb, p, c, a in zip(*values.values(), strict=True)]
            yield pa.RecordBatch.from_pydict({"value": rows_json})
        elif layout == "text":
            text = [[str(i), str(q), lb, repr(p), c.isoformat(sep=" "), "t" if a else "f"]
                    for i, q, lb, p, c, a in zip(*values.values(), strict=True)]
            yield pa.RecordBatch.from_pydict({"values": text})
        elif layout == "arrow":
            yield pa.RecordBatch.from_pydict(values, schema=schema)
        elif layout == "ipc":
            batch = pa.RecordBatch.from_pydict(values, schema=schema)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema) as writer:
                writer.write_batch(batch)
            yield pa.RecordBatch.from_pydict({"table": ["public.bench"], "payload": [sink.getvalue().to_pybytes()]})
        else:
            raise ValueError(layout)


def _source_schema(layout: str) -> str:
    return {"json": "value STRING", "text": "values ARRAY<STRING>", "arrow": SCHEMA_DDL,
            "ipc": "table STRING, payload BINARY"}[layout]


def _register(spark: Any) -> None:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class _Reader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.layout, self.rows, self.parts = options["layout"], int(options["rows"]), int(options["partitions"])

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            return _layout_batches(self.layout, self.rows, partition.value, self.parts)

    class _Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "typed-layout-probe"

        def schema(self) -> str:
            return _source_schema(self.options["layout"])

        def reader(self, schema: Any) -> DataSourceReader:
            return _Reader(self.options)

    spark.dataSource.register(_Source)


def _typed(spark: Any, layout: str, rows: int, partitions: int) -> Any:
    from pyspark.sql import functions as F

    frame = (spark.read.format("typed-layout-probe").option("layout", layout).option("rows", rows)
             .option("partitions", partitions).load())
    if layout == "json":
        return frame.select(F.from_json("value", SCHEMA_DDL).alias("row")).select("row.*")
    if layout == "text":
        names_types = [(c.split()[0], c.split()[1]) for c in SCHEMA_DDL.split(", ")]
        return frame.select(*[F.col("values")[i].cast(t).alias(n) for i, (n, t) in enumerate(names_types)])
    if layout == "arrow":
        return frame
    import pyarrow as pa

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                yield from pa.ipc.open_stream(payload)

    return frame.where(F.col("table") == "public.bench").mapInArrow(decode, SCHEMA_DDL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    from sparkcdc.spark import launch

    spark = launch.session("local[2]", app_name="typed-layout-probe")
    _register(spark)
    layouts: tuple[str, ...] = ("json", "text", "arrow", "ipc")
    try:
        import pandas  # noqa: F401 - pyspark's mapInArrow insists on it, though no pandas object is made
    except ImportError:
        print("ipc: skipped, mapInArrow needs pandas (pyspark checks for it), which this venv does not install")
        layouts = layouts[:-1]
    best: dict[str, float] = {}
    for attempt in range(args.repeat + 1):  # the first round warms the workers up and is not counted
        for layout in layouts:
            frame = _typed(spark, layout, args.rows, args.partitions)
            started = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - started
            if attempt:
                best[layout] = min(best.get(layout, seconds), seconds)
    sample = {layout: _typed(spark, layout, 10, 1).orderBy("id").collect() for layout in layouts}
    assert all(sample[layout] == sample["arrow"] for layout in layouts), {k: v[:1] for k, v in sample.items()}
    print(f"{args.rows:,} rows, {args.partitions} partitions, local[2], best of {args.repeat}:")
    for layout in layouts:
        print(f"  {layout:6} {args.rows / best[layout]:>12,.0f} rows/s  ({best[layout]:.2f} s)")
    spark.stop()


if __name__ == "__main__":
    main()
