"""Starting Spark for sparkcdc: the driver JVM, Spark's Python processes, the session."""
