"""Which apply target a location names, and opening it.

A location's form names its target: ``postgresql://…`` (or ``postgres://``) a PostgreSQL database,
``iceberg:<catalog>`` or ``iceberg+file:<warehouse>`` an Iceberg catalog, anything else (a path, a
``file://``, ``s3://``, ``az://``, ``gs://`` URI) a Delta Lake root. The targets are imported only
when a location names them, so opening a Delta target needs neither psycopg nor pyiceberg, and
neither :mod:`.base` nor this module imports a target at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import TargetError
from .base import ApplyTarget

__all__ = ["TargetKind", "kind_for", "register_target", "target_for"]


@dataclass(frozen=True)
class TargetKind:
    """One kind of target: the location prefixes that name it and the class that opens it, as
    ``module:Class`` (imported when a location names it)."""

    name: str
    prefixes: tuple[str, ...]
    factory: str

    def matches(self, location: str) -> bool:
        return location.startswith(self.prefixes)

    def load(self) -> Callable[..., ApplyTarget]:
        module, _, attribute = self.factory.partition(":")
        opener: Callable[..., ApplyTarget] = getattr(importlib.import_module(module), attribute)
        return opener


#: The kinds named by a prefix, tried in order; a location none of them names is a Delta Lake root.
_KINDS: list[TargetKind] = [
    TargetKind("PostgreSQL", ("postgresql://", "postgres://"), "sparkcdc.apply.targets.postgres:PostgresTarget"),
    TargetKind("Apache Iceberg", ("iceberg:", "iceberg+file:"), "sparkcdc.apply.targets.iceberg:IcebergTarget"),
]
_DEFAULT = TargetKind("Delta Lake", (), "sparkcdc.apply.targets.delta:DeltaTarget")


def register_target(kind: TargetKind) -> None:
    """Add a kind of target, tried before the built-in ones (a prefix of its own wins)."""
    if not kind.prefixes:
        raise TargetError(f"target kind {kind.name}: name the location prefixes that select it")
    _KINDS.insert(0, kind)


def kind_for(location: str) -> TargetKind:
    """The kind of target ``location`` names."""
    if not location:
        raise TargetError("an apply target location is required (postgresql://…, iceberg:<catalog>, or a Delta Lake path)")
    return next((kind for kind in _KINDS if kind.matches(location)), _DEFAULT)


def target_for(location: str, **options: Any) -> ApplyTarget:
    """Open the target ``location`` names (see the module doc); ``options`` go to its class."""
    return kind_for(location).load()(location, **options)
