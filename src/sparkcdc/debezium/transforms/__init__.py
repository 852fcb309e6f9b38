"""Single message transforms and predicates, as Kafka Connect runs them on Debezium's records.

A Debezium configuration's ``transforms=`` and ``predicates=`` run here unchanged, on every record
sparkcdc emits (topic files, Kafka, the lines and columns layouts; heartbeats, transaction metadata,
notifications and schema change records too, as Kafka Connect applies them to every source record).
The typed ``changes`` layout, ``table_changes`` and ``apply_changes`` read the records as the
connector made them, before any transform (docs/transforms.md).

:func:`~.chain.transform_chain` reads the configuration; :class:`~.chain.TransformChain` runs it;
each class lives in a module of its own, found through :mod:`.registry`.
"""

from .base import Option, Options, PerSchema, Predicate, RecordError, Transform, TransformConfigError, copy_record
from .chain import Step, TransformChain, closest, transform_chain

__all__ = [
    "Option", "Options", "PerSchema", "Predicate", "RecordError", "Step", "Transform", "TransformChain", "TransformConfigError",
    "closest", "copy_record", "transform_chain",
]
