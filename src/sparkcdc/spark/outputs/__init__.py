"""What the ``postgres-cdc`` source's rows are and where its records go: one output per layout."""
