"""The session a ``sparkcdc run`` asks for: one place for its arguments, so that the command can start
it early (:func:`sparkcdc.spark.launch.begin_session`, while the runner is imported) and the runner
ask for the very same one (:func:`sparkcdc.spark.runner.run_pipeline`).

Imports nothing heavy: the command calls it before PySpark or the runner are imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..debezium.config import ConnectorConfig

__all__ = ["console_conf", "session_arguments"]


def console_conf(display: Any) -> dict[str, str]:
    """Spark's console progress bar off while a display draws on the terminal (it would scribble over it)."""
    return {"spark.ui.showConsoleProgress": "false"} if getattr(display, "owns_terminal", False) else {}


def session_arguments(config: ConnectorConfig, master: str | None, remote: str | None, spark_conf: Mapping[str, str] | None,
                      display: Any) -> dict[str, Any]:
    """:func:`sparkcdc.spark.launch.session`'s arguments for a run of ``config``: ``--conf`` (``spark_conf``)
    wins over what the display asks for (a Connect server's progress bar is not on this terminal)."""
    extra = {**(console_conf(display) if remote is None else {}), **(spark_conf or {})}
    return {"master": master, "app_name": f"sparkcdc-{config.settings.name}", "extra": extra or None, "remote": remote}
