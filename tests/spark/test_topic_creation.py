"""Kafka Connect's ``topic.creation.*`` as the kafka layout honours it, and where it does nothing."""

from __future__ import annotations

import pytest

from sparkcdc.debezium.config import ConnectorConfig
from sparkcdc.debezium.topic_creation import unused_without_kafka
from sparkcdc.errors import ConfigurationError
from sparkcdc.spark.outputs import named
from sparkcdc.spark.outputs.registry import warn_unused_topic_creation

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "d", "topic.prefix": "srv",
        "sparkcdc.output.layout": "kafka", "sparkcdc.output.kafka.bootstrap.servers": "127.0.0.1:9"}
GROUPS = {
    "topic.creation.default.replication.factor": "3", "topic.creation.default.partitions": "6",
    "topic.creation.default.cleanup.policy": "compact",
    "topic.creation.groups": "logs,everything",
    "topic.creation.logs.include": r"srv\.public\.log_.*", "topic.creation.logs.exclude": r"srv\.public\.log_keep",
    "topic.creation.logs.partitions": "1", "topic.creation.logs.retention.ms": "86400000",
    "topic.creation.everything.include": r".*", "topic.creation.everything.compression.type": "lz4",
}


def _link(**props: str):
    from sparkcdc.spark.outputs.kafka.task_producer import kafka_link

    return kafka_link(ConnectorConfig(BASE | props))


def test_a_topic_takes_its_first_matching_group_else_the_default() -> None:
    link = _link(**GROUPS)
    logs = link.topic_config_for("srv.public.log_2024")
    assert (logs.partitions, logs.replication_factor, logs.topic_settings()) == (1, 3, {"retention.ms": "86400000"})
    # excluded from logs: the next listed group that matches, which has only its own topic settings
    kept = link.topic_config_for("srv.public.log_keep")
    assert (kept.partitions, kept.replication_factor, kept.topic_settings()) == (6, 3, {"compression.type": "lz4"})
    assert link.topic_config_for("srv.public.orders") == kept
    only_default = _link(**{k: v for k, v in GROUPS.items() if ".default." in k})
    orders = only_default.topic_config_for("srv.public.orders")
    assert (orders.partitions, orders.replication_factor, orders.topic_settings()) == (6, 3, {"cleanup.policy": "compact"})


def test_the_default_groups_sizes_are_the_kafka_layouts() -> None:
    assert _link().topic_config == _link(**{"topic.creation.default.partitions": "1"}).topic_config
    assert _link(**{"sparkcdc.output.kafka.topic.partitions": "4"}).topic_config.partitions == 4
    assert _link(**{"topic.creation.default.partitions": "4", "sparkcdc.output.kafka.topic.partitions": "4"}).topic_config.partitions == 4
    with pytest.raises(ConfigurationError) as info:
        ConnectorConfig(BASE | {"topic.creation.default.partitions": "4", "sparkcdc.output.kafka.topic.partitions": "2"})
    assert info.value.property == "topic.creation.default.partitions" and "sparkcdc.output.kafka.topic.partitions is 2" in str(info.value)
    with pytest.raises(Exception, match="topic.creation.default.cleanup.policy is delete"):
        _link(**{"sparkcdc.output.kafka.topic.compact": "true", "topic.creation.default.cleanup.policy": "delete"})


@pytest.mark.parametrize("props,prop", [
    ({"topic.creation.groups": "logs"}, "topic.creation.logs.include"),
    ({"topic.creation.groups": "default"}, "topic.creation.groups"),
    ({"topic.creation.default.partitions": "0"}, "topic.creation.default.partitions"),
    ({"topic.creation.default.replication.factor": "three"}, "topic.creation.default.replication.factor"),
    ({"topic.creation.groups": "g", "topic.creation.g.include": "(unclosed"}, "topic.creation.g.include"),
])
def test_bad_settings_are_refused_naming_the_property(props: dict, prop: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectorConfig(BASE | props)
    assert info.value.property == prop


def test_an_unlisted_group_is_reported_and_disabled_creation_reads_nothing() -> None:
    config = ConnectorConfig(BASE | {"topic.creation.logs.partitions": "2"})
    assert config.warnings == ["topic.creation.logs.partitions: configures topic creation group 'logs', which "
                               "topic.creation.groups does not list (ignored)"]
    disabled = _link(**GROUPS, **{"topic.creation.enable": "false"})
    assert disabled.topic_groups == () and disabled.topic_config.partitions == 1 and not disabled.topic_config.topic_settings()


def test_other_layouts_create_no_topics_and_say_so() -> None:
    raw = {"topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "1", "topic.creation.enable": "true"}
    kafka = ConnectorConfig(BASE | raw)
    warn_unused_topic_creation(kafka, named("kafka"))  # the kafka output creates topics: nothing to report
    assert not any("topic.creation" in warning for warning in kafka.warnings)
    assert unused_without_kafka({"topic.creation.enable": "true"}, "topic_files") == []
    assert unused_without_kafka(raw, "topic_files") == [
        "topic.creation.default.partitions: has no effect with sparkcdc.output.layout=topic_files (and 1 more topic.creation.* "
        "properties): only the kafka layout creates topics (sparkcdc run --kafka)"]


def test_secrets_are_masked_by_custom_sanitize_pattern() -> None:
    base = BASE | {"database.password": "pw", "signal.consumer.sasl.jaas.config": "jaas", "sparkcdc.output.kafka.client.sasl.password": "k"}
    shown = repr(ConnectorConfig(base))
    assert "pw" not in shown.replace("password", "") and "jaas'" not in shown and "'k'" not in shown  # Debezium's default pattern
    custom = repr(ConnectorConfig(base | {"custom.sanitize.pattern": r".*\.bootstrap\.servers"}))
    assert "127.0.0.1:9" not in custom and "'jaas'" in custom and "'pw'" not in custom  # passwords always


@pytest.mark.slow
def test_the_kafka_layout_creates_topics_as_their_groups_say(kafka_broker: str, unique_name: str) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    link = _link(**{"sparkcdc.output.kafka.bootstrap.servers": kafka_broker, "topic.creation.default.partitions": "3",
                    "topic.creation.default.replication.factor": "1", "topic.creation.groups": "logs",
                    "topic.creation.logs.include": rf"{unique_name}\.log_.*", "topic.creation.logs.partitions": "2",
                    "topic.creation.logs.cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    logs, orders = f"{unique_name}.log_a", f"{unique_name}.orders"
    link.ensure_topics(admin, set(), [logs, orders], None)
    topics = admin.list_topics(timeout=10).topics
    assert (len(topics[logs].partitions), len(topics[orders].partitions)) == (2, 3)
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, logs)]).values()
    assert future.result(10)["cleanup.policy"].value == "compact"
