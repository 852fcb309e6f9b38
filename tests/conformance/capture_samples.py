"""Print the raw records the Debezium oracle produces for the workloads in docs/debezium-oracle-notes.md.

Run from the repository root: ``.venv/bin/python -m tests.conformance.capture_samples``. It starts its
own throwaway cluster; every record is printed as JsonConverter wrote it (compact, verbatim) and the
timings of each engine run at the end. Timestamps, LSNs, xids and ``runId`` differ from run to run.
"""

from __future__ import annotations

import time

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster

from .oracle import DebeziumOracle, OracleRecord, OracleSession, debezium_properties


def _print(title: str, records: list[OracleRecord]) -> None:
    print(f"===== {title}")
    for record in records:
        print(f"topic: {record.topic}")
        print(f"key:   {record.raw_key}")
        print(f"value: {record.raw_value}")
        for name, value in record.raw_headers:
            print(f"header {name}: {value}")
        print()


def _until_marker(session: OracleSession, table: str) -> list[OracleRecord]:
    """Records up to and including the END of the transaction that inserted the marker row."""

    def done(records: list[OracleRecord]) -> bool:
        marker = [
            r
            for r in records
            if r.topic.endswith(f".{table}")
            and (r.value_payload or {}).get("after", {}) == {"id": 999, "email": "marker", "note": None}
        ]
        if not marker:
            return False
        tx = marker[0].value_payload["transaction"]
        if tx is None:
            return True
        xid = tx["id"].split(":")[0]
        return any(
            r.topic.endswith(".transaction") and r.value_payload["status"] == "END" and r.key_payload["id"].startswith(f"{xid}:")
            for r in records
        )

    return session.wait_for(done)


def main() -> None:
    oracle = DebeziumOracle()
    timings: list[tuple[str, dict[str, float]]] = []
    with ThrowawayCluster() as cluster, psycopg.connect(cluster.conninfo(), autocommit=True) as db:
        db.execute("CREATE TABLE customers (id SERIAL PRIMARY KEY, email VARCHAR(255) NOT NULL, note TEXT)")
        db.execute("INSERT INTO customers (email, note) VALUES ('alice@example.com', 'first'), ('bob@example.com', NULL)")
        props = debezium_properties(
            cluster,
            slot="samples",
            publication="samples",
            tables=["public.customers"],
            **{"provide.transaction.metadata": "true", "skipped.operations": "none"},
        )
        begin = time.monotonic()
        with oracle.run(props) as session:
            session.wait_streaming()
            snapshot = session.records
            _print("snapshot", snapshot)
            db.execute("INSERT INTO customers (email, note) VALUES ('carol@example.com', 'streamed')")
            db.execute("UPDATE customers SET note = 'changed' WHERE id = 1")
            db.execute("UPDATE customers SET id = 10 WHERE id = 2")
            db.execute("DELETE FROM customers WHERE id = 10")
            db.execute("TRUNCATE customers")
            db.execute("SELECT pg_logical_emit_message(true, 'my-prefix', 'transactional content')")
            db.execute("SELECT pg_logical_emit_message(false, 'my-prefix', 'non-transactional content')")
            with db.transaction():
                db.execute("INSERT INTO customers (email) VALUES ('dave@example.com')")
                db.execute("SELECT pg_logical_emit_message(true, 'in-tx', 'x')")
            db.execute("INSERT INTO customers (id, email) VALUES (999, 'marker')")
            _print("streaming", _until_marker(session, "customers")[len(snapshot) :])
        timings.append(
            (f"JVM start {oracle.jvm_start_seconds:.2f}s; first run (wall {time.monotonic() - begin:.2f}s)", session.timings)
        )

        db.execute("CREATE TABLE floats (id int PRIMARY KEY, r REAL, d DOUBLE PRECISION)")
        db.execute(
            "INSERT INTO floats VALUES (1, 'NaN', 'NaN'), (2, 'Infinity', 'Infinity'), (3, '-Infinity', '-Infinity'), (4, 1.5, '-0')"
        )
        db.execute("CREATE TABLE uniq (code text NOT NULL, val int)")
        db.execute("CREATE UNIQUE INDEX uniq_code ON uniq (code)")
        db.execute("INSERT INTO uniq VALUES ('a', 1)")
        db.execute("CREATE TABLE nokey (code text, val int)")
        db.execute("ALTER TABLE nokey REPLICA IDENTITY FULL")
        db.execute("INSERT INTO nokey VALUES ('a', 1)")
        props = debezium_properties(
            cluster, slot="samples2", publication="samples2", tables=["public.floats", "public.uniq", "public.nokey"]
        )
        with oracle.run(props) as session:
            session.wait_streaming()
            _print("floats / unique index / no key: snapshot", session.records)
            count = len(session.records)
            db.execute("DELETE FROM nokey")
            _print("no key: delete", session.wait_for(lambda rs: len(rs) == count + 2)[count:])
        timings.append(("second run (snapshot of three tables)", session.timings))

        for run in range(3):
            props = debezium_properties(
                cluster,
                slot=f"samples_nd{run}",
                publication="samples_nd",
                tables=["public.floats"],
                **{"snapshot.mode": "no_data"},
            )
            with oracle.run(props) as session:
                session.wait_streaming()
            timings.append((f"snapshot.mode=no_data run {run}", session.timings))

        db.execute("CREATE TABLE bulk (id int PRIMARY KEY, email text NOT NULL)")
        db.execute("INSERT INTO bulk SELECT g, 'bulk' || g FROM generate_series(1, 10000) g")
        props = debezium_properties(cluster, slot="samples_big", publication="samples_big", tables=["public.bulk"])
        with oracle.run(props) as session:
            session.wait_streaming()
            count = len(session.records)
        timings.append((f"snapshot of {count} rows", session.timings))

    print("===== timings")
    for what, values in timings:
        print(what, {k: round(v, 3) for k, v in values.items()})


if __name__ == "__main__":
    main()
