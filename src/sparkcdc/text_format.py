"""The session settings under which PostgreSQL's text output is what sparkcdc's converters parse.

pgoutput (without ``binary``) and ``COPY ... TO STDOUT`` send values through each type's output
function, whose result depends on a few settings. sparkcdc pins them on every connection it opens
(replication and snapshot alike) so that a value has one text form whichever path it took.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TEXT_OUTPUT_SETTINGS", "libpq_options"]

TEXT_OUTPUT_SETTINGS: dict[str, str] = {
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",
    "bytea_output": "hex",
    "extra_float_digits": "1",
    "lc_monetary": "C",
}


def libpq_options(settings: Mapping[str, str], existing: str | None = None) -> str:
    """The libpq ``options`` string that sets ``settings`` at connection start (spaces escaped)."""
    parts = [existing] if existing else []
    for name, value in settings.items():
        escaped = value.replace("\\", "\\\\").replace(" ", "\\ ")
        parts.append(f"-c {name}={escaped}")
    return " ".join(parts)
