"""sparkcdc: PostgreSQL change data capture with Debezium-format events, on Apache Spark."""

__version__ = "0.1.0"
