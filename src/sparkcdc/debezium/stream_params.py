"""``slot.stream.params``: the plugin parameters Debezium passes to the logical decoding plugin.

Debezium's format is ``name=value`` pairs separated by semicolons (``origin=none``), handed to the
plugin as they are when the replication stream starts. sparkcdc decodes pgoutput only, and pgoutput's
options that sparkcdc does not choose itself are one: ``origin`` (PostgreSQL 16+), ``any`` (every
change, the server's default) or ``none`` (only changes made on this server, not those a replication
origin applied: what a bidirectional set-up needs to avoid loops).

Every other parameter is refused, naming it: sparkcdc cannot know what an option of a plugin it does
not speak would change, and pgoutput's own others (``proto_version``, ``publication_names``,
``messages``, ``binary``, ``streaming``, ``two_phase``) are chosen by sparkcdc because its decoder
depends on them. Debezium logs a malformed pair and goes on; here it is refused, as a pair that is
not read would otherwise be silently dropped.

That ``origin`` needs PostgreSQL 16 is checked against the server when the connector sets up
(:func:`check_server_supports`), before anything streams.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ConfigurationError

__all__ = ["ORIGIN_MIN_SERVER", "PROPERTY", "check_server_supports", "origin_of", "parse_stream_params", "stream_params_problem"]

PROPERTY = "slot.stream.params"
#: ``origin`` is a pgoutput option from PostgreSQL 16 on (server_version_num).
ORIGIN_MIN_SERVER = 160000
_ORIGINS = ("any", "none")
_CHOSEN_BY_SPARKCDC = ("proto_version", "publication_names", "messages", "binary", "streaming", "two_phase")


def parse_stream_params(raw: str | None) -> dict[str, str]:
    """``a=b;c=d`` as Debezium splits it (name and value trimmed, empty entries skipped); raises
    :class:`ConfigurationError` naming the property for a malformed pair or a parameter sparkcdc
    does not pass."""
    params, problem = _parse(raw)
    if problem is not None:
        raise ConfigurationError(problem, prop=PROPERTY)
    return params


def stream_params_problem(raw: str) -> str | None:
    """The property table's check: what is wrong with ``raw``, or None."""
    return _parse(raw)[1]


def _parse(raw: str | None) -> tuple[dict[str, str], str | None]:
    params: dict[str, str] = {}
    for entry in (raw or "").split(";"):
        if not entry.strip():
            continue
        parts = entry.split("=")
        if len(parts) != 2 or not parts[0].strip():
            return params, f"{entry!r} is not a name=value pair (the format is name=value;name=value)"
        name, value = parts[0].strip(), parts[1].strip()
        if name in params:
            return params, f"names the parameter {name!r} twice"
        params[name] = value
    unknown = [name for name in params if name != "origin"]
    if unknown:
        chosen = [name for name in unknown if name in _CHOSEN_BY_SPARKCDC]
        one = len(chosen) == 1
        why = (f"{', '.join(chosen)} {'is' if one else 'are'} chosen by sparkcdc, whose decoder depends on "
               f"{'it' if one else 'them'}; " if chosen else "")
        return params, (f"sparkcdc passes only pgoutput's origin parameter (origin=any or origin=none); {why}"
                        f"{', '.join(repr(n) for n in unknown)} would change what the plugin sends in ways sparkcdc cannot know")
    if "origin" in params:
        origin = params["origin"].lower()
        if origin not in _ORIGINS:
            return params, f"origin={params['origin']!r} is not one of any, none"
        params["origin"] = origin
    return params, None


def origin_of(raw: Mapping[str, str]) -> str | None:
    """The ``origin`` a configuration (raw properties) asks pgoutput for; None: the server's default."""
    return parse_stream_params(raw.get(PROPERTY)).get("origin")


def check_server_supports(raw: Mapping[str, str], server_version: int) -> None:
    """Refuses ``origin`` on a server older than PostgreSQL 16, whose pgoutput has no such option:
    the stream would fail to start, or (were the option dropped) carry what origin=none leaves out."""
    origin = origin_of(raw)
    if origin is not None and server_version < ORIGIN_MIN_SERVER:
        raise ConfigurationError(
            f"origin={origin} needs PostgreSQL 16 or later (pgoutput's origin option); the server is "
            f"{server_version // 10000}.{server_version % 10000} (server_version_num {server_version})", prop=PROPERTY)
