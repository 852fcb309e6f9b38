"""libpq connection settings from Debezium's ``database.*`` properties."""

from __future__ import annotations

from psycopg.conninfo import make_conninfo

from ..debezium.config import ConnectorConfig

__all__ = ["conninfo_from_config"]

_SSL_FILES = {
    "database.sslcert": "sslcert",
    "database.sslkey": "sslkey",
    "database.sslrootcert": "sslrootcert",
    "database.sslpassword": "sslpassword",
}


def conninfo_from_config(config: ConnectorConfig) -> str:
    params: dict[str, str] = {
        "host": config.get("database.hostname") or "",
        "port": config.get("database.port") or "5432",
        "user": config.get("database.user") or "",
        "dbname": config.get("database.dbname") or "",
        "sslmode": config.get("database.sslmode") or "prefer",
        "application_name": config.get("name") or "sparkcdc",
        "keepalives": "1" if config.get_bool("database.tcpKeepAlive") else "0",
    }
    password = config.get("database.password")
    if password:
        params["password"] = password
    for prop, keyword in _SSL_FILES.items():
        value = config.get(prop)
        if value:
            params[keyword] = value
    return make_conninfo(**params)
