"""``offset.mismatch.strategy``: what a restarted query does when its checkpoint and its slot disagree.

The checkpoint (the Spark offset a restarted query starts from) and the slot's ``confirmed_flush_lsn``
normally agree: sparkcdc confirms a batch's end to the slot only after Spark committed the batch.
They part when someone moved the slot (``pg_replication_slot_advance``), when the slot was dropped and
created again, or when the checkpoint was replaced by an older copy. Debezium 3.4+ lets the
configuration say which one is right (its PostgreSQL connector documentation, ``offset.mismatch.strategy``):

=====================  ==================================  =========================================
strategy               slot ahead of the checkpoint        checkpoint ahead of the slot
=====================  ==================================  =========================================
``no_validation``      read from the checkpoint; the       read from the checkpoint; the slot is not
                       server starts at the slot (PG 15+),  moved at the start (it is confirmed when
                       so the changes in between are lost   the first batch commits)
                       (a warning says so)
``trust_offset``       error: changes would be lost         the slot is advanced to the checkpoint
``trust_slot``         resume from the slot (the changes    as ``no_validation``
                       in between are skipped, on purpose)
``trust_greater_lsn``  as ``trust_slot``                    as ``trust_offset``
=====================  ==================================  =========================================

Advancing the slot is skipped under ``lsn.flush.mode=manual`` (Debezium's advance is skipped when
the connector does not flush). A slot that is gone is another matter: the ``trust_slot`` strategies
create it again and resume from its start (the slot is what they trust; ``snapshot.mode=when_needed``,
decided before this, takes a new snapshot instead), the others refuse to go on.

Pure: the driver (:mod:`sparkcdc.engine.driver_slots`, for the planner) reads the slot and acts on
the :class:`Resume` this returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lsn import format_lsn

__all__ = ["STRATEGIES", "Resume", "resume_of", "trusts_slot"]

STRATEGIES = ("no_validation", "trust_offset", "trust_slot", "trust_greater_lsn")


@dataclass(frozen=True)
class Resume:
    """How one stream resumes: from ``read_from``; the slot advanced to ``advance_slot_to`` first
    (None: not at the start); ``error``: refuse to resume, saying this; ``note``: what to log."""

    read_from: int
    advance_slot_to: int | None = None
    error: str | None = None
    note: str | None = None
    skipped: bool = False  # the changes between the checkpoint and the slot are skipped (a warning, not info)


def trusts_slot(strategy: str) -> bool:
    """Whether ``strategy`` takes the slot's position over an older checkpoint (trust_slot, trust_greater_lsn)."""
    return strategy in ("trust_slot", "trust_greater_lsn")


def resume_of(strategy: str, slot_name: str, checkpoint_lsn: int, slot_lsn: int, *, may_advance: bool = True) -> Resume:
    """Where a stream whose checkpoint is at ``checkpoint_lsn`` resumes, its slot being confirmed up
    to ``slot_lsn`` (see the module docstring); ``may_advance``: the connector moves slots
    (``lsn.flush.mode`` is not manual)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"offset.mismatch.strategy={strategy!r} is not one of {', '.join(STRATEGIES)}")
    setting = f"offset.mismatch.strategy={strategy}"
    if slot_lsn > checkpoint_lsn:
        gap = (f"slot {slot_name!r} is at {format_lsn(slot_lsn)}, ahead of the checkpoint's {format_lsn(checkpoint_lsn)}")
        if strategy == "trust_offset":
            return Resume(checkpoint_lsn, error=f"{gap}: the changes in between cannot be read again ({setting}: the "
                                                "checkpoint is right, so this is data loss; trust_slot or trust_greater_lsn "
                                                "resume from the slot)")
        if trusts_slot(strategy):
            return Resume(slot_lsn, note=f"{gap}: resuming from the slot, the changes in between are skipped ({setting})",
                          skipped=True)
        return Resume(checkpoint_lsn, note=f"{gap}: the changes in between cannot be read again; the server streams from "
                                           f"the slot ({setting})", skipped=True)
    if slot_lsn < checkpoint_lsn and strategy in ("trust_offset", "trust_greater_lsn"):
        if not may_advance:
            return Resume(checkpoint_lsn, note=f"slot {slot_name!r} is at {format_lsn(slot_lsn)}, behind the checkpoint's "
                                               f"{format_lsn(checkpoint_lsn)}; not advanced (lsn.flush.mode=manual, {setting})")
        return Resume(checkpoint_lsn, advance_slot_to=checkpoint_lsn,
                      note=f"slot {slot_name!r} is at {format_lsn(slot_lsn)}, behind the checkpoint's {format_lsn(checkpoint_lsn)}: "
                           f"advancing it to the checkpoint ({setting})")
    return Resume(checkpoint_lsn)
