"""Every property Debezium 3.6.3's PostgreSQL connector and Kafka Connect's source connector
configuration define is in sparkcdc's property table (as a property or a parameterised family), so
none of them is reported as unknown: each is honoured, an alias, warned about or refused.

The authoritative lists are the running code's, read through the oracle's JVM:
``PostgresConnectorConfig.ALL_FIELDS`` and the ``ConfigDef`` of Kafka Connect's
``SourceConnectorConfig`` (which includes ``ConnectorConfig``'s: transforms, errors.*, converters...).
"""

from __future__ import annotations

import jpype
import pytest

from sparkcdc.debezium.property_table import PROPERTIES, family_of

from ..support.debezium_jvm import start_debezium_jvm

#: A field whose name is a pattern (``column.mask.with.(d+).chars``) is checked with these values.
_PATTERN_PARTS = {"(d+)": "8", "([^.]+)": "SHA-256", "(.+)": "CzQMA0cB5K"}


def _concrete(name: str) -> str:
    for part, value in _PATTERN_PARTS.items():
        name = name.replace(part, value)
    return name


def _debezium_names() -> set[str]:
    start_debezium_jvm()
    fields = jpype.JClass("io.debezium.connector.postgresql.PostgresConnectorConfig").ALL_FIELDS
    names = {str(field.name()) for field in fields}
    names |= {str(name) for name in jpype.JClass("io.debezium.connector.postgresql.PostgresConnector")().config().names()}
    return {_concrete(name) for name in names}


def _connect_names() -> set[str]:
    start_debezium_jvm()
    definition = jpype.JClass("org.apache.kafka.connect.runtime.SourceConnectorConfig").configDef()
    return {str(name) for name in definition.names()}


@pytest.mark.oracle
@pytest.mark.parametrize("source", ["debezium", "kafka_connect"])
def test_every_debezium_and_connect_property_is_in_the_table(source: str) -> None:
    names = _debezium_names() if source == "debezium" else _connect_names()
    assert len(names) > 20  # the lists were read
    unknown = sorted(name for name in names if name not in PROPERTIES and family_of(name) is None)
    assert not unknown, f"not in sparkcdc's property table (docs/properties.md): {unknown}"


@pytest.mark.oracle
def test_the_v2_hash_family_is_debeziums() -> None:
    """Debezium reads ``column.mask.hash.v2.<algorithm>.with.salt.<salt>`` beside the pattern its field shows."""
    assert family_of("column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K") is family_of(_concrete("column.mask.hash.([^.]+).with.salt.(.+)"))
