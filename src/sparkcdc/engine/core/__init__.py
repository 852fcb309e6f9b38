"""The connector's logic, without I/O to the source: decoded messages and snapshot rows in, records
out; offsets, signals, filters, table resolution, record encoding, the metrics model.

Nothing here imports a database driver (``psycopg``), ``sparkcdc.postgres`` or Spark (the
``pure-core`` contract of ``.importlinter``): catalog facts come through
:class:`sparkcdc.catalog.CatalogLookup`, so every module runs and is tested without a server. The
modules beside this package in :mod:`sparkcdc.engine` do the I/O: they plan against the server and
read slots and snapshots, and hand what they read to the modules here.
"""
