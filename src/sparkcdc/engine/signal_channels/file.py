"""The ``file`` signal channel (``signal.file``): one JSON signal per line, read from a cursor.

The line format is Debezium's (``FileSignalChannel``): ``{"id": "...", "type": "execute-snapshot",
"data": {"data-collections": ["public.a"]}}``, one object per line; blank lines are skipped.

Why a cursor instead of Debezium's truncation. Debezium reads the whole file and empties it at
once, before the signals are acted on: a crash in between loses them, and a line appended between
the read and the truncation is lost too. sparkcdc never writes to the file. Its position (bytes
consumed) is in the batch's end offset, so a signal is acted on exactly once: in the batch whose
committed offset moved the cursor past its line. Only complete lines are consumed (a line still
being written waits for its newline).

The cursor also names the file (path, inode) and fingerprints the bytes just before the position.
A file replaced (another inode), truncated (shorter than the position) or rewritten in place (the
fingerprint differs) is read again from its start: its lines are new signals. Lines are never
removed, so a *new* checkpoint reads the file from its start again, as Debezium reads a file left
with signals in it; empty the file before starting a new checkpoint if its signals were acted on.

Polling costs one ``stat`` when nothing changed (the size and modification time are in the cursor).
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from ..core.signals import Signal, SignalError
from .base import PolledChannel, SignalSendError, signal_from_json, signal_to_json

__all__ = ["FileSignalChannel"]

log = logging.getLogger("sparkcdc.signals")

#: Bytes before the position whose digest tells the same file from a rewritten one.
_FINGERPRINT_BYTES = 256


class FileSignalChannel(PolledChannel):
    name = "file"

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    # -- reading ---------------------------------------------------------------------------------
    def poll(self, cursor: Any) -> tuple[list[Signal], Any]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return [], cursor
        except OSError as exc:
            log.warning("signal.file %s cannot be read: %s", self.path, exc)
            return [], cursor
        if cursor and cursor.get("path") == str(self.path) and cursor.get("ino") == stat.st_ino \
                and cursor.get("size") == stat.st_size and cursor.get("mtime_ns") == stat.st_mtime_ns:
            return [], cursor  # nothing written since the last read
        try:
            with open(self.path, "rb") as handle:
                start = self._resume_at(handle, cursor, stat)
                handle.seek(start)
                text = handle.read()
                end = start + text.rfind(b"\n") + 1  # complete lines only
                fingerprint = self._fingerprint(handle, end)
        except OSError as exc:
            log.warning("signal.file %s cannot be read: %s", self.path, exc)
            return [], cursor
        signals = self._signals(text[:end - start], start)
        # The size and time seen by stat: a later write changes one of them, and is read then.
        return signals, {"path": str(self.path), "ino": stat.st_ino, "offset": end, "tail": fingerprint,
                         "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}

    def _resume_at(self, handle: Any, cursor: Any, stat: os.stat_result) -> int:
        """Where to read from: the cursor's offset when it is this file's, else 0."""
        if not cursor or cursor.get("path") != str(self.path):
            return 0
        offset = int(cursor.get("offset", 0))
        reason = None
        if cursor.get("ino") != stat.st_ino:
            reason = "was replaced"
        elif stat.st_size < offset:
            reason = "was truncated"
        elif self._fingerprint(handle, offset) != cursor.get("tail"):
            reason = "was rewritten"
        if reason is None:
            return offset
        log.warning("signal.file %s %s since it was read (%d bytes): reading it from the start", self.path, reason, offset)
        return 0

    @staticmethod
    def _fingerprint(handle: Any, offset: int) -> str:
        start = max(0, offset - _FINGERPRINT_BYTES)
        handle.seek(start)
        return hashlib.sha256(handle.read(offset - start)).hexdigest()[:32]

    def _signals(self, text: bytes, start: int) -> list[Signal]:
        signals = []
        position = start
        for raw in text.splitlines(keepends=True):
            line_at, position = position, position + len(raw)
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                log.error("signal.file %s: the line at byte %d is not UTF-8; skipped", self.path, line_at)
                continue
            if not line:
                continue
            try:
                signals.append(signal_from_json(line, channel=self.name, default_id=f"file-{line_at}"))
            except SignalError as exc:
                log.error("signal.file %s, line at byte %d: %s; skipped", self.path, line_at, exc)
        return signals

    # -- sending ---------------------------------------------------------------------------------
    def send(self, signal: Signal) -> str:
        """Append the signal's line. One ``write`` of a whole line in append mode: lines of
        concurrent senders do not interleave (POSIX ``O_APPEND``), and the driver never sees half of one."""
        line = (signal_to_json(signal) + "\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise SignalSendError(f"cannot append to signal.file {self.path}: {exc}") from exc
        return str(self.path)
