"""One domain file: reading YAML safely, the entry schema, ids, line-level edits, the line cap and
atomic writes. Nothing here runs git."""
