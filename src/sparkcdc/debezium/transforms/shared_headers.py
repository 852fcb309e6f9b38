"""A delete and its tombstone share one headers object in Debezium, and Debezium's transforms change
headers in place.

Debezium builds the tombstone that follows a delete with the very same Kafka Connect ``Headers``
object as the delete, and its transforms add headers with ``record.headers().add(...)`` (and
remove them with ``remove``) instead of copying. So a header a Debezium transform adds to a delete
also appears on the tombstone right after it, as Debezium 3.6.3 emits it (seen with
``ExtractNewRecordState``'s ``add.headers`` under ``rewrite-with-tombstone`` and with
``ExtractChangedRecordState``'s headers; ``HeaderToValue`` copies the headers instead, and its
``move`` leaves the tombstone's alone). sparkcdc's headers are immutable tuples, so each such
transform replays its own change on the tombstone: :class:`DeleteHeaders` remembers what it did to
the last delete and does it again to that delete's tombstone.
"""

from __future__ import annotations

from typing import Any

from ..records import ChangeRecord, Header
from .base import copy_record

__all__ = ["DeleteHeaders"]


class DeleteHeaders:
    """What one transform did to the headers of the delete it saw last."""

    __slots__ = ("_added", "_key", "_removed", "_topic")

    def __init__(self) -> None:
        self._topic: str | None = None
        self._key: Any = None
        self._added: tuple[Header, ...] = ()
        self._removed: frozenset[str] = frozenset()

    def changed_delete(self, record: ChangeRecord, added: tuple[Header, ...] = (), removed: frozenset[str] = frozenset()) -> None:
        """``record`` (as it reached the transform) is a delete to whose headers the transform
        appended ``added`` and from which it removed the headers named ``removed``."""
        self._topic, self._key, self._added, self._removed = record.topic, record.key, added, removed

    def forget(self) -> None:
        """The record after a delete is not its tombstone: nothing is shared any more."""
        self._topic = None

    def tombstone(self, record: ChangeRecord) -> ChangeRecord:
        """``record``, a tombstone, with the change made to its delete's headers, if it follows it."""
        topic = self._topic
        self._topic = None
        if topic is None or topic != record.topic or self._key != record.key or not (self._added or self._removed):
            return record
        kept = record.headers if not self._removed else tuple(h for h in record.headers if h.name not in self._removed)
        return copy_record(record, headers=kept + self._added)
