"""``sparkcdc run``: the connector as a Spark streaming query writing topic directories.

The query's checkpoint holds the source offsets; the streaming state between batches lives under
``<checkpoint>/sparkcdc-state``. ``once`` uses Spark's ``availableNow`` trigger: everything written
to the database before the start (snapshot included) is processed, then the query stops.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..debezium.config import ConnectorConfig
from ..errors import ConfigurationError, PipelineError  # PipelineError: raised when the streaming query fails, with Spark's cause
from ..process_clock import since_process_start
from .connect_run import observe_records, observed_records, server_lacks
from .query_control import describe_failure, failure_report, release_quietly, stop_quietly, watch
from .restarts import RestartPolicy, retriable_cause
from .run_locations import state_location
from .run_summary import RunSummary, spark_timestamp
from .run_targets import BatchFanOut, appliers_for

__all__ = ["PipelineError", "RunSummary", "run_pipeline"]

log = logging.getLogger(__name__)


def run_pipeline(
    config: ConnectorConfig | Mapping[str, Any],
    *,
    output: str | Path | None,
    checkpoint: str | Path,
    once: bool = False,
    master: str | None = None,
    remote: str | None = None,
    stop_event: threading.Event | None = None,
    trigger_interval: str = "1 second",
    apply_to: Sequence[str | tuple[str, int]] = (),
    scd_type: int = 1,
    on_restart: Callable[[str], None] | None = None,
    kafka: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    display: Any = None,
) -> RunSummary:
    """Run the connector as a streaming query writing topic directories under ``output`` and/or
    applying every captured table to each target of ``apply_to``: a location (SCD ``scd_type``)
    or a (location, SCD type) pair; or producing to the Kafka cluster ``kafka`` (bootstrap servers)
    from the reader tasks, exactly once (:mod:`sparkcdc.spark.outputs.kafka`).

    A query that fails because the server went away is restarted from its checkpoint (see
    :mod:`sparkcdc.spark.restarts`); ``on_restart`` hears of each restart (default: a log warning).
    ``spark_conf`` (``sparkcdc run --conf``) goes to the session builder (:mod:`sparkcdc.spark.launch`).
    ``metrics_port``: serve the connector's metrics for Prometheus on ``metrics_host:metrics_port``
    while the run lasts (see :mod:`sparkcdc.spark.metrics` and docs/metrics.md). ``display``: a
    progress display of the same figures (``start(collector)``, ``stop()``; see :mod:`sparkcdc.cli.progress`);
    one that draws on the terminal (``owns_terminal``) turns Spark's console progress bar off.

    ``remote`` (``sc://host:port``, instead of ``master``) runs the query on a Spark Connect server:
    this process is then only its client. The ``foreachBatch`` writers run in the server's Python
    and the paths (output, checkpoint, state) are the server's (docs/spark-connect.md).
    """
    from pyspark.errors import StreamingQueryException

    from ..gc_policy import use_throughput_gc
    from . import launch
    from .launch.warm_workers import warm_python_workers
    from .metrics.run_metrics import RunMetrics
    from .outputs.topic_files.batch_writer import TopicFilesBatchWriter, local_output_path
    from .running_session import is_connect
    from .server_stats import ApplyStatsChannel, merge_apply_stats
    from .source import options_for, register

    called = time.perf_counter()
    startup = {"runner": since_process_start()}  # the start-up's milestones, seconds from the process's start
    notify = on_restart or log.warning
    if not isinstance(config, ConnectorConfig):
        config = ConnectorConfig(config)
    if kafka is not None and (output is not None or apply_to):
        raise PipelineError("Kafka is written by the reader tasks and runs on its own: give Kafka, or an output directory "
                            "and apply targets, not both (run a second pipeline with its own checkpoint for the other)")
    if output is None and not apply_to and kafka is None:
        raise PipelineError("nothing to write: give an output directory, an apply target, or both, or a Kafka cluster")
    if config.transforms and output is not None and apply_to:
        # One query reads one layout: topic files and appliers together read the records' JSON,
        # which is the transformed records'; the mirrors need the changes before the transforms.
        raise ConfigurationError(
            f"transforms ({', '.join(config.transforms.aliases)}) shape the topic files, and the apply targets need the changes "
            "before them: run the output and the apply targets as two pipelines (each its own checkpoint and slot.name)",
            prop="transforms")
    if master is not None and remote is not None:
        raise ConfigurationError(f"a Spark master ({master}) and a Spark Connect server ({remote}) were both given: "
                                 "the query runs on the server's own master; give one of them", prop="remote")
    try:
        # refused before Spark starts: the sink publishes by local renames
        output = None if output is None else local_output_path(output)
    except ValueError as exc:
        raise PipelineError(str(exc)) from None
    location = str(checkpoint)  # Spark's checkpointLocation, as given: a URI (s3a://, hdfs://) must not pass through Path
    if remote is not None and not re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", location):
        # A Connect server resolves a relative checkpoint against its own working directory, and
        # this process the streaming state's directory and the apply pipeline id against its own:
        # one absolute path (this process's reading of it) for all three.
        location = str(Path(location).absolute())
    appliers = appliers_for(config, location, apply_to, scd_type)
    properties = dict(config.raw)
    properties["sparkcdc.state.location"] = state_location(config.settings.sparkcdc_state_location, location)
    use_throughput_gc()
    restarts = RestartPolicy.from_config(config)
    metrics = RunMetrics.start(properties, metrics_port, metrics_host, display, remote)
    try:
        # --conf wins over what the display asks for (Spark's console progress bar off while it draws;
        # a Connect server's bar is not on this terminal)
        extra = {**((metrics.spark_conf or {}) if metrics and remote is None else {}), **(spark_conf or {})}
        spark = launch.session(master, app_name=f"sparkcdc-{config.settings.name}", extra=extra or None, remote=remote)
        startup["session"] = since_process_start()
    except BaseException:
        if metrics is not None:
            metrics.close()
        raise
    # On Spark Connect the writers run in the server's Python: what they count stays there. The
    # query's observed metrics bring each batch's record count back to this client instead.
    observed = is_connect(spark)
    register(spark)
    topic_files = None if output is None else TopicFilesBatchWriter(output)
    kafka_writer = None
    if kafka is not None:
        from .outputs import named

        properties.update({"sparkcdc.output.layout": "kafka", "sparkcdc.output.kafka.bootstrap.servers": kafka})
        kafka_writer = named("kafka").batch_writer(ConnectorConfig(properties))  # checked before Spark starts

    def start() -> Any:
        """The streaming query, from the checkpoint: the first start and every restart alike."""
        if appliers:
            # Applying reads each table's typed changes: the changes layout (no JSON) unless topic
            # files are written too (they need each record's JSON); one persisted read per batch.
            layout = properties if topic_files is not None else {**properties, "sparkcdc.output.layout": "changes"}
            frame = spark.readStream.format("postgres-cdc").options(**options_for(layout)).load()
            frame = observe_records(frame, "changes" if topic_files is None else "columns") if observed else frame
            channel = None
            if observed:  # the appliers count on the server: they hand their counts back through the session
                channel = ApplyStatsChannel(spark.session_id)
                channels.append(channel)
            writer = frame.writeStream.foreachBatch(BatchFanOut(topic_files, appliers, channel))
        elif kafka_writer is not None:
            # The reader's tasks produce (sparkcdc.spark.outputs.kafka.task_producer); the writer collects their counts.
            frame = spark.readStream.format("postgres-cdc").options(**options_for(properties)).load()
            frame = observe_records(frame, "kafka") if observed else frame
            writer = frame.writeStream.foreachBatch(kafka_writer)
        else:
            # The topic files need only each record's line: the reader's tasks write them (see
            # sparkcdc.spark.outputs.topic_files.task_files) and the writer publishes what their rows name.
            assert topic_files is not None
            lines = {**properties, "sparkcdc.output.layout": "topic_files",
                     "sparkcdc.output.topic.files": str(topic_files.output)}
            frame = spark.readStream.format("postgres-cdc").options(**options_for(lines)).load()
            frame = observe_records(frame, "topic_files") if observed else frame
            writer = frame.writeStream.foreachBatch(topic_files)
        startup.setdefault("source", since_process_start())  # the source is loaded (its schema asked of its Python)
        writer = writer.option("checkpointLocation", location).queryName(config.settings.name)
        writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=trigger_interval)
        try:
            running = writer.start()
        except Exception as exc:
            lacking = server_lacks(str(exc)) if observed else None
            if lacking is not None:  # the server analysed the source in its own Python
                raise PipelineError(lacking) from None
            raise
        if metrics is not None:
            metrics.collector.attach(running)
        return running

    stopped = False
    channels: list[ApplyStatsChannel] = []  # on Spark Connect, one per start of the query
    published: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []
    consecutive = restarted = 0
    try:
        warm_python_workers(spark)  # beside the query's start, not in its first batch
        query = start()
        started = time.perf_counter()
        startup["query"] = since_process_start()
        while True:
            stopped = watch(query, stop_event)
            runs = list(query.recentProgress)
            progress += runs
            failure = query.exception()
            if failure is None:
                break
            report = failure_report(failure)
            cause = None if stopped else retriable_cause(report)
            if cause is None:
                raise PipelineError((server_lacks(report) if observed else None) or describe_failure(failure))
            if any(int(p.numInputRows or 0) for p in runs):
                consecutive = 0  # records flowed since the last restart: as Debezium, the count starts again
            if not restarts.allows(consecutive):
                raise PipelineError(
                    f"the server went away and the query was restarted {consecutive} time(s) in a row, "
                    f"all that {restarts.describe()} allows; the last cause: {cause}"
                )
            consecutive += 1
            restarted += 1
            limit = "" if restarts.max_retries is None else f" of {restarts.max_retries}"
            notify(f"the query failed on a server that went away ({cause}); restarting from the checkpoint "
                   f"in {restarts.wait_seconds:g} s (retriable.restart.connector.wait.ms), restart {consecutive}{limit}")
            stop_quietly(spark)
            for applier in appliers:
                applier.reconnect()
            # Debezium's pause before a restart; a stop signal ends it at once.
            if (stop_event or threading.Event()).wait(restarts.wait_seconds):
                stopped = True
                break
            query = start()
    except StreamingQueryException as exc:
        raise PipelineError(describe_failure(exc)) from exc
    finally:
        stop_quietly(spark)
        for applier in appliers:
            applier.close()
        if observed:
            published = [channel.read(spark) for channel in channels]
            release_quietly(spark)
        if metrics is not None:
            metrics.close()

    if config.settings.slot_drop_on_stop:
        _drop_slots(config)

    def input_rows(p: Any) -> int:
        if observed:
            return observed_records(p)
        # On the changes layout (apply without topic files) a source row is a block: the appliers'
        # census counted the changes. On the topic_files layout (topic files only) a row names a
        # file: the writer counted its records (and counts none when Spark wrote the lines).
        if appliers and topic_files is None:
            counted = appliers[0].stats.changes_by_batch
        elif kafka_writer is not None:
            counted = kafka_writer.records_by_batch
        else:
            counted = topic_files.records_by_batch if topic_files is not None else {}
        return counted.get(int(p.get("batchId", -1)), int(p.numInputRows or 0))

    if observed:
        applied, apply_seconds = merge_apply_stats(published)
    else:
        applied = {a.target.description: dict(a.stats.events) for a in appliers if a.stats.batches}
        apply_seconds = {a.target.description: {k: round(v, 3) for k, v in a.stats.seconds.items()}
                         for a in appliers if a.stats.batches}
    if progress and progress[0].get("timestamp"):
        startup["first_batch"] = since_process_start(spark_timestamp(str(progress[0]["timestamp"])))
    return RunSummary(
        batches=len(progress),
        restarts=restarted,
        records=sum(input_rows(p) for p in progress),
        stopped_by_signal=stopped,
        startup_seconds=started - called,
        startup_phases=startup,
        batch_durations_ms=tuple(int(p.get("durationMs", {}).get("triggerExecution", 0)) for p in progress),
        batch_phases_ms=tuple({str(k): int(v) for k, v in (p.get("durationMs") or {}).items()} for p in progress),
        batch_ids=tuple(int(p.get("batchId", -1)) for p in progress),
        batch_input_rows=tuple(input_rows(p) for p in progress),
        batch_timestamps=tuple(str(p.get("timestamp", "")) for p in progress),
        applied=applied,
        apply_seconds=apply_seconds,
    )


def _drop_slots(config: ConnectorConfig) -> None:
    """``slot.drop.on.stop`` after a graceful end: every stream's slot (``sparkcdc.stream.slots``).

    The source's own ``stop`` runs in Spark's Python worker for the planner, which Spark may end
    without calling it, so the driver drops the slots here too (a slot already gone is fine)."""
    import psycopg

    from ..engine.connection import sql_connection
    from ..engine.core.stream_slots import stream_slots
    from ..errors import ServerError
    from ..postgres.slots import drop_slot

    try:
        with sql_connection(config, autocommit=True, application_name="sparkcdc-driver") as conn:
            for stream in stream_slots(config):
                drop_slot(conn, stream.slot, wait=30)
    except (ServerError, psycopg.Error, OSError) as exc:
        log.warning("slot.drop.on.stop: could not drop the slots: %s", exc)
