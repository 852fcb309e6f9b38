"""Kafka Connect's field paths (KIP-821): ``field.syntax.version=V1`` names a top-level field,
``V2`` a nested one with dots, a name holding dots wrapped in backticks.

V2's rules, as Kafka 4.3 applies them (checked against its parser): a step that starts with a
backtick (at the start of the path or after a dot) runs to the next backtick that is followed by a
dot or the end of the path and is not preceded by a backslash; the backslash stays in the name.
A backtick elsewhere is an ordinary character. An opening backtick without its closing one is a
configuration error naming its position. ``a..b`` has an empty step; an empty path has none.
"""

from __future__ import annotations

from typing import Any

from ...errors import PipelineError
from ..connect import ConnectSchema
from .base import TransformConfigError

__all__ = ["FieldPath", "NotAStruct", "parse_field_path"]


class NotAStruct(PipelineError):
    """A path goes through a field that is not a struct."""


def _v2_steps(prop: str, path: str) -> tuple[str, ...]:
    if not path:
        return ()
    steps: list[str] = []
    i = 0
    while True:
        if i < len(path) and path[i] == "`":
            close = i + 1
            while True:
                close = path.find("`", close)
                if close < 0:
                    raise TransformConfigError(f"Incomplete backtick pair in path: [{path}], consider adding a backslash "
                                                     f"before backtick at position {i} to escape it", prop=prop)
                if path[close - 1] != "\\" and (close + 1 == len(path) or path[close + 1] == "."):
                    break
                close += 1
            steps.append(path[i + 1:close])
            i = close + 1
        else:
            dot = path.find(".", i)
            end = len(path) if dot < 0 else dot
            steps.append(path[i:end])
            i = end
        if i >= len(path):
            return tuple(steps)
        i += 1  # the dot
        if i == len(path):
            steps.append("")
            return tuple(steps)


def parse_field_path(prop: str, path: str, version: str) -> FieldPath:
    """``path`` under ``field.syntax.version`` (``v1`` or ``v2``, lower case); errors name ``prop``."""
    return FieldPath(path, (path,) if version == "v1" else _v2_steps(prop, path))


class FieldPath:
    """A parsed path: its steps, and lookups of its field in a schema and its value in a struct."""

    __slots__ = ("steps", "text")

    def __init__(self, text: str, steps: tuple[str, ...]) -> None:
        self.text = text
        self.steps = steps

    def schema_in(self, schema: ConnectSchema) -> ConnectSchema | None:
        """The schema of the path's field in struct ``schema``; None if a step names no field.
        Raises :class:`NotAStruct` when a step before the last lands on something else."""
        current: ConnectSchema | None = schema if self.steps else None
        for step in self.steps:
            assert current is not None
            if current.type != "struct":
                raise NotAStruct("Cannot look up fields on non-struct type")
            current = next((f.schema for f in current.fields if f.name == step), None)
            if current is None:
                return None
        return current

    def value_in(self, value: Any) -> Any:
        """The path's value in a struct (or map) payload; None where a step's struct is null or,
        in a map, the key is missing."""
        current = value
        for step in self.steps:
            if not isinstance(current, dict):
                return None
            current = current.get(step)
        return current
