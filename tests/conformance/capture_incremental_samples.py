"""Capture what real Debezium emits for signal-triggered snapshots (docs/incremental-snapshot-oracle-facts.md).

Run from the repository root::

    .venv/bin/python -m tests.conformance.capture_incremental_samples OUT_DIR [SCENARIO ...]

Scenarios (all by default): basic, captured, insert_delete, in_window, conditions, pause, stop_all,
blocking, file, file_source, read_only. Each gets its own throwaway tables, slot and publication in
one cluster; its records are written verbatim to ``OUT_DIR/<scenario>.jsonl`` (topic, key, value,
headers as JsonConverter wrote them) and summarised on stdout. Debezium's log (INFO and up) goes to
``OUT_DIR/jvm.log`` with a ``===== <scenario>`` line logged before each step, which is where the
log lines quoted in the facts file come from.

This is an exploration tool, not a test: a few scenarios show that something does *not* happen
(a paused snapshot reads nothing, a file signal without the source channel stalls), which needs a
bounded wait, so they sleep.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jpype
import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster

from . import oracle as oracle_module
from .incremental_oracle import (
    NOTIFICATION_TOPIC,
    SIGNAL_TABLE_DDL,
    incremental_reads,
    notifications,
    send_source_signal,
    signal_properties,
)
from .oracle import DebeziumOracle, OracleRecord, OracleSession, OracleTimeout, debezium_properties

Records = list[OracleRecord]


class Capture:
    """One cluster, one JVM, one output directory; a method per scenario."""

    def __init__(self, out: Path, oracle: DebeziumOracle, cluster: ThrowawayCluster, db: psycopg.Connection) -> None:
        self.out, self.oracle, self.cluster, self.db = out, oracle, cluster, db

    # -- plumbing --
    def props(self, name: str, tables: list[str], **extra: str) -> dict[str, str]:
        merged = {**signal_properties(chunk_size=3), "snapshot.mode": "no_data", **extra}
        return debezium_properties(self.cluster, slot=name, publication=name, tables=tables, **merged)

    def tables(self, extra_a_rows: int = 0) -> None:
        """public.a (10 rows + extra), public.b (composite key, 7 rows), public.nopk (no key, 5 rows)."""
        self.db.execute("DROP TABLE IF EXISTS public.a, public.b, public.nopk, public.uncaptured, public.debezium_signal")
        self.db.execute(SIGNAL_TABLE_DDL)
        self.db.execute("CREATE TABLE public.a (id int PRIMARY KEY, v text)")
        self.db.execute("INSERT INTO public.a SELECT g, 'v' || g FROM generate_series(1, %s) g", (10 + extra_a_rows,))
        self.db.execute("CREATE TABLE public.b (k1 int, k2 text, v int, PRIMARY KEY (k1, k2))")
        self.db.execute("INSERT INTO public.b VALUES (1,'x',1),(1,'y',2),(2,'a',3),(2,'b',4),(3,'z',5),(10,'q',6),(4,'m',7)")
        self.db.execute("CREATE TABLE public.nopk (n int, v text)")
        self.db.execute("INSERT INTO public.nopk SELECT g, 'n' || g FROM generate_series(1, 5) g")

    def wait(self, session: OracleSession, predicate: Callable[[Records], Any], timeout: float = 20) -> Records:
        try:
            return session.wait_for(predicate, timeout=timeout)
        except OracleTimeout as exc:
            print("  (timed out)", str(exc).splitlines()[0])
            return session.records

    def dump(self, name: str, records: Records) -> None:
        with (self.out / f"{name}.jsonl").open("w") as f:
            for r in records:
                f.write(json.dumps({"topic": r.topic, "key": r.raw_key, "value": r.raw_value, "headers": r.raw_headers}) + "\n")
        print(f"===== {name}: {len(records)} records")
        for r in records:
            print("  " + _summary(r))

    # -- scenarios --
    def basic(self, name: str = "basic", captured: bool = False, **extra: str) -> None:
        """Two tables, chunk size 3; the signal table listed in table.include.list or not."""
        self.tables()
        tables = ["public.a", "public.b"] + (["public.debezium_signal"] if captured else [])
        with self.oracle.run(self.props(name, tables, **extra)) as session:
            session.wait_streaming()
            published = self.db.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1", (name,)).fetchall()
            print("  publication tables:", [t for (t,) in published])
            send_source_signal(self.db, "ad-hoc-1", "execute-snapshot", {"data-collections": ["public.a", "public.b"], "type": "incremental"})
            self.wait(session, lambda rs: _completed(rs) >= 1)
            self.db.execute("INSERT INTO public.a VALUES (100, 'after')")
            self.dump(name, self.wait(session, lambda rs: any(r.op == "c" and r.key_payload == {"id": 100} for r in rs)))
        print("  signal table rows:", self.db.execute("SELECT * FROM public.debezium_signal").fetchall())

    def captured(self) -> None:
        self.basic("captured", captured=True)

    def insert_delete(self) -> None:
        self.basic("insert_delete", captured=True, **{"incremental.snapshot.watermarking.strategy": "insert_delete"})

    def in_window(self, name: str = "in_window") -> None:
        """Changes committed inside a window: a BEFORE INSERT trigger on the close-window row changes
        public.a in the connector's own transaction, WAL-ordered before the close row."""
        self.tables()
        self.db.execute("""
            CREATE FUNCTION public.in_window() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE n int;
            BEGIN
              IF NEW.type = 'snapshot-window-close' THEN
                SELECT count(*) INTO n FROM public.debezium_signal WHERE type = 'snapshot-window-close';
                IF n = 0 THEN      -- window of ids 1..3
                  UPDATE public.a SET v = v || '-in-window' WHERE id = 2;
                  INSERT INTO public.a VALUES (2000, 'inserted-in-window');
                ELSIF n = 1 THEN   -- window of ids 4..6
                  DELETE FROM public.a WHERE id = 5;
                  UPDATE public.a SET v = v || '-ahead' WHERE id = 9;
                END IF;
              END IF;
              RETURN NEW;
            END $$""")
        self.db.execute("CREATE TRIGGER in_window BEFORE INSERT ON public.debezium_signal FOR EACH ROW EXECUTE FUNCTION public.in_window()")
        try:
            with self.oracle.run(self.props(name, ["public.a"])) as session:
                session.wait_streaming()
                send_source_signal(self.db, "ad-hoc-w", "execute-snapshot", {"data-collections": ["public.a"]})
                self.dump(name, self.wait(session, lambda rs: _completed(rs) >= 1 and len(_window_rows(rs)) >= 10))
        finally:
            self.db.execute("DROP TRIGGER in_window ON public.debezium_signal")
            self.db.execute("DROP FUNCTION public.in_window()")

    def conditions(self, name: str = "conditions") -> None:
        """additional-conditions, surrogate-key, a keyless table, an uncaptured table, a regex, and bad signals."""
        self.tables()
        self.db.execute("CREATE TABLE public.uncaptured (id int PRIMARY KEY)")
        self.db.execute("INSERT INTO public.uncaptured VALUES (1)")
        steps: list[tuple[str, str, Any, bool]] = [
            ("filter", "execute-snapshot", {"data-collections": ["public.a"], "additional-conditions": [{"data-collection": "public.a", "filter": "id > 5"}]}, True),
            ("surrogate", "execute-snapshot", {"data-collections": ["public.nopk"], "surrogate-key": "n"}, True),
            ("nopk", "execute-snapshot", {"data-collections": ["public.nopk"]}, True),
            ("uncaptured", "execute-snapshot", {"data-collections": ["public.uncaptured"]}, True),
            ("regex", "execute-snapshot", {"data-collections": ["public\\.[ab]"]}, True),
            ("unknown", "no-such-signal", {"x": 1}, False),
            ("malformed", "execute-snapshot", "{not json", False),
            ("nulldata", "execute-snapshot", None, False),
            ("log", "log", {"message": "hello from the signal table"}, False),
            ("surrogate-b", "execute-snapshot", {"data-collections": ["public.b"], "surrogate-key": "v"}, True),
        ]
        props = self.props(name, ["public.a", "public.b", "public.nopk"], **{"notification.enabled.channels": "sink,log"})
        with self.oracle.run(props) as session:
            session.wait_streaming()
            for number, (signal_id, signal_type, data, snapshots) in enumerate(steps):
                _mark(f"{name}: {signal_id}")
                before, completed = len(session.records), _completed(session.records)
                send_source_signal(self.db, signal_id, signal_type, data)
                marker = 500 + number  # committed after the signal: once it is back, the signal was handled
                self.db.execute("INSERT INTO public.a VALUES (%s, 'marker')", (marker,))

                def done(rs: Records, marker: int = marker, completed: int = completed, snapshots: bool = snapshots) -> bool:
                    return any(r.key_payload == {"id": marker} and r.op == "c" for r in rs) and (not snapshots or _completed(rs) > completed)

                records = self.wait(session, done)
                print(f"--- step {signal_id}: {len(records) - before} new records")
                for r in records[before:]:
                    print("  " + _summary(r))
            self.dump(name, session.records)

    def pause(self, name: str = "pause") -> None:
        """pause-snapshot, resume-snapshot, then stop-snapshot of one of two tables, then stop all when idle."""
        self.tables(extra_a_rows=290)
        with self.oracle.run(self.props(name, ["public.a", "public.b"])) as session:
            session.wait_streaming()
            send_source_signal(self.db, "snap", "execute-snapshot", {"data-collections": ["public.a", "public.b"]})
            self.wait(session, lambda rs: len(incremental_reads(rs)) >= 3)
            _mark("pause")
            send_source_signal(self.db, "pause-1", "pause-snapshot", None)
            self.wait(session, lambda rs: any(n["type"] == "PAUSED" for n in notifications(rs)))
            time.sleep(3)
            paused_at = len(incremental_reads(session.records))
            time.sleep(3)
            print(f"  read events while paused: {paused_at}, 3 s later {len(incremental_reads(session.records))}")
            _mark("resume")
            send_source_signal(self.db, "resume-1", "resume-snapshot", None)
            self.wait(session, lambda rs: len(incremental_reads(rs)) >= paused_at + 30)
            _mark("stop public.a")
            send_source_signal(self.db, "stop-1", "stop-snapshot", {"data-collections": ["public.a"], "type": "incremental"})
            self.wait(session, lambda rs: _completed(rs) >= 1)
            print(f"  read events of a: {len(incremental_reads(session.records, 'public.a'))}, of b: {len(incremental_reads(session.records, 'public.b'))}")
            _mark("stop all, no snapshot running")
            send_source_signal(self.db, "stop-2", "stop-snapshot", {"data-collections": [], "type": "incremental"})
            self.db.execute("INSERT INTO public.a VALUES (1001, 'after-stop2')")
            self.wait(session, lambda rs: any(r.op == "c" and r.key_payload == {"id": 1001} for r in rs))
            time.sleep(3)
            self.dump(name, session.records)

    def stop_all(self, name: str = "stop_all") -> None:
        """stop-snapshot without data-collections while a snapshot runs."""
        self.tables(extra_a_rows=290)
        with self.oracle.run(self.props(name, ["public.a", "public.b"])) as session:
            session.wait_streaming()
            send_source_signal(self.db, "snap", "execute-snapshot", {"data-collections": ["public.a", "public.b"]})
            self.wait(session, lambda rs: len(incremental_reads(rs)) >= 3)
            send_source_signal(self.db, "stop-all", "stop-snapshot", {"type": "incremental"})
            self.dump(name, self.wait(session, lambda rs: any(n["type"] == "ABORTED" for n in notifications(rs))))

    def blocking(self, name: str = "blocking") -> None:
        """type "blocking", then "BLOCKING" with a per-table SELECT as filter."""
        self.tables()
        with self.oracle.run(self.props(name, ["public.a", "public.b"])) as session:
            session.wait_streaming()
            send_source_signal(self.db, "block-1", "execute-snapshot", {"data-collections": ["public.a", "public.b"], "type": "blocking"})
            self.db.execute("INSERT INTO public.a VALUES (100, 'during')")
            self.wait(session, lambda rs: _completed(rs, "Initial Snapshot") >= 1 and any(r.op == "c" and r.key_payload == {"id": 100} for r in rs))
            conditions = [{"data-collection": "public.a", "filter": "SELECT * FROM public.a WHERE id > 7"}]
            send_source_signal(self.db, "block-2", "execute-snapshot", {"data-collections": ["public.a"], "type": "BLOCKING", "additional-conditions": conditions})
            self.db.execute("INSERT INTO public.a VALUES (101, 'during2')")
            self.dump(name, self.wait(session, lambda rs: _completed(rs, "Initial Snapshot") >= 2 and any(r.op == "c" and r.key_payload == {"id": 101} for r in rs)))

    def file(self, name: str = "file", channels: str = "file", read_only: bool = False) -> None:
        """The file signal channel; with read.only=true there is no signal table at all."""
        self.tables()
        signal_file = self.out / f"{name}.signals"
        signal_file.write_text("")
        extra = {"signal.enabled.channels": channels, "signal.file": str(signal_file)}
        if read_only:
            self.db.execute("DROP TABLE public.debezium_signal")
            extra["read.only"] = "true"
        props = self.props(name, ["public.a", "public.b"], **extra)
        if read_only:
            del props["signal.data.collection"]
        with self.oracle.run(props) as session:
            session.wait_streaming()
            signal = {"id": "file-1", "type": "execute-snapshot", "data": {"data-collections": ["public.a", "public.b"], "type": "incremental"}}
            signal_file.write_text(json.dumps(signal) + "\n")
            # The file is polled every 5 s. Read-only windows close only on WAL traffic: give them some.
            for tick in range(40):
                if _completed(session.records):
                    break
                if read_only:
                    self.db.execute("INSERT INTO public.a VALUES (%s, 'tick')", (200 + tick,))
                time.sleep(0.5)
            print("  signal file afterwards:", repr(signal_file.read_text()))
            self.dump(name, session.records)

    def file_source(self) -> None:
        self.file("file_source", channels="source,file")

    def read_only(self) -> None:
        self.file("read_only", read_only=True)


SCENARIOS = ["basic", "captured", "insert_delete", "in_window", "conditions", "pause", "stop_all", "blocking", "file", "file_source", "read_only"]


def _completed(records: Records, aggregate: str = "Incremental Snapshot") -> int:
    return sum(n["aggregate_type"] == aggregate and n["type"] == "COMPLETED" for n in notifications(records))


def _window_rows(records: Records) -> Records:
    return [r for r in records if r.topic.endswith(".debezium_signal") and r.op == "c" and r.value_payload["after"]["type"].startswith("snapshot-window-")]


def _mark(text: str) -> None:
    """A line in Debezium's log, to find each step's log lines."""
    jpype.JClass("org.apache.logging.log4j.LogManager").getLogger("CAPTURE").warn(f"===== {text}")


def _summary(r: OracleRecord) -> str:
    p = r.value_payload
    if r.topic == NOTIFICATION_TOPIC:
        return f"NOTIFICATION id={p['id']} {p['aggregate_type']} {p['type']} {p['additional_data']}"
    if p is None:
        return f"{r.topic} tombstone key={r.key_payload}"
    s = p["source"]
    where = {k: s[k] for k in ("snapshot", "txId", "lsn", "sequence")}
    return f"{r.topic} op={p['op']} key={r.key_payload} before={p['before']} after={p['after']} {where}"


def _log4j_config(out: Path) -> Path:
    """Debezium at INFO into OUT_DIR/jvm.log (the tests' config logs WARN to stderr)."""
    path = out / "log4j2-capture.properties"
    path.write_text(
        "\n".join(
            [
                "status = warn",
                "rootLogger.level = INFO",
                "rootLogger.appenderRef.file.ref = file",
                "appender.file.type = File",
                "appender.file.name = file",
                f"appender.file.fileName = {out / 'jvm.log'}",
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = %d{HH:mm:ss.SSS} [%level] [%t] %c{1} - %m%n",
                "logger.kafka.name = org.apache.kafka",
                "logger.kafka.level = WARN",
                "",
            ]
        )
    )
    return path


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    wanted = argv[1:] or SCENARIOS
    unknown = set(wanted) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios {sorted(unknown)}; known: {SCENARIOS}")
    oracle_module.LOG4J_CONFIG = _log4j_config(out)  # read when the JVM starts, i.e. on the first run
    oracle = DebeziumOracle()
    with ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as db:
        capture = Capture(out, oracle, cluster, db)
        for scenario in wanted:
            began = time.monotonic()
            if jpype.isJVMStarted():
                _mark(scenario)
            getattr(capture, scenario)()
            print(f"----- {scenario} took {time.monotonic() - began:.1f}s")


if __name__ == "__main__":
    main(sys.argv[1:])
