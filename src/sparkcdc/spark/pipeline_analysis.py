"""Whether code runs inside a Spark Declarative Pipelines query function (:func:`in_pipeline_query_function`).

There the pipeline's server refuses any analysis of a frame, so what sparkcdc would learn from a
frame's schema must come from elsewhere (``views.table_changes`` then takes the source's default
layout). Its own module, apart from :mod:`sparkcdc.spark.pipelines` (which readies a pipeline's
session and registers the source and the apply sink): the typed views ask it, and they sit below
the sinks that :mod:`~sparkcdc.spark.pipelines` registers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["in_pipeline_query_function"]


def in_pipeline_query_function(spark: Any) -> bool:
    """Whether this thread is inside a Declarative Pipelines query function of ``spark`` (a session).

    There the server refuses any analysis (``ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION``): what
    sparkcdc would learn from a frame's schema must come from elsewhere. pyspark marks the calls of a
    query function with a thread-local ``PipelineAnalysisContext`` naming the flow (a definition
    file's own code runs under one without a flow name, and may analyse); it is read here without a
    request to the server. False for a classic session, and when pyspark keeps the mark elsewhere.
    """
    from .running_session import is_connect

    if not is_connect(spark):
        return False
    client = getattr(spark, "client", None)
    extensions = getattr(getattr(client, "thread_local", None), "user_context_extensions", None) or ()
    if not extensions:
        return False
    try:
        from pyspark.sql.connect.proto import PipelineAnalysisContext
    except ImportError:
        return False
    for _, extension in extensions:
        if extension.Is(PipelineAnalysisContext.DESCRIPTOR):
            context = PipelineAnalysisContext()
            extension.Unpack(context)
            if context.flow_name:
                return True
    return False
