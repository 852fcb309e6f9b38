"""The one exception hierarchy: every public exception class of the package, found by walking its
modules, derives from SparkcdcError and from exactly one family, and keeps the built-in base its
callers catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import sparkcdc
from sparkcdc.errors import (
    FAMILIES,
    ConfigurationError,
    DestinationError,
    PipelineError,
    ProtocolError,
    ServerError,
    SparkcdcError,
    family_of,
)


def _public_exception_classes() -> dict[str, type[BaseException]]:
    """``module.Class`` -> class, for every public exception class defined in a sparkcdc module
    (warning categories are not errors: they are raised through ``warnings``, never caught)."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(sparkcdc.__path__, prefix="sparkcdc."):
        if any(part.startswith("_") for part in module_info.name.split(".")[1:]):
            continue  # private modules, __main__
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and not issubclass(value, Warning)
                    and not name.startswith("_") and value.__module__ == module.__name__):
                found[f"{module.__name__}.{name}"] = value
    return found


CLASSES = _public_exception_classes()


def test_the_walk_finds_the_package_s_exceptions() -> None:
    """The discovery itself works: it sees classes of every layer (else the checks below prove nothing)."""
    names = set(CLASSES)
    for expected in ("sparkcdc.errors.SparkcdcError", "sparkcdc.debezium.transforms.base.TransformConfigError", "sparkcdc.postgres.errors.SlotNotFoundError",
                     "sparkcdc.engine.core.offsets.OffsetError", "sparkcdc.apply.errors.TargetError", "sparkcdc.cli.config_files.ConfigFileError",
                     "sparkcdc.spark.outputs.kafka.link.KafkaSinkError", "sparkcdc.lsn.InvalidLsnError"):
        assert expected in names
    assert len(names) >= 40


@pytest.mark.parametrize("name", sorted(set(CLASSES) - {"sparkcdc.errors.SparkcdcError"}))
def test_every_exception_is_in_one_family(name: str) -> None:
    cls = CLASSES[name]
    assert issubclass(cls, SparkcdcError), f"{name} does not derive from SparkcdcError"
    families = [family for family in FAMILIES if issubclass(cls, family)]
    assert len(families) == 1, f"{name} belongs to {[f.__name__ for f in families]}"


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("sparkcdc.debezium.transforms.base.TransformConfigError", ValueError),
        ("sparkcdc.cli.config_files.ConfigFileError", ValueError),
        ("sparkcdc.cli.checkpoint.CheckpointError", ValueError),
        ("sparkcdc.apply.errors.ApplySpecError", ValueError),
        ("sparkcdc.apply.errors.ApplyError", RuntimeError),
        ("sparkcdc.postgres.errors.ReplicationError", RuntimeError),
        ("sparkcdc.postgres.errors.ReplicationProtocolError", RuntimeError),
        ("sparkcdc.postgres.errors.ObjectNotFoundError", LookupError),
        ("sparkcdc.pgoutput.errors.ProtocolError", ValueError),
        ("sparkcdc.engine.core.errors.UnexpectedMessageError", RuntimeError),
        ("sparkcdc.engine.core.errors.UnknownRelationError", LookupError),
        ("sparkcdc.engine.core.offsets.OffsetError", ValueError),
        ("sparkcdc.lsn.InvalidLsnError", ValueError),
        ("sparkcdc.debezium.types.base.ConversionError", ValueError),
        ("sparkcdc.debezium.types.base.UnsupportedTypeError", LookupError),
        ("sparkcdc.spark.views.UnknownTableError", LookupError),
        ("sparkcdc.spark.views.UnsupportedColumnError", TypeError),
        ("sparkcdc.spark.runner.PipelineError", RuntimeError),
        ("sparkcdc.spark.outputs.kafka.link.KafkaSinkError", RuntimeError),
    ],
)
def test_callers_catching_builtins_still_catch(name: str, builtin: type[BaseException]) -> None:
    assert issubclass(CLASSES.get(name) or _imported(name), builtin)


def _imported(name: str) -> type[BaseException]:
    module, _, attribute = name.rpartition(".")
    value = getattr(importlib.import_module(module), attribute)
    assert isinstance(value, type) and issubclass(value, BaseException)
    return value


def test_re_exported_families_are_the_same_classes() -> None:
    """pgoutput's ProtocolError and the Spark runner's PipelineError are the families themselves."""
    assert _imported("sparkcdc.pgoutput.errors.ProtocolError") is ProtocolError
    assert _imported("sparkcdc.spark.runner.PipelineError") is PipelineError


def test_families_carry_what_they_name() -> None:
    from sparkcdc.postgres.errors import SlotNotFoundError

    config = ConfigurationError("must not be empty", prop="slot.name")
    assert (config.property, str(config), family_of(config)) == ("slot.name", "slot.name: must not be empty", ConfigurationError)
    slot = SlotNotFoundError("gone", sqlstate="42704", slot="s1")
    assert (slot.slot, slot.sqlstate, family_of(slot)) == ("s1", "42704", ServerError)
    protocol = ProtocolError("truncated", message_type="Insert", offset=7, lsn=0x16B374D848)
    assert str(protocol) == "pgoutput Insert message: truncated (at byte 7) at LSN 16/B374D848"
    assert (protocol.message_type, protocol.offset, protocol.lsn) == ("Insert", 7, 0x16B374D848)
    destination = DestinationError("refused", target="delta /x", table="public.t")
    assert (destination.target, destination.table) == ("delta /x", "public.t")
    pipeline = PipelineError("stuck", lsn=5, table="public.t")
    assert (pipeline.lsn, pipeline.table, family_of(pipeline)) == (5, "public.t", PipelineError)


def test_a_class_outside_the_families_is_refused() -> None:
    class Stray(SparkcdcError):
        pass

    with pytest.raises(TypeError, match="Stray derives from SparkcdcError but from none of its families"):
        family_of(Stray("x"))


def test_every_configuration_error_takes_the_property_by_name() -> None:
    """One argument order for the configuration family: the message (or what makes it) first, the
    property by keyword (``prop=``); ``ConfigurationError(prop, message)`` was the other order, now gone."""
    import inspect

    checked = 0
    for name, cls in CLASSES.items():
        if issubclass(cls, ConfigurationError) and "__init__" in vars(cls):
            parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
            for parameter in parameters:
                if parameter.name in ("prop", "parameter", "property", "option"):
                    assert parameter.kind is parameter.KEYWORD_ONLY, f"{name}{inspect.signature(cls.__init__)}"
                    checked += 1
    assert checked >= 2
