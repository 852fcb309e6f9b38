"""``apply_changes``: the ``postgres-cdc`` source applied to mirror tables, exactly once.

Each micro-batch runs in ``foreachBatch``; the driver plans and commits, executors move data:

1. **Plan (driver).** One job over the batch (persisted: the source would otherwise decode the WAL
   again for every job) finds its tables, about how many changes each has, and whether it is an
   initial snapshot. Per table: the catalog's description, the parameters resolved, the target's
   recorded batch (a batch at or below it is skipped: a batch Spark re-executes after a crash
   changes nothing), the target table and its staging prepared. A table's batch is split by key
   only when it is big (over ``sparkcdc.apply.changes.per.task`` changes), unless the fold needs the
   batch whole (a truncate, or a primary-key change whose new row lacks columns, unchanged TOAST, it
   must take from the old key's row). The census knows both for the source's ``changes`` layout (its
   block headers count them) and for snapshot reads; for other frames one more job, over the typed
   changes of every such table (``views.table_changes``, cached for the next step), counts them.
2. **Fold and stage (executors).** A table's typed changes go to one task (no shuffle), or, when
   split, are hash-partitioned by key into one partition per ``sparkcdc.apply.changes.per.task`` changes
   (at least ``defaultParallelism``), and ``mapInArrow`` runs :class:`~.stage_task.StageTask` on each
   partition: it folds the partition's events against the target's state of their keys and
   stages the result in the target's staging under a tag of its own
   (:mod:`sparkcdc.apply.partition`), answering one small summary row. All tables' partitions run
   in one job; no change row reaches the driver.
3. **Commit (driver).** Per table, the target commits the staged parts of the tags the driver
   collected, atomically with the batch id, and removes the batch's staging (a failed or
   speculative task attempt's tag included: it is never committed).

The initial snapshot's batch is the tables' whole image: it replaces every applied table (rows the
image lacks are deleted, SCD2 versions closed), and it is applied again when Spark re-executes it,
because the source may then have taken a newer snapshot and streams on from that one (see
``sparkcdc.apply.targets.base``). Tables the image has no row of are emptied. A big table's image
keyed by the event key holds each key once, read by one chunk: it is folded and staged in the
partitions that read it, without the shuffle by key (``docs/apply-path.md``).

The package, by stage: :mod:`.census` (the batch's first job), :mod:`.table_plan` and
:mod:`.target_setup` (a table's plan and its target table made ready; :mod:`.fold_input`: the
fold's input as Spark builds it; :mod:`.rereads`: a table read again), :mod:`.stage_task` (the
executors), :mod:`.applier` (:class:`ChangeApplier`, which runs the three stages per batch, and
:func:`apply_changes`) and :mod:`.stats`. The ``sparkcdc-apply`` sink
(:mod:`sparkcdc.spark.sinks.apply_sink`) uses the same fold input and target setup.
"""

from __future__ import annotations

from .applier import ChangeApplier, apply_changes
from .stage_task import StageTask
from .stats import ApplyStats

__all__ = ["ApplyStats", "ChangeApplier", "StageTask", "apply_changes"]
