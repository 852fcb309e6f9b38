"""The interface every output implements: one object per ``sparkcdc.output.layout``.

Why: the layout decides four things at once, which used to be decided by comparing its name
wherever they happen (the source's schema and its reader, the runner's record count, the views):
what the source's rows are, what a reader task does with its records (encode them as rows; write
topic files; produce to Kafka), what the driver does with a batch's rows (publish the files the
tasks wrote, collect what the tasks committed) and which settings mean something. An output owns
all four, so that adding one, or changing one, happens in one place; the registry
(:mod:`sparkcdc.spark.outputs`) is the one place that maps the layout's name to its output.

As Debezium's sink SPI does for its destinations, the interface gives the source one call per
step, and each destination one implementation. The reader side is the data path: :meth:`Output.read`
is called once per partition and returns the output's own generator over the engine's batches, so
choosing the output costs nothing per record.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

    from ...debezium.config import ConnectorConfig

__all__ = ["BatchWriter", "OwnProperty", "Output", "PlannedPartition", "ignored_when"]


class PlannedPartition(Protocol):
    """What a reader task is given (the source's partition): the planned work and where it sits."""

    work: Any  # a snapshot chunk or a stream range (sparkcdc.engine)
    run_id: str  # the driver run that planned it
    index: int  # the partition's place in its batch
    snapshot_batch: bool  # the batch reads an initial (or blocking) snapshot's chunks


#: The driver's ``foreachBatch`` function for an output's rows: ``(batch, batch_id)``.
BatchWriter = Callable[["DataFrame", int], None]


@dataclass(frozen=True)
class OwnProperty:
    """A property only one output reads: given with another output it would do nothing, so it is
    refused, naming it (:func:`sparkcdc.spark.outputs.refuse_other_outputs_settings`).

    ``name`` is a property, or a family when it ends with ``.`` (every property under it);
    ``purpose`` says what it does, for the refusal; ``inert`` tells a value that does nothing in any
    output (the property's "off" value), which is not refused."""

    name: str
    purpose: str
    inert: Callable[[ConnectorConfig, str, str], bool] | None = None

    def given(self, config: ConnectorConfig) -> list[str]:
        """The names of this property (or family) that ``config`` sets to a value that does something."""
        raw = config.raw
        names = sorted(n for n in raw if n.startswith(self.name)) if self.name.endswith(".") else [self.name]
        return [n for n in names if raw.get(n) and not (self.inert is not None and self.inert(config, n, raw[n]))]


def ignored_when(off: str) -> Callable[[ConnectorConfig, str, str], bool]:
    """An :attr:`OwnProperty.inert` test: the value ``off`` (as the property reads it) does nothing."""

    def inert(config: ConnectorConfig, name: str, value: str) -> bool:
        return value.strip().lower() == off

    return inert


class Output(ABC):
    """One value of ``sparkcdc.output.layout``: the source's rows, the reader tasks' side, the
    driver's side and the output's own settings. Stateless: one instance serves every query."""

    #: The layout's name (the value of ``sparkcdc.output.layout``).
    name: ClassVar[str]
    #: The properties only this output reads (see :class:`OwnProperty`).
    own_properties: ClassVar[tuple[OwnProperty, ...]] = ()
    #: Whether the output creates topics: Kafka Connect's ``topic.creation.*`` apply (otherwise: warned about).
    creates_topics: ClassVar[bool] = False
    #: Whether the output writes the Kafka partition a transform chose (otherwise: warned about).
    writes_partitions: ClassVar[bool] = False
    #: Whether a row holds a record's Debezium JSON key, value and headers (``table_changes`` parses them).
    carries_events: ClassVar[bool] = False
    #: Whether the rows hold each table's changes already typed (``table_changes`` decodes them).
    carries_typed_changes: ClassVar[bool] = False

    # -- the rows ------------------------------------------------------------------------------------
    @abstractmethod
    def schema(self) -> str:
        """The source's rows, as a Spark DDL string."""

    # -- the driver's side ---------------------------------------------------------------------------
    def check(self, config: ConnectorConfig) -> None:
        """The output's own settings, checked on the driver as the query is built (what a reader
        task would otherwise fail on): refused naming the property. Nothing to check by default."""
        return None

    def batch_writer(self, config: ConnectorConfig) -> BatchWriter | None:
        """What the driver does with a batch's rows, for an output that writes its destination
        itself (publish the files the tasks wrote, collect what they committed); None where the
        rows go to the query's own sink."""
        return None

    @abstractmethod
    def record_count(self) -> Column:
        """The aggregate counting a batch's records from its rows (a row may stand for many)."""

    # -- the reader's side (executors) ---------------------------------------------------------------
    def decoding_processes(self, config: ConnectorConfig) -> int:
        """The processes of a stream task that decode its range for this output
        (``sparkcdc.stream.decode.processes``, :mod:`.decoding`); 1 where the task decodes it itself."""
        return 1

    @abstractmethod
    def read(self, config: ConnectorConfig, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        """A partition's planned work as the rows of :meth:`schema`, as Arrow record batches; an
        output that writes its destination itself writes (or produces) here, from the batches the
        engine made, and its rows say what it wrote."""
