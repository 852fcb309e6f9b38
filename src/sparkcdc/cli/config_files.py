"""Connector configuration files: ``.properties``, ``.json`` (Kafka Connect REST shape) and ``.yaml``.

Users arrive with the configuration they gave Kafka Connect, in whichever of these forms they keep
it; sparkcdc reads all three into the same flat ``{property: string}`` mapping Debezium gets, so a
file means the same thing here as there. Everything is checked before any connection is made, and
every error says which file, and where possible which line and property, so it can be fixed without
guessing: :class:`ConfigFileError`.

Values may be strings, numbers or booleans; they become Debezium's strings (``true``/``false``,
numbers as written). ``${env:NAME}`` (Kafka Connect's ``EnvVarConfigProvider`` syntax) and
``${NAME}`` are replaced by environment variables, so secrets need not be written into the file;
``$${`` stands for a literal ``${``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..debezium.config import ConnectorConfig
from ..errors import ConfigurationError
from .properties import PropertiesSyntaxError, parse_properties

__all__ = ["ConfigFileError", "LoadedConfig", "RawConfig", "expand_env", "load_config", "read_config_file"]

SUFFIXES = (".properties", ".json", ".yaml", ".yml")
# Keys of a Kafka Connect REST body (POST /connectors, GET /connectors/<name>) besides the properties.
_REST_KEYS = frozenset({"name", "config", "tasks", "type", "initial_state"})


class ConfigFileError(ConfigurationError):
    """A configuration file cannot be read or its configuration is invalid.

    ``property`` is set when one property is at fault, ``line`` when the place is known.
    """

    def __init__(self, path: Path | str, message: str, *, line: int | None = None, prop: str | None = None) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        what = f"{prop}: {message}" if prop else message
        super().__init__(f"{where}: {what}")
        self.property = prop


@dataclass
class RawConfig:
    """A file's properties as strings, before environment expansion and validation."""

    path: Path
    properties: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)  # property -> 1-based line, where known
    warnings: list[str] = field(default_factory=list)

    def error(self, prop: str, message: str) -> ConfigFileError:
        return ConfigFileError(self.path, message, line=self.lines.get(prop), prop=prop)


@dataclass
class LoadedConfig:
    """A validated configuration and what was noticed on the way (warnings are not errors)."""

    path: Path
    properties: dict[str, str]
    config: ConnectorConfig
    lines: dict[str, int]
    warnings: list[str]


def load_config(path: Path | str, environ: Mapping[str, str] | None = None, *, strict: bool = False) -> LoadedConfig:
    """Read, expand and validate a configuration file; raises :class:`ConfigFileError`.

    A name sparkcdc does not know is a warning with the closest known name (the configuration's
    own report, with the file's line), or with ``strict`` (``--strict``, or ``sparkcdc.strict=true``
    in the file) an error."""
    raw = read_config_file(path)
    properties = expand_env(raw, os.environ if environ is None else environ)
    try:
        config = ConnectorConfig(properties, strict=strict)
    except ConfigurationError as exc:
        message = str(exc).removeprefix(f"{exc.property}: ")
        raise raw.error(exc.property, message) from None
    warnings = list(raw.warnings)
    noted = []
    for message in config.warnings:
        token = re.match(r"[^: ]*", message).group(0)  # every warning starts with its property (or property=value)
        line = raw.lines.get(token.split("=", 1)[0])
        noted.append((line or 0, f"{token} (line {line}){message[len(token):]}" if line else message))
    warnings += [message for _, message in sorted(noted, key=lambda entry: entry[0])]
    return LoadedConfig(raw.path, properties, config, dict(raw.lines), warnings)


def read_config_file(path: Path | str) -> RawConfig:
    """Parse by extension; every value is turned into Debezium's string form."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ConfigFileError(path, f"unknown configuration file type {suffix or '(no extension)'!r}; use one of {', '.join(SUFFIXES)}")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigFileError(path, "no such file") from None
    except OSError as exc:
        raise ConfigFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    if suffix == ".properties":
        return _read_properties(path, data)
    if suffix == ".json":
        return _read_json(path, data)
    return _read_yaml(path, data)


# -- .properties -------------------------------------------------------------------------------------


def _read_properties(path: Path, data: bytes) -> RawConfig:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")  # what Java's Properties.load(InputStream) assumes
    try:
        entries = parse_properties(text)
    except PropertiesSyntaxError as exc:
        raise ConfigFileError(path, exc.message, line=exc.line) from None
    raw = RawConfig(path, {})
    for entry in entries:
        if entry.key in raw.properties:
            raw.warnings.append(f"{entry.key} is set on line {raw.lines[entry.key]} and again on line {entry.line}; the last value wins")
        raw.properties[entry.key] = entry.value
        raw.lines[entry.key] = entry.line
    return raw


# -- .json -------------------------------------------------------------------------------------------


def _read_json(path: Path, data: bytes) -> RawConfig:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    try:
        # Numbers are kept as written: Debezium gets strings, and 1e3 must not turn into "1000.0".
        document = json.loads(data.decode("utf-8-sig"), object_pairs_hook=pairs, parse_int=_Number, parse_float=_Number)
    except UnicodeDecodeError as exc:
        raise ConfigFileError(path, f"is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise ConfigFileError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    raw = RawConfig(path, {}, warnings=[f"{key} appears twice in one JSON object; the last value wins" for key in duplicates])
    _fill_from_document(raw, document, "JSON")
    return raw


class _Number(str):
    """A JSON number, kept as the text it was written as."""


# -- .yaml -------------------------------------------------------------------------------------------


class _StringLoader(yaml.SafeLoader):
    """YAML where only ``true``/``false`` and null are typed; everything else stays text.

    PyYAML's default (YAML 1.1) resolvers would read ``0123`` as octal 83, ``yes``/``no``/``on``/``off``
    as booleans and ``1_000`` as 1000, silently changing passwords and names. Debezium wants the
    text anyway, so plain scalars stay as written; only the YAML 1.2 core schema's booleans and
    nulls are typed, since configuration files write booleans as true/false and unset as empty.
    """


_StringLoader.yaml_implicit_resolvers = {}
_StringLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_StringLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])


def _read_yaml(path: Path, data: bytes) -> RawConfig:
    loader = _StringLoader(data)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ConfigFileError(path, "is empty; expected a mapping of properties")
        raw = RawConfig(path, {})
        if not isinstance(node, yaml.MappingNode):
            raise ConfigFileError(path, f"expected a mapping of properties, not a {_yaml_kind(node)}", line=node.start_mark.line + 1)
        pairs = [(loader.construct_object(key, deep=True), key.start_mark.line + 1, value) for key, value in node.value]
        config_node = next((value for key, _, value in pairs if key == "config" and isinstance(value, yaml.MappingNode)), None)
        if config_node is not None:
            for key, line, value in pairs:
                if not isinstance(key, str) or key not in _REST_KEYS:
                    raise ConfigFileError(path, f"unexpected key {key!r} beside 'config'; properties belong inside 'config'", line=line)
                if key == "name":
                    raw.properties["name"] = _scalar(raw, "name", loader.construct_object(value, deep=True), line)
                    raw.lines["name"] = line
            pairs = [(loader.construct_object(key, deep=True), key.start_mark.line + 1, value) for key, value in config_node.value]
            name_outside = raw.properties.pop("name", None)
            name_line = raw.lines.pop("name", None)
        else:
            name_outside = name_line = None
        for key, line, value in pairs:
            if not isinstance(key, str):
                raise ConfigFileError(path, f"property names must be strings, not {key!r}", line=line)
            if key in raw.properties:
                raw.warnings.append(f"{key} is set on line {raw.lines[key]} and again on line {line}; the last value wins")
            raw.properties[key] = _scalar(raw, key, loader.construct_object(value, deep=True), line)
            raw.lines[key] = line
        _merge_rest_name(raw, name_outside, name_line)
        return raw
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigFileError(path, f"invalid YAML: {exc.problem or exc.context}", line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(path, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def _yaml_kind(node: yaml.Node) -> str:
    return "list" if isinstance(node, yaml.SequenceNode) else "single value"


# -- shared ------------------------------------------------------------------------------------------


def _fill_from_document(raw: RawConfig, document: Any, kind: str) -> None:
    """A flat object of properties, or a Kafka Connect REST body ``{"name": ..., "config": {...}}``."""
    if not isinstance(document, dict):
        raise ConfigFileError(raw.path, f"expected a {kind} object of properties, not {type(document).__name__}")
    if isinstance(document.get("config"), dict):
        unexpected = sorted(set(document) - _REST_KEYS)
        if unexpected:
            raise ConfigFileError(raw.path, f"unexpected key {unexpected[0]!r} beside 'config'; properties belong inside 'config'")
        for key, value in document["config"].items():
            raw.properties[key] = _scalar(raw, key, value, None)
        outside = document.get("name")
        _merge_rest_name(raw, None if outside is None else _scalar(raw, "name", outside, None), None)
        return
    for key, value in document.items():
        raw.properties[key] = _scalar(raw, key, value, None)


def _merge_rest_name(raw: RawConfig, outside: str | None, line: int | None) -> None:
    """Kafka Connect takes the connector's name from the body when ``config`` has none; both must agree."""
    if outside is None:
        return
    inside = raw.properties.get("name")
    if inside is None:
        raw.properties["name"] = outside
        if line is not None:
            raw.lines["name"] = line
    elif inside != outside:
        raise raw.error("name", f"{inside!r} inside 'config' does not match the connector name {outside!r}")


def _scalar(raw: RawConfig, key: str, value: Any, line: int | None) -> str:
    if value is None:
        return ""  # unset, as an empty value in a .properties file
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    kind = "list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else type(value).__name__
    hint = " (write lists as one comma-separated string)" if kind == "list" else " (write the full property name, e.g. database.hostname)" if kind == "mapping" else ""
    raise ConfigFileError(raw.path, f"a value must be a string, number or boolean, not a {kind}{hint}", line=line, prop=key)


_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROVIDER = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*):(.*)", re.DOTALL)


def expand_env(raw: RawConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """Replace ``${env:NAME}`` and ``${NAME}``; a missing variable is an error naming the property."""
    expanded: dict[str, str] = {}
    for key, value in raw.properties.items():
        expanded[key] = _REFERENCE.sub(lambda match, key=key: _resolve(raw, key, match, environ), value) if "${" in value else value
    return expanded


def _resolve(raw: RawConfig, key: str, match: re.Match[str], environ: Mapping[str, str]) -> str:
    if match.group(0) == "$${":
        return "${"
    body = match.group(1)
    provider = _PROVIDER.fullmatch(body)
    if provider is not None:
        if provider.group(1) != "env":
            raise raw.error(key, f"config provider {provider.group(1)!r} in ${{{body}}} is not supported; sparkcdc resolves ${{env:NAME}} only")
        name = provider.group(2).removeprefix(":")  # ${env::NAME}: Kafka Connect's form with an empty path
    elif _ENV_NAME.fullmatch(body):
        name = body
    else:
        return match.group(0)  # not a reference (e.g. a regular expression): leave it as written
    if name not in environ:
        raise raw.error(key, f"environment variable {name!r} (referenced as {match.group(0)}) is not set")
    return environ[name]
