"""One domain file: reading YAML safely, the entry schema, ids, line-level edits, the line cap and
atomic writes, and a read-only view of a file remembered by its digest. Nothing here runs git."""
