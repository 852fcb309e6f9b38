"""A stream range decoded in processes of its task (``sparkcdc.stream.decode.processes``, the engine's
:mod:`sparkcdc.engine.parallel_stream`): the outputs that can take their records from there share
what is said here, once: the two settings they own, how many processes ``auto`` starts, and the
warning when the chunk size is given where ``auto`` starts none.

Two outputs decode so: ``topic_files`` (the processes write the files' bytes themselves) and
``changes`` (the processes make the typed blocks and hand them to the task). Each says whether
several processes pay for it (``pays``): they do where decoding is the stream's cost, as with zstd
topic files and the changes layout's blocks, not where writing plain files' bytes is
(docs/performance.md, "Decoding processes by default").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...debezium.property_rules import CHUNK_MESSAGES as _CHUNK
from ...debezium.property_rules import DECODE_PROCESSES as _PROCESSES
from .base import OwnProperty

if TYPE_CHECKING:
    from ...debezium.config import ConnectorConfig
    from .base import Output, PlannedPartition

__all__ = ["AUTO_PROCESSES_MAX", "DECODING_PROPERTIES", "decoded_pieces", "decoding_processes", "warn_idle_chunk_messages"]

log = logging.getLogger(__name__)

#: The most decoding processes ``sparkcdc.stream.decode.processes=auto`` starts (each holds a
#: connection-free decoder and its buffers; past the cores that decode, more only wait).
AUTO_PROCESSES_MAX = 4

_DECODES = "only the topic_files and changes layouts decode in processes"


def _one_process(config: ConnectorConfig, name: str, value: str) -> bool:
    return config.setting(name) in (None, 1)  # auto is 1 in the layouts that decode in no process


#: The settings of the outputs that decode in processes (their ``own_properties``): refused with any other.
DECODING_PROPERTIES = (
    OwnProperty(_PROCESSES, f"decodes the stream in processes of its task, and {_DECODES}", _one_process),
    OwnProperty(_CHUNK, f"sizes what each decoding process is given, and {_DECODES}"),
)


def decoding_processes(config: ConnectorConfig, *, pays: bool) -> int:
    """The processes that decode a stream range: ``sparkcdc.stream.decode.processes`` as given, or for
    ``auto`` the cores this executor process may run on (at most :data:`AUTO_PROCESSES_MAX`) where
    they ``pay`` for the output, and where the configuration allows several (the rules of
    :mod:`sparkcdc.debezium.property_rules`, which an explicit number would break with an error).
    A stream batch is one task, alone on its executor's other cores while it runs."""
    from ...debezium.config import ConnectorConfig as Config
    from ...errors import ConfigurationError

    given = config.settings.sparkcdc_stream_decode_processes
    if given is not None:
        return int(given)
    if not pays:
        return 1
    cores = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, AUTO_PROCESSES_MAX)
    if cores < 2:
        return 1
    try:
        Config({**config.raw, _PROCESSES: str(cores)})
    except ConfigurationError:
        return 1  # a rule several processes would break (signals, schema changes, post processors): one
    return cores


def warn_idle_chunk_messages(config: ConnectorConfig, processes: int) -> None:
    """``sparkcdc.stream.decode.chunk.messages`` given where ``auto`` decodes in one process: said, not ignored."""
    if config.given(_CHUNK) and processes == 1:
        log.warning("%s has no effect: %s=auto decodes in one process here (plain topic files, one core, or a setting "
                    "several processes cannot follow); set %s to a number to decode in several", _CHUNK, _PROCESSES, _PROCESSES)


def decoded_pieces(output: Output, config: ConnectorConfig, partition: PlannedPartition,
                   encoder: Callable[[], Any]) -> Iterator[tuple[Any, Callable[[Any], None]]] | None:
    """A stream range's pieces as ``encoder()`` (a :class:`~sparkcdc.engine.decoding_process.PieceEncoder`)
    makes them in ``output``'s decoding processes: ``(header, reply)`` in WAL order; ``None`` where
    the task reads the work itself (not a stream range, one process, or a range too short to share)."""
    from ...engine.core.stream_range import StreamRange

    if not isinstance(partition.work, StreamRange):
        return None
    processes = output.decoding_processes(config)
    if processes == 1:
        return None
    from ...engine.work import read_stream_encoded

    return read_stream_encoded(config, partition.work, run_id=partition.run_id, processes=processes, encoder=encoder())
