"""``post.processors=``: Debezium's post processors, read as Debezium 3.x reads them.

    post.processors=reselector
    post.processors.reselector.type=io.debezium.processors.reselect.ReselectColumnsPostProcessor
    post.processors.reselector.reselect.columns.include.list=inventory.orders:description

A post processor changes an event before it leaves the connector (before transforms). Debezium
reads each listed name's settings under ``post.processors.<name>.`` and, when there are none there,
under the older ``<name>.`` (deprecated: it warns, and so does sparkcdc). The one class sparkcdc
has is the reselect columns post processor, :class:`ReselectSpec` (what it does:
:mod:`sparkcdc.engine.core.reselect`); any other class is refused, naming it. Everything is checked here,
before anything connects: a name without a type, an option the class does not have (reported with
the closest one, refused under ``sparkcdc.strict``), both column lists, a bad boolean or mode.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ConfigurationError
from .property_table import compile_patterns, split_list
from .transforms.base import Option, Options

__all__ = ["PROPERTY", "RESELECT_CLASS", "ReselectSpec", "owned_names", "post_processors"]

PROPERTY = "post.processors"
RESELECT_CLASS = "io.debezium.processors.reselect.ReselectColumnsPostProcessor"
#: Debezium's other post processors, and why sparkcdc does not run them.
_NOT_HERE = {
    "io.debezium.processors.s3.S3LargeMessagePostProcessor": "it writes to Amazon S3, which sparkcdc has no client for",
}

_RESELECT_OPTIONS = (
    Option("reselect.columns.include.list"),
    Option("reselect.columns.exclude.list"),
    Option("reselect.unavailable.values", "true", "bool"),
    Option("reselect.null.values", "true", "bool"),
    Option("reselect.use.event.key", "false", "bool"),
    Option("reselect.error.handling.mode", "warn", "enum", ("warn", "fail")),
)


@dataclass(frozen=True)
class ReselectSpec:
    """One ``ReselectColumnsPostProcessor``: which columns it reads again and how it reacts."""

    name: str
    prefix: str  # where its settings are (``post.processors.<name>.`` or the deprecated ``<name>.``)
    include: tuple[re.Pattern[str], ...]  # of ``schema.table:column``, matched whole, case-insensitive
    exclude: tuple[re.Pattern[str], ...]
    unavailable_values: bool
    null_values: bool
    use_event_key: bool
    fail: bool  # reselect.error.handling.mode=fail: a row not found, or a failed query, stops the connector

    @property
    def error_mode_property(self) -> str:
        return f"{self.prefix}reselect.error.handling.mode"

    def selects(self, qualified_column: str) -> bool:
        """Whether ``schema.table:column`` is one the lists let through (no list: every column)."""
        if self.include:
            return any(p.fullmatch(qualified_column) for p in self.include)
        if self.exclude:
            return not any(p.fullmatch(qualified_column) for p in self.exclude)
        return True


def _names(raw: Mapping[str, str]) -> list[str]:
    return split_list(raw.get(PROPERTY))


def _settings(raw: Mapping[str, str], name: str) -> tuple[str, dict[str, str], bool]:
    """(prefix, options, deprecated): Debezium's ``post.processors.<name>.`` first, else ``<name>.``."""
    for prefix, deprecated in ((f"{PROPERTY}.{name}.", False), (f"{name}.", True)):
        given = {key[len(prefix):]: value for key, value in raw.items() if key.startswith(prefix) and value != ""}
        if given:
            return prefix, given, deprecated
    return f"{PROPERTY}.{name}.", {}, False


def owned_names(raw: Mapping[str, str]) -> set[str]:
    """The properties that configure the listed post processors under the deprecated ``<name>.``
    prefix (they are known, not unknown names); ``post.processors.*`` is a family of the table."""
    owned: set[str] = set()
    for name in _names(raw):
        prefix, given, deprecated = _settings(raw, name)
        if deprecated:
            owned.update(prefix + option for option in given)
    return owned


def post_processors(raw: Mapping[str, str], *, strict: bool = False, warnings: list[str] | None = None) -> tuple[ReselectSpec, ...]:
    """The post processors a configuration lists, in order; errors name the property."""
    notes: list[str] = [] if warnings is None else warnings
    names = _names(raw)
    if len(set(names)) != len(names):
        raise ConfigurationError(f"lists a name twice: {raw.get(PROPERTY)!r}", prop=PROPERTY)
    specs: list[ReselectSpec] = []
    for name in names:
        prefix, given, deprecated = _settings(raw, name)
        type_property = prefix + "type"
        class_name = given.pop("type", "").strip()
        if not class_name:
            raise ConfigurationError(f"is required: the class of post processor {name!r} (as Debezium, {PROPERTY}.{name}.type, "
                                     f"or the deprecated {name}.type)", prop=type_property)
        if class_name in _NOT_HERE:
            raise ConfigurationError(f"{class_name} cannot run here: {_NOT_HERE[class_name]}", prop=type_property)
        if class_name != RESELECT_CLASS:
            raise ConfigurationError(f"{class_name!r} is a post processor sparkcdc does not have (it has {RESELECT_CLASS})",
                                     prop=type_property)
        if deprecated:
            notes.append(f"{prefix}*: settings of a post processor under its name alone are deprecated (Debezium warns too): "
                         f"use {PROPERTY}.{name}.*")
        known = [option.name for option in _RESELECT_OPTIONS]
        for option in sorted(given):
            if option not in known:
                guess = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
                message = "is not an option of ReselectColumnsPostProcessor" + (f"; did you mean {prefix}{guess[0]}?" if guess else "")
                if option.startswith("reselect.cache."):
                    message = ("is an option of Debezium 3.7's reselection cache, which Debezium 3.6 does not have (sparkcdc reads "
                               "a batch's rows once per key)")
                if strict:
                    raise ConfigurationError(message, prop=prefix + option)
                notes.append(f"{prefix}{option}: {message} (ignored)")
        options = Options(prefix, _RESELECT_OPTIONS, given, notes)
        include, exclude = options.text("reselect.columns.include.list"), options.text("reselect.columns.exclude.list")
        if include.strip() and exclude.strip():
            raise ConfigurationError(f"cannot be combined with {prefix}reselect.columns.include.list (Debezium's "
                                     "documentation says to set one of them)", prop=prefix + "reselect.columns.exclude.list")
        for which, patterns in (("include", include), ("exclude", exclude)):
            try:
                compiled = tuple(compile_patterns(patterns))
            except re.error as exc:
                raise ConfigurationError(f"is not a list of regular expressions: {exc}",
                                         prop=f"{prefix}reselect.columns.{which}.list") from None
            if which == "include":
                include_patterns = compiled
            else:
                exclude_patterns = compiled
        spec = ReselectSpec(name, prefix, include_patterns, exclude_patterns, options.bool("reselect.unavailable.values"),
                            options.bool("reselect.null.values"), options.bool("reselect.use.event.key"),
                            options.enum("reselect.error.handling.mode") == "fail")
        if not (spec.null_values or spec.unavailable_values):
            notes.append(f"{prefix}reselect.null.values and {prefix}reselect.unavailable.values are both false: post processor "
                         f"{name!r} reselects nothing (Debezium warns so too)")
        specs.append(spec)
    for key in raw:
        if key.startswith(f"{PROPERTY}.") and raw[key] != "" and key.split(".")[2] not in names:
            message = f"configures post processor {key.split('.')[2]!r}, which {PROPERTY} does not list"
            if strict:
                raise ConfigurationError(message, prop=key)
            notes.append(f"{key}: {message} (ignored)")
    return tuple(specs)
