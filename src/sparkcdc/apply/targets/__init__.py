"""Where applied changes land: PostgreSQL (COPY + MERGE), Delta Lake (deltalake) and Apache Iceberg
(pyiceberg). :mod:`.base`: the protocol; :mod:`.registry`: a location to its target; what targets share, in
modules named for it: :mod:`.table_names`, :mod:`.prepared_tables`, and for the lake formats
:mod:`.lake_target`, :mod:`.lake_staging`, :mod:`.lake_commits`, :mod:`.lake_evolution`,
:mod:`.table_layout`, :mod:`.storage_types`, :mod:`.library_errors`. ``TargetColumn`` (what
``prepare`` takes) is :mod:`sparkcdc.apply.target_column`'s, exported here with the protocol."""

from ..target_column import TargetColumn
from .base import ApplyTarget, already_applied
from .registry import TargetKind, kind_for, register_target, target_for

__all__ = ["ApplyTarget", "TargetColumn", "TargetKind", "already_applied", "kind_for", "register_target", "target_for"]
