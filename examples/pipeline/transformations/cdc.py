"""PostgreSQL changes into a Spark Declarative Pipeline, with sparkcdc.

``cdc_events``: one streaming table holding every captured change as the ``postgres-cdc`` source
emits it (Debezium's key and value JSON plus the source's columns): the only reader of the
replication slot. Then per captured table ``<schema>_<table>``: a streaming table of that table's
changes, typed (the table's own columns as Spark types, then ``__op``, ``__commit_lsn``, ``__lsn``,
``__ordinal``... see docs/declarative-pipelines.md).

With ``SPARKCDC_APPLY_TO`` set, each typed table also feeds a sink that applies it to a mirror
(sparkcdc's apply targets: ``postgresql://...``, a Delta or an Iceberg location), exactly once per
micro-batch (sparkcdc.spark.sinks.apply_sink).

Configuration, from the environment of ``spark-pipelines run``:
  SPARKCDC_CONFIG      the connector's properties, .properties, YAML or JSON file (as for ``sparkcdc
                       run``; default: connector.properties next to spark-pipeline.yml)
  SPARKCDC_TABLES      the tables to type, "schema.table" comma-separated (default: the
                       connector's table.include.list, read as table names)
  SPARKCDC_APPLY_TO    optional: the apply target of the mirror sinks
"""

from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from sparkcdc import environment
from sparkcdc.cli.config_files import load_config
from sparkcdc.spark.pipelines import use_postgres_cdc
from sparkcdc.spark.sinks.apply_sink import APPLY_SINK_FORMAT, apply_input, apply_sink_options
from sparkcdc.spark.source import options_for
from sparkcdc.spark.views import describe_table, table_changes

use_postgres_cdc(spark)  # noqa: F821 - spark-pipelines gives definition files their session as `spark`

_here = Path(__file__).resolve().parent.parent
PROPERTIES = load_config(environment.value("SPARKCDC_CONFIG") or _here / "connector.properties").properties
TABLES = [name.strip() for name in (environment.value("SPARKCDC_TABLES") or PROPERTIES["table.include.list"]).split(",")
          if name.strip()]
APPLY_TO = environment.value("SPARKCDC_APPLY_TO")


@dp.table(comment="Every captured change, as the postgres-cdc source emits it (columns layout).")
def cdc_events() -> DataFrame:
    return spark.readStream.format("postgres-cdc").options(**options_for(PROPERTIES)).load()  # noqa: F821


def _typed_table(table: str) -> None:
    """``<schema>_<table>``: ``table``'s changes from cdc_events, typed. The view is described here,
    at definition time (it reads PostgreSQL's catalog); nothing in the query function analyses."""
    view = describe_table(PROPERTIES, table)

    name = f"{view.schema_name}_{view.table_name}"

    @dp.table(name=name, comment=f"The changes of {table}, typed.")
    def changes() -> DataFrame:
        return table_changes(spark.readStream.table("cdc_events"), view, layout="columns")  # noqa: F821

    if APPLY_TO:
        # The sink records its batches under its pipeline id: one per sink, stable across runs.
        dp.create_sink(f"{name}_mirror", format=APPLY_SINK_FORMAT,
                       options=apply_sink_options(APPLY_TO, table, PROPERTIES, pipeline_id=f"example-pipeline/{name}"))

        @dp.append_flow(target=f"{name}_mirror", name=f"{name}_apply")
        def apply() -> DataFrame:
            return apply_input(spark.readStream.table(name))  # noqa: F821


for _table in TABLES:
    _typed_table(_table)
