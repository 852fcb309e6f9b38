"""The ``sparkcdc-apply`` sink of Declarative Pipelines (the outputs of the ``postgres-cdc`` source are in :mod:`sparkcdc.spark.outputs`)."""
