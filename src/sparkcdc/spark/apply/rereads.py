"""Reading a source table again: the applier's answer to columns whose values the mirror cannot
have from the stream (added with a value no WAL record carries, renamed or dropped where the stream
could not tell, changed type in a way that is not a widening). It signals an incremental snapshot
of the table through the first usable signal channel (:func:`read_again`).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence

from ...apply.errors import ApplyError
from ...apply.spec import ResolvedSpec
from ..source.options import config_from_options

__all__ = ["read_again"]

log = logging.getLogger(__name__)


def read_again(properties: Mapping[str, str], resolved: ResolvedSpec, columns: Sequence[str], why: str) -> None:
    """Signal an incremental snapshot of the source table, whose rows' values of ``columns`` the
    mirror cannot have from the stream (``why``)."""
    from ...engine.core.signals import READ_AGAIN, Signal, enabled_channels
    from ...engine.signal_channels import open_channel

    table = resolved.spec.qualified_table
    config = config_from_options(properties)
    usable = [name for name in enabled_channels(config)
              if name != "source" or config.settings.signal_data_collection]
    if not usable:
        raise ApplyError(
            f"column(s) {', '.join(columns)} of {table} {why}: the mirror {resolved.target} must read the table again, and "
            f"sparkcdc asks for that with an incremental snapshot signal, but no signal channel is set up: set "
            f"signal.data.collection (the source channel), or enable the file or kafka channel (signal.enabled.channels), "
            f"and restart the run", table=table)
    data = {"data-collections": [table], "type": "incremental", READ_AGAIN: True}
    signal = Signal(f"sparkcdc-reread-{uuid.uuid4().hex[:12]}", "execute-snapshot", json.dumps(data), usable[0])
    channel = open_channel(config, usable[0])
    try:
        where = channel.send(signal)
    finally:
        channel.close()
    log.warning("%s: column(s) %s %s; an incremental snapshot of the table reads them again (signal %s through %s)",
                table, ", ".join(columns), why, signal.id, where)
