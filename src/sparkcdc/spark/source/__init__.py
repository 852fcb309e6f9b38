"""The ``postgres-cdc`` streaming data source (PySpark's Python Data Source API). Usage::

    from sparkcdc.spark.source import options_for, register
    register(spark)
    df = spark.readStream.format("postgres-cdc").options(**options_for(debezium_properties)).load()

What the source's rows are, and what its reader tasks write, is the output's business
(:mod:`sparkcdc.spark.outputs`); the source plans the work and hands each partition to it.
"""

from .data_source import PostgresCdcDataSource, PostgresCdcStreamReader, read_partition, register
from .options import options_for

__all__ = ["PostgresCdcDataSource", "PostgresCdcStreamReader", "options_for", "read_partition", "register"]
