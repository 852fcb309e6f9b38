"""The connector as a deterministic function: decoded messages (and snapshot rows) in, records out.

No Spark here; catalog lookups are the only I/O, injected through :class:`TableResolver`.
"""
