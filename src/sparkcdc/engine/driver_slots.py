"""What the driver does to the connector's replication slots, apart from planning: creating them,
making them failover slots, confirming them when a batch commits, and checking them against a
restarted query's checkpoint (``offset.mismatch.strategy``, :mod:`.core.offset_mismatch`).

:class:`~.planner.ConnectorPlanner` calls these with its admin connection; they hold no state of
their own, so each is read (and tested) as one decision about one slot.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import psycopg

from ..debezium.config import ConnectorConfig
from ..errors import PipelineError
from ..lsn import format_lsn
from ..postgres.errors import SlotInUseError
from ..postgres.slots import (
    SlotState,
    advance_slot,
    create_logical_slot,
    get_slot,
    invalidation_explained,
    set_slot_failover,
    slot_failover,
)
from .core.offset_mismatch import resume_of, trusts_slot
from .core.offsets import SourceOffset
from .core.state_store import StreamState, StreamStateStore
from .standby import log_slot_creation_wait

__all__ = [
    "SlotInvalidatedError", "SlotMismatchError", "check_resumed_slot", "confirm_slot", "confirm_slots", "ensure_failover",
    "ensure_slots", "missing_slot_error", "refuse_invalidated", "server_of",
]

log = logging.getLogger(__name__)


class SlotMismatchError(PipelineError):
    """The slot and the checkpointed offset disagree in a way that would lose or repeat changes."""


class SlotInvalidatedError(SlotMismatchError):
    """The server invalidated the slot a checkpoint resumes from (``wal_status`` lost: its WAL removed past
    ``max_slot_wal_keep_size``, idle past ``idle_replication_slot_timeout``, ...): the changes since the
    checkpoint cannot be read any more. ``snapshot.mode=when_needed`` takes a new snapshot instead."""


def ensure_slots(admin: psycopg.Connection, conninfo: str, names: tuple[str, ...], *, failover: bool, standby: bool) -> SlotState:
    """Every stream's slot (``names``, the main one first) created where missing, the main one last (it is the
    newest: the others are not behind it); the main one's state."""
    for name in (*names[1:], names[0]):
        slot = get_slot(admin, name)
        if slot is None:
            if standby:
                log_slot_creation_wait(name)
            create_logical_slot(admin, name, failover=failover)
            slot = get_slot(admin, name)
            assert slot is not None
        ensure_failover(admin, conninfo, name, failover=failover)
    return slot


def ensure_failover(admin: psycopg.Connection, conninfo: str, name: str, *, failover: bool) -> None:
    """slot.failover=true: a slot found without the flag (made by an earlier run, or by hand) gets it, so
    that standbys copy it from now on. slot.failover=false leaves a failover slot as it is."""
    if failover and slot_failover(admin, name) is False:
        log.warning("slot %s is not a failover slot: making it one (slot.failover=true)", name)
        set_slot_failover(conninfo, name, True)


def confirm_slots(admin: psycopg.Connection, config: ConnectorConfig, names: tuple[str, ...], lsn: int) -> None:
    """Every stream's slot confirmed up to ``lsn`` (the end of a committed batch)."""
    if config.settings.lsn_flush_mode == "manual":
        return  # lsn.flush.mode=manual: the slot is moved by someone else, never by sparkcdc
    for name in names:
        confirm_slot(admin, config, name, lsn)


def confirm_slot(admin: psycopg.Connection, config: ConnectorConfig, name: str, lsn: int) -> None:
    """Confirm ``lsn`` to the slot ``name``, trying for ``lsn.flush.timeout.ms`` while the slot is held
    (the last batch's walsender may still be exiting after its task closed it); then
    ``lsn.flush.timeout.action``: fail, or leave the slot where it is (a later batch confirms it)."""
    slot = get_slot(admin, name)
    if slot is None or (slot.confirmed_flush_lsn or 0) >= lsn:
        return
    deadline = time.monotonic() + config.settings.lsn_flush_timeout_ms / 1000
    while True:
        try:
            advance_slot(admin, name, lsn)
            return
        except SlotInUseError as exc:
            if time.monotonic() <= deadline:
                time.sleep(0.05)
                continue
            action = config.settings.lsn_flush_timeout_action
            if action == "fail":
                raise SlotInUseError(f"slot {name!r} could not be confirmed up to {format_lsn(lsn)} within "
                                     f"lsn.flush.timeout.ms={config.settings.lsn_flush_timeout_ms}: {exc} (with "
                                     "lsn.flush.timeout.action=warn or ignore the query goes on and a later batch "
                                     "confirms it)", sqlstate=exc.sqlstate, slot=name) from exc
            if action == "warn":
                log.warning("slot %s: not confirmed up to %s within lsn.flush.timeout.ms=%s (%s); a later batch confirms it",
                            name, format_lsn(lsn), config.settings.lsn_flush_timeout_ms, exc)
            return


def refuse_invalidated(admin: psycopg.Connection, slots: dict[str, SlotState | None], start: SourceOffset) -> None:
    """A slot the server invalidated cannot give the changes since the checkpoint: an error naming
    it, why (the setting behind it) and the ways on, rather than the server's error at the next batch."""
    for name, slot in slots.items():
        if slot is not None and slot.invalidated:
            raise SlotInvalidatedError(
                f"slot {name!r} on {server_of(admin)} was invalidated by the server "
                f"({invalidation_explained(slot, admin)}): the changes since the checkpoint's "
                f"{format_lsn(start.lsn)} cannot be read any more; use snapshot.mode=when_needed to take a new "
                f"snapshot, or drop the slot and start with a new checkpoint", lsn=start.lsn)


def check_resumed_slot(admin: psycopg.Connection, config: ConnectorConfig, conninfo: str, name: str, slot: SlotState | None,
                       start: SourceOffset, checkpoint: int, store: StreamStateStore) -> tuple[int, bool]:
    """A restarted query's slot against its checkpoint, as offset.mismatch.strategy says (see
    engine/core/offset_mismatch.py): where its stream reads from (written to the stream's ``store``
    when past the checkpoint), and whether the slot is left behind the checkpoint at the start (it is
    then confirmed only when a batch commits, not when batches are planned)."""
    strategy = config.settings.offset_mismatch_strategy
    failover = config.settings.slot_failover
    if slot is None:
        if not trusts_slot(strategy):
            raise missing_slot_error(admin, config, name, start)
        log.warning("slot %r does not exist: creating it and resuming from its start, the changes since the checkpoint's "
                    "%s are skipped (offset.mismatch.strategy=%s)", name, format_lsn(start.lsn), strategy)
        create_logical_slot(admin, name, failover=failover)
        slot = get_slot(admin, name)
        assert slot is not None
    ensure_failover(admin, conninfo, name, failover=failover)
    confirmed = slot.confirmed_flush_lsn or 0
    resume = resume_of(strategy, name, checkpoint, confirmed, may_advance=config.settings.lsn_flush_mode != "manual")
    if resume.error is not None:
        raise SlotMismatchError(resume.error)
    if resume.note is not None:
        (log.warning if resume.skipped else log.info)("%s", resume.note)
    held = False
    if resume.advance_slot_to is not None:
        confirm_slot(admin, config, name, resume.advance_slot_to)
    elif confirmed < checkpoint:
        held = True
    if resume.read_from > checkpoint:
        # This stream's first batch reads from the slot (batch_reader.first_stream_lsn): its state says so.
        state = store.read(start.lsn)
        store.write(start.lsn, replace(state, stream_from_lsn=max(resume.read_from, state.stream_from_lsn or 0))
                    if state is not None else StreamState(None, None, stream_from_lsn=resume.read_from))
    return resume.read_from, held


def missing_slot_error(admin: psycopg.Connection, config: ConnectorConfig, name: str, start: SourceOffset) -> SlotMismatchError:
    """The error of a checkpoint whose slot ``name`` is gone."""
    return SlotMismatchError(
        f"slot {name!r} does not exist on {server_of(admin)}, but the checkpoint resumes from "
        f"{format_lsn(start.lsn)}: the changes since then are lost{_missing_slot_hint(config)}; use "
        "snapshot.mode=when_needed to take a new snapshot, offset.mismatch.strategy=trust_slot to go on "
        "from a new slot, or start with a new checkpoint"
    )


def server_of(admin: psycopg.Connection) -> str:
    """The server the driver is connected to, host:port (one of several database.hostname may list)."""
    return f"{admin.info.host}:{admin.info.port}"


def _missing_slot_hint(config: ConnectorConfig) -> str:
    """Why a checkpointed slot may be missing where several hosts are listed: a failover to a standby
    that did not hold it (no failover slot, or promoted before the slot was synchronised to it)."""
    if "," not in config.settings.database_hostname:
        return ""
    if not config.settings.slot_failover:
        return (" (this server may be a promoted standby: with slot.failover=false the slot was never "
                "synchronised to standbys)")
    return (" (this server may be a standby promoted before the failover slot was synchronised to it: see "
            "pg_replication_slots.synced on standbys, sync_replication_slots and synchronized_standby_slots)")
