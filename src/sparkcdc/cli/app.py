"""The ``sparkcdc`` command: ``validate``, ``status``, ``run``, ``signal``, ``demo`` and ``submit-script``.

Exit codes are part of the interface, because these commands run in deployment scripts and health
checks: 0 success; 1 the server (or the pipeline) has a problem, or cannot be reached; 2 the
configuration, a file or an argument is wrong (the message names the file and the property).
Configuration errors always come before any connection is made. The code follows from the
failure's family in sparkcdc's exception hierarchy (:mod:`sparkcdc.errors`), in one place
(:func:`_reported`); a database driver's error is first mapped by its SQLSTATE.
"""

from __future__ import annotations

import importlib
import json
import signal
import sys
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from ..debezium.config import PROPERTIES, ConfigWarning
from ..errors import ConfigurationError, DestinationError, PipelineError, ProtocolError, ServerError, SparkcdcError, family_of
from .config_files import ConfigFileError, LoadedConfig, load_config
from .render import config_summary, print_problems, readiness_view, status_view
from .send_signal import ACTIONS, build_signal, send
from .signals import StopEvent

if TYPE_CHECKING:
    import psycopg

# What only some commands use (the database driver; pyarrow, under the server checks) is imported
# where it is used: `sparkcdc run` launches Spark's driver JVM 0.3 s sooner without them.

__all__ = ["EXIT_CONFIG", "EXIT_OK", "EXIT_PROBLEMS", "app", "main"]

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_CONFIG = 2

app = typer.Typer(
    name="sparkcdc",
    help="Change data capture for PostgreSQL with Debezium-format events, running on Apache Spark.",
    no_args_is_help=True,
    add_completion=False,
    # Locals of a failing frame include the configuration, passwords and all: never print them.
    pretty_exceptions_show_locals=False,
)

ConfigArgument = Annotated[
    Path,
    typer.Argument(metavar="CONFIG", help="Connector configuration: .properties, .json (Kafka Connect REST body or flat) or .yaml",
                   show_default=False),
]
StrictOption = Annotated[
    bool,
    typer.Option("--strict", help="A property name sparkcdc does not know (or a transform option its class does not have) is "
                                  "an error naming it and the closest known name, not a warning (as sparkcdc.strict=true)."),
]


def _stdout() -> Console:
    return Console(highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _fail(code: int, message: str) -> NoReturn:
    _stderr().print(Text.assemble(("error: ", "red bold"), message), soft_wrap=True)
    raise typer.Exit(code)


#: Per family of :mod:`sparkcdc.errors`: the exit code, and what the message starts with.
_FAMILY_EXITS: dict[type[SparkcdcError], tuple[int, str]] = {
    ConfigurationError: (EXIT_CONFIG, ""),
    ServerError: (EXIT_PROBLEMS, ""),
    ProtocolError: (EXIT_PROBLEMS, "the server's replication stream cannot be read: "),
    DestinationError: (EXIT_PROBLEMS, "writing the changes failed: "),
    PipelineError: (EXIT_PROBLEMS, "the pipeline failed: "),
}


def _exit_for(exc: SparkcdcError, loaded: LoadedConfig | None) -> tuple[int, str]:
    """The exit code and message for a failure; the error of a connector property (one of the file's,
    or of the property table) points at the file, and its line when the file sets it."""
    code, prefix = _FAMILY_EXITS[family_of(exc)]
    if (isinstance(exc, ConfigurationError) and loaded is not None and exc.property
            and (exc.property in loaded.properties or exc.property in PROPERTIES)):
        message = str(exc).removeprefix(f"{exc.property}: ")
        return code, str(ConfigFileError(loaded.path, message, line=loaded.lines.get(exc.property), prop=exc.property))
    return code, prefix + str(exc)


@contextmanager
def _reported(loaded: LoadedConfig | None = None, doing: str | None = None) -> Iterator[None]:
    """The one place failures become exit codes: a sparkcdc error ends the command with its family's
    code; a database driver's error is mapped (by SQLSTATE) first, ``doing`` saying what failed."""
    try:
        yield
    except SparkcdcError as exc:
        _fail(*_exit_for(exc, loaded))
    except Exception as exc:
        if not _is_database_error(exc):
            raise
        from ..postgres.errors import from_psycopg

        what = doing or (_target(loaded) if loaded is not None else "the database server")
        _fail(*_exit_for(from_psycopg(exc, what), loaded))


def _is_database_error(exc: BaseException) -> bool:
    """A psycopg error, without importing psycopg where none can have been raised (it was never imported)."""
    driver = sys.modules.get("psycopg")
    return driver is not None and isinstance(exc, driver.Error)


def _load(path: Path, strict: bool = False) -> LoadedConfig:
    with _reported():
        loaded = load_config(path, strict=strict)
    print_problems(_stderr(), [], loaded.warnings)
    # They are printed above (with their lines); the library would otherwise warn again when the
    # Spark source builds the same configuration.
    warnings.filterwarnings("ignore", category=ConfigWarning)
    return loaded


def _target(loaded: LoadedConfig) -> str:
    s = loaded.config.settings
    return f"{s.database_hostname}:{s.database_port}/{s.database_dbname} as {s.database_user}"


def _connect(loaded: LoadedConfig) -> psycopg.Connection:
    from .server import connect_read_only

    with _reported(loaded, f"cannot connect to {_target(loaded)}"):
        return connect_read_only(loaded.config)


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"sparkcdc {version('sparkcdc')}")
        except PackageNotFoundError:
            typer.echo("sparkcdc (not installed as a distribution)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True,
                                               help="Print the version and exit.")] = False,
) -> None:
    """Change data capture for PostgreSQL with Debezium-format events, running on Apache Spark."""


@app.command()
def validate(
    config: ConfigArgument,
    connect: Annotated[bool, typer.Option("--connect", help="Also connect (read-only) and check the server, tables, "
                                          "publication and slot. Changes nothing in the database.")] = False,
    strict: StrictOption = False,
) -> None:
    """Check a connector configuration; exit 0 when valid, 2 on a configuration error (1: server problems, with --connect)."""
    loaded = _load(config, strict)
    out = _stdout()
    out.print(config_summary(loaded))
    if not connect:
        out.print(Text.assemble(("\nvalid: ", "green bold"), f"{loaded.path} (the server was not contacted; --connect checks it)"))
        return
    from .readiness import assess

    conn = _connect(loaded)
    try:
        with _reported(loaded, f"cannot inspect {_target(loaded)}"):
            readiness = assess(conn, loaded.config)
    finally:
        conn.close()
    out.print()
    out.print(readiness_view(readiness))
    out.print()
    print_problems(out, readiness.errors, readiness.warnings)
    if readiness.fixes:
        # One block to paste into psql, run by a superuser or the objects' owner (docs/privileges.md).
        out.print(Text("\nTo fix, as a superuser or the objects' owner:", style="bold"))
        for statement in readiness.fixes:
            out.print(f"  {statement}", soft_wrap=True, markup=False, highlight=False)
    if readiness.errors:
        raise typer.Exit(EXIT_PROBLEMS)
    out.print(Text.assemble(("ready: ", "green bold"), f"{loaded.path} is valid and the server is ready for it"))


@app.command()
def status(
    config: ConfigArgument,
    checkpoint: Annotated[Path | None, typer.Option("--checkpoint", metavar="DIR",
                                                    help="A (local) Spark checkpoint directory: show its last committed offset.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Show the slot (position, lag, activity), the publication's tables and, with --checkpoint, the committed offset."""
    import psycopg

    from ..postgres.connections import ConnectionSettingError
    from ..postgres.errors import from_psycopg
    from .checkpoint import read_checkpoint
    from .server import connect_read_only
    from .status import checkpoint_report, server_report

    loaded = _load(config)
    state = None
    if checkpoint is not None:
        with _reported(loaded):
            state = read_checkpoint(checkpoint)
    report: dict[str, Any] = {"config": str(loaded.path)}
    errors: list[str] = []
    warnings: list[str] = []
    try:
        with connect_read_only(loaded.config) as conn:
            report |= server_report(conn, loaded.config)
    except psycopg.Error as exc:  # reported with the rest of the state, not as the command's failure
        errors.append(str(from_psycopg(exc, f"cannot read the server state of {_target(loaded)}")))
    except ConnectionSettingError as exc:  # refused for a setting: the property to fix
        errors.append(f"cannot read the server state of {_target(loaded)}: {exc}")
    if state is not None and checkpoint is not None:
        report["checkpoint"], checkpoint_warnings = checkpoint_report(checkpoint, state, loaded.config, report.get("slot"))
        warnings += checkpoint_warnings
    for slot in [report.get("slot"), *(stream["slot"] for stream in report.get("streams", ()))]:
        if slot is not None and slot["exists"] and (slot["wal_status"] == "lost" or slot.get("invalidation_reason")):
            why = f"invalidation_reason={slot['invalidation_reason']}" if slot.get("invalidation_reason") else "wal_status=lost"
            errors.append(f"slot {slot['name']!r} was invalidated by the server ({why}); it cannot continue: "
                          "a run with snapshot.mode=when_needed takes a new snapshot")
    report["errors"], report["warnings"] = errors, warnings
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        out = _stdout()
        out.print(status_view(report))
        print_problems(out, errors, warnings)
    if errors:
        raise typer.Exit(EXIT_PROBLEMS)


def _import_runner() -> ModuleType:
    try:
        return importlib.import_module("sparkcdc.spark.runner")
    except ModuleNotFoundError as exc:
        if exc.name in ("sparkcdc.spark", "sparkcdc.spark.runner"):
            _fail(EXIT_PROBLEMS, "this installation has no Spark runner (module sparkcdc.spark.runner is missing); "
                                 "`sparkcdc run` needs a sparkcdc version that includes it")
        if exc.name is not None and exc.name.split(".")[0] in ("pyspark", "py4j", "pyarrow", "pandas"):
            _fail(EXIT_PROBLEMS, f"`sparkcdc run` needs PySpark, which cannot be imported here (missing module {exc.name!r})")
        raise


@app.command()
def run(
    config: ConfigArgument,
    checkpoint: Annotated[str, typer.Option("--checkpoint", metavar="DIR",
                                            help="Spark checkpoint location (a path or URI); it holds the connector's offsets.")],
    output: Annotated[str | None, typer.Option("--output", metavar="DIR", help="Where the change events are written (a local directory or file: URI; topic directories are created under it).")] = None,
    once: Annotated[bool, typer.Option("--once", help="Process what is available now, then stop.")] = False,
    master: Annotated[str | None, typer.Option("--master", metavar="URL", help="Spark master, e.g. local[4] (default: spark-defaults.conf's spark.master, else local[*]; under spark-submit only spark-submit's --master).")] = None,
    remote: Annotated[str | None, typer.Option(
        "--remote", metavar="sc://HOST:PORT",
        help="Run the query on a Spark Connect server (instead of --master); paths are then the server's (docs/spark-connect.md).")] = None,
    summary_file: Annotated[str | None, typer.Option("--summary", metavar="FILE",
                                                     help="Write a JSON summary of the run (batches, records, timings) here.")] = None,
    apply_to: Annotated[list[str] | None, typer.Option(
        "--apply-to", metavar="TARGET",
        help="Keep a mirror of every captured table: postgresql://…, a Delta Lake directory, iceberg:<catalog> or iceberg+file:<warehouse>. May be given more than once.")] = None,
    scd_type: Annotated[int, typer.Option("--scd-type", metavar="1|2",
                                          help="With --apply-to: 1 mirrors the tables, 2 keeps their history (__START_AT/__END_AT).")] = 1,
    trigger_interval: Annotated[str | None, typer.Option(
        "--trigger-interval", metavar="INTERVAL",
        help="Without --once: how often a micro-batch starts (Spark's processingTime, e.g. '500 milliseconds'; "
             "'0 seconds' starts the next as soon as one ends, the least latency).")] = None,
    kafka: Annotated[str | None, typer.Option(
        "--kafka", metavar="BOOTSTRAP",
        help="Produce the change events to this Kafka cluster (host:port,...) exactly once, from the tasks that read them "
             "(sparkcdc.output.kafka.* properties for the rest). Runs on its own, without --output or --apply-to.")] = None,
    conf: Annotated[list[str] | None, typer.Option(
        "--conf", metavar="KEY=VALUE",
        help="A Spark setting for the session, as spark-submit's --conf (e.g. spark.executor.memory=2g). May be given more than once.")] = None,
    metrics_port: Annotated[int | None, typer.Option("--metrics-port", metavar="PORT",
                                                     help="Serve Debezium's metrics for Prometheus at http://HOST:PORT/metrics (see docs/metrics.md).")] = None,
    metrics_host: Annotated[str, typer.Option("--metrics-host", metavar="HOST",
                                              help="The address the metrics are served on (with --metrics-port).")] = "127.0.0.1",
    progress: Annotated[bool, typer.Option("--progress/--no-progress",
                                           help="Show the snapshot's progress per table, then a streaming status line "
                                                "(live on a terminal, a log line every 10 s otherwise).")] = True,
    strict: StrictOption = False,
) -> None:
    """Run the pipeline. SIGINT/SIGTERM stop it cleanly after the current micro-batch; a second signal exits immediately.

    If PostgreSQL goes away, the query restarts from its checkpoint after retriable.restart.connector.wait.ms,
    up to errors.max.retries times in a row (-1: no limit); then it exits with 1.
    """
    if once and trigger_interval is not None:
        _fail(EXIT_CONFIG, "--trigger-interval has no effect with --once (it reads what is available now, then stops): drop one")
    if kafka is not None and (output is not None or apply_to):
        _fail(EXIT_CONFIG, "--kafka runs on its own: give --kafka, or --output/--apply-to (a second pipeline, with its own "
                           "checkpoint, can write the other)")
    if output is None and not apply_to and kafka is None:
        _fail(EXIT_CONFIG, "give --output DIR, --apply-to TARGET, or both, or --kafka BOOTSTRAP")
    if scd_type not in (1, 2):
        _fail(EXIT_CONFIG, f"--scd-type must be 1 or 2, not {scd_type}")
    if master is not None and remote is not None:
        _fail(EXIT_CONFIG, "--master and --remote exclude each other: a Spark Connect server runs the query on its own master")
    spark_conf = _conf_pairs(conf or ())
    loaded = _load(config, strict)
    runner = _import_runner()
    err = _stderr()
    if kafka is None:  # only --kafka creates topics
        from ..debezium.topic_creation import unused_without_kafka

        print_problems(err, [], unused_without_kafka(loaded.config.raw, "topic_files" if output is not None else "changes"))

    def stopping(signum: int) -> None:
        err.print(f"stopping after the current micro-batch ({signal.Signals(signum).name}); send it again to exit immediately", soft_wrap=True)

    # Paths stay strings: they may be URIs (s3a://, hdfs://) that Path would mangle.
    with StopEvent(on_first=stopping) as stop, _reported(loaded):
        summary = runner.run_pipeline(loaded.config, output=output, checkpoint=checkpoint, once=once, master=master,
                                      remote=remote, stop_event=stop, apply_to=tuple(apply_to or ()), scd_type=scd_type, kafka=kafka,
                                      trigger_interval=trigger_interval or "1 second", spark_conf=spark_conf,
                                      **({} if metrics_port is None else {"metrics_port": metrics_port, "metrics_host": metrics_host}),
                                      **({"display": _progress_display(err)} if progress else {}),
                                      on_restart=lambda message: err.print(f"restarting: {message}", soft_wrap=True, markup=False))
    if summary_file is not None and hasattr(summary, "to_dict"):
        Path(summary_file).write_text(json.dumps(summary.to_dict(), indent=2) + "\n", encoding="utf-8")
    batches, records = getattr(summary, "batches", None), getattr(summary, "records", None)
    done = "stopped" if stop.is_set() else "finished"
    err.print(f"{done}" + (f": {batches} micro-batch(es), {records} record(s)" if batches is not None else ""))


def _conf_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` pairs, as spark-submit reads them: the value may hold ``=``; the last of a key wins."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            _fail(EXIT_CONFIG, f"--conf {pair!r}: expected KEY=VALUE, e.g. --conf spark.executor.memory=2g")
        conf[key.strip()] = value
    return conf


def _progress_display(err: Console) -> Any:
    from .progress import progress_display

    return progress_display(_stdout(), lambda line: err.print(line, soft_wrap=True, markup=False))


@app.command("signal")
def send_signal(
    config: ConfigArgument,
    action: Annotated[str, typer.Argument(metavar="ACTION", help=f"One of {', '.join(ACTIONS)}.", show_default=False)],
    tables: Annotated[str | None, typer.Option("--tables", metavar="LIST",
                                               help="Comma-separated schema.table patterns (data-collections): what to snapshot, or stop.")] = None,
    kind: Annotated[str, typer.Option("--type", metavar="incremental|blocking", help="The snapshot's type.")] = "incremental",
    conditions: Annotated[list[str] | None, typer.Option(
        "--condition", metavar="TABLE=PREDICATE",
        help="Snapshot only the rows of TABLE that match the SQL predicate, e.g. 'public.a=id > 5'. May be given more than once.")] = None,
    surrogate_key: Annotated[str | None, typer.Option("--surrogate-key", metavar="COLUMN",
                                                      help="Order the snapshot's chunks by this column instead of the primary key.")] = None,
    message: Annotated[str | None, typer.Option("--message", help="The text of a log signal.")] = None,
    signal_id: Annotated[str | None, typer.Option("--id", help="The signal's id (default: a new UUID).", show_default=False)] = None,
    channel: Annotated[str | None, typer.Option("--channel", metavar="source|file|kafka",
                                                help="Where to send it (default: the first of signal.enabled.channels).")] = None,
) -> None:
    """Send a signal to the connector: start, stop, pause or resume an incremental snapshot, or write to its log.

    source inserts a row into the signal table (signal.data.collection), file appends a line to signal.file, kafka produces a message to signal.kafka.topic; the running pipeline acts on it when it plans its next batch.
    """
    from ..engine.signal_channels import SignalSendError

    loaded = _load(config)
    with _reported(loaded, f"cannot insert the signal into the signal table on {_target(loaded)}"):
        built = build_signal(action, signal_id=signal_id or str(uuid.uuid4()), kind=kind, surrogate_key=surrogate_key, message=message,
                             tables=[t.strip() for t in (tables or "").split(",") if t.strip()], conditions=conditions or ())
        try:
            used, where = send(loaded.config, built, channel)
        except SignalSendError as exc:
            _fail(EXIT_PROBLEMS, str(exc))
    out = _stdout()
    out.print(Text(f"sent {built.type} signal {built.id!r} through the {used} channel: {where}"), soft_wrap=True)
    out.print(Text(built.data or ""), soft_wrap=True)


@app.command()
def demo(
    seconds: Annotated[float, typer.Option("--seconds", help="How long the generator changes the sample database.")] = 20.0,
    master: Annotated[str, typer.Option("--master", metavar="URL", help="Spark master.")] = "local[2]",
) -> None:
    """The whole pipeline on a throwaway PostgreSQL and local Spark: snapshot, streaming under load, mirror check."""
    _import_runner()
    from .demo import run_demo

    result = run_demo(seconds=seconds, master=master, console=_stdout())
    if not result.mirror_equal:
        raise typer.Exit(EXIT_PROBLEMS)


@app.command()
def prepare(
    conf: Annotated[list[str] | None, typer.Option(
        "--conf", metavar="KEY=VALUE",
        help="The Spark settings the runs will have that shape the driver JVM (spark.driver.extraClassPath, spark.driver.memory), "
             "as given to sparkcdc run --conf. May be given more than once.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Make the archive again even if there is one.")] = False,
) -> None:
    """Make the JVM class archive that lets Spark's driver start with about half the CPU (docs/performance.md).

    Made once per Java, Spark and class path (about a minute; `make venv` runs it); `sparkcdc run` and
    the sessions sparkcdc starts use it from then on. SPARKCDC_CLASS_ARCHIVE=off turns it off.
    """
    from ..spark.launch import class_archive

    settings = _conf_pairs(conf or ())
    path = class_archive.archive_path(settings)
    if path.is_file() and not force:
        typer.echo(f"already there: {path}")
        return
    started = time.monotonic()
    with _reported(doing="making the JVM class archive"):
        made = class_archive.build(settings)
    typer.echo(f"made {made} ({made.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - started:.0f} s")


@app.command("submit-script")
def submit_script() -> None:
    """Print the path of the script to give spark-submit: spark-submit --master URL "$(sparkcdc submit-script)" run CONFIG ..."""
    typer.echo(str(Path(__file__).resolve().with_name("spark_submit.py")))


def main() -> None:
    """Console script entry point (``sparkcdc``)."""
    app(prog_name="sparkcdc")
