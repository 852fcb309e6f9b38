"""The outputs by name, and the checks that concern every output: the one place the value of
``sparkcdc.output.layout`` is looked at.

Each output declares the properties only it reads (:attr:`Output.own_properties`);
:func:`refuse_other_outputs_settings` reads those declarations, so a property given with another
output is refused naming it, without any output knowing the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...debezium.property_table import PROPERTIES
from ...errors import ConfigurationError
from .base import Output
from .changes.output import ChangesOutput
from .columns import ColumnsOutput
from .kafka.output import KafkaOutput
from .lines import LinesOutput
from .topic_files.output import TopicFilesOutput

if TYPE_CHECKING:
    from ...debezium.config import ConnectorConfig

__all__ = ["LAYOUT", "check_output_settings", "default_output", "named", "output_for", "output_of_columns",
           "refuse_other_outputs_settings", "warn_unwritten_partitions"]

#: The property that chooses the output.
LAYOUT = "sparkcdc.output.layout"

_OUTPUTS: dict[str, Output] = {output.name: output for output in
                               (ColumnsOutput(), LinesOutput(), ChangesOutput(), TopicFilesOutput(), KafkaOutput())}


def named(layout: str) -> Output:
    """The output of this ``sparkcdc.output.layout`` value; a ``ValueError`` naming the known ones otherwise."""
    output = _OUTPUTS.get(layout)
    if output is None:
        raise ValueError(f"{layout!r} is not an output layout ({', '.join(_OUTPUTS)})")
    return output


def output_for(config: ConnectorConfig) -> Output:
    """The output the configuration's ``sparkcdc.output.layout`` chooses."""
    return named(config.settings.sparkcdc_output_layout or default_output().name)


def default_output() -> Output:
    """The output of a configuration that does not choose one (the property table's default)."""
    return _OUTPUTS[PROPERTIES[LAYOUT].default]  # type: ignore[index]


def output_of_columns(columns: Sequence[str]) -> Output | None:
    """The output whose rows carry typed changes, if a frame with these columns is its rows."""
    from .changes.schema import has_changes_columns

    return _OUTPUTS[ChangesOutput.name] if has_changes_columns(columns) else None


def check_output_settings(config: ConnectorConfig) -> Output:
    """The configuration's output, after the checks every output shares: another output's settings
    refused, settings no output of this kind writes warned about."""
    output = output_for(config)
    refuse_other_outputs_settings(config, output)
    warn_unused_topic_creation(config, output)
    warn_unwritten_partitions(config, output)
    return output


def refuse_other_outputs_settings(config: ConnectorConfig, output: Output) -> None:
    """A property another output declares as its own, given with ``output``, would do nothing:
    refused, naming the property. A property several outputs declare (the decoding processes') is
    refused only with the outputs that do not."""
    shared = {prop.name for prop in output.own_properties}
    for owner in _OUTPUTS.values():
        if owner is output:
            continue
        for prop in owner.own_properties:
            if prop.name in shared:
                continue
            given = prop.given(config)
            if given:
                raise ConfigurationError(f"{prop.purpose}, and the layout is {output.name}: drop the property or set "
                                            f"{LAYOUT}={owner.name}", prop=given[0])


def warn_unused_topic_creation(config: ConnectorConfig, output: Output) -> None:
    """Kafka Connect's ``topic.creation.*`` in a Debezium configuration read with an output that
    creates no topics: reported (a configuration brought from Debezium often carries them), not refused."""
    if output.creates_topics:
        return
    from ...debezium.config import report_warnings
    from ...debezium.topic_creation import unused_without_kafka

    unused = unused_without_kafka(config.raw, output.name)
    if unused:
        config.warnings.extend(unused)
        report_warnings(config)


def warn_unwritten_partitions(config: ConnectorConfig, output: Output) -> None:
    """A transform that chooses Kafka partitions (``PartitionRouting``, the outbox router's
    ``partition`` placement) with an output that writes none: reported, naming the transform."""
    if output.writes_partitions:
        return
    from ...debezium.config import report_warnings

    choosing = [step.alias for step in config.transforms.steps if getattr(step.transform, "chooses_partitions", False)]
    if choosing:
        config.warnings.append(f"transforms.{choosing[0]}: chooses each record's Kafka partition, which only "
                               f"{LAYOUT}=kafka writes; the {output.name} layout has no partitions, so it has no effect")
        report_warnings(config)
