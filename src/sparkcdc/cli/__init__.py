"""The ``sparkcdc`` command line: validate a Debezium configuration, inspect a server, run the pipeline.

This package's ``__init__`` imports nothing on purpose: the config file loader is useful without
Typer and Rich (the Spark runner reads the same files), so only :mod:`sparkcdc.cli.app` pulls them in.
"""
