"""TLS to PostgreSQL and the secrets that go with it, end to end with a real server and SparkSession.

The module's server takes TLS only (``hostssl``), with SCRAM passwords and a client certificate
signed by its CA (``clientcert=verify-full``); its certificate names ``localhost`` only. A
``sparkcdc run`` reads a snapshot, streams changes and applies both to a mirror database on the same
server, every connection over TLS (``sslmode=verify-full``, an encrypted client key). Then the run's
every trace (its output, the checkpoint, the topic files, ``sparkcdc status``, the metrics'
``/attributes``, notifications, a failed connection's error) is searched for the two secrets.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import psycopg
import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import app
from sparkcdc.embedded_postgres import ThrowawayCluster

from ..support.processes import GroupProcess
from ..support.tls import Certificate, CertificateAuthority
from ..support.waiting import wait_until
from .support import properties

PASSWORD = "Pw-7f3a9c-secret"  # database.password: never shown anywhere
KEY_PASSWORD = "Kp-51e2d0-secret"  # database.sslpassword (the client key's pass phrase)
SECRETS = (PASSWORD, KEY_PASSWORD)

pytestmark = pytest.mark.slow


@dataclass
class TlsServer:
    cluster: ThrowawayCluster
    ca: CertificateAuthority
    other_ca: CertificateAuthority
    client: Certificate

    def tls_properties(self, **overrides: str) -> dict[str, str]:
        """The connector's TLS and password properties: verify-full by the name the certificate has."""
        return {"database.hostname": "localhost", "database.password": PASSWORD, "database.sslmode": "verify-full",
                "database.sslrootcert": str(self.ca.cert), "database.sslcert": str(self.client.cert),
                "database.sslkey": str(self.client.key), "database.sslpassword": KEY_PASSWORD, **overrides}

    def target_url(self, dbname: str) -> str:
        query = urlencode({"sslmode": "verify-full", "sslrootcert": str(self.ca.cert), "sslcert": str(self.client.cert),
                           "sslkey": str(self.client.key), "sslpassword": KEY_PASSWORD})
        return f"postgresql://postgres:{quote(PASSWORD)}@localhost:{self.cluster.port}/{dbname}?{query}"

    def admin(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.cluster.socket_conninfo(dbname), autocommit=True)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    certs = tmp_path_factory.mktemp("certs")
    ca, other_ca = CertificateAuthority(certs, "ca"), CertificateAuthority(certs, "other-ca")
    server = ca.issue("server", "localhost", dns=("localhost",))
    client = ca.issue("client", "postgres", key_password=KEY_PASSWORD)
    hba = [f"hostssl {database} all 127.0.0.1/32 scram-sha-256 clientcert=verify-full" for database in ("all", "replication")]
    settings = {"ssl": "on", "ssl_cert_file": "server.crt", "ssl_key_file": "server.key", "ssl_ca_file": "ca.crt",
                "password_encryption": "scram-sha-256", "max_wal_senders": "10", "max_replication_slots": "10"}
    files = {"server.crt": server.cert_pem(), "server.key": server.key_pem(), "ca.crt": ca.cert.read_bytes()}
    with ThrowawayCluster(settings, hba=hba, files=files) as cluster:
        cluster.set_password("postgres", PASSWORD)
        yield TlsServer(cluster, ca, other_ca, client)


def test_the_server_takes_tls_with_a_client_certificate_only(tls_server: TlsServer) -> None:
    """The fixture is what the other tests rely on: no plain connection, no TLS without a client certificate."""
    c = tls_server.cluster
    base = {"host": "localhost", "port": c.port, "user": "postgres", "dbname": "postgres", "password": PASSWORD}
    for refused in ({"sslmode": "disable"}, {"sslmode": "verify-full", "sslrootcert": str(tls_server.ca.cert), "sslcert": "/nonexistent"}):
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(**base, **refused).close()
    with psycopg.connect(**base, sslmode="verify-full", sslrootcert=str(tls_server.ca.cert), sslcert=str(tls_server.client.cert),
                         sslkey=str(tls_server.client.key), sslpassword=KEY_PASSWORD) as conn:
        assert conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone() == (True,)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rows(conn: psycopg.Connection, table: str) -> list[tuple]:
    try:
        return conn.execute(f"SELECT id, note FROM {table} ORDER BY id").fetchall()
    except psycopg.errors.UndefinedTable:
        return []


def _leaks(text: str, where: str) -> list[str]:
    return [f"{where} shows {'database.password' if secret == PASSWORD else 'database.sslpassword'}"
            for secret in SECRETS if secret in text]


def _files_leaking(root: Path, *, skip: Path) -> list[str]:
    """Every file under ``root`` (but ``skip``) that holds a secret, read as bytes (any encoding of the
    checkpoint, the topic files, logs, Spark's local files)."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p != skip):
        data = path.read_bytes()
        found += [f"{path.relative_to(root)} holds a secret" for secret in SECRETS if secret.encode() in data]
    return found


def test_snapshot_stream_and_apply_over_verify_full_tls_and_no_secret_shows(tls_server: TlsServer, tmp_path: Path) -> None:
    name = "tls_run"
    with tls_server.admin() as admin:
        admin.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, note text)")
        admin.execute(f"INSERT INTO {name} VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        admin.execute("CREATE DATABASE mirror")
    props = {**properties(tls_server.cluster, name, [rf"public\.{name}"]), **tls_server.tls_properties(),
             "notification.enabled.channels": "sink,log", "notification.sink.topic.name": "srv.notifications"}
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    checkpoint, output, port = tmp_path / "ck", tmp_path / "out", _free_port()
    argv = [sys.executable, "-m", "sparkcdc.cli", "run", str(config), "--output", str(output), "--checkpoint", str(checkpoint),
            "--apply-to", tls_server.target_url("mirror"), "--master", "local[2]", "--metrics-port", str(port),
            "--trigger-interval", "200 milliseconds", "--conf", f"spark.local.dir={tmp_path / 'spark-local'}"]
    run = GroupProcess(argv, tmp_path / "run.log")
    leaks: list[str] = []
    try:
        with tls_server.admin() as source, tls_server.admin("mirror") as mirror:
            expected = [(1, "one"), (2, "two"), (3, "three")]
            wait_until(lambda: _rows(mirror, f"public.{name}") == expected, timeout=240,
                       what=lambda: "the snapshot in the mirror; the run's log:\n" + (tmp_path / "run.log").read_text(errors="replace")[-3000:])
            source.execute(f"INSERT INTO {name} VALUES (4, 'four')")
            source.execute(f"UPDATE {name} SET note = 'TWO' WHERE id = 2")
            source.execute(f"DELETE FROM {name} WHERE id = 3")
            expected = [(1, "one"), (2, "TWO"), (4, "four")]
            wait_until(lambda: _rows(mirror, f"public.{name}") == expected, timeout=120, what="the streamed changes in the mirror")
            # every connection of the run (source, snapshot, slot, apply target) is TLS, with the client certificate
            sessions = source.execute(
                "SELECT a.application_name, s.ssl, s.client_dn FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                "WHERE a.client_addr IS NOT NULL").fetchall()
            assert sessions and all(ssl and dn == "/CN=postgres" for _, ssl, dn in sessions), sessions
            assert {app_name for app_name, _, _ in sessions} >= {"sparkcdc-apply"}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/attributes", timeout=10) as response:
            attributes = response.read().decode()
        assert json.loads(attributes)["streaming"]["Connected"] is True
        leaks += _leaks(attributes, "/attributes")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            leaks += _leaks(response.read().decode(), "/metrics")
        status = CliRunner().invoke(app, ["status", str(config), "--json", "--checkpoint", str(checkpoint)])
        assert status.exit_code == 0, status.output
        assert json.loads(status.stdout)["slot"]["name"] == name  # status read the server over TLS
        leaks += _leaks(status.output, "sparkcdc status")
    finally:
        if run.process.poll() is None:
            run.process.send_signal(signal.SIGTERM)
            try:
                run.wait(120)
            except subprocess.TimeoutExpired:
                run.kill()
        else:
            run.log.close()
    log = (tmp_path / "run.log").read_text(errors="replace")
    assert run.process.returncode == 0, log[-3000:]
    notifications = list((output / "srv.notifications").glob("*"))
    assert notifications, "the sink channel wrote the snapshot's notifications"
    leaks += _files_leaking(tmp_path, skip=config)
    assert leaks == [], leaks


WRONG_SETTINGS = [
    # (what is changed, the property the error must name, a phrase of its explanation)
    ("a CA that did not sign the server's certificate", "database.sslrootcert", "not signed by a CA"),
    ("an address the certificate does not name", "database.hostname", "not for this host name"),
    ("a wrong password", "database.password", "refused the password"),
    ("a wrong key pass phrase", "database.sslpassword", "cannot be decrypted"),
    ("no TLS", "database.sslmode", "TLS connections only"),
]


def _wrong(tls_server: TlsServer, case: str) -> dict[str, str]:
    return {
        "a CA that did not sign the server's certificate": {"database.sslrootcert": str(tls_server.other_ca.cert)},
        "an address the certificate does not name": {"database.hostname": "127.0.0.1"},
        "a wrong password": {"database.password": "wrong-" + PASSWORD[::-1]},
        "a wrong key pass phrase": {"database.sslpassword": "wrong-" + KEY_PASSWORD[::-1]},
        "no TLS": {"database.sslmode": "disable"},
    }[case]


@pytest.mark.parametrize(("case", "prop", "why"), WRONG_SETTINGS, ids=[c[1] for c in WRONG_SETTINGS])
def test_a_connection_refused_for_a_setting_names_it_without_secrets(tls_server: TlsServer, tmp_path: Path, case: str,
                                                                     prop: str, why: str) -> None:
    props = {**properties(tls_server.cluster, "tls_wrong", [r"public\.tls_wrong"]), **tls_server.tls_properties(**_wrong(tls_server, case))}
    config = tmp_path / "connector.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    validate = CliRunner().invoke(app, ["validate", str(config), "--connect"])
    assert validate.exit_code == 2, validate.output  # a configuration error, not a server one
    error = " ".join(validate.stderr.split())
    assert f"{prop}: the server" in error or f"{prop}: the client key" in error, error
    assert why in error and _leaks(validate.output, "validate") == [], error
    status = CliRunner().invoke(app, ["status", str(config), "--json"])
    assert prop in status.output and _leaks(status.output, "status") == [], status.output


def test_the_stream_stops_at_once_naming_the_setting(tls_server: TlsServer, tmp_path: Path) -> None:
    """Not a server that went away: no restart (errors.max.retries is unlimited by default), an error naming the property."""
    from sparkcdc.spark.runner import PipelineError, run_pipeline

    with tls_server.admin() as admin:
        admin.execute("CREATE TABLE IF NOT EXISTS tls_stop (id int PRIMARY KEY)")
    props = {**properties(tls_server.cluster, "tls_stop", [r"public\.tls_stop"]),
             **tls_server.tls_properties(**{"database.sslrootcert": str(tls_server.other_ca.cert)})}
    with pytest.raises(PipelineError) as failed:
        run_pipeline(props, output=tmp_path / "out", checkpoint=tmp_path / "ck", once=True, master="local[2]")
    text = str(failed.value)
    assert "database.sslrootcert" in text and "not signed by a CA" in text, text
    assert "restarted" not in text and _leaks(text, "the pipeline's error") == []


def test_the_apply_target_names_its_url_parameter_and_hides_its_passwords(tls_server: TlsServer) -> None:
    from sparkcdc.apply.errors import TargetError
    from sparkcdc.apply.targets.postgres import PostgresTarget

    with tls_server.admin() as admin:
        admin.execute("DROP DATABASE IF EXISTS target_check")
        admin.execute("CREATE DATABASE target_check")
    good = tls_server.target_url("target_check")
    target = PostgresTarget(good)
    try:
        assert target.conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone() == (True,)
        assert _leaks(target.description, "the target's description") == [] and "localhost" in target.description
    finally:
        target.close()
    wrong_ca = good.replace(quote(str(tls_server.ca.cert), safe=""), quote(str(tls_server.other_ca.cert), safe=""))
    assert wrong_ca != good
    with pytest.raises(TargetError) as refused:
        PostgresTarget(wrong_ca)
    assert "sslrootcert (a parameter of the apply target's URL)" in str(refused.value)
    assert _leaks(str(refused.value), "the target's error") == [], str(refused.value)
    # libpq echoes a malformed URI whole in its error, password included: scrubbed
    with pytest.raises(TargetError) as malformed:
        PostgresTarget(f"postgresql://postgres:{PASSWORD}@[::1/target_check?sslpassword={KEY_PASSWORD}")
    assert "URI" in str(malformed.value) and _leaks(str(malformed.value), "the malformed URL's error") == [], str(malformed.value)
