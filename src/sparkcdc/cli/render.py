"""Rich tables for the commands' human output (``--json`` output does not come through here).

Kept apart from the commands so they stay about control flow and exit codes; every value is
rendered as plain text (``Text``), never as markup, because property values are regexes and
passwords whose brackets Rich would otherwise interpret.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from .config_files import LoadedConfig
from .rules import differences_from_debezium

if TYPE_CHECKING:  # a rendering needs no database driver: `sparkcdc run` imports this module before Spark starts
    from .readiness import Readiness

__all__ = ["config_summary", "print_problems", "readiness_view", "status_view"]

# Shown in the summary's own rows, so not repeated among "differs from Debezium's defaults".
_SUMMARY_PROPERTIES = frozenset({
    "name", "connector.class", "plugin.name", "topic.prefix", "database.hostname", "database.port", "database.user",
    "database.password", "database.dbname", "database.sslmode", "slot.name", "publication.name", "publication.autocreate.mode",
    "snapshot.mode", "schema.include.list", "schema.exclude.list", "table.include.list", "table.exclude.list",
})
_FILTERS = (("schema.include.list", "schemas"), ("schema.exclude.list", "all schemas except"),
            ("table.include.list", "tables"), ("table.exclude.list", "all tables except"))


def _titled(title: str, table: Table) -> Group:
    """A title line above the table: a Rich table title would be wrapped to the (narrow) table's width."""
    return Group(Text(title, style="bold"), table)


def _kv_table(title: str, rows: Iterable[tuple[str, Any]]) -> Group:
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(Text(key), Text("-" if value is None else str(value)))
    return _titled(title, table)


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def config_summary(loaded: LoadedConfig) -> RenderableType:
    config = loaded.config
    database = (f"{config.settings.database_user}@{config.settings.database_hostname}:{config.settings.database_port}/"
                f"{config.settings.database_dbname} (sslmode={config.settings.database_sslmode})")
    filters = [f"{label}: {', '.join(pattern.pattern for pattern in config.setting(name))}" for name, label in _FILTERS if config.setting(name)]
    rows = [
        ("connector", config.settings.name),
        ("database", database),
        ("topic prefix", config.topic_prefix),
        ("slot", config.settings.slot_name + (" (dropped when the connector stops)" if config.settings.slot_drop_on_stop else "")),
        ("publication", f"{config.settings.publication_name} (publication.autocreate.mode={config.settings.publication_autocreate_mode})"),
        ("snapshot mode", config.settings.snapshot_mode),
        ("captured tables", "\n".join(filters) if filters else "all tables (no schema/table include or exclude list)"),
    ]
    parts: list[RenderableType] = [_kv_table(f"Connector configuration ({loaded.path})", rows)]
    differences = differences_from_debezium(config, skip=_SUMMARY_PROPERTIES)
    if differences:
        table = Table()
        table.add_column("property", no_wrap=True)
        table.add_column("value", overflow="fold")
        table.add_column("Debezium default", overflow="fold")
        for name, value, default in differences:
            table.add_row(Text(name), Text(value), Text("(none)" if default is None else default))
        parts.append(Text(""))
        parts.append(_titled("Options that differ from Debezium's defaults", table))
    return Group(*parts)


def readiness_view(r: Readiness) -> RenderableType:
    server = r.server
    role_kinds = [kind for kind, has in (("superuser", r.role.superuser), ("replication", r.role.replication)) if has]
    server_rows = [
        ("PostgreSQL", f"{server.version}{' (standby)' if server.in_recovery else ''}"),
        ("database", r.database),
        ("wal_level", server.wal_level),
        ("replication slots", f"{server.replication_slots_used} of {server.max_replication_slots} (max_replication_slots) used"),
        ("WAL senders", f"{server.wal_senders_used} of {server.max_wal_senders} (max_wal_senders) used"),
        ("role", f"{r.role.user} ({', '.join(role_kinds) or 'no superuser, no replication'})"),
    ]
    pub = r.publication
    pub_state = "does not exist" if not pub.exists else (
        "exists, FOR ALL TABLES" if pub.all_tables else f"exists, {len(pub.tables)} table(s)")
    slot = r.slot
    slot_state = "does not exist" if slot is None else (
        f"exists ({slot.slot_type}, plugin {slot.plugin}, database {slot.database}"
        f"{f', active pid {slot.active_pid}' if slot.active else ', inactive'})")
    server_rows += [(f"publication {pub.name}", pub_state), (f"slot {r.slot_name}", slot_state)]
    parts: list[RenderableType] = [_kv_table("Server", server_rows), Text("")]
    tables = Table()
    for column in ("table", "replica identity", "primary key", "SELECT", "in publication"):
        tables.add_column(column, overflow="fold")
    published = set(pub.tables)
    for t in r.tables:
        in_pub = "-" if not pub.exists else _yes(pub.all_tables or (t.schema, t.table) in published)
        tables.add_row(Text(f"{t.schema}.{t.table}"), t.replica_identity, _yes(t.has_primary_key), _yes(t.can_select), in_pub)
    parts.append(_titled(f"Captured tables ({len(r.tables)})", tables))
    if r.plan:
        parts += [Text(""), Text("A run would:", style="bold")] + [Text(f"  - {step}") for step in r.plan]
    return Group(*parts)


def _stream_views(stream: dict[str, Any], database: Any) -> list[RenderableType]:
    parts: list[RenderableType] = []
    slot = stream.get("slot")
    if slot is not None:
        if slot["exists"]:
            rows = [("exists", "yes"), ("active", _yes(slot["active"]) + (f" (pid {slot['active_pid']})" if slot["active"] else "")),
                    ("confirmed_flush_lsn", slot["confirmed_flush_lsn"]), ("restart_lsn", slot["restart_lsn"]),
                    ("server WAL position", slot["wal_lsn"]), ("lag (bytes)", slot["lag_bytes"]),
                    ("WAL retained (bytes)", slot["retained_bytes"]), ("wal_status", slot["wal_status"])]
            rows += [(key, str(slot[key])) for key in ("invalidation_reason", "inactive_since") if slot.get(key) is not None]
            rows += [(key, "yes") for key in ("failover", "synced") if slot.get(key)]
        else:
            rows = [("exists", "no (created by the first run)")]
        parts += [_kv_table(f"Slot {slot['name']} (database {database})", rows), Text("")]
    pub = stream.get("publication")
    if pub is not None:
        if not pub["exists"]:
            rows = [("exists", "no")]
        else:
            tables = "all tables" if pub["all_tables"] else ("\n".join(pub["tables"]) or "(none)")
            rows = [("exists", "yes"), ("operations", ", ".join(pub["operations"])), ("tables", tables)]
        parts += [_kv_table(f"Publication {pub['name']}", rows), Text("")]
    return parts


def status_view(report: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    for stream in [report, *report.get("streams", ())]:  # sparkcdc.stream.slots: every stream's slot and publication
        parts += _stream_views(stream, report.get("database"))
    checkpoint = report.get("checkpoint")
    if checkpoint is not None:
        rows = []
        for label, key in (("last committed", "last_committed"), ("in flight (not committed)", "pending")):
            batch = checkpoint.get(key)
            if batch is not None:
                rows.append((label, f"batch {batch['batch']}: phase {batch['phase']}, lsn {batch['lsn']}"))
        newest = checkpoint.get("newest_source_commit")
        if newest is not None:
            rows.append(("newest source commit in the output", f"{newest['committed_at']} ({newest['age_seconds']:.1f} s ago)"))
        parts.append(_kv_table(f"Checkpoint {checkpoint['directory']}", rows or [("last committed", "none yet")]))
        snapshot = checkpoint.get("incremental_snapshot")
        if snapshot is not None:
            rows = [("as of", f"batch {snapshot['batch']} ({'committed' if snapshot['committed'] else 'in flight'})"),
                    ("tables left", "\n".join(snapshot["tables_left"]) or "(none)"),
                    ("current table", snapshot["current_table"]), ("chunks read", snapshot["chunks_read"]),
                    ("reading", snapshot["reading"]), ("last key read", snapshot["last_key"]),
                    ("maximum key", snapshot["max_key"]), ("rows scanned (current table)", snapshot["rows_scanned"]),
                    ("paused", _yes(snapshot["paused"]))]
            parts += [Text(""), _kv_table(f"Incremental snapshot {snapshot['id']}", rows)]
    return Group(*parts)


def print_problems(console: Console, errors: Sequence[str], warnings: Sequence[str]) -> None:
    for warning in warnings:
        console.print(Text.assemble(("warning: ", "yellow bold"), warning), soft_wrap=True)
    for error in errors:
        console.print(Text.assemble(("error: ", "red bold"), error), soft_wrap=True)
