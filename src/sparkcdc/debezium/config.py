"""Connector configuration with Debezium's PostgreSQL property names and defaults.

Users bring their Debezium configuration as it is; we accept the same names, apply the same
defaults (except ``plugin.name``, which defaults to pgoutput, the only plugin we speak), and validate
everything before anything touches the database. Every error names the property.

What each property does here is written once, in :mod:`sparkcdc.debezium.property_table`: this
module applies it. Older names and values are translated to the current ones, and what sparkcdc
accepts but does not act on is listed in :attr:`ConnectorConfig.warnings` (see
:func:`report_warnings`), so that no setting is silently ignored. So is a name sparkcdc does not know
at all (a typo, most likely), with the known name closest to it; ``sparkcdc.strict=true`` (or
``strict=True``) makes that an error instead.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from .property_rules import broken_rule
from .property_table import (
    ALIAS,
    PROPERTIES,
    REFUSED,
    SANITIZE_PATTERN,
    WARNED,
    Property,
    closest_known,
    compile_patterns,
    family_of,
    split_list,
)

if TYPE_CHECKING:
    from .settings import Settings

__all__ = [
    "PROPERTIES", "ConfigurationError", "ConfigWarning", "ConnectorConfig", "Property", "compile_patterns", "report_warnings",
    "split_list",
]


class ConfigWarning(UserWarning):
    """A property sparkcdc accepts but does not act on as written (deprecated name, no effect here)."""


_reported: set[str] = set()


def report_warnings(config: ConnectorConfig) -> None:
    """Emit ``config``'s warnings through :mod:`warnings` (category :class:`ConfigWarning`), each
    once per process: the library path builds the same configuration many times (every Spark
    callback); the CLI prints its own list and ignores this category."""
    for message in config.warnings:
        if message not in _reported:
            _reported.add(message)
            warnings.warn(message, ConfigWarning, stacklevel=2)


class ConnectorConfig:
    """Validated connector properties: raw strings plus typed accessors with Debezium's defaults."""

    def __init__(self, properties: Mapping[str, Any], *, strict: bool = False) -> None:
        """``strict`` (or ``sparkcdc.strict=true``) rejects property names sparkcdc does not know;
        otherwise each is reported in ``warnings`` with the closest known name, and kept, unused.

        ``raw`` is the configuration as given plus what its aliases translate to (so that building a
        configuration again from ``raw`` gives the same one: ``strict=True`` is kept there as
        ``sparkcdc.strict=true``); ``warnings`` says what was translated, is accepted without effect,
        or is not known.
        """
        self.raw: dict[str, str] = {str(k): _as_text(v) for k, v in properties.items()}
        self.warnings: list[str] = []
        if strict:
            self.raw["sparkcdc.strict"] = "true"
        #: Unknown names (and transform options) are errors, not warnings.
        self.strict = (self.raw.get("sparkcdc.strict") or "").strip().lower() == "true"
        strict = self.strict
        self._apply_statuses(strict)
        for name, prop in PROPERTIES.items():
            value = self.raw.get(name)
            if value is None or value == "":
                if prop.required:
                    raise ConfigurationError("is required", prop=name)
                if prop.required_with and prop.required_with[1] in split_list(self.raw.get(prop.required_with[0])):
                    other, listed = prop.required_with
                    raise ConfigurationError(f"is required when {other} includes {listed}", prop=name)
                continue
            problem = prop.problem(value)
            if problem:
                raise ConfigurationError(problem, prop=name)
        self._check_select_overrides()
        from .transforms import transform_chain

        #: ``transforms=`` and ``predicates=`` (:mod:`sparkcdc.debezium.transforms`): checked here,
        #: before anything connects; run on every record sparkcdc emits.
        self.transforms = transform_chain(self.raw, strict=strict, warnings=self.warnings)
        from .post_processors import post_processors

        #: ``post.processors=`` (:mod:`sparkcdc.debezium.post_processors`): checked here; run on the
        #: streamed change events before anything else sees them (sparkcdc.engine.core.reselect).
        self.post_processors = post_processors(self.raw, strict=strict, warnings=self.warnings)
        from .converters import converters_of

        #: ``key.converter``, ``value.converter`` and ``header.converter`` with their settings
        #: (:mod:`sparkcdc.debezium.converters`): checked here; the serializer writes what they say.
        self.converters = converters_of(self.raw, self.warnings)
        from .topic_creation import topic_creation

        #: Kafka Connect's ``topic.creation.*``: how the kafka layout creates a topic it does not find.
        self.topic_creation = topic_creation(self.raw, self.warnings)
        broken = broken_rule(self)
        if broken is not None:
            raise ConfigurationError(broken[1], prop=broken[0].prop)

    def _apply_statuses(self, strict: bool) -> None:
        """Refusals first (before any value check), then aliases, deprecated values and warnings."""
        given = dict(self.raw)
        from .post_processors import owned_names

        owned = owned_names(given)  # a post processor's settings under its deprecated <name>. prefix
        for name, value in given.items():
            if value == "" or name in owned:
                continue
            prop = PROPERTIES.get(name)
            if prop is None:
                family = family_of(name)
                if family is None:
                    self._unknown(name, strict)
                elif family.status == WARNED and not family.is_quiet(value):
                    # A catch-all family (database.*, signal.*) also takes the typos of its properties' names:
                    # one that is very close to a property is reported as that (refused under strict).
                    guess = closest_known(name, 0.85, families=False)
                    if guess and strict:
                        raise ConfigurationError(f"is not a property sparkcdc knows; did you mean {guess}?", prop=name)
                    self.warnings.append(f"{name}: {family.doc}" + (f"; did you mean {guess}?" if guess else ""))
                continue
            if prop.status == REFUSED and not prop.is_quiet(value):
                raise ConfigurationError(prop.doc, prop=name)
            refused = dict(prop.refused_values).get(value.strip().lower())
            if refused is not None:
                raise ConfigurationError(refused, prop=name)
            if prop.status == WARNED and not prop.is_quiet(value):
                self.warnings.append(f"{name}: {prop.doc}")
            current = dict(prop.old_values).get(value.strip().lower())
            if current is not None:
                self.raw[name] = current
                self.warnings.append(f"{name}={value.strip()} is deprecated: use {name}={current} (it is read as that)")
        for name, prop in PROPERTIES.items():
            value = given.get(name, "")
            if prop.status != ALIAS or value == "" or prop.translate is None:
                continue
            problem = prop.problem(value)
            if problem:
                raise ConfigurationError(problem, prop=name)
            for target, translated in prop.translate(value, given).items():
                explicit = given.get(target, "")
                if explicit and explicit.strip().lower() != translated.strip().lower() and not prop.merges:
                    raise ConfigurationError(f"{value!r} means {target}={translated}, but {target} is set to {explicit!r}; "
                                            f"remove {name} (it is deprecated)", prop=name)
                self.raw[target] = translated
            targets = ", ".join(prop.alias_of)
            self.warnings.append(f"{name} is deprecated: use {targets} ({name}={value} is read as "
                                 + ", ".join(f"{t}={self.raw[t]}" for t in prop.alias_of) + ")")

    def _unknown(self, name: str, strict: bool) -> None:
        """A name neither the table nor a family knows: reported with the closest known name (as the
        transform chain reports an option its class does not have), refused when ``strict``."""
        guess = closest_known(name)
        message = "is not a property sparkcdc knows" + (f"; did you mean {guess}?" if guess else "")
        if strict:
            raise ConfigurationError(message, prop=name)
        self.warnings.append(f"{name}: {message} (ignored)")

    def is_secret(self, name: str) -> bool:
        """Whether ``name``'s value is never shown: a password property, or a name ``custom.sanitize.pattern``
        matches (case-insensitively, in full, as Debezium masks them)."""
        if PROPERTIES.get(name, Property(name)).kind == "password":
            return True
        return self._sanitize.fullmatch(name) is not None

    @cached_property
    def _sanitize(self) -> re.Pattern[str]:
        return re.compile(self.get("custom.sanitize.pattern") or SANITIZE_PATTERN, re.IGNORECASE)

    def _check_select_overrides(self) -> None:
        """Debezium applies ``snapshot.select.statement.overrides.<table>`` to listed tables only."""
        listed = set(self.get_list("snapshot.select.statement.overrides"))
        prefix = "snapshot.select.statement.overrides."
        for name, value in self.raw.items():
            if name.startswith(prefix) and value and name[len(prefix):] not in listed:
                self.warnings.append(f"{name}: has no effect: {name[len(prefix):]} is not listed in "
                                     "snapshot.select.statement.overrides (Debezium applies listed tables' statements only)")
        for table in sorted(listed):
            if not self.raw.get(prefix + table):
                self.warnings.append(f"snapshot.select.statement.overrides: {table} is listed but {prefix}{table} is "
                                     "not set; the table is read whole")

    def snapshot_select_override(self, schema: str, table: str) -> str | None:
        """The statement that replaces a table's snapshot read, if the table is listed (as Debezium)."""
        qualified = f"{schema}.{table}"
        if qualified not in self.get_list("snapshot.select.statement.overrides"):
            return None
        return self.raw.get(f"snapshot.select.statement.overrides.{qualified}") or None

    @cached_property
    def settings(self) -> Settings:
        """The typed, frozen view of this configuration (built once)."""
        from .settings import settings_of

        return settings_of(self)

    def given(self, name: str) -> str | None:
        """What the configuration itself sets ``name`` to (None when unset or empty): for the checks
        that ask whether the user gave a property, not what it amounts to (its default included)."""
        return self.raw.get(name) or None

    def setting(self, name: str) -> Any:
        """The typed value of the property ``name`` (as :attr:`settings` has it), for code that
        reads a list of properties by name (the TLS files, the filters); code that reads one
        property writes ``config.settings.<name_in_snake_case>``."""
        from .settings import attribute_name

        return getattr(self.settings, attribute_name(name))

    # -- typed access ----------------------------------------------------------------------------
    def get(self, name: str) -> str | None:
        value = self.raw.get(name)
        if value is None or value == "":
            prop = PROPERTIES.get(name)
            return prop.default if prop else None
        prop = PROPERTIES.get(name)
        if prop is not None and prop.kind == "enum":
            return value.strip().lower()
        return value

    def text(self, name: str) -> str:
        """A property that always has a value (a default in the table, or required)."""
        value = self.get(name)
        if value is None:
            raise ConfigurationError("has no value", prop=name)
        return value

    def get_int(self, name: str) -> int:
        value = self.get(name)
        if value is None:
            raise ConfigurationError("has no value", prop=name)
        return int(value)

    def get_bool(self, name: str) -> bool:
        value = self.get(name)
        return value is not None and value.strip().lower() == "true"

    def get_list(self, name: str) -> list[str]:
        return split_list(self.get(name))

    def get_patterns(self, name: str) -> list[re.Pattern[str]]:
        return compile_patterns(self.get(name))

    def items_matching(self, pattern: re.Pattern[str]) -> Iterable[tuple[re.Match[str], str]]:
        for name, value in self.raw.items():
            match = pattern.fullmatch(name)
            if match:
                yield match, value

    # -- frequently used values ------------------------------------------------------------------
    @cached_property
    def topic_prefix(self) -> str:
        value = self.get("topic.prefix")
        assert value is not None
        return value

    @cached_property
    def skipped_operations(self) -> frozenset[str]:
        ops = set(self.get_list("skipped.operations"))
        return frozenset() if "none" in ops else frozenset(ops)

    @cached_property
    def tombstones_on_delete(self) -> bool:
        return self.get_bool("tombstones.on.delete")

    @cached_property
    def provide_transaction_metadata(self) -> bool:
        return self.get_bool("provide.transaction.metadata")

    @cached_property
    def key_schemas_enable(self) -> bool:
        return self.converters.key_schemas

    @cached_property
    def value_schemas_enable(self) -> bool:
        return self.converters.value_schemas

    def __repr__(self) -> str:
        shown = {k: ("********" if self.is_secret(k) else v) for k, v in self.raw.items()}
        return f"ConnectorConfig({shown!r})"


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
