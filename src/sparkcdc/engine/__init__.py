"""The connector: its logic in :mod:`sparkcdc.engine.core` (no database driver, no Spark), and the
I/O around it here: the driver side (:mod:`.planner` and what it delegates to), the reading of
planned work (:mod:`.work` and the readers), and the in-process loop (:mod:`.connector`).
See docs/engine.md.
"""
