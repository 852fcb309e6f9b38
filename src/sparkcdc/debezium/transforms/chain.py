"""``transforms=`` and ``predicates=`` read as Kafka Connect reads them, and the chain that runs them.

    transforms=unwrap,route
    transforms.unwrap.type=io.debezium.transforms.ExtractNewRecordState
    transforms.unwrap.predicate=isTable          (optional)
    transforms.unwrap.negate=false                (optional)
    predicates=isTable
    predicates.isTable.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches
    predicates.isTable.pattern=shop\\.public\\..*

Each record that sparkcdc emits goes through the transforms in the listed order; a transform with a
predicate applies to the records the predicate matches (with ``negate=true``, to the others); a
transform that returns None drops the record and the rest of the chain does not see it.

Everything is checked when the configuration is built, before anything connects: an alias without
a type, a class sparkcdc does not have (or cannot run here: the reason is given), an option the class
does not have (reported with the closest option it has, refused under ``sparkcdc.strict``), a
predicate named but not defined.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ..property_table import closest, split_list
from ..records import ChangeRecord
from .base import Option, Options, Predicate, Transform, TransformConfigError
from .registry import PREDICATES, TRANSFORMS, UNAVAILABLE

__all__ = ["Step", "TransformChain", "closest", "transform_chain"]

_STEP_OPTIONS = ("type", "predicate", "negate")
_PREDICATE_OPTIONS = ("type",)


@dataclass(frozen=True)
class Step:
    """One transform of the chain and the predicate that guards it."""

    alias: str
    transform: Transform
    predicate: Predicate | None = None
    negate: bool = False


class TransformChain:
    """The configured transforms, in order; falsy when there are none (the records go out as made)."""

    def __init__(self, steps: tuple[Step, ...] = ()) -> None:
        self.steps = steps

    def __bool__(self) -> bool:
        return bool(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(step.alias for step in self.steps)

    def apply(self, records: Iterable[ChangeRecord]) -> Iterator[ChangeRecord]:
        """``records`` as they leave the chain, in order, dropped ones left out.

        When a transform fails (or the caller stops reading), ``records`` is closed at once: a
        stream's records come from a generator holding the replication connection, which must not
        wait for the error (whose traceback holds the generator) to be collected."""
        upstream = iter(records)
        try:
            yield from self._run(upstream)
        finally:
            close = getattr(upstream, "close", None)
            if close is not None:
                close()

    def _run(self, records: Iterator[ChangeRecord]) -> Iterator[ChangeRecord]:
        steps = tuple((step.transform.apply, None if step.predicate is None else step.predicate.test, step.negate)
                      for step in self.steps)
        if len(steps) == 1 and steps[0][1] is None:
            only = steps[0][0]
            for record in records:
                out = only(record)
                if out is not None:
                    yield out
            return
        for record in records:
            current: ChangeRecord | None = record
            for apply, test, negate in steps:
                if test is not None and test(current) == negate:  # type: ignore[arg-type]
                    continue
                current = apply(current)  # type: ignore[arg-type]
                if current is None:
                    break
            if current is not None:
                yield current


def _unknown_option(prop: str, option: str, known: Iterable[str], strict: bool, warnings: list[str], what: str) -> None:
    guess = closest(option, known)
    hint = f"; did you mean {prop[: len(prop) - len(option)]}{guess}?" if guess else ""
    message = f"is not an option of {what}{hint}"
    if strict:
        raise TransformConfigError(message, prop=prop)
    warnings.append(f"{prop}: {message} (ignored)")


def _options_of(raw: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {name[len(prefix):]: value for name, value in raw.items() if name.startswith(prefix)}


def _class_name(raw: Mapping[str, str], prop: str) -> str:
    class_name = (raw.get(prop) or "").strip()
    if not class_name:
        raise TransformConfigError("is required: the class of the transform or predicate", prop=prop)
    return class_name


def _build_predicates(raw: Mapping[str, str], strict: bool, warnings: list[str]) -> dict[str, Predicate]:
    built: dict[str, Predicate] = {}
    for alias in split_list(raw.get("predicates")):
        prefix = f"predicates.{alias}."
        class_name = _class_name(raw, prefix + "type")
        kind = PREDICATES.get(class_name)
        if kind is None:
            guess = closest(class_name, PREDICATES)
            raise TransformConfigError(f"{class_name!r} is not a predicate sparkcdc has (it has "
                                       f"{', '.join(sorted(PREDICATES))})" + (f"; did you mean {guess}?" if guess else ""), prop=prefix + "type")
        given = _options_of(raw, prefix)
        _report_unknown(prefix, given, kind.OPTIONS, _PREDICATE_OPTIONS, strict, warnings, class_name.rsplit(".", 1)[-1])
        built[alias] = kind(alias, Options(prefix, kind.OPTIONS, given, warnings))
    return built


def _report_unknown(prefix: str, given: Mapping[str, str], declared: tuple[Option, ...], own: tuple[str, ...], strict: bool,
                    warnings: list[str], what: str) -> None:
    known = {option.name for option in declared} | {old for option in declared for old in option.old_names} | set(own)
    for option in sorted(given):
        if option not in known:
            _unknown_option(prefix + option, option, known, strict, warnings, what)


def transform_chain(raw: Mapping[str, str], *, strict: bool = False, warnings: list[str] | None = None) -> TransformChain:
    """The chain a configuration (Debezium property names) describes; errors name the property.

    ``warnings`` receives what is accepted but deprecated or ignored (an unknown option, unless
    ``strict``; a predicate defined but used by no transform)."""
    notes: list[str] = [] if warnings is None else warnings
    predicates = _build_predicates(raw, strict, notes)
    aliases = split_list(raw.get("transforms"))
    if len(set(aliases)) != len(aliases):
        raise TransformConfigError(f"lists an alias twice: {raw.get('transforms')!r}", prop="transforms")
    steps: list[Step] = []
    used: set[str] = set()
    for alias in aliases:
        prefix = f"transforms.{alias}."
        class_name = _class_name(raw, prefix + "type")
        reason = UNAVAILABLE.get(class_name)
        if reason is not None:
            raise TransformConfigError(f"{class_name} cannot run here: {reason}", prop=prefix + "type")
        kind = TRANSFORMS.get(class_name)
        if kind is None:
            guess = closest(class_name, TRANSFORMS)
            raise TransformConfigError(f"{class_name!r} is a Java class sparkcdc does not have (its transforms "
                                       "are listed in docs/transforms.md)" + (f"; did you mean {guess}?" if guess else ""), prop=prefix + "type")
        given = _options_of(raw, prefix)
        for option in sorted(set(given) & set(kind.REMOVED)):
            if strict:
                raise TransformConfigError(kind.REMOVED[option], prop=prefix + option)
            notes.append(f"{prefix}{option}: {kind.REMOVED[option]}")
        given = {name: value for name, value in given.items() if name not in kind.REMOVED}
        _report_unknown(prefix, given, kind.OPTIONS, _STEP_OPTIONS, strict, notes, class_name.rsplit(".", 1)[-1])
        predicate: Predicate | None = None
        predicate_alias = (given.get("predicate") or "").strip()
        if predicate_alias:
            predicate = predicates.get(predicate_alias)
            if predicate is None:
                raise TransformConfigError(f"names {predicate_alias!r}, which predicates= does not define "
                                           f"(it defines {', '.join(predicates) or 'none'})", prop=prefix + "predicate")
            used.add(predicate_alias)
        negate_raw = (given.get("negate") or "false").strip().lower()
        if negate_raw not in ("true", "false"):
            raise TransformConfigError(f"{given.get('negate')!r} is not a boolean (true or false)", prop=prefix + "negate")
        if negate_raw == "true" and predicate is None:
            raise TransformConfigError("needs a predicate (transforms.<alias>.predicate)", prop=prefix + "negate")
        options = {name: value for name, value in given.items() if name not in _STEP_OPTIONS}
        transform = kind(alias, Options(prefix, kind.OPTIONS, options, notes))
        steps.append(Step(alias, transform, predicate, negate_raw == "true"))
    for alias in predicates:
        if alias not in used:
            notes.append(f"predicates.{alias}: defined but no transform uses it (transforms.<alias>.predicate)")
    for name in raw:
        if name.startswith("transforms.") and raw[name] != "" and name.split(".")[1] not in aliases:
            message = f"configures transform {name.split('.')[1]!r}, which transforms= does not list"
            if strict:
                raise TransformConfigError(message, prop=name)
            notes.append(f"{name}: {message} (ignored)")
        if name.startswith("predicates.") and raw[name] != "" and name.split(".")[1] not in predicates:
            message = f"configures predicate {name.split('.')[1]!r}, which predicates= does not list"
            if strict:
                raise TransformConfigError(message, prop=name)
            notes.append(f"{name}: {message} (ignored)")
    return TransformChain(tuple(steps))
