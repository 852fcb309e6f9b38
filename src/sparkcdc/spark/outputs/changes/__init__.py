"""The ``changes`` output: each table's row changes as typed Arrow blocks, without JSON."""
