"""The Debezium event model: Connect schemas, type mappings, envelopes and JsonConverter output.

Independent of any runtime: no Spark, no database driver.
"""
