"""Keeping the expertise true to the code: validation, core-file discovery and the watcher."""
