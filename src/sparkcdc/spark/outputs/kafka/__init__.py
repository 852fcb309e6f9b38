"""The ``kafka`` output: Kafka topics produced by the reader tasks, exactly once."""
