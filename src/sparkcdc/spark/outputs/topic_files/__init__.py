"""The ``topic_files`` output: topic directories of JSON lines, written by the reader tasks and
published by the driver, exactly once."""
