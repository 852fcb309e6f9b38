"""What a run on Spark Connect does its own way: its records counted as observed metrics, and a server
whose Python lacks a module named as such.

On Spark Connect the ``foreachBatch`` writers run in the server's Python: what they count stays
there. The query's observed metrics bring each batch's record count back to this client instead
(the appliers' own counts come back through :mod:`sparkcdc.spark.server_stats`).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["RECORDS_METRIC", "observe_records", "observed_records", "server_lacks"]


#: The name of the observed metric that counts each batch's records on Spark Connect.
RECORDS_METRIC = "sparkcdc_records"


def observe_records(frame: Any, layout: str) -> Any:
    """``frame`` counting its batch's records as an observed metric (reported in each progress):
    the output of ``layout`` knows how many records its rows stand for (:meth:`Output.record_count`)."""
    from pyspark.sql import functions as F

    from .outputs import named

    count = named(layout).record_count()
    return frame.observe(RECORDS_METRIC, F.coalesce(count, F.lit(0)).cast("long").alias("records"))


def observed_records(progress: Any) -> int:
    """The records a batch's progress observed (0 when the batch ran no job over its rows)."""
    row = (progress.get("observedMetrics") or {}).get(RECORDS_METRIC)
    if row is None:
        return 0
    fields = row.asDict()
    if "records" not in fields and set(fields) == {"values", "schema"}:
        # pyspark 4.3's StreamingQueryProgress.fromJson (a Spark Connect client's progress) reads a
        # metric's JSON, ``{"values": [...], "schema": {...}}``, as if it were a row of named fields.
        fields = dict(zip((f["name"] for f in fields["schema"]["fields"]), fields["values"], strict=True))
    return int(fields.get("records") or 0)


def server_lacks(report: str) -> str | None:
    """What to say when a Spark Connect server's Python could not import a module sparkcdc needs
    (sparkcdc itself, or a target's library): the client cannot install it there. None otherwise."""
    found = re.search(r"No module named '([A-Za-z0-9_.]+)'", report)
    if found is None:
        return None
    module = found.group(1)
    return (f"the Spark Connect server's Python cannot import {module!r}: install sparkcdc (the client's version) with its "
            f"dependencies in the Python the server runs for its workers (its PYSPARK_PYTHON); see docs/spark-connect.md")
