"""What the appliers counted on a Spark Connect server, brought back to the client.

On Spark Connect a ``foreachBatch`` function runs in a Python process of the server (a Connect
client of its own server, on a *clone* of the client's session): the ``ChangeApplier`` objects
that count the events each target applied and the seconds of each phase are unpickled copies
there, and the client's stay at zero. Observed metrics cannot carry these figures (they are
computed over the batch's rows before the targets commit, and know nothing of a batch a target
had already applied), so the server's copy hands them over through the one thing both sides
share: the client's session. After each batch it sets a runtime setting of that session
(``sparkcdc.run.apply.<token>``, JSON, cumulative since the query started) from a connection of
its own (``SPARK_CONNECT_LOCAL_URL``, which the server gives its ``foreachBatch`` workers, with the
client's session id); the client reads it when the query has ended. A query restarted from its
checkpoint runs a new worker with fresh counts under a new token; the client sums them.

Losing these figures never fails a batch: a setting that cannot be written is logged and skipped.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ApplyStatsChannel", "merge_apply_stats"]

log = logging.getLogger(__name__)

#: The prefix of the client session's settings that carry the server's counts.
SETTING_PREFIX = "sparkcdc.run.apply."

#: The server's connections to client sessions, per session id (one per foreachBatch worker process).
_SESSIONS: dict[str, Any] = {}


class ApplyStatsChannel:
    """One query's channel: made on the client (``session_id``: the client's session), pickled with
    the ``foreachBatch`` function, :meth:`publish` called on the server after each batch."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.setting = f"{SETTING_PREFIX}{uuid.uuid4().hex}"

    def publish(self, appliers: Iterable[Any]) -> None:
        """The appliers' counts since the query started, set in the client's session (the server)."""
        stats = {
            applier.target.description: {"events": dict(applier.stats.events),
                                         "seconds": dict(applier.stats.seconds), "batches": applier.stats.batches}
            for applier in appliers
        }
        try:
            _client_session(self.session_id).conf.set(self.setting, json.dumps(stats))
        except Exception as exc:  # noqa: BLE001 - figures of the summary, not data: never fail the batch
            _SESSIONS.pop(self.session_id, None)
            log.warning("cannot hand the apply counts back to the Spark Connect client (the run's summary will lack "
                        "them): %s", exc)

    def read(self, spark: Any) -> dict[str, dict[str, Any]]:
        """What the server published for this query (the client); empty when it published nothing."""
        try:
            text = spark.conf.get(self.setting, None)
        except Exception:  # noqa: BLE001 - a session that went away: the summary lacks the figures
            log.debug("reading %s from the Spark Connect session failed", self.setting, exc_info=True)
            return {}
        return json.loads(text) if text else {}


def _client_session(session_id: str) -> Any:
    """A connection of this server-side process to the client's session (made once, kept: it is
    never stopped, which would release the client's session)."""
    session = _SESSIONS.get(session_id)
    if session is None:
        from pyspark.sql.connect.session import SparkSession

        url = os.environ.get("SPARK_CONNECT_LOCAL_URL")
        if not url:
            raise RuntimeError("SPARK_CONNECT_LOCAL_URL is not set: this is not a Spark Connect foreachBatch worker")
        # Not the builder: create() would make it this process's default session, which the batch's own is.
        session = _SESSIONS[session_id] = SparkSession(connection=f"{url};session_id={session_id}")
    return session


def merge_apply_stats(published: Iterable[Mapping[str, Mapping[str, Any]]]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """The summary's ``applied`` and ``apply_seconds`` from what each query (start) published."""
    applied: dict[str, dict[str, int]] = {}
    seconds: dict[str, dict[str, float]] = {}
    for stats in published:
        for target, figures in stats.items():
            if not figures.get("batches"):
                continue
            events = applied.setdefault(target, {})
            for table, count in figures.get("events", {}).items():
                events[table] = events.get(table, 0) + int(count)
            phases = seconds.setdefault(target, {})
            for phase, value in figures.get("seconds", {}).items():
                phases[phase] = round(phases.get(phase, 0.0) + float(value), 3)
    return applied, seconds
