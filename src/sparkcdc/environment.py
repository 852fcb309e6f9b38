"""sparkcdc's environment variables: one table of them, one rule for the switches.

Everything a user configures goes through properties (the property table); the environment is for
the few things that must act before any configuration is read (how the package is built and
imported, how a process starts) or that belong to the machine (where PostgreSQL's binaries are).
Each variable is declared here, with what it does; docs/configuration.md lists them from this table.

A **switch** is on for ``1``, ``true``, ``yes``, ``on`` and off for ``0``, ``false``, ``no``,
``off`` (any case, surrounding blanks ignored); unset or empty means its default. Any other value
is refused, naming the variable: ``SPARKCDC_PURE_PYTHON=flase`` must not quietly mean either.
``setup.py`` reads ``ON_VALUES`` and ``OFF_VALUES`` from this file's source without importing
sparkcdc, so they stay literals.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ConfigurationError

__all__ = ["OFF_VALUES", "ON_VALUES", "VARIABLES", "EnvironmentVariable", "switch", "value"]

ON_VALUES = ("1", "true", "yes", "on")
OFF_VALUES = ("0", "false", "no", "off")


@dataclass(frozen=True)
class EnvironmentVariable:
    """One variable sparkcdc reads: a ``switch`` (on/off, with a default) or a ``value`` (a path, a target)."""

    name: str
    kind: str  # "switch" or "value"
    default: bool | None
    description: str


VARIABLES: dict[str, EnvironmentVariable] = {
    variable.name: variable
    for variable in (
        EnvironmentVariable(
            "SPARKCDC_PURE_PYTHON", "switch", False,
            "Run (and build) the plain Python source of the modules otherwise compiled with mypyc "
            "(sparkcdc.native): to test the pure path, or where a compiled module misbehaves.",
        ),
        EnvironmentVariable(
            "SPARKCDC_CLASS_ARCHIVE", "switch", True,
            "Start the driver's JVM from the class archive `sparkcdc prepare` makes (docs/performance.md).",
        ),
        EnvironmentVariable(
            "SPARKCDC_PYTHON_FORKS", "switch", True,
            "In a local session, fork Spark's Python worker processes from one pre-imported process "
            "(docs/performance.md).",
        ),
        EnvironmentVariable(
            "SPARKCDC_CACHE_DIR", "value", None,
            "Where sparkcdc keeps its caches (the class archive in <dir>/jvm/); default "
            "$XDG_CACHE_HOME/sparkcdc or ~/.cache/sparkcdc.",
        ),
        EnvironmentVariable(
            "SPARKCDC_PG_BINDIR", "value", None,
            "The PostgreSQL server binaries (initdb, pg_ctl) for the throwaway clusters of `make demo` "
            "and the tests; default the newest /usr/lib/postgresql/<major>/bin, else `pg_config --bindir`.",
        ),
        EnvironmentVariable(
            "SPARKCDC_CONFIG", "value", None,
            "The connector properties file the example Declarative Pipeline reads "
            "(examples/pipeline; docs/declarative-pipelines.md).",
        ),
        EnvironmentVariable(
            "SPARKCDC_TABLES", "value", None,
            "In the example Declarative Pipeline: the tables it types and mirrors (comma-separated; "
            "default the configuration's table.include.list).",
        ),
        EnvironmentVariable(
            "SPARKCDC_APPLY_TO", "value", None,
            "In the example Declarative Pipeline: the PostgreSQL conninfo its apply flows write to.",
        ),
    )
}


def switch(name: str) -> bool:
    """The switch ``name`` (declared in :data:`VARIABLES`): on, off, or its default when unset or empty."""
    variable = VARIABLES[name]
    if variable.kind != "switch":
        raise TypeError(f"{name} is a {variable.kind}, not a switch")
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return bool(variable.default)
    if value in ON_VALUES:
        return True
    if value in OFF_VALUES:
        return False
    raise ConfigurationError(f"{os.environ[name]!r} is neither on ({', '.join(ON_VALUES)}) nor off ({', '.join(OFF_VALUES)})",
                             prop=name)


def value(name: str) -> str | None:
    """What ``name`` (declared in :data:`VARIABLES`) holds, or None when unset or empty."""
    variable = VARIABLES[name]
    if variable.kind != "value":
        raise TypeError(f"{name} is a {variable.kind}, not a value")
    return os.environ.get(name, "").strip() or None
