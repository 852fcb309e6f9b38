"""libpq connection settings from Debezium's ``database.*`` properties."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..debezium.config import ConnectorConfig
from ..errors import ConfigurationError
from ..postgres.slots import run_statement
from ..postgres.snapshot import connect_with_text_settings
from ..text_format import libpq_options

__all__ = ["conninfo_from_config", "initial_statements", "sql_connection"]

_SSL_FILES = {
    "database.sslcert": "sslcert",
    "database.sslkey": "sslkey",
    "database.sslrootcert": "sslrootcert",
    "database.sslpassword": "sslpassword",
}


def conninfo_from_config(config: ConnectorConfig) -> str:
    """The libpq connection string of every connection sparkcdc opens (driver, executors, replication).

    ``database.hostname`` may list several hosts and ``database.port`` one port or one per host
    (``h1,h2`` / ``5432,5433``, as libpq's ``host``/``port``): then libpq tries them in order and keeps the
    first that accepts writes (``target_session_attrs=read-write``), a primary after a failover too, for
    SQL and replication connections alike. One host is connected to whatever it is (a standby too).
    """
    settings = config.settings
    hosts = [host.strip() for host in settings.database_hostname.split(",")]
    ports = [port.strip() for port in str(settings.database_port).split(",")]
    if len(ports) not in (1, len(hosts)):
        raise ConfigurationError(f"lists {len(ports)} ports for the {len(hosts)} hosts of database.hostname; "
                          "give one port for all or one per host", prop="database.port")
    params: dict[str, str] = {
        "host": ",".join(hosts),
        "port": ",".join(ports),
        "user": settings.database_user,
        "dbname": settings.database_dbname,
        "sslmode": settings.database_sslmode,
        "application_name": settings.name,
        "keepalives": "1" if settings.database_tcpkeepalive else "0",
    }
    if len(hosts) > 1:
        params["target_session_attrs"] = "read-write"
    password = config.settings.database_password
    if password:
        params["password"] = password
    for prop, keyword in _SSL_FILES.items():
        value = config.setting(prop)
        if value:
            params[keyword] = value
    return make_conninfo(**params)


def initial_statements(config: ConnectorConfig) -> list[str]:
    """``database.initial.statements``: ``;``-separated, ``;;`` for a literal semicolon (as Debezium)."""
    raw = config.settings.database_initial_statements or ""  # no default: unset is no statement
    statements, current, index = [], [], 0
    while index < len(raw):
        if raw[index] == ";":
            if raw[index + 1 : index + 2] == ";":
                current.append(";")
                index += 2
                continue
            statements.append("".join(current).strip())
            current = []
        else:
            current.append(raw[index])
        index += 1
    statements.append("".join(current).strip())
    return [statement for statement in statements if statement]


def sql_connection(config: ConnectorConfig, *, autocommit: bool = True, application_name: str = "sparkcdc") -> psycopg.Connection:
    """A SQL connection with sparkcdc's text settings, after ``database.initial.statements``.

    Its statements time out after ``database.query.timeout.ms`` (PostgreSQL's statement_timeout;
    the initial statements may set another).
    """
    conninfo = conninfo_from_config(config)
    timeout = {"statement_timeout": str(config.settings.database_query_timeout_ms)}
    conninfo = make_conninfo(conninfo, options=libpq_options(timeout, conninfo_to_dict(conninfo).get("options")))
    conn = connect_with_text_settings(conninfo, autocommit=autocommit, application_name=application_name)
    try:
        for statement in initial_statements(config):
            run_statement(conn, statement)
        if not autocommit:
            conn.commit()
    except psycopg.Error as exc:
        conn.close()
        raise ConfigurationError(f"failed on the server: {exc}", prop="database.initial.statements") from exc
    return conn
