"""Reading the Kafka sink's fence (sparkcdc.spark.outputs.kafka.link.KafkaLink.read_fence) against the
real broker: a ``read_committed`` read stops at the last stable offset while a transaction that
wrote to the fence is open, so the read waits for the broker to settle it instead of answering
without that transaction's fence record (a committed task would otherwise be taken for one that
never produced, and produce again)."""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka.admin import AdminClient

from sparkcdc.spark.outputs.kafka.link import KafkaLink

from ..support.waiting import wait_until


def _link(kafka_broker: str, unique_name: str) -> KafkaLink:
    link = KafkaLink(kafka_broker, pipeline_id=unique_name.replace("_", "-"), timeout=30.0)
    admin = AdminClient(link.client())
    link.ensure_fence_topic(admin, link.existing_topics(admin, None), None)
    return link


def _read_in_a_thread(link: KafkaLink) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def read() -> None:
        try:
            result["fence"] = link.read_fence(None)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            result["error"] = exc

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, result


def test_a_fence_read_waits_for_an_open_transaction_and_sees_its_commit(kafka_broker: str, unique_name: str) -> None:
    link = _link(kafka_broker, unique_name)
    settled = link.transactional_producer(f"{unique_name}-settled", None)
    settled.begin_transaction()
    link.produce(settled, link.fence_topic, b"task#0", b"committed before", None, partition=0)
    link.flush(settled, None)
    link.commit(settled, None)

    open_one = link.transactional_producer(f"{unique_name}-open", None)
    open_one.begin_transaction()
    link.produce(open_one, link.fence_topic, b"task#1", b"committed while the read waits", None, partition=0)
    link.flush(open_one, None)  # on the broker, inside a transaction still open
    thread, result = _read_in_a_thread(link)
    thread.join(2.0)  # a bounded look: the read must still be waiting for the open transaction
    assert thread.is_alive() and not result, f"the read answered while a transaction on the fence was open: {result}"

    link.commit(open_one, None)
    wait_until(lambda: not thread.is_alive(), timeout=30, what="the fence read to end once the transaction is committed")
    assert result == {"fence": {b"task#0": b"committed before", b"task#1": b"committed while the read waits"}}


def test_an_aborted_transaction_ends_the_wait(kafka_broker: str, unique_name: str) -> None:
    """The wait ends when the open transaction is aborted too, well within the timeout. (Which records
    the read then holds is the broker's to filter: the Tansu broker these tests run hands a
    ``read_committed`` consumer an aborted transaction's records, a gap of that broker, not asserted here.)"""
    link = _link(kafka_broker, unique_name)
    aborted = link.transactional_producer(f"{unique_name}-aborted", None)
    aborted.begin_transaction()
    link.produce(aborted, link.fence_topic, b"task#0", b"never committed", None, partition=0)
    link.flush(aborted, None)
    thread, result = _read_in_a_thread(link)
    thread.join(2.0)
    assert thread.is_alive() and not result

    link.abort(aborted)
    wait_until(lambda: not thread.is_alive(), timeout=20, what="the fence read to end once the transaction is aborted")
    assert "fence" in result, result
