"""Where applied changes land: PostgreSQL (COPY + MERGE), Delta Lake (deltalake) and Apache Iceberg
(pyiceberg). :mod:`.base`: the protocol; :mod:`.registry`: a location to its target; :mod:`.shared`:
what the targets share."""

from .base import ApplyTarget, TargetColumn, already_applied
from .registry import TargetKind, kind_for, register_target, target_for

__all__ = ["ApplyTarget", "TargetColumn", "TargetKind", "already_applied", "kind_for", "register_target", "target_for"]
