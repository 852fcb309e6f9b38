"""Parallel streaming: the captured tables split over several replication slots and publications.

One slot is read by one walsender, which decodes the whole WAL on one core: a database whose
changes come faster than that falls behind whatever sparkcdc does after it. With
``sparkcdc.stream.slots=N`` the captured tables are split into N subsets, each published by its own
publication and read through its own slot, so N walsenders decode (and N tasks turn changes into
records) in parallel. This module is the one place that knows the streams: their slot and
publication names, which table goes to which, and which settings cannot work across them.

The offset stays one LSN: every stream reads the same WAL range of a micro-batch through its own
slot, and every slot is confirmed to the batch's end when Spark commits it. A table lives in one
stream, so its changes keep their order; a transaction spanning tables of several streams is seen
in each of them (its part there), which is what parallel streaming gives up.

Stream 0 is ``slot.name`` and ``publication.name`` themselves, so ``sparkcdc.stream.slots=1`` is
exactly the single-slot connector. Stream i > 0 uses ``<slot.name>_<i>`` and
``<publication.name>_<i>``.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from ...debezium.config import ConnectorConfig
from ...debezium.property_rules import ASSIGNMENT, SLOTS
from ...debezium.property_table import split_list
from ...errors import ConfigurationError

__all__ = ["StreamSlot", "assign_tables", "check_parallel_streaming", "stream_slot", "stream_slots"]

log = logging.getLogger(__name__)

_MAX_SLOT_NAME = 63  # NAMEDATALEN - 1


@dataclass(frozen=True)
class StreamSlot:
    """One of the parallel streams: its place, its slot and its publication."""

    index: int
    slot: str
    publication: str


def stream_slot(config: ConnectorConfig, index: int) -> StreamSlot:
    """Stream ``index`` of the configuration (0: ``slot.name`` and ``publication.name``)."""
    settings = config.settings
    if index == 0:
        return StreamSlot(0, settings.slot_name, settings.publication_name)
    return StreamSlot(index, f"{settings.slot_name}_{index}", f"{settings.publication_name}_{index}")


def stream_slots(config: ConnectorConfig) -> tuple[StreamSlot, ...]:
    """Every stream of the configuration, stream 0 first."""
    return tuple(stream_slot(config, i) for i in range(config.settings.sparkcdc_stream_slots))


def _listed(config: ConnectorConfig, count: int) -> dict[str, int]:
    listed: dict[str, int] = {}
    for entry in split_list(config.settings.sparkcdc_stream_slots_assignment):
        name, _, index = entry.rpartition(":")
        slot = int(index)
        if slot >= count:
            raise ConfigurationError(f"{entry!r} names slot {slot}, but {SLOTS}={count} has slots 0 to {count - 1}", prop=ASSIGNMENT)
        listed[name.strip().lower()] = slot
    return listed


def assign_tables(config: ConnectorConfig, tables: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The tables of each stream (in ``tables``' order): listed in ``sparkcdc.stream.slots.assignment``,
    else by the crc32 of ``schema.table`` (stable across processes and versions, unlike ``hash()``)."""
    count = config.settings.sparkcdc_stream_slots
    listed = _listed(config, count)
    out: list[list[tuple[str, str]]] = [[] for _ in range(count)]
    for schema, table in tables:
        name = f"{schema}.{table}"
        index = listed.get(name.lower())
        if index is None:
            index = zlib.crc32(name.encode()) % count
        out[index].append((schema, table))
    return out


def check_parallel_streaming(config: ConnectorConfig) -> None:
    """Refuse, naming the property, slot and publication names too long for several streams, and
    warn about what changes (the rules between properties are :mod:`sparkcdc.debezium.property_rules`',
    checked as the configuration is built)."""
    count = config.settings.sparkcdc_stream_slots
    if count == 1:
        return
    _listed(config, count)
    longest = stream_slot(config, count - 1)
    if len(longest.slot) > _MAX_SLOT_NAME:
        raise ConfigurationError(f"with {SLOTS}={count} the slots are named up to {longest.slot!r}, longer than "
                                       f"{_MAX_SLOT_NAME} characters: use a shorter slot.name", prop="slot.name")
    if len(longest.publication) > _MAX_SLOT_NAME:
        raise ConfigurationError(f"with {SLOTS}={count} the publications are named up to {longest.publication!r}, "
                                              f"longer than {_MAX_SLOT_NAME} characters: use a shorter publication.name", prop="publication.name")
    if config.provide_transaction_metadata:
        log.warning("%s=%d with provide.transaction.metadata=true: each stream emits its own BEGIN and END for the part of a "
                    "transaction in its tables (the ENDs share an id; each counts only its stream's events)", SLOTS, count)
