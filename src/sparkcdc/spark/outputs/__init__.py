"""What the ``postgres-cdc`` source's rows are and where its records go: one output per
``sparkcdc.output.layout`` (:class:`Output`, :mod:`.base`), picked by name in :mod:`.registry`.

- ``columns`` (:mod:`.columns`): each record's columns, for the query's own sink (the default);
- ``lines`` (:mod:`.lines`): each record's topic-files line;
- ``changes`` (:mod:`.changes`): each table's changes as typed Arrow blocks;
- ``topic_files`` (:mod:`.topic_files`): the reader tasks write topic files, the driver publishes them;
- ``kafka`` (:mod:`.kafka`): the reader tasks produce to Kafka, each task one transaction.
"""

from .base import Output
from .registry import check_output_settings, default_output, named, output_for, output_of_columns

__all__ = ["Output", "check_output_settings", "default_output", "named", "output_for", "output_of_columns"]
