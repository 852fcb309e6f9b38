"""When a failed streaming query is restarted: a server that went away, as Debezium retries it.

Debezium restarts the connector after a *retriable* error (the database went away, the slot is
still held by another process), waits ``retriable.restart.connector.wait.ms`` first, and gives up
after ``errors.max.retries`` consecutive restarts (``-1``: never gives up, ``0``: never restarts);
records flowing again reset the count. ``sparkcdc run`` does the same with its streaming query,
which restarts from the same checkpoint, so nothing is lost or written twice.

Spark reports a query's failure as text: the Python traceback of the driver-side source, the
executor's task or the ``foreachBatch`` function. The failure is classified by the Python exception
*types* that traceback names (resolved to the classes themselves, psycopg's carrying their
SQLSTATE), never by the wording of a message. :func:`retriable` is the one place that decides.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

import psycopg

from ..debezium.config import ConnectorConfig
from ..errors import ConfigurationError
from ..postgres.errors import ServerUnavailableError, SlotInUseError, SlotLostError

__all__ = ["RestartPolicy", "exception_types", "retriable", "retriable_cause"]

# SQLSTATEs after which a new connection may work: connection exceptions (class 08), the server
# shutting down, crashed or starting up (57P01-57P03), too many connections, an object (the slot) in use.
_RETRIABLE_SQLSTATE_PREFIXES = ("08", "57P01", "57P02", "57P03", "53300", "55006")
# Only exception classes of these packages are looked up: naming a class must not import arbitrary code.
_RESOLVABLE_PACKAGES = ("psycopg", "sparkcdc")
# A traceback's exception line: ``package.module.Class: message`` or ``package.module.Class``.
_EXCEPTION_LINE = re.compile(r"^\s*((?:psycopg|sparkcdc)(?:\.\w+)+)(?::\s|\s*$)", re.MULTILINE)


def retriable(error: type[BaseException]) -> bool:
    """Whether a failure of this type is a server that went away (or a slot still held), worth a restart."""
    # ServerUnavailableError: sparkcdc's own mapping of a lost server (ReplicationConnectionLost is one).
    # SlotLostError: a stream's slot gone under it (a failover); the restart's planner decides what follows.
    if issubclass(error, (ServerUnavailableError, SlotInUseError, SlotLostError)):
        return True
    if issubclass(error, psycopg.OperationalError):
        sqlstate: str | None = getattr(error, "sqlstate", None)
        return sqlstate is None or sqlstate.startswith(_RETRIABLE_SQLSTATE_PREFIXES)  # None: no connection at all
    return False


def exception_types(report: str) -> list[tuple[type[BaseException], str]]:
    """The psycopg and sparkcdc exception classes a Spark failure report names, in order, each with its line."""
    found: list[tuple[type[BaseException], str]] = []
    for match in _EXCEPTION_LINE.finditer(report):
        error = _resolve(match.group(1))
        if error is not None:
            end = report.find("\n", match.start())
            found.append((error, report[match.start(): end if end >= 0 else None].strip()))
    return found


def retriable_cause(report: str) -> str | None:
    """The line naming the failure when it is retriable, else ``None``.

    The last exception a traceback names is the one raised (earlier ones are its causes), so it decides.
    """
    found = exception_types(report)
    if not found:
        return None
    error, line = found[-1]
    return line if retriable(error) else None


def _resolve(name: str) -> type[BaseException] | None:
    module_name, _, attribute = name.rpartition(".")
    while module_name:
        if module_name.split(".")[0] not in _RESOLVABLE_PACKAGES:
            return None
        try:
            target: object = importlib.import_module(module_name)
        except ImportError:
            module_name, _, head = module_name.rpartition(".")
            attribute = f"{head}.{attribute}"  # a nested class: Outer.Inner
            continue
        for part in attribute.split("."):
            target = getattr(target, part, None)
        return target if isinstance(target, type) and issubclass(target, BaseException) else None
    return None


@dataclass(frozen=True)
class RestartPolicy:
    """``errors.max.retries`` (``None``: unlimited) and ``retriable.restart.connector.wait.ms``."""

    max_retries: int | None
    wait_seconds: float

    @classmethod
    def from_config(cls, config: ConnectorConfig) -> RestartPolicy:
        retries = config.settings.errors_max_retries
        if retries < -1:
            raise ConfigurationError(f"must be -1 (retry without limit), 0 (never) or more, not {retries}", prop="errors.max.retries")
        wait_ms = config.settings.retriable_restart_connector_wait_ms
        return cls(None if retries == -1 else retries, wait_ms / 1000)

    def allows(self, restarts: int) -> bool:
        """Whether one more restart is allowed after ``restarts`` consecutive ones."""
        return self.max_retries is None or restarts < self.max_retries

    def describe(self) -> str:
        limit = "-1 (no limit)" if self.max_retries is None else str(self.max_retries)
        return f"errors.max.retries={limit}"
