"""The Spark runtime: the ``postgres-cdc`` streaming source, sinks, and the pipeline runner.

Importing this package needs PySpark and PyArrow; nothing else in sparkcdc does.
"""
