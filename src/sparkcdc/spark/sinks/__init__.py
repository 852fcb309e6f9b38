"""Streaming sinks for the ``postgres-cdc`` source's records."""
