"""A primary and its physical standby (PostgreSQL 17+), for failover and reading-from-a-standby tests.

The standby is a ``pg_basebackup -R`` of the primary through a physical slot of its own, with what
PostgreSQL 17's failover slots need on each side:

* standby: ``hot_standby`` (it answers queries), ``hot_standby_feedback`` (the primary keeps the rows
  the standby's logical slots still need), ``sync_replication_slots`` (its slot sync worker copies the
  primary's failover slots) and a ``primary_conninfo`` with ``dbname`` (the worker reads the primary's
  slots through it; ``pg_basebackup -R`` writes the ``-d`` connection string's dbname there);
* primary: ``synchronized_standby_slots`` naming the standby's slot, so no logical consumer receives a
  change before the standby has it (otherwise a consumer could be ahead of the promoted standby).

``sync_slots=False`` makes a standby that never synchronises slots (the "not yet synchronised"
case); :meth:`StandbyPair.sync_slots` copies them once, on demand.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import psycopg

from sparkcdc.embedded_postgres import ThrowawayCluster, _quote_conninfo_value

from .waiting import wait_until

__all__ = ["StandbyPair", "standby_pair"]

STANDBY_SLOT = "sparkcdc_standby"


class StandbyPair:
    """A started primary and a started standby that streams from it; ``hosts`` / ``ports`` / ``conninfo``
    name both, libpq style, so a client reaches whichever accepts writes (``target_session_attrs``)."""

    def __init__(self, bindir: Path, *, sync_slots: bool = True, settings: Mapping[str, str] | None = None) -> None:
        self.bindir = bindir
        self.primary = ThrowawayCluster({**(settings or {})}, bindir=bindir)
        self.primary.start()
        try:
            with self.connect(self.primary) as db:
                db.execute("SELECT pg_create_physical_replication_slot(%s)", (STANDBY_SLOT,))
            self.standby = ThrowawayCluster(
                {**(settings or {}), "hot_standby": "on", "hot_standby_feedback": "on",
                 "sync_replication_slots": "on" if sync_slots else "off"},
                bindir=bindir, initialise=self._base_backup,
            )
            self.standby.start()
            wait_until(self._streaming, timeout=60, what="the standby to stream from the primary")
            # After the base backup, so that the standby does not inherit it: promoted, it has no such slot,
            # and its logical walsenders would wait for it for ever.
            with self.connect(self.primary) as db:
                db.execute(f"ALTER SYSTEM SET synchronized_standby_slots = '{STANDBY_SLOT}'")
                db.execute("SELECT pg_reload_conf()")
        except BaseException:
            self.destroy()
            raise

    # -- addresses -------------------------------------------------------------------------------
    @property
    def clusters(self) -> tuple[ThrowawayCluster, ThrowawayCluster]:
        return self.primary, self.standby

    @property
    def hosts(self) -> str:
        return ",".join(c.host for c in self.clusters)

    @property
    def ports(self) -> str:
        return ",".join(str(c.port) for c in self.clusters)

    def conninfo(self, dbname: str = "postgres", **params: str | int) -> str:
        """Both servers, the one accepting writes chosen (``target_session_attrs=read-write``)."""
        parts = {"host": self.hosts, "port": self.ports, "user": self.primary.user, "dbname": dbname,
                 "target_session_attrs": "read-write", **params}
        return " ".join(f"{key}={_quote_conninfo_value(str(value))}" for key, value in parts.items())

    @staticmethod
    def connect(cluster: ThrowawayCluster, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(cluster.conninfo(dbname), autocommit=True)

    # -- what the tests drive --------------------------------------------------------------------
    def wait_replayed(self, timeout: float = 60) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with self.connect(self.primary) as db:
            target = db.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
        with self.connect(self.standby) as db:
            wait_until(lambda: db.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()[0],  # type: ignore[index]
                       timeout=timeout, what=f"the standby to replay up to {target}")

    def synced_slot(self, slot: str) -> tuple[str, str | None] | None:
        """The standby's copy of ``slot``: (restart_lsn, confirmed_flush_lsn) once it is synchronised and
        persistent (a copy is temporary until the primary's slot has moved past what the standby has)."""
        with self.connect(self.standby) as db:
            row = db.execute("SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots "
                             "WHERE slot_name = %s AND synced AND NOT temporary", (slot,)).fetchone()
        return None if row is None else (row[0], row[1])

    def wait_synced(self, slot: str, *, at_least: str | None = None, timeout: float = 90) -> None:
        """Until the standby holds a persistent synchronised copy of ``slot`` (confirmed at least up to ``at_least``)."""
        def synced() -> bool:
            found = self.synced_slot(slot)
            if found is None or found[1] is None:
                return False
            if at_least is None:
                return True
            with self.connect(self.standby) as db:
                return bool(db.execute("SELECT %s::pg_lsn >= %s::pg_lsn", (found[1], at_least)).fetchone()[0])  # type: ignore[index]
        wait_until(synced, timeout=timeout, interval=0.2, what=lambda: f"slot {slot!r} synchronised to the standby "
                   f"(now {self.synced_slot(slot)}, wanted {at_least})\n{self.standby.server_log(tail_lines=20)}")

    def sync_slots(self) -> None:
        """Copy the primary's failover slots to the standby now (``pg_sync_replication_slots()``, which a
        standby without ``sync_replication_slots`` runs only when asked)."""
        with self.connect(self.standby) as db:
            db.execute("SELECT pg_sync_replication_slots()")

    def promote(self) -> None:
        """The standby becomes a primary (it accepts writes when this returns)."""
        self.standby.promote()
        with self.connect(self.standby) as db:
            wait_until(lambda: not db.execute("SELECT pg_is_in_recovery()").fetchone()[0],  # type: ignore[index]
                       timeout=60, what="the promoted standby to leave recovery")

    def stop(self, mode: str = "fast") -> None:
        """Stop the primary (the standby keeps running)."""
        self.primary.stop(mode)

    def destroy(self) -> None:
        for cluster in (getattr(self, "standby", None), self.primary):
            if cluster is not None:
                cluster.destroy()

    def __enter__(self) -> StandbyPair:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.destroy()

    # -- internals -------------------------------------------------------------------------------
    def _base_backup(self, standby: ThrowawayCluster) -> None:
        # -R writes standby.signal and primary_conninfo (with -d's dbname: the slot sync worker needs one)
        # and primary_slot_name into postgresql.auto.conf.
        source = self.primary.conninfo("postgres", application_name="sparkcdc_standby")
        standby.run_tool([str(self.bindir / "pg_basebackup"), "-d", source, "-D", str(standby.data_dir), "-R",
                          "-X", "stream", "-c", "fast", "-S", STANDBY_SLOT, "--no-sync"], what="pg_basebackup")

    def _streaming(self) -> bool:
        with self.connect(self.primary) as db:
            row = db.execute("SELECT count(*) FROM pg_stat_replication WHERE application_name = 'sparkcdc_standby' "
                             "AND state = 'streaming'").fetchone()
        return bool(row and row[0])


@contextmanager
def standby_pair(bindir: Path, *, sync_slots: bool = True) -> Iterator[StandbyPair]:
    """A :class:`StandbyPair` for the ``with`` block, destroyed after it."""
    with StandbyPair(bindir, sync_slots=sync_slots) as pair:
        yield pair
